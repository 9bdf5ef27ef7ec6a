package sshgate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sshgate"
	"golang.org/x/crypto/ssh"
)

func TestExecOutputAndExitCode(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, nil)
	r := h.ssh(h.ownerKey, instA, "", "echo hello; echo oops >&2; exit 7")
	if r.code != 7 || r.stdout != "hello\n" || !strings.Contains(r.stderr, "oops") {
		t.Fatalf("got code %d stdout %q stderr %q; want 7, hello, oops", r.code, r.stdout, r.stderr)
	}
	rec := h.audit.wait(t, "exec exit 7", func(r sshgate.Record) bool { return r.Kind == sshgate.KindExec })
	if rec.ExitStatus != 7 || rec.AccountID != accountA || rec.InstanceID != instA ||
		rec.Detail != "echo hello; echo oops >&2; exit 7" || rec.BytesOut < int64(len("hello\noops\n")) || rec.Refusal != "" {
		t.Errorf("exec record = %+v", rec)
	}
	login := h.audit.wait(t, "login", func(r sshgate.Record) bool { return r.Kind == sshgate.KindLogin })
	if login.Refusal != "" || login.AccountID != accountA || login.End.Before(login.Start) || !strings.HasPrefix(login.Detail, "SHA256:") {
		t.Errorf("login record = %+v", login)
	}

	// Everything a command writes reaches the client before its exit status,
	// and stdin reaches the command with its EOF.
	r = h.ssh(h.ownerKey, instA, "", "seq 1 200000; exit 3")
	if r.code != 3 || strings.Count(r.stdout, "\n") != 200000 || !strings.HasSuffix(r.stdout, "\n200000\n") {
		t.Fatalf("seq: code %d, %d lines, stderr %q", r.code, strings.Count(r.stdout, "\n"), r.stderr)
	}
	r = h.ssh(h.ownerKey, instA, "line one\nline two\n", "wc -l")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "2" {
		t.Fatalf("stdin: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// Environment passes through (the agent decides what it accepts).
	all := append(h.opts(h.ownerKey), "-o", "SetEnv=GPURENT_X=42", "-p", h.port, instA+"@127.0.0.1", "echo $GPURENT_X")
	r = h.run("", "ssh", all...)
	if r.code != 0 || r.stdout != "42\n" {
		t.Fatalf("env: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestShellWithPTY(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, nil)
	r := h.ssh(h.ownerKey, instA, "tty; stty size; exit 5\n", "-tt")
	if r.code != 5 || !strings.Contains(r.stdout, "/dev/pts/") {
		t.Fatalf("ssh -tt: code %d stdout %q stderr %q; want 5 and a /dev/pts terminal", r.code, r.stdout, r.stderr)
	}
	rec := h.audit.wait(t, "shell", func(r sshgate.Record) bool { return r.Kind == sshgate.KindShell })
	if rec.ExitStatus != 5 {
		t.Errorf("shell record = %+v", rec)
	}
}

// OpenSSH only sends window-change when its own terminal is resized, which a
// test cannot do to it; the Go client sends the same request.
func TestWindowChangeAndSignal(t *testing.T) {
	h := newHarness(t, nil)
	c := h.mustGoClient(h.ownerSig, instA)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RequestPty("xterm", 40, 100, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	stdin, _ := s.StdinPipe()
	out := &syncBuffer{}
	s.Stdout = out
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "stty size\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "40 100")
	if err := s.WindowChange(50, 132); err != nil {
		t.Fatal(err)
	}
	// The resize and the next keystrokes travel separately; ask until the
	// shell sees the new size.
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(out.String(), "50 132") {
		if time.Now().After(deadline) {
			t.Fatalf("the shell never saw the new size; output %q", out.String())
		}
		_, _ = io.WriteString(stdin, "stty size\n")
		time.Sleep(20 * time.Millisecond)
	}
	_, _ = io.WriteString(stdin, "exit 9\n")
	err = s.Wait()
	if ee, ok := err.(*ssh.ExitError); !ok || ee.ExitStatus() != 9 {
		t.Fatalf("shell ended with %v, want exit status 9", err)
	}

	// A signal reaches the command, and its death comes back as exit-signal.
	s2, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	out2 := &syncBuffer{}
	s2.Stdout = out2
	if err := s2.Start("echo started; exec sleep 60"); err != nil {
		t.Fatal(err)
	}
	out2.waitFor(t, "started")
	for {
		// sh has exec'd sleep only once it printed; retry until it takes.
		if err := s2.Signal(ssh.SIGINT); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s2.Wait() }()
		select {
		case err := <-done:
			if ee, ok := err.(*ssh.ExitError); !ok || ee.Signal() != "INT" {
				t.Fatalf("command ended with %v, want signal INT", err)
			}
			rec := h.audit.wait(t, "exit signal", func(r sshgate.Record) bool { return r.ExitSignal == "INT" })
			if rec.Kind != sshgate.KindExec {
				t.Errorf("signal record = %+v", rec)
			}
			return
		case <-time.After(testTimeout):
			t.Fatal("SIGINT did not end the command")
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q: %q", s, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func randomFile(t *testing.T, path string, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSCPBothWays(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, nil)
	local := t.TempDir()
	up := randomFile(t, filepath.Join(local, "up.bin"), 3<<20+17)
	down := randomFile(t, filepath.Join(h.agent.root, "down.bin"), 2<<20+5)
	remote := instA + "@127.0.0.1:"
	for _, mode := range []struct {
		name string
		flag []string
	}{{"sftp protocol", nil}, {"legacy scp protocol", []string{"-O"}}} {
		t.Run(mode.name, func(t *testing.T) {
			args := append(append(h.opts(h.ownerKey), "-P", h.port), mode.flag...)
			r := h.run("", "scp", append(args, filepath.Join(local, "up.bin"), remote+"up.bin")...)
			if r.code != 0 {
				t.Fatalf("scp up: %d %s", r.code, r.stderr)
			}
			got, err := os.ReadFile(filepath.Join(h.agent.root, "up.bin"))
			if err != nil || !bytes.Equal(got, up) {
				t.Fatalf("uploaded file differs (%d bytes, err %v)", len(got), err)
			}
			dst := filepath.Join(local, "down-"+fmt.Sprint(len(mode.flag)))
			r = h.run("", "scp", append(args, remote+"down.bin", dst)...)
			if r.code != 0 {
				t.Fatalf("scp down: %d %s", r.code, r.stderr)
			}
			got, err = os.ReadFile(dst)
			if err != nil || !bytes.Equal(got, down) {
				t.Fatalf("downloaded file differs (%d bytes, err %v)", len(got), err)
			}
			os.Remove(filepath.Join(h.agent.root, "up.bin"))
		})
	}
	h.audit.wait(t, "sftp session", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindSFTP && r.BytesIn > 3<<20 && r.ExitStatus == 0
	})
	h.audit.wait(t, "legacy scp exec", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindExec && strings.HasPrefix(r.Detail, "scp ")
	})
}

func TestSFTPBatch(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, nil)
	local := t.TempDir()
	data := randomFile(t, filepath.Join(local, "data.bin"), 1<<20+3)
	batch := filepath.Join(local, "batch")
	script := fmt.Sprintf("mkdir work\ncd work\nput %s data.bin\nls -l\nrename data.bin moved.bin\nget moved.bin %s\n",
		filepath.Join(local, "data.bin"), filepath.Join(local, "back.bin"))
	if err := os.WriteFile(batch, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(h.opts(h.ownerKey), "-P", h.port, "-b", batch, instA+"@127.0.0.1")
	r := h.run("", "sftp", args...)
	if r.code != 0 || !strings.Contains(r.stdout, "data.bin") {
		t.Fatalf("sftp -b: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{filepath.Join(h.agent.root, "work", "moved.bin"), filepath.Join(local, "back.bin")} {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s differs (%d bytes, err %v)", p, len(got), err)
		}
	}
}

// loopbackHTTP serves body on a loopback port, as an application inside the
// instance would.
func loopbackHTTP(t testing.TB, handler http.Handler) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: testTimeout}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestLocalForward(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, nil)
	appPort := loopbackHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "inside the instance: %s", r.URL.Path)
	}))
	for _, dest := range []string{"localhost", "127.0.0.1"} {
		localPort := freePort(t)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		args := append(h.opts(h.ownerKey), "-N", "-o", "ExitOnForwardFailure=yes",
			"-L", fmt.Sprintf("127.0.0.1:%d:%s:%d", localPort, dest, appPort), "-p", h.port, instA+"@127.0.0.1")
		cmd := exec.CommandContext(ctx, "ssh", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var body string
		for body == "" {
			if ctx.Err() != nil {
				t.Fatalf("the forward never answered; ssh said %s", stderr.String())
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/hello", localPort))
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		cancel()
		_ = cmd.Wait()
		if body != "inside the instance: /hello" {
			t.Fatalf("GET through ssh -L = %q", body)
		}
	}
	want := fmt.Sprintf("127.0.0.1:%d", appPort)
	rec := h.audit.wait(t, "forward", func(r sshgate.Record) bool { return r.Kind == sshgate.KindForward && r.Refusal == "" })
	if rec.Detail != want || rec.BytesOut == 0 || rec.BytesIn == 0 {
		t.Errorf("forward record = %+v, want detail %s", rec, want)
	}
}

func TestRefusals(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, nil)

	refused := func(t *testing.T, r result, words string) {
		t.Helper()
		t.Logf("the customer sees: %q", r.stderr)
		if r.code != 255 || !strings.Contains(r.stderr, words) || r.stdout != "" {
			t.Fatalf("code %d stdout %q stderr %q; want 255 and %q", r.code, r.stdout, r.stderr, words)
		}
	}
	t.Run("unknown key", func(t *testing.T) {
		r := h.ssh(h.strangeKey, instA, "", "echo in")
		refused(t, r, "Permission denied (publickey)")
		h.audit.wait(t, "unknown key refusal", func(r sshgate.Record) bool {
			return r.Refusal == "unknown key" && r.AccountID == "" && r.InstanceID == instA && strings.HasPrefix(r.Detail, "SHA256:")
		})
	})
	t.Run("key of another account", func(t *testing.T) {
		foreign := h.ssh(h.otherKey, instA, "", "echo in")
		refused(t, foreign, "Permission denied (publickey)")
		// Another account's instance and no instance at all read the same.
		missing := h.ssh(h.otherKey, "i-nonexistent", "", "echo in")
		refused(t, missing, "Permission denied (publickey)")
		norm := func(s, id string) string { return strings.ReplaceAll(s, id, "ID") }
		if norm(foreign.stderr, instA) != norm(missing.stderr, "i-nonexistent") {
			t.Errorf("another account's instance and a missing one read differently:\n%q\n%q", foreign.stderr, missing.stderr)
		}
		if !strings.Contains(foreign.stderr, "there is no instance") {
			t.Errorf("no banner: %q", foreign.stderr)
		}
		h.audit.wait(t, "foreign refusal", func(r sshgate.Record) bool {
			return r.Refusal == "no such instance" && r.AccountID == accountB && r.InstanceID == instA
		})
	})
	t.Run("stopped instance", func(t *testing.T) {
		r := h.ssh(h.ownerKey, instStop, "", "echo in")
		refused(t, r, "instance "+instStop+" is not running: it is stopped")
		h.audit.wait(t, "stopped refusal", func(r sshgate.Record) bool {
			return strings.HasPrefix(r.Refusal, "instance not running") && r.InstanceID == instStop
		})
	})
	t.Run("agent unreachable", func(t *testing.T) {
		r := h.ssh(h.ownerKey, instDown, "", "echo in")
		refused(t, r, "the host of instance "+instDown+" is unreachable")
		h.audit.wait(t, "unreachable refusal", func(r sshgate.Record) bool {
			return r.Refusal == "agent unreachable" && r.InstanceID == instDown
		})
	})
	t.Run("agent with the wrong host key", func(t *testing.T) {
		r := h.ssh(h.ownerKey, instBad, "", "echo in")
		refused(t, r, "the host of instance "+instBad+" is unreachable")
	})
	t.Run("forward outside the instance", func(t *testing.T) {
		// ssh -W opens one direct-tcpip channel and reports its refusal.
		for _, dest := range []string{"10.1.2.3:80", "example.com:443", "0.0.0.0:22", "[::ffff:10.0.0.1]:22"} {
			r := h.ssh(h.ownerKey, instA, "", "-W", dest)
			refused(t, r, "administratively prohibited")
			if !strings.Contains(r.stderr, "only ports on the instance's own loopback") {
				t.Errorf("-W %s: %q", dest, r.stderr)
			}
		}
		h.audit.wait(t, "forward refusal", func(r sshgate.Record) bool {
			return r.Kind == sshgate.KindForward && r.Refusal == "destination outside the instance" && r.Detail == "10.1.2.3:80"
		})
		c := h.mustGoClient(h.ownerSig, instA)
		if _, err := c.Dial("tcp", "192.168.1.1:22"); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Go client dial outside: %v", err)
		}
		if _, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
			t.Errorf("remote forwarding was accepted")
		}
		h.audit.wait(t, "remote forward refusal", func(r sshgate.Record) bool {
			return r.Kind == sshgate.KindForward && strings.HasPrefix(r.Detail, "remote ")
		})
		// Agent forwarding and other channel types are refused too.
		if _, _, err := c.OpenChannel("x11", nil); err == nil {
			t.Errorf("x11 channel accepted")
		}
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if ok, err := s.SendRequest("auth-agent-req@openssh.com", true, nil); ok || err != nil {
			t.Errorf("agent forwarding: ok %v err %v", ok, err)
		}
	})
}

func TestSessionLimit(t *testing.T) {
	requireOpenSSH(t)
	h := newHarness(t, func(c *sshgate.Config) { c.MaxSessionsPerAccount = 2 })
	first := h.mustGoClient(h.ownerSig, instA)
	h.mustGoClient(h.ownerSig, instA)
	r := h.ssh(h.ownerKey, instA, "", "echo in")
	if r.code != 255 || !strings.Contains(r.stderr, "already has 2 open connections") {
		t.Fatalf("third connection: code %d stderr %q", r.code, r.stderr)
	}
	h.audit.wait(t, "limit refusal", func(r sshgate.Record) bool { return r.Refusal == "session limit" })
	// Another account is not affected.
	other := h.ssh(h.otherKey, instB, "", "echo in")
	if other.code != 0 || other.stdout != "in\n" {
		t.Fatalf("account B: %+v", other)
	}
	// A closed connection frees its slot (once the gateway saw it close).
	first.Close()
	h.audit.wait(t, "first logout", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindLogin && r.Refusal == "" && r.AccountID == accountA
	})
	r = h.ssh(h.ownerKey, instA, "", "echo in")
	if r.code != 0 || r.stdout != "in\n" {
		t.Fatalf("after a close: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestAgentConnectionShared(t *testing.T) {
	h := newHarness(t, nil)
	for range 3 {
		c := h.mustGoClient(h.ownerSig, instA)
		for range 2 {
			s, err := c.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			if out, err := s.Output("echo ok"); err != nil || string(out) != "ok\n" {
				t.Fatalf("exec: %q %v", out, err)
			}
		}
		c.Close()
	}
	if n := h.agent.logins.Load(); n != 1 {
		t.Errorf("the gateway logged in to the agent %d times for one instance, want 1", n)
	}
}

func TestIdleTimeoutAndKeepalive(t *testing.T) {
	h := newHarness(t, func(c *sshgate.Config) {
		c.IdleTimeout = 300 * time.Millisecond
		c.KeepaliveInterval = 50 * time.Millisecond
		c.KeepaliveCountMax = 2
	})
	// An idle connection is closed even though keepalives are answered.
	c := h.mustGoClient(h.ownerSig, instA)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("idle connection not closed")
	}
	h.audit.wait(t, "idle end", func(r sshgate.Record) bool { return r.Kind == sshgate.KindLogin && r.EndReason == "idle timeout" })

	// A client that stops answering is dropped: put a pausable pipe between.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	frozen := make(chan struct{})
	go func() {
		cl, err := ln.Accept()
		if err != nil {
			return
		}
		gw, err := net.Dial("tcp", h.addr)
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(gw, cl) }()
		// Toward the client: pass until frozen, then swallow everything.
		buf := make([]byte, 32<<10)
		for {
			n, err := gw.Read(buf)
			if err != nil {
				cl.Close()
				return
			}
			select {
			case <-frozen:
				continue
			default:
			}
			if _, err := cl.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	fc, err := ssh.Dial("tcp", ln.Addr().String(), &ssh.ClientConfig{
		User: instA, Auth: []ssh.AuthMethod{ssh.PublicKeys(h.ownerSig)},
		HostKeyCallback: ssh.FixedHostKey(h.gw.HostKey()), Timeout: testTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	s, err := fc.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("sleep 60"); err != nil { // keeps the connection busy, not idle
		t.Fatal(err)
	}
	close(frozen)
	h.audit.wait(t, "keepalive end", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindLogin && r.EndReason == "keepalive timeout"
	})
}

func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t, nil)
	c := h.mustGoClient(h.ownerSig, instA)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("sleep 60"); err != nil {
		t.Fatal(err)
	}
	h.stop() // checks Serve returns nil
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("client connection survived shutdown")
	}
	h.audit.wait(t, "shutdown end", func(r sshgate.Record) bool { return r.Kind == sshgate.KindLogin && r.EndReason == "shutdown" })
	h.audit.wait(t, "session record", func(r sshgate.Record) bool { return r.Kind == sshgate.KindExec && r.Detail == "sleep 60" })
	if _, err := net.DialTimeout("tcp", h.addr, time.Second); err == nil {
		t.Errorf("the listener still accepts after shutdown")
	}
}

func TestLoadOrCreateHostKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "host")
	k1, err := sshgate.LoadOrCreateHostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v err %v, want 0600", st.Mode(), err)
	}
	if k1.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("key type %s", k1.PublicKey().Type())
	}
	k2, err := sshgate.LoadOrCreateHostKey(path)
	if err != nil || !bytes.Equal(k1.PublicKey().Marshal(), k2.PublicKey().Marshal()) {
		t.Fatalf("the key changed on reload (err %v)", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sshgate.LoadOrCreateHostKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key was accepted: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	if _, err := sshgate.LoadOrCreateHostKey(bad); err == nil {
		t.Errorf("garbage accepted as a key")
	}
}
