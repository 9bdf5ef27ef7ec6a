// Package smtptest runs a real SMTP server on loopback for tests: aiosmtpd
// (Debian's python3-aiosmtpd), delivering into a Maildir that the test
// reads back. A missing aiosmtpd fails the test (the fast tier skips it:
// internal/testtier).
//
// It is ordinary (non-test) code so that the tests of several packages can
// share it; nothing in the product imports it.
package smtptest

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/testtier"
)

// Missing is the failure message when no Python has aiosmtpd.
const Missing = "aiosmtpd not found: run `make test`, which installs python3-aiosmtpd (Debian)"

// Server is a running aiosmtpd.
type Server struct {
	// Addr is its host:port on 127.0.0.1.
	Addr string
	dir  string
}

// Options are the server's TLS settings: with CertFile and KeyFile it
// offers STARTTLS and requires it before a message.
type Options struct {
	CertFile, KeyFile string
}

// python is an interpreter that has aiosmtpd: Debian's own first (a
// python3 earlier on PATH may be another installation without it).
func python(t testing.TB) string {
	t.Helper()
	testtier.Require(t, "aiosmtpd (an SMTP server)")
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import aiosmtpd").Run() == nil {
			return p
		}
	}
	t.Fatal(Missing)
	return ""
}

// Start runs a server until the test ends.
func Start(t testing.TB, opt Options) *Server {
	t.Helper()
	py := python(t)
	dir := t.TempDir()
	s := &Server{dir: filepath.Join(dir, "maildir")}
	for attempt := 0; ; attempt++ {
		s.Addr = freePort(t)
		args := []string{"-m", "aiosmtpd", "-n", "-l", s.Addr, "-c", "aiosmtpd.handlers.Mailbox"}
		if opt.CertFile != "" {
			args = append(args, "--tlscert", opt.CertFile, "--tlskey", opt.KeyFile)
		}
		cmd := exec.Command(py, append(args, s.dir)...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start aiosmtpd: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if s.ready(exited) {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return s
		}
		cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("aiosmtpd did not listen on %s: %s", s.Addr, stderr.String())
		}
	}
}

// freePort is a loopback address nothing listens on just now.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ready waits up to 10 s for the server to accept connections; false when
// it exited first (the port was taken meanwhile) or never listened.
func (s *Server) ready(exited <-chan error) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// Message is one delivered message, decoded.
type Message struct {
	Raw     []byte
	Header  mail.Header
	Subject string // decoded from its encoded words
	Body    string // decoded from its transfer encoding
}

// Messages are those delivered so far, oldest first.
func (s *Server) Messages(t testing.TB) []Message {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.dir, "new"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names) // Maildir names start with the delivery time
	var out []Message
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(s.dir, "new", n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decode(t, raw))
	}
	return out
}

// Wait returns the messages once there are at least n, failing the test
// after timeout.
func (s *Server) Wait(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msgs := s.Messages(t)
		if len(msgs) >= n {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages delivered after %s, want %d", len(msgs), timeout, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// decode parses a stored message and undoes its encodings.
func decode(t testing.TB, raw []byte) Message {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("a delivered message does not parse: %v\n%s", err, raw)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("subject %q: %v", m.Header.Get("Subject"), err)
	}
	body, err := io.ReadAll(m.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "base64") {
		if body, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(body)), "")); err != nil {
			t.Fatalf("body is not base64: %v", err)
		}
	}
	return Message{Raw: raw, Header: m.Header, Subject: subject, Body: string(body)}
}
