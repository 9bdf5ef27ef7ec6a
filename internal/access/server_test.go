//go:build linux

package access_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/access/accesstest"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/testtier"
)

// requireTools fails the test when an OpenSSH client program is missing.
func requireTools(t testing.TB) {
	t.Helper()
	testtier.Require(t, "the OpenSSH client")
	for _, tool := range []string{"ssh", "scp", "sftp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (openssh-client): run `make test`, which installs it", tool)
		}
	}
}

// fixture is an access server on loopback over the real Docker runtime,
// a client key it trusts, and a running busybox instance.
type fixture struct {
	t          testing.TB
	rt         *docker.Runtime
	srv        *access.Server
	addr       *net.TCPAddr
	dir        string
	key        string // client private key file
	knownHosts string
	instance   string
	container  string

	mu     sync.Mutex
	events []access.Event
}

func newFixture(t testing.TB, tweak func(*access.Config)) *fixture {
	t.Helper()
	requireTools(t)
	dockertest.Require(t)
	ctx := context.Background()
	f := &fixture{t: t, dir: t.TempDir()}
	// A scope of its own: the runtime sees only this test's containers.
	rt, err := docker.New(ctx, docker.Config{Network: "none", InitBinary: dockertest.InitBinary(t), Scope: "access-" + dockertest.NewInstanceID()})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	f.rt = rt
	f.instance = f.runInstance()
	f.container = docker.ContainerName(f.instance)

	hostKey, err := access.LoadOrCreateHostKey(filepath.Join(f.dir, "host_key"))
	if err != nil {
		t.Fatal(err)
	}
	clientPub := f.writeKey("id_ed25519")
	f.key = filepath.Join(f.dir, "id_ed25519")

	cfg := access.Config{
		HostKey:     hostKey,
		TrustedKeys: []ssh.PublicKey{clientPub},
		Runtime:     rt,
		SFTPHelper:  accesstest.SFTPHelper(t),
		Logger:      slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Audit: func(e access.Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := access.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().(*net.TCPAddr)
	serveCtx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("Serve did not return after its context ended")
		}
	})

	line := fmt.Sprintf("[127.0.0.1]:%d %s", f.addr.Port, ssh.MarshalAuthorizedKey(hostKey.PublicKey()))
	f.knownHosts = filepath.Join(f.dir, "known_hosts")
	if err := os.WriteFile(f.knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// runInstance starts a busybox instance under the fixture's runtime.
func (f *fixture) runInstance() string {
	f.t.Helper()
	id := dockertest.NewInstanceID()
	dockertest.Cleanup(f.t, id)
	spec := runtime.Spec{
		InstanceID:   id,
		AllocationID: gpurent.NewID(gpurent.PrefixAllocation),
		Image:        dockertest.BusyboxImage(f.t),
		CPUMilli:     1000,
		MemoryMiB:    256,
		VolumeName:   gpurent.NewID(gpurent.PrefixVolume),
		VolumeGiB:    1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rt.Run(ctx, spec); err != nil {
		f.t.Fatalf("Run: %v", err)
	}
	return id
}

// writeKey writes a fresh ed25519 key pair in OpenSSH's format.
func (f *fixture) writeKey(name string) ssh.PublicKey {
	f.t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
		f.t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		f.t.Fatal(err)
	}
	return sshPub
}

// opts are the OpenSSH options every client uses: our key only, our
// known_hosts only, strict host key checking, no prompts, no user config.
func (f *fixture) opts(key string) []string {
	return []string{
		"-F", "/dev/null",
		"-i", key,
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-o", "UserKnownHostsFile=" + f.knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes",
		"-o", "ConnectTimeout=20",
		"-o", "LogLevel=ERROR",
	}
}

// sshArgs is an ssh command line to user@server.
func (f *fixture) sshArgs(user string, extra ...string) []string {
	args := append(f.opts(f.key), "-p", strconv.Itoa(f.addr.Port))
	args = append(args, extra...)
	return append(args, user+"@127.0.0.1")
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs an OpenSSH client program to its end, bounded in time.
func (f *fixture) run(stdin string, name string, args ...string) result {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		f.t.Fatalf("%s %q did not end in time\nstdout: %s\nstderr: %s", name, args, stdout.String(), stderr.String())
	case errors.As(err, &exitErr):
	case err != nil:
		f.t.Fatalf("%s: %v", name, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// ssh runs a remote command in the fixture's instance.
func (f *fixture) ssh(stdin string, command ...string) result {
	f.t.Helper()
	return f.run(stdin, "ssh", append(f.sshArgs(f.instance), command...)...)
}

// inInstance runs a command in the instance with docker exec, directly.
func (f *fixture) inInstance(cmd ...string) string {
	f.t.Helper()
	return dockertest.MustExec(f.t, dockertest.Client(f.t), f.container, cmd...)
}

// waitEvent waits (bounded) for an audit event matching ok.
func (f *fixture) waitEvent(what string, ok func(access.Event) bool) access.Event {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		for _, e := range f.events {
			if ok(e) {
				f.mu.Unlock()
				return e
			}
		}
		all := fmt.Sprintf("%+v", f.events)
		f.mu.Unlock()
		if time.Now().After(deadline) {
			f.t.Fatalf("no audit event %s; have %s", what, all)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecThroughOpenSSH(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)

	if r := f.ssh("", "echo", "hi"); r.stdout != "hi\n" || r.code != 0 {
		t.Errorf("ssh echo hi = %+v, want hi", r)
	}
	if r := f.ssh("", "sh -c 'exit 7'"); r.code != 7 {
		t.Errorf("exit 7 gave exit code %d (%+v)", r.code, r)
	}
	if r := f.ssh("", "echo out; echo err >&2"); r.stdout != "out\n" || r.stderr != "err\n" {
		t.Errorf("stdout/stderr = %q / %q, want them apart", r.stdout, r.stderr)
	}
	// stdin reaches the command and its EOF ends it; a big output
	// arrives whole before the exit status.
	input := strings.Repeat("x", 3<<20)
	if r := f.ssh(input, "wc -c; head -c 5000000 /dev/zero | tr '\\0' y"); !strings.HasPrefix(r.stdout, strconv.Itoa(len(input))+"\n") ||
		len(r.stdout) != len(strconv.Itoa(len(input)))+1+5000000 || r.code != 0 {
		t.Errorf("wc -c of 3 MiB then 5 MB of output: %d bytes out, prefix %q, exit %d", len(r.stdout), r.stdout[:min(20, len(r.stdout))], r.code)
	}
	// Commands start in the home directory, as with sshd.
	if r := f.ssh("", "pwd"); r.stdout != "/root\n" {
		t.Errorf("pwd = %q, want /root", r.stdout)
	}
	// A safe subset of the environment passes.
	cmd := exec.Command("ssh", append(f.sshArgs(f.instance, "-o", "SendEnv=LANG LC_TIME SECRET_X"), "echo $LANG/$LC_TIME/$SECRET_X.")...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_TIME=en_GB.UTF-8", "SECRET_X=leak")
	out, err := cmd.Output()
	if err != nil || string(out) != "C.UTF-8/en_GB.UTF-8/.\n" {
		t.Errorf("env through SendEnv = %q, %v; want LANG and LC_TIME only", out, err)
	}

	e := f.waitEvent("exec exit 7", func(e access.Event) bool {
		return e.Kind == access.KindExec && e.Command == "sh -c 'exit 7'" && !e.End.IsZero()
	})
	if e.ExitCode != 7 || e.Instance != f.instance || e.KeyFingerprint == "" || e.Err != "" || e.Start.After(e.End) {
		t.Errorf("audit of exit 7 = %+v", e)
	}
	e = f.waitEvent("the big exec", func(e access.Event) bool {
		return e.Kind == access.KindExec && strings.HasPrefix(e.Command, "wc -c") && !e.End.IsZero()
	})
	if e.BytesIn != int64(len(input)) || e.BytesOut < 5000000 {
		t.Errorf("audit bytes = in %d, out %d; want %d in, over 5 MB out", e.BytesIn, e.BytesOut, len(input))
	}
}

func TestShellWithTerminal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	r := f.ssh("tty\necho cols=$COLUMNS term=$TERM\nexit 5\n", "-tt")
	if !strings.Contains(r.stdout, "/dev/pts/") || r.code != 5 {
		t.Errorf("ssh -tt shell: exit %d, output %q; want a pts and exit 5", r.code, r.stdout)
	}
	if e := f.waitEvent("shell end", func(e access.Event) bool { return e.Kind == access.KindShell && !e.End.IsZero() }); !e.TTY || e.ExitCode != 5 {
		t.Errorf("shell audit = %+v", e)
	}
}

// goClient dials the fixture with the x/crypto SSH client, for what the
// OpenSSH command line cannot drive: window changes and signals.
func goClient(t *testing.T, f *fixture, user string) *ssh.Client {
	t.Helper()
	return goClientAt(t, f, f.addr.String(), user)
}

func goClientAt(t *testing.T, f *fixture, addr, user string) *ssh.Client {
	t.Helper()
	c, err := goDial(t, f, addr, user)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// goDial dials user@addr with the fixture's key; the client is closed when
// the test ends.
func goDial(t *testing.T, f *fixture, addr, user string) (*ssh.Client, error) {
	t.Helper()
	pemBytes, err := os.ReadFile(f.key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	hostKeys, err := os.ReadFile(f.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	_, _, hostKey, _, _, err := ssh.ParseKnownHosts(hostKeys)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey), Timeout: 20 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, nil
}

func TestWindowChangeAndSignal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := goClient(t, f, f.instance)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out syncBuffer
	s.Stdout = &out
	stdin, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 30, 100, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(want string) {
		t.Helper()
		for !strings.Contains(out.String(), want) {
			select {
			case <-ctx.Done():
				t.Fatalf("no %q in the terminal:\n%s", want, out.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	fmt.Fprintln(stdin, "echo size=$(stty size) term=$TERM")
	waitFor("size=30 100 term=xterm")
	if err := s.WindowChange(45, 132); err != nil {
		t.Fatal(err)
	}
	// The resize travels as a request, apart from the data: ask until
	// the shell sees it.
	for !strings.Contains(out.String(), "size=45 132") {
		fmt.Fprintln(stdin, "echo size=$(stty size)")
		select {
		case <-ctx.Done():
			t.Fatalf("the terminal never got 45x132:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Fprintln(stdin, "exit")
	if err := s.Wait(); err != nil {
		t.Errorf("shell exit: %v", err)
	}

	// A signal reaches the command; one that kills it comes back as
	// exit-signal.
	s2, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var out2 syncBuffer
	s2.Stdout = &out2
	if err := s2.Start("echo started; exec sleep 600"); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out2.String(), "started") {
		select {
		case <-ctx.Done():
			t.Fatal("sleep never started")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := s2.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = s2.Wait()
	var exitErr *ssh.ExitError
	if !errors.As(err, &exitErr) || exitErr.Signal() != "TERM" {
		t.Errorf("sleep after SIGTERM: %v, want exit-signal TERM", err)
	}
}

func TestSCPBothWays(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	local := filepath.Join(f.dir, "up.bin")
	payload := make([]byte, 2<<20+17)
	_, _ = rand.Read(payload)
	if err := os.WriteFile(local, payload, 0o640); err != nil {
		t.Fatal(err)
	}
	scp := func(from, to string) result {
		args := append(f.opts(f.key), "-P", strconv.Itoa(f.addr.Port), from, to)
		return f.run("", "scp", args...)
	}
	remote := f.instance + "@127.0.0.1:"
	for _, dst := range []string{"/root/data/up.bin", "/tmp/up.bin", "relative.bin"} {
		if r := scp(local, remote+dst); r.code != 0 {
			t.Fatalf("scp up to %s: %+v", dst, r)
		}
	}
	sum := f.inInstance("sh", "-c", "md5sum /root/data/up.bin /tmp/up.bin /root/relative.bin | cut -d' ' -f1 | uniq; stat -c '%u:%g %s' /root/data/up.bin")
	lines := strings.Split(strings.TrimSpace(sum), "\n")
	if len(lines) != 2 || lines[1] != "0:0 "+strconv.Itoa(len(payload)) {
		t.Errorf("uploaded files in the instance: %q; want one checksum and owner 0:0 size %d", sum, len(payload))
	}
	// Nothing of it landed on the host.
	if _, err := os.Stat("/root/data/up.bin"); err == nil {
		t.Errorf("/root/data/up.bin exists on the host")
	}

	f.inInstance("sh", "-c", "head -c 1234567 /dev/urandom > /root/data/down.bin")
	down := filepath.Join(f.dir, "down.bin")
	if r := scp(remote+"/root/data/down.bin", down); r.code != 0 {
		t.Fatalf("scp down: %+v", r)
	}
	got, err := os.ReadFile(down)
	if err != nil {
		t.Fatal(err)
	}
	want := f.inInstance("md5sum", "/root/data/down.bin")
	if len(got) != 1234567 || !strings.HasPrefix(want, md5hex(got)) {
		t.Errorf("downloaded %d bytes, checksum %s; instance has %q", len(got), md5hex(got), want)
	}
	if e := f.waitEvent("sftp end", func(e access.Event) bool { return e.Kind == access.KindSFTP && !e.End.IsZero() }); e.ExitCode != 0 || e.BytesIn == 0 {
		t.Errorf("sftp audit = %+v", e)
	}
}

func TestSFTPBatchAndSymlinksStayInside(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.inInstance("sh", "-c", "ln -s /etc/hostname /tmp/hostlink && ln -s ../../../../../../etc/hostname /root/data/rel && echo inside > /tmp/marker")
	containerHost := strings.TrimSpace(f.inInstance("cat", "/etc/hostname"))
	hostHost, _ := os.ReadFile("/etc/hostname")
	if containerHost == strings.TrimSpace(string(hostHost)) {
		t.Fatalf("the container's hostname equals the host's (%q): the test cannot tell them apart", containerHost)
	}

	upload := filepath.Join(f.dir, "batch.txt")
	if err := os.WriteFile(upload, []byte("batch upload\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	batch := strings.Join([]string{
		"mkdir /root/data/d",
		"put " + upload + " /root/data/d/b.txt",
		"rename /root/data/d/b.txt /root/data/d/c.txt",
		"ls -l /root/data/d",
		"get /tmp/hostlink " + filepath.Join(f.dir, "via-abs-link"),
		"get /root/data/rel " + filepath.Join(f.dir, "via-rel-link"),
		"get ../../../../etc/hostname " + filepath.Join(f.dir, "via-dotdot"),
		"get /tmp/marker " + filepath.Join(f.dir, "marker"),
		"pwd",
	}, "\n") + "\n"
	batchFile := filepath.Join(f.dir, "batch")
	if err := os.WriteFile(batchFile, []byte(batch), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(f.opts(f.key), "-P", strconv.Itoa(f.addr.Port), "-b", batchFile, f.instance+"@127.0.0.1")
	r := f.run("", "sftp", args...)
	if r.code != 0 {
		t.Fatalf("sftp -b: %+v", r)
	}
	if !strings.Contains(r.stdout, "c.txt") || !strings.Contains(r.stdout, "Remote working directory: /root") {
		t.Errorf("sftp output lacks the listing or the home directory:\n%s", r.stdout)
	}
	for _, name := range []string{"via-abs-link", "via-rel-link", "via-dotdot"} {
		b, err := os.ReadFile(filepath.Join(f.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != containerHost {
			t.Errorf("%s read %q; want the instance's hostname %q (never the host's)", name, got, containerHost)
		}
	}
	if got := f.inInstance("cat", "/root/data/d/c.txt"); got != "batch upload\n" {
		t.Errorf("renamed upload holds %q", got)
	}
}

func TestForwardIntoNetworkNoneInstance(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.inInstance("sh", "-c", "mkdir -p /tmp/www && echo hello-from-instance > /tmp/www/index.html && httpd -p 127.0.0.1:8080 -h /tmp/www")

	port := freePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := f.sshArgs(f.instance, "-N", "-o", "ExitOnForwardFailure=yes",
		"-L", fmt.Sprintf("127.0.0.1:%d:localhost:8080", port))
	fwd := exec.CommandContext(ctx, "ssh", args...)
	var fwdErr syncBuffer
	fwd.Stderr = &fwdErr
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fwd.Process.Kill(); _ = fwd.Wait() })

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	var body []byte
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET %s through the forward never answered: %v\nssh: %s", url, err, fwdErr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if string(body) != "hello-from-instance\n" {
		t.Errorf("GET through the forward = %q", body)
	}
	// The host's own loopback has nothing on 8080 for the instance to
	// answer from: the body came from inside the instance.
	e := f.waitEvent("forward end", func(e access.Event) bool { return e.Kind == access.KindForward && !e.End.IsZero() })
	if e.Command != "127.0.0.1:8080" || e.BytesOut == 0 || e.Err != "" {
		t.Errorf("forward audit = %+v", e)
	}

	// ssh -W uses the same channel type: a stdio forward to the httpd.
	r := f.run("GET / HTTP/1.0\r\n\r\n", "ssh", append(f.opts(f.key), "-p", strconv.Itoa(f.addr.Port), "-W", "127.0.0.1:8080", f.instance+"@127.0.0.1")...)
	if !strings.Contains(r.stdout, "hello-from-instance") {
		t.Errorf("ssh -W to the httpd: %+v", r)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)

	t.Run("untrusted key", func(t *testing.T) {
		f.writeKey("stranger")
		args := append(f.opts(filepath.Join(f.dir, "stranger")), "-p", strconv.Itoa(f.addr.Port), f.instance+"@127.0.0.1", "echo", "in")
		r := f.run("", "ssh", args...)
		if r.code != 255 || r.stdout != "" || !strings.Contains(r.stderr, "Permission denied") {
			t.Errorf("untrusted key: %+v; want permission denied", r)
		}
	})
	t.Run("unknown instance", func(t *testing.T) {
		user := dockertest.NewInstanceID()
		r := f.run("", "ssh", append(f.sshArgs(user), "echo", "in")...)
		if r.code != 255 || !strings.Contains(r.stderr, "Permission denied") {
			t.Errorf("unknown instance: %+v; want permission denied", r)
		}
		e := f.waitEvent("refused login", func(e access.Event) bool { return e.Kind == access.KindLogin && e.Instance == user })
		if e.Err == "" {
			t.Errorf("refused login audit = %+v", e)
		}
	})
	t.Run("instance of another runtime", func(t *testing.T) {
		other, err := docker.New(t.Context(), docker.Config{Network: "none", InitBinary: dockertest.InitBinary(t), Scope: "other-" + dockertest.NewInstanceID()})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		id := dockertest.NewInstanceID()
		dockertest.Cleanup(t, id)
		if _, err := other.Run(t.Context(), runtime.Spec{
			InstanceID: id, AllocationID: gpurent.NewID(gpurent.PrefixAllocation),
			Image: dockertest.BusyboxImage(t), VolumeName: gpurent.NewID(gpurent.PrefixVolume),
		}); err != nil {
			t.Fatal(err)
		}
		r := f.run("", "ssh", append(f.sshArgs(id), "echo", "in")...)
		if r.code != 255 || !strings.Contains(r.stderr, "Permission denied") {
			t.Errorf("another scope's instance: %+v; want permission denied", r)
		}
	})
	t.Run("forward outside the instance", func(t *testing.T) {
		for _, dest := range []string{"10.0.0.1:80", "192.168.1.1:22", "example.com:80", "[fe80::1]:80", "0.0.0.0:80"} {
			args := append([]string{"-o", "LogLevel=INFO"}, append(f.opts(f.key), "-p", strconv.Itoa(f.addr.Port), "-W", dest, f.instance+"@127.0.0.1")...)
			r := f.run("", "ssh", args...)
			if r.code == 0 || !strings.Contains(r.stderr, "administratively prohibited") {
				t.Errorf("ssh -W %s: %+v; want administratively prohibited", dest, r)
			}
			host, port, _ := net.SplitHostPort(dest)
			e := f.waitEvent("refused forward to "+dest, func(e access.Event) bool {
				return e.Kind == access.KindForward && e.Command == net.JoinHostPort(host, port)
			})
			if e.Err == "" || !e.End.Equal(e.Start) {
				t.Errorf("refused forward audit = %+v", e)
			}
		}
	})
	t.Run("remote forwarding", func(t *testing.T) {
		r := f.run("", "ssh", append(f.sshArgs(f.instance, "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:127.0.0.1:9"), "echo", "in")...)
		if r.code != 255 || r.stdout != "" {
			t.Errorf("ssh -R: %+v; want a failure", r)
		}
	})
	t.Run("other subsystem", func(t *testing.T) {
		r := f.run("", "ssh", append(f.sshArgs(f.instance, "-s"), "netconf")...)
		if r.code == 0 {
			t.Errorf("subsystem netconf: %+v; want a failure", r)
		}
	})
	t.Run("stopped instance", func(t *testing.T) {
		if err := f.rt.Stop(t.Context(), f.instance); err != nil {
			t.Fatal(err)
		}
		r := f.ssh("", "echo", "in")
		if r.code != 255 || r.stdout != "" || !strings.Contains(r.stderr, "Permission denied") {
			t.Errorf("stopped instance: %+v; want permission denied", r)
		}
	})
}

func TestIdleTimeoutClosesConnection(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *access.Config) { c.IdleTimeout = time.Second })
	// A silent command outlives the idle timeout: the server closes the
	// connection (the run is bounded, so a missing timeout fails it).
	r := f.ssh("", "sleep 600")
	if r.code != 255 {
		t.Errorf("idle ssh: %+v; want the connection closed (255)", r)
	}
}

func TestHostKeyPersisted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "host_key")
	a, err := access.LoadOrCreateHostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("host key file: %v, mode %v; want 0600", err, st.Mode())
	}
	if a.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("host key type %s, want ed25519", a.PublicKey().Type())
	}
	b, err := access.LoadOrCreateHostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.PublicKey().Marshal(), b.PublicKey().Marshal()) {
		t.Errorf("the host key changed on reload")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := access.LoadOrCreateHostKey(path); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("a world-readable host key: %v, want invalid", err)
	}
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := access.LoadOrCreateHostKey(path); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("a garbage host key: %v, want invalid", err)
	}
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	if _, err := access.New(access.Config{}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("New without host key: %v, want invalid", err)
	}
}

// testLog sends the server's log to the test's.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
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

// TestKeepaliveClosesDeadConnection cuts a connection silently (a proxy
// that stops forwarding, as a dead peer or a lost route does): the
// server's keepalives go unanswered and it closes the connection, which
// ends the session running on it.
func TestKeepaliveClosesDeadConnection(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *access.Config) {
		c.KeepaliveInterval = 200 * time.Millisecond
		c.KeepaliveMax = 2
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var cut atomic.Bool
	go func() {
		down, err := ln.Accept()
		if err != nil {
			return
		}
		defer down.Close()
		up, err := net.Dial("tcp", f.addr.String())
		if err != nil {
			return
		}
		defer up.Close()
		pipe := func(dst, src net.Conn) {
			buf := make([]byte, 32<<10)
			for {
				n, err := src.Read(buf)
				if err != nil || cut.Load() {
					return
				}
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		go pipe(up, down)
		pipe(down, up)
		<-t.Context().Done()
	}()
	c := goClientAt(t, f, ln.Addr().String(), f.instance)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("sleep 600"); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("exec start", func(e access.Event) bool { return e.Kind == access.KindExec && e.Command == "sleep 600" })
	cut.Store(true)
	e := f.waitEvent("exec end after the cut", func(e access.Event) bool {
		return e.Kind == access.KindExec && e.Command == "sleep 600" && !e.End.IsZero()
	})
	if e.ExitCode == 0 {
		t.Errorf("sleep 600 ended with exit 0 after the cut: %+v", e)
	}
}
