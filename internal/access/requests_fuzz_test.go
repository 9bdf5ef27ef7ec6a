package access

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// FuzzSessionRequests feeds every session-request parser the same
// arbitrary payload: none panics; what pty-req accepts is a TERM value the
// environment may hold and a size within bounds; what a parser accepts is
// exactly the bytes the message marshals back to.
func FuzzSessionRequests(f *testing.F) {
	f.Add(ssh.Marshal(ptyRequestMsg{Term: "xterm-256color", Cols: 80, Rows: 24}))
	f.Add(ssh.Marshal(ptyRequestMsg{Term: "xterm\n\x00", Cols: 1 << 31, Rows: 0}))
	f.Add(ssh.Marshal(envMsg{Name: "LANG", Value: "zh_CN.UTF-8"}))
	f.Add(ssh.Marshal(envMsg{Name: "LD_PRELOAD", Value: "/tmp/x.so"}))
	f.Add(ssh.Marshal(windowChangeMsg{Cols: 200, Rows: 50}))
	f.Add(ssh.Marshal(stringMsg{Value: "nvidia-smi; cat /etc/passwd"}))
	f.Add(ssh.Marshal(stringMsg{Value: "sftp"}))
	f.Add([]byte{0, 0, 0, 5, 'a'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		if term, cols, rows, ok := parsePtyReq(payload); ok {
			if !envAllowed("TERM", term) || strings.ContainsAny(term, "\x00\n\r") {
				t.Fatalf("pty-req accepted terminal %q", term)
			}
			if cols > 10000 || rows > 10000 {
				t.Fatalf("pty-req size %dx%d not clamped", cols, rows)
			}
			var m ptyRequestMsg
			if ssh.Unmarshal(payload, &m) != nil || string(ssh.Marshal(m)) != string(payload) {
				t.Fatalf("pty-req %q does not round-trip", payload)
			}
		}
		if name, value, ok := parseEnv(payload); ok {
			if string(ssh.Marshal(envMsg{Name: name, Value: value})) != string(payload) {
				t.Fatalf("env %q does not round-trip", payload)
			}
			if envAllowed(name, value) && (strings.ContainsAny(name, "=\x00") || len(value) > 256 || strings.ContainsAny(value, "\x00\n\r")) {
				t.Fatalf("env %q=%q allowed", name, value)
			}
		}
		if cols, rows, ok := parseWindowChange(payload); ok {
			if cols > 10000 || rows > 10000 {
				t.Fatalf("window-change size %dx%d not clamped", cols, rows)
			}
			var m windowChangeMsg
			if ssh.Unmarshal(payload, &m) != nil || string(ssh.Marshal(m)) != string(payload) {
				t.Fatalf("window-change %q does not round-trip", payload)
			}
		}
		if v, ok := parseString(payload); ok {
			if string(ssh.Marshal(stringMsg{Value: v})) != string(payload) {
				t.Fatalf("string request %q does not round-trip", payload)
			}
		}
	})
}

// FuzzForwardRequest: a direct-tcpip channel's extra data never panics the
// parser, and what it would dial is only ever a loopback address inside the
// instance, on the port asked for.
func FuzzForwardRequest(f *testing.F) {
	for _, h := range []string{"127.0.0.1", "localhost", "::1", "[::1]", "10.0.0.1", "169.254.169.254", "::ffff:127.0.0.1",
		"fe80::1%eth0", "127.1", "0.0.0.0", "LOCALHOST", "metadata.google.internal"} {
		f.Add(ssh.Marshal(directTCPIPMsg{Host: h, Port: 8888, OriginHost: "203.0.113.9", OriginPort: 5000}))
	}
	f.Add(ssh.Marshal(directTCPIPMsg{Host: "127.0.0.1", Port: 70000}))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, extra []byte) {
		m, targets, reason, malformed := parseForward(extra)
		if malformed || reason != "" {
			if len(targets) != 0 {
				t.Fatalf("refused %q (%s) with targets %v", extra, reason, targets)
			}
			return
		}
		if len(targets) == 0 {
			t.Fatalf("accepted %q without a target", extra)
		}
		for _, tg := range targets {
			ap, err := netip.ParseAddrPort(tg)
			if err != nil || !ap.Addr().IsLoopback() || ap.Addr().Zone() != "" || strconv.Itoa(int(ap.Port())) != strconv.Itoa(int(m.Port)) {
				t.Fatalf("forward to %q:%d dials %q", m.Host, m.Port, tg)
			}
		}
	})
}

// TestPtyReqTerminalName: a pty-req whose terminal name could not be a
// TERM value (control characters, NUL, too long) is refused, as env is,
// instead of reaching the command's environment.
func TestPtyReqTerminalName(t *testing.T) {
	for term, ok := range map[string]bool{
		"xterm-256color": true, "": true, "vt100": true,
		"xterm\nLD_PRELOAD=/tmp/x.so": false, "xterm\x00": false, strings.Repeat("x", 257): false,
	} {
		got, _, _, accepted := parsePtyReq(ssh.Marshal(ptyRequestMsg{Term: term, Cols: 80, Rows: 24}))
		if accepted != ok || (ok && got != term) {
			t.Errorf("pty-req terminal %q: accepted %v (%q), want %v", term, accepted, got, ok)
		}
	}
}
