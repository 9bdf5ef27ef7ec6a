package access

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// FuzzChannelRequests feeds arbitrary payloads to a session's handlers of
// the requests a client sends (pty-req, env, window-change, signal): they
// must refuse what they cannot read, never panic, and keep the session's
// environment and terminal size within bounds. The parsers alone are
// FuzzSessionRequests'; a direct-tcpip open is FuzzForwardRequest's.
func FuzzChannelRequests(f *testing.F) {
	f.Add(ssh.Marshal(ptyRequestMsg{Term: "xterm", Cols: 80, Rows: 24}))
	f.Add(ssh.Marshal(envMsg{Name: "LANG", Value: "C.UTF-8"}))
	f.Add(ssh.Marshal(windowChangeMsg{Cols: 1 << 31, Rows: 0}))
	f.Add(ssh.Marshal(stringMsg{Value: "TERM"}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s := &session{c: &conn{ctx: ctx, log: slog.New(slog.DiscardHandler)}, ctx: ctx}
		s.ptyReq(payload)
		s.setEnv(payload)
		s.windowChange(payload)
		s.deliverSignal(payload)
		if len(s.env) > 32 {
			t.Fatalf("env grew to %d entries", len(s.env))
		}
		for _, kv := range s.env {
			name, value, _ := strings.Cut(kv, "=")
			if !envAllowed(name, value) {
				t.Fatalf("env %q accepted", kv)
			}
		}
		if s.cols > 10000 || s.rows > 10000 {
			t.Fatalf("terminal size %dx%d not clamped", s.cols, s.rows)
		}
	})
}
