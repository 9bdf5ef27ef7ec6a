package rental

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent/internal/agentproto"
)

// FuzzStartupStatus feeds the cleaning of an agent's startup status (an
// agent is not trusted) any state, texts, times and argv: it never panics,
// and what it keeps is bounded, printable UTF-8, with an event key only for
// an exit or a failure.
func FuzzStartupStatus(f *testing.F) {
	f.Add("exited", "/bin/sh\x00-c\x00exit 1", "", "", int64(1_700_000_000), int64(1_700_000_030), 1)
	f.Add("failed", "", "", "exec: \"nope\": not found\n\x1b[31m", int64(0), int64(0), 0)
	f.Add("running", "python\x00train.py", "", "", int64(1_700_000_000), int64(0), 0)
	f.Add("exited", "", "killed", "", int64(1), int64(2), -1)
	f.Add("\xff", "\xff\xfe", "\xff", "\xff", int64(-1), int64(-1), 255)
	f.Fuzz(func(t *testing.T, state, argv, signal, errText string, started, exited int64, code int) {
		a := &agentproto.StartupStatus{State: state, Signal: signal, Error: errText, ExitCode: &code}
		if argv != "" {
			a.Command = strings.Split(argv, "\x00")
		}
		if started != 0 {
			s := time.Unix(started, 0)
			a.StartedAt = &s
		}
		if exited != 0 {
			e := time.Unix(exited, 0)
			a.ExitedAt = &e
		}
		st := startupStatus(a, time.Unix(1_700_000_100, 0))
		if st == nil {
			return
		}
		switch st.State {
		case "none", "running":
			if st.EventKey != "" {
				t.Fatalf("state %s got an event key %q", st.State, st.EventKey)
			}
		case "exited", "failed":
			if st.EventKey == "" {
				t.Fatalf("state %s without an event key", st.State)
			}
		default:
			t.Fatalf("unknown state %q kept", st.State)
		}
		for _, s := range []string{st.Signal, st.Error} {
			if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("unclean text kept: %q", s)
			}
		}
		if len(st.Error) > maxStartupText+len("…") || len(st.Signal) > 32+len("…") {
			t.Fatalf("text over its bound: %d, %d bytes", len(st.Error), len(st.Signal))
		}
		total := 0
		for _, arg := range st.Command {
			total += len(arg)
			if !utf8.ValidString(arg) || strings.ContainsFunc(arg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("argument %q kept", arg)
			}
		}
		if len(st.Command) > maxStartupArgs+1 || total > maxStartupArgBytes+len("…")*2 {
			t.Fatalf("argv over its bound: %d arguments, %d bytes", len(st.Command), total)
		}
		if s := StartupSummary(st); s == "" {
			t.Fatal("no summary")
		}
		_ = FailedReason(errText)
	})
}
