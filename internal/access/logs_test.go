package access_test

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// logsSession opens the logs subsystem as the gateway does (a raw
// session channel: x/crypto/ssh's Session cannot wait for a subsystem)
// and sends req.
type logsSession struct {
	ch     ssh.Channel
	stderr bytes.Buffer
	exit   chan int // the exit status, once
	errs   chan error
}

func openLogs(t *testing.T, f *fixture, req string) *logsSession {
	t.Helper()
	ch, reqs, err := goClient(t, f, f.instance).OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	ls := &logsSession{ch: ch, exit: make(chan int, 1), errs: make(chan error, 1)}
	go func() {
		for r := range reqs {
			if r.Type == "exit-status" && len(r.Payload) == 4 {
				ls.exit <- int(r.Payload[0])<<24 | int(r.Payload[1])<<16 | int(r.Payload[2])<<8 | int(r.Payload[3])
			}
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
		}
	}()
	ok, err := ch.SendRequest("subsystem", true, ssh.Marshal(struct{ Name string }{agentproto.LogsSubsystem}))
	if err != nil || !ok {
		t.Fatalf("subsystem request: %v %v", ok, err)
	}
	if _, err := io.WriteString(ch, req+"\n"); err != nil {
		t.Fatal(err)
	}
	return ls
}

// all reads the whole stream, its stderr and exit status.
func (ls *logsSession) all(t *testing.T) ([]byte, int) {
	t.Helper()
	errDone := make(chan struct{})
	go func() { defer close(errDone); _, _ = io.Copy(&ls.stderr, ls.ch.Stderr()) }()
	b, err := io.ReadAll(ls.ch)
	if err != nil {
		t.Fatal(err)
	}
	<-errDone
	select {
	case code := <-ls.exit:
		return b, code
	case <-time.After(30 * time.Second):
		t.Fatal("no exit status")
		return nil, 0
	}
}

// TestLogsSubsystem: the gateway reads the instance's output (here the
// init's own line and what is written to PID 1's stdout), follows it, and
// a bad request ends with one stderr line and exit status 1. The request
// names no instance: it is always the connection's.
func TestLogsSubsystem(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.inInstance("sh", "-c", "echo hello-from-the-instance > /proc/1/fd/1")

	deadline := time.Now().Add(30 * time.Second)
	for {
		b, code := openLogs(t, f, `{}`).all(t)
		if code != 0 {
			t.Fatalf("logs session: exit status %d", code)
		}
		if strings.Contains(string(b), "hello-from-the-instance") {
			if !strings.Contains(string(b), "instance stays up") {
				t.Errorf("logs %q lack the init's line", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs never showed the line: %q", b)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Follow: a line written after the request arrives.
	follow := openLogs(t, f, `{"follow":true,"tail":1}`)
	lines := bufio.NewScanner(follow.ch)
	if !lines.Scan() {
		t.Fatalf("follow: no first line: %v", lines.Err())
	}
	f.inInstance("sh", "-c", "echo followed-line > /proc/1/fd/1")
	for found := false; !found; {
		if !lines.Scan() {
			t.Fatalf("follow ended before the new line: %v", lines.Err())
		}
		found = strings.Contains(lines.Text(), "followed-line")
	}
	_ = follow.ch.Close()

	for _, bad := range []string{`{"instance_id":"i-other"}`, `{"tail":-1}`, `not json`, `{"follow":true}{"tail":1}`} {
		ls := openLogs(t, f, bad)
		b, code := ls.all(t)
		if stderr := ls.stderr.String(); code != 1 || len(b) != 0 ||
			!strings.HasPrefix(stderr, "gpurent logs: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("request %s: exit %d, stdout %q, stderr %q; want exit 1 and one stderr line", bad, code, b, stderr)
		}
	}
	f.waitEvent("logs session", func(e access.Event) bool { return e.Kind == access.KindLogs && !e.End.IsZero() })
}

// TestParseLogsRequest checks the bounds of the request line.
func TestParseLogsRequest(t *testing.T) {
	if r, err := access.ParseLogsRequest([]byte(`{"follow":true,"since":"2026-12-01T10:00:00Z","tail":5}`)); err != nil || !r.Follow || r.Tail != 5 || r.Since.IsZero() {
		t.Errorf("good request: %+v %v", r, err)
	}
	for _, bad := range []string{``, `{"tail":2000000}`, `{"x":1}`, `[]`, strings.Repeat(" ", 5000) + `{}`} {
		if _, err := access.ParseLogsRequest([]byte(bad)); err == nil {
			t.Errorf("%.40q accepted", bad)
		}
	}
}

func FuzzParseLogsRequest(f *testing.F) {
	f.Add([]byte(`{"follow":true,"tail":10}`))
	f.Add([]byte(`{"since":"2026-12-01T10:00:00.5+08:00"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := access.ParseLogsRequest(b)
		if err == nil && (r.Tail < 0 || len(b) > 4<<10) {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}
