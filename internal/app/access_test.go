package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/cli"
)

// sshUser is a customer with an ed25519 key made by ssh-keygen.
type sshUser struct {
	*user
	key string // private key file
}

func newSSHUser(t testing.TB, f *dockerFleet, email string) *sshUser {
	t.Helper()
	u := newUser(t, f.s.URL)
	if email == "" {
		u = f.u
	} else {
		u.signUp(email, "ssh-password-12")
	}
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test@"+email, "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen (openssh-client; `make test` installs it): %v %s", err, out)
	}
	u.must("ssh-key", "add", key+".pub")
	return &sshUser{user: u, key: key}
}

// sshArgs are OpenSSH options that reach the instance through the gateway,
// checking its host key strictly against what gpurent pinned.
func (u *sshUser) sshArgs(t testing.TB, acc apiv1.InstanceAccess, portFlag string) []string {
	t.Helper()
	return []string{portFlag, strconv.Itoa(acc.Port), "-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + filepath.Join(u.env.ConfigDir, "known_hosts"),
		"-o", "ConnectTimeout=20"}
}

// command runs a program bounded in time and returns its output and exit code.
func command(t testing.TB, stdin string, prog string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, prog, args...)
	var out, errb bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader(stdin), &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", prog, args, err)
	}
	return out.String(), errb.String(), 0
}

// TestReachInstance: with the real OpenSSH client, through the gateway and
// the agent's access server, into a real network-none container: a shell
// command with its exit code, scp both ways, sftp, -L forwarding to a
// server inside the container, the browser link with HTTP and a
// websocket; every refusal; and the audit log.
func TestReachInstance(t *testing.T) {
	f := startDockerFleet(t, "reach", "rtx4090-24g", 2)
	f.credit(t, 100_000, "seed")
	alice := newSSHUser(t, f, "")
	in := alice.instance("rent", "--gpu", "rtx4090-24g", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)

	shown := alice.must("show", in.ID)
	if !strings.Contains(shown, "ssh -p ") || !strings.Contains(shown, in.ID+"@127.0.0.1") || !strings.Contains(shown, "SHA256:") {
		t.Fatalf("show lacks the ssh command and host key:\n%s", shown)
	}
	// --print writes the gateway's key to gpurent's known_hosts and says
	// the command.
	if printed := alice.must("ssh", in.ID, "--print"); !strings.HasPrefix(printed, "ssh -p ") {
		t.Fatalf("ssh --print: %q", printed)
	}
	host, portText, err := net.SplitHostPort(f.s.SSHAddr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	acc := apiv1.InstanceAccess{Host: host, Port: port}

	// gpurent ssh runs OpenSSH: output, and the remote exit status as its own.
	stdout, stderr, err := alice.run("", "ssh", in.ID, "-i", alice.key, "--ssh-option", "BatchMode=yes", "--",
		"sh", "-c", "'echo hello from $(hostname); exit 7'")
	var ee cli.ExitError
	if !errors.As(err, &ee) || ee.Code != 7 || !strings.Contains(stdout, "hello from") {
		t.Fatalf("gpurent ssh exit: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	target := in.ID + "@" + acc.Host

	// scp in and out (OpenSSH 9 speaks sftp to the gateway), into the volume.
	dir := t.TempDir()
	src := filepath.Join(dir, "in.bin")
	payload := bytes.Repeat([]byte("gpurent-scp "), 100_000)
	if err := os.WriteFile(src, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := command(t, "", "scp", append(alice.sshArgs(t, acc, "-P"), src, target+":/root/data/in.bin")...); code != 0 {
		t.Fatalf("scp in: %d %s %s", code, out, errOut)
	}
	back := filepath.Join(dir, "back.bin")
	if out, errOut, code := command(t, "", "scp", append(alice.sshArgs(t, acc, "-P"), target+":/root/data/in.bin", back)...); code != 0 {
		t.Fatalf("scp out: %d %s %s", code, out, errOut)
	}
	if got, _ := os.ReadFile(back); !bytes.Equal(got, payload) {
		t.Fatalf("scp round trip: %d bytes back of %d", len(got), len(payload))
	}
	// sftp in batch mode.
	batch := "mkdir /root/data/sub\nput " + src + " /root/data/sub/x\nls -l /root/data/sub\n"
	if out, errOut, code := command(t, batch, "sftp", append(append(alice.sshArgs(t, acc, "-P"), "-b", "-"), target)...); code != 0 ||
		!strings.Contains(out, "x") {
		t.Fatalf("sftp batch: %d %s %s", code, out, errOut)
	}

	// A web server inside the network-none container: the websocket echo,
	// built here and copied in with scp.
	bin := filepath.Join(dir, "wsecho")
	build := exec.Command("go", "build", "-o", bin, "./testdata/wsecho")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build wsecho: %v %s", err, out)
	}
	if out, errOut, code := command(t, "", "scp", append(alice.sshArgs(t, acc, "-P"), bin, target+":/root/data/wsecho")...); code != 0 {
		t.Fatalf("scp wsecho: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := command(t, "", "ssh", append(alice.sshArgs(t, acc, "-p"), target,
		"chmod +x /root/data/wsecho && (/root/data/wsecho 127.0.0.1:8080 </dev/null >/dev/null 2>&1 &) && sleep 0.5 && echo started")...); code != 0 ||
		!strings.Contains(out, "started") {
		t.Fatalf("start wsecho: %d %s %s", code, out, errOut)
	}

	if out, errOut, code := command(t, "", "ssh", append(alice.sshArgs(t, acc, "-p"), target, "wget -qO- http://127.0.0.1:8080/inside")...); code != 0 ||
		!strings.Contains(out, "wsecho at /inside") {
		t.Fatalf("the server inside the instance: %d %s %s", code, out, errOut)
	}
	// ssh -L to the server inside the container.
	lp := freePort(t)
	fwdCtx, stopFwd := context.WithCancel(context.Background())
	fwd := exec.CommandContext(fwdCtx, "ssh", append(alice.sshArgs(t, acc, "-p"), "-N", "-o", "ExitOnForwardFailure=yes",
		"-L", fmt.Sprintf("127.0.0.1:%d:localhost:8080", lp), target)...)
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stopFwd(); fwd.Wait() }()
	var body string
	eventually(t, "a GET through ssh -L", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/forwarded", lp))
		if err != nil {
			t.Logf("GET through ssh -L: %v", err)
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200
	})
	if !strings.Contains(body, "wsecho at /forwarded") {
		t.Fatalf("forwarded GET: %q", body)
	}

	// The browser link: HTTP and a websocket, for the owner only.
	var link apiv1.PortLink
	if err := json.Unmarshal([]byte(alice.must("open", in.ID, "8080", "-o", "json")), &link); err != nil {
		t.Fatal(err)
	}
	// The link is on the port's own host name, the app at its /.
	_, consolePort, _ := net.SplitHostPort(strings.TrimPrefix(f.s.URL, "http://"))
	origin := fmt.Sprintf("http://%s-8080.localhost:%s", in.ID, consolePort)
	if !strings.HasPrefix(link.URL, origin+"/?") {
		t.Fatalf("link %q, want it on %s", link.URL, origin)
	}
	browser := localhostBrowser(t, 30*time.Second)
	resp, err := browser.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "wsecho at /\n" {
		t.Fatalf("link GET: %d %q", resp.StatusCode, b)
	}
	wsURL := strings.Replace(origin, "http://", "ws://", 1) + "/ws"
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(wctx, wsURL, &websocket.DialOptions{HTTPClient: browser})
	if err != nil {
		t.Fatalf("websocket through the link: %v", err)
	}
	if err := ws.Write(wctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.Read(wctx); err != nil || string(msg) != "echo: ping" {
		t.Fatalf("websocket echo: %q %v", msg, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	// Without the cookie: refused. The console's host serves no ports.
	if resp, err := localhostBrowser(t, 30*time.Second).Get(origin + "/"); err != nil || resp.StatusCode < 400 {
		t.Fatalf("the port host without a token: %v %v", resp, err)
	}
	if resp, err := browser.Get(f.s.URL + fmt.Sprintf("/p/%s/8080/", in.ID)); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/p/ on the console's host: %v %v", resp, err)
	}

	// gpurent port-forward runs ssh -N -L with the pinned host key (a
	// stand-in ssh records what it is asked to run).
	rec := filepath.Join(dir, "ssh-args")
	fake := filepath.Join(dir, "fake-ssh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+rec+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	pf := &user{t: t, env: alice.env}
	pf.env.Getenv = func(k string) string {
		return map[string]string{cli.EnvServer: f.s.URL, cli.EnvSSH: fake}[k]
	}
	pf.must("port-forward", in.ID, "8888", "6006:16006", "-i", alice.key)
	got, _ := os.ReadFile(rec)
	for _, want := range []string{"-L 127.0.0.1:8888:localhost:8888", "-L 127.0.0.1:16006:localhost:6006", "-N",
		"StrictHostKeyChecking=yes", "-p " + portText, target} {
		if !strings.Contains(string(got), want) {
			t.Errorf("port-forward ran ssh %s; want %q in it", got, want)
		}
	}

	// Refusals: another account's key; a forward outside the instance; a
	// stopped instance.
	bob := newSSHUser(t, f, "bob-reach@lab.example")
	bobAcc := acc
	if out, errOut, code := command(t, "", "ssh", append(bob.sshArgsWithKnown(t, bobAcc, alice), target, "true")...); code == 0 ||
		!strings.Contains(errOut, "no instance") {
		t.Fatalf("bob into alice's instance: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := command(t, "", "ssh", append(alice.sshArgs(t, acc, "-p"), "-W", "1.1.1.1:53", target)...); code == 0 {
		t.Fatalf("a forward to an address outside the instance was allowed: %s", errOut)
	}
	stopFwd()
	alice.must("stop", in.ID, "--wait")
	if _, errOut, code := command(t, "", "ssh", append(alice.sshArgs(t, acc, "-p"), target, "true")...); code == 0 ||
		!strings.Contains(errOut, "not running") {
		t.Fatalf("ssh into a stopped instance: %d %s", code, errOut)
	}
	// gpurent ssh with a command shows the gateway's reason too, not only
	// OpenSSH's "Permission denied".
	if _, errOut, err := alice.run("", "ssh", in.ID, "-i", alice.key, "--ssh-option", "BatchMode=yes", "--", "true"); err == nil ||
		!strings.Contains(errOut, "not running") {
		t.Fatalf("gpurent ssh -- true into a stopped instance: %v %s", err, errOut)
	}

	// The audit log has the exec with its status, and the refusals.
	var sessions []apiv1.AccessSession
	eventually(t, "the audit records", func() bool {
		sessions = nil
		if err := json.Unmarshal([]byte(alice.must("sessions", "-o", "json")), &sessions); err != nil {
			t.Fatal(err)
		}
		var exec7, refused bool
		for _, s := range sessions {
			exec7 = exec7 || (s.Kind == "exec" && s.ExitStatus != nil && *s.ExitStatus == 7)
			refused = refused || s.Kind == "refused"
		}
		return exec7 && refused
	})
}

// sshArgsWithKnown: bob's key, with alice's pinned gateway host key (bob
// never asked the API about alice's instance).
func (u *sshUser) sshArgsWithKnown(t testing.TB, acc apiv1.InstanceAccess, pinned *sshUser) []string {
	t.Helper()
	args := u.sshArgs(t, acc, "-p")
	for i, a := range args {
		if strings.HasPrefix(a, "UserKnownHostsFile=") {
			args[i] = "UserKnownHostsFile=" + filepath.Join(pinned.env.ConfigDir, "known_hosts")
		}
	}
	return args
}

// localhostBrowser is an HTTP client with a cookie jar that reaches
// *.localhost names on loopback, as browsers and curl resolve them (Go's
// resolver does not).
func localhostBrowser(t testing.TB, timeout time.Duration) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Timeout: timeout, Transport: tr}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
