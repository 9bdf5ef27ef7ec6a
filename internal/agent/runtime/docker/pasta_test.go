package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/testtier"
)

// This file tests the pasta network mode on the test machine's own
// namespaces, all on loopback or on a veth pair the test makes: no traffic
// leaves the machine.

// requirePasta fails the test when the pasta mode cannot run here (in the
// fast tier it skips it).
func requirePasta(t *testing.T) {
	t.Helper()
	testtier.Require(t, "root with pasta and nft")
	for _, bin := range []string{"pasta", "nft", "nsenter", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed (Debian packages passt, nftables, util-linux, iproute2): %v", bin, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("the pasta network tests need root (network namespaces)")
	}
}

// internet is a stand-in for the internet: a network namespace of the
// test's, joined to the host by a veth pair in 198.18.0.0/15 (the
// benchmarking range, neither private nor link-local), serving HTTP.
type internet struct {
	hostAddr string // the host's end of the veth: a host address
	addr     string // the far end, in the namespace
	port     int
}

const internetBody = "hello from the test internet"

func newInternet(t *testing.T) internet {
	t.Helper()
	n := rand.IntN(250) + 1
	ns := fmt.Sprintf("gpr-inet-%d-%d", os.Getpid()%10000, n)
	vh, vi := fmt.Sprintf("gprh%d", n), fmt.Sprintf("gpri%d", n)
	in := internet{hostAddr: fmt.Sprintf("198.18.%d.1", n), addr: fmt.Sprintf("198.18.%d.2", n)}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", vh).Run()
		_ = exec.Command("ip", "netns", "del", ns).Run()
	})
	run("link", "add", vh, "type", "veth", "peer", "name", vi)
	run("link", "set", vi, "netns", ns)
	run("addr", "add", in.hostAddr+"/30", "dev", vh)
	run("link", "set", vh, "up")
	run("-n", ns, "addr", "add", in.addr+"/30", "dev", vi)
	run("-n", ns, "link", "set", vi, "up")
	run("-n", ns, "link", "set", "lo", "up")
	l := listenIn(t, "/run/netns/"+ns, in.addr+":0")
	in.port = l.Addr().(*net.TCPAddr).Port
	serve(t, l, internetBody)
	return in
}

// inNetns runs fn on a thread inside the network namespace at nsPath. The
// thread never goes back to the host's namespace: it ends with its
// goroutine, still locked.
func inNetns(nsPath string, fn func()) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		f, err := os.Open(nsPath)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}

// listenIn opens a TCP listener inside the network namespace at nsPath.
func listenIn(t *testing.T, nsPath, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	if nerr := inNetns(nsPath, func() { l, err = net.Listen("tcp", addr) }); nerr != nil {
		err = nerr
	}
	if err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, nsPath, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// dialIn dials addr from inside the network namespace at nsPath, as the
// access server's port forwarding does.
func dialIn(nsPath, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if nerr := inNetns(nsPath, func() { c, err = net.DialTimeout("tcp", addr, 5*time.Second) }); nerr != nil {
		return nil, nerr
	}
	return c, err
}

// serve answers every connection on l with a tiny HTTP response of body.
func serve(t *testing.T, l net.Listener, body string) {
	t.Helper()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = bufio.NewReader(c).ReadString('\n')
				_, _ = fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}()
		}
	}()
}

// fetch asks, from inside the container, for addr over TCP (one
// connection, a few seconds at most) and returns what came back. The
// request's side stays open (no half-close) until the answer came, and
// timeout bounds the whole.
func fetch(t *testing.T, cli *client.Client, name, host string, port int) dockertest.ExecResult {
	t.Helper()
	return dockertest.Exec(t, cli, name, "sh", "-c",
		`(printf 'GET / HTTP/1.0\r\n\r\n'; sleep 2) | timeout 20 nc -w 10 "$0" "$1"`, host, strconv.Itoa(port))
}

// refusedByRule reports whether a connection attempt failed with the
// egress rules' reject (ICMP administratively prohibited, which the
// kernel reports as "host unreachable"), not by a timeout.
func refusedByRule(r dockertest.ExecResult) bool {
	return r.ExitCode != 0 && strings.Contains(strings.ToLower(r.Stderr), "no route to host")
}

func pastaRuntime(t *testing.T, stateDir string) *docker.Runtime {
	t.Helper()
	requirePasta(t)
	rt := newRuntime(t, docker.Config{Network: docker.NetworkPasta, NetStateDir: stateDir})
	if rt.Network() != docker.NetworkPasta {
		t.Fatalf("Network = %q, want pasta", rt.Network())
	}
	return rt
}

func containerAddrs(t *testing.T, cli *client.Client, name string) []string {
	t.Helper()
	out := dockertest.MustExec(t, cli, name, "ip", "-4", "-o", "addr", "show", "scope", "global")
	var addrs []string
	for _, f := range strings.Fields(out) {
		if ip, _, err := net.ParseCIDR(f); err == nil {
			addrs = append(addrs, ip.String())
		}
	}
	if len(addrs) == 0 {
		t.Fatalf("the container has no global IPv4 address:\n%s", out)
	}
	return addrs
}

// TestPastaNetworkIsolatesInstances: an instance reaches the (test)
// internet through its own NAT, and nothing else: not another instance's
// listener, not the host's loopback nor a host address, not the metadata
// address nor a private one, which the rules refuse at once; the agent
// still dials into it.
func TestPastaNetworkIsolatesInstances(t *testing.T) {
	t.Parallel()
	rt := pastaRuntime(t, t.TempDir())
	cli := dockertest.Client(t)
	inet := newInternet(t)

	// Listeners on the host: its loopback and its end of the veth.
	hostLo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hostLo.Close() })
	serve(t, hostLo, "host loopback")
	hostVeth, err := net.Listen("tcp", inet.hostAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hostVeth.Close() })
	serve(t, hostVeth, "host address")

	a, b := newSpec(t), newSpec(t)
	a.GPUUUIDs, b.GPUUUIDs = nil, nil
	mustRun(t, rt, a)
	mustRun(t, rt, b)
	nameA := dockertest.InstanceContainer(t, cli, a.InstanceID)
	nameB := dockertest.InstanceContainer(t, cli, b.InstanceID)
	ca, cb := dockertest.Inspect(t, cli, nameA), dockertest.Inspect(t, cli, nameB)
	if ca.HostConfig.NetworkMode != "none" {
		t.Errorf("NetworkMode = %q, want none (the NAT is attached by the agent)", ca.HostConfig.NetworkMode)
	}
	if rt.PastaPid(ca.ID) == 0 || rt.PastaPid(cb.ID) == 0 || rt.PastaPid(ca.ID) == rt.PastaPid(cb.ID) {
		t.Fatalf("pasta pids %d, %d: want one NAT per instance", rt.PastaPid(ca.ID), rt.PastaPid(cb.ID))
	}

	// Outbound works, through the NAT.
	if r := fetch(t, cli, nameA, inet.addr, inet.port); !strings.Contains(r.Stdout, internetBody) {
		t.Fatalf("instance A cannot reach the internet host %s:%d: %s", inet.addr, inet.port, r)
	}

	// B listens; it reaches itself, and the agent reaches it inside its
	// namespace (the access server's port forwarding), but A does not.
	dockertest.MustExec(t, cli, nameB, "sh", "-c", "mkdir -p /www && echo instance-b > /www/index.html && httpd -p 8000 -h /www")
	if r := fetch(t, cli, nameB, "127.0.0.1", 8000); !strings.Contains(r.Stdout, "instance-b") {
		t.Fatalf("B cannot reach its own listener: %s", r)
	}
	conn, err := dialIn(fmt.Sprintf("/proc/%d/ns/net", cb.State.Pid), "127.0.0.1:8000")
	if err != nil {
		t.Fatalf("the agent cannot dial into B's namespace: %v", err)
	}
	_, _ = io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounds a hang only
	got, _ := io.ReadAll(conn)
	conn.Close()
	if !strings.Contains(string(got), "instance-b") {
		t.Errorf("port forwarding into B read %q", got)
	}
	for _, addr := range append(containerAddrs(t, cli, nameB), "127.0.0.1", inet.hostAddr) {
		if r := fetch(t, cli, nameA, addr, 8000); strings.Contains(r.Stdout, "instance-b") || r.ExitCode == 0 {
			t.Errorf("A reached B's listener at %s:8000: %s", addr, r)
		}
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:8000", 2*time.Second); err == nil {
		c.Close()
		t.Error("B's port is published on the host's loopback")
	}

	// The host: its loopback is not the instance's, and its addresses are
	// refused by the rules.
	hostLoPort := hostLo.Addr().(*net.TCPAddr).Port
	if r := fetch(t, cli, nameA, "127.0.0.1", hostLoPort); strings.Contains(r.Stdout, "host loopback") {
		t.Errorf("A reached the host's loopback: %s", r)
	}
	vethPort := hostVeth.Addr().(*net.TCPAddr).Port
	if r := fetch(t, cli, nameA, inet.hostAddr, vethPort); strings.Contains(r.Stdout, "host address") || !refusedByRule(r) {
		t.Errorf("A to the host address %s: %s, want the rules' reject", inet.hostAddr, r)
	}
	// Metadata and private ranges: refused at once by the rules.
	for _, addr := range []string{"169.254.169.254", "10.11.12.13", "172.16.0.1", "192.168.0.1", "100.64.0.1"} {
		if r := fetch(t, cli, nameA, addr, 80); !refusedByRule(r) {
			t.Errorf("A to %s: %s, want the rules' reject", addr, r)
		}
	}

	// The ruleset in A's namespace, as the kernel holds it.
	out, err := exec.Command("nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", ca.State.Pid), "--", "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset in A: %v: %s", err, out)
	}
	for _, want := range []string{"169.254.0.0/16", "10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12", inet.hostAddr, `oif "lo" accept`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("A's ruleset lacks %q:\n%s", want, out)
		}
	}
	// A cannot remove it: it has no CAP_NET_ADMIN.
	if r := dockertest.Exec(t, cli, nameA, "ip", "link", "set", "eth0", "down"); r.ExitCode == 0 {
		t.Errorf("A changed its own interface: %s", r)
	}
}

// TestPastaNetworkSurvivesRestarts: a new agent (a new Runtime on the same
// state) adopts the NAT of a running instance, makes it again when the
// daemon restarted the container in a new namespace, and tears it down
// when the instance stops.
func TestPastaNetworkSurvivesRestarts(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	rt := pastaRuntime(t, state)
	cli := dockertest.Client(t)
	inet := newInternet(t)
	spec := newSpec(t)
	spec.GPUUUIDs = nil
	mustRun(t, rt, spec)
	name := dockertest.InstanceContainer(t, cli, spec.InstanceID)
	id := dockertest.Inspect(t, cli, name).ID
	first := rt.PastaPid(id)
	if first == 0 {
		t.Fatal("no pasta for the instance")
	}

	// An agent restart: the new runtime adopts the running NAT.
	rt2 := pastaRuntime(t, state)
	if _, ok := listed(t, rt2, spec.InstanceID); !ok {
		t.Fatal("the instance is not listed")
	}
	if got := rt2.PastaPid(id); got != first {
		t.Errorf("after an agent restart pasta is %d, want the adopted %d", got, first)
	}

	// The daemon restarts the container: a new namespace, with no network
	// until the agent attaches it again.
	timeout := 5
	if _, err := cli.ContainerRestart(t.Context(), id, client.ContainerRestartOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	if r := fetch(t, cli, name, inet.addr, inet.port); r.ExitCode == 0 {
		t.Errorf("the restarted container had a network before the agent gave it one: %s", r)
	}
	if _, ok := listed(t, rt2, spec.InstanceID); !ok {
		t.Fatal("the instance is not listed after its restart")
	}
	second := rt2.PastaPid(id)
	if second == 0 || second == first {
		t.Fatalf("after the container's restart pasta is %d (was %d), want a new one", second, first)
	}
	waitGone(t, first)
	if r := fetch(t, cli, name, inet.addr, inet.port); !strings.Contains(r.Stdout, internetBody) {
		t.Fatalf("after the restart the instance cannot reach the internet host: %s", r)
	}

	// Stop: the NAT goes with the container.
	if err := rt2.Stop(t.Context(), spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, second)
	if rt2.PastaPid(id) != 0 {
		t.Error("a stopped instance keeps its pasta")
	}
	if st, ok := listed(t, rt2, spec.InstanceID); !ok || st.State != runtime.Stopped {
		t.Errorf("after Stop: %+v, %v", st, ok)
	}
}

// waitGone waits (bounded) for a process that was sent SIGTERM to end.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		// A zombie child of ours would linger; pasta is not our child.
		select {
		case <-ctx.Done():
			t.Fatalf("pasta %d still runs", pid)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestPastaNetworkServedByItsScopeOnly: an unscoped runtime lists every
// scope's containers (the CI failure of TestTreesNotFound: another test's
// unscoped List attached a second pasta to a scoped instance's namespace
// while its own runtime was attaching one, and the loser found the tap
// device taken). Only the instance's own scope serves its network.
func TestPastaNetworkServedByItsScopeOnly(t *testing.T) {
	t.Parallel()
	requirePasta(t)
	scoped := newRuntime(t, docker.Config{Network: docker.NetworkPasta, NetStateDir: t.TempDir(), Scope: "net-a"})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	spec.GPUUUIDs = nil
	mustRun(t, scoped, spec)
	id := dockertest.Inspect(t, cli, dockertest.InstanceContainer(t, cli, spec.InstanceID)).ID
	first := scoped.PastaPid(id)
	if first == 0 {
		t.Fatal("no pasta for the scoped instance")
	}

	unscopedState := t.TempDir()
	unscoped := newUnscopedRuntime(t, docker.Config{Network: docker.NetworkPasta, NetStateDir: unscopedState})
	if _, ok := listed(t, unscoped, spec.InstanceID); !ok {
		t.Fatal("the unscoped runtime does not list the scoped instance")
	}
	// Not even a failed attempt: no record of the container there.
	if _, err := os.Stat(filepath.Join(unscopedState, id+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unscoped runtime recorded a network for another scope's instance (stat: %v)", err)
	}
	if got := unscoped.PastaPid(id); got != 0 {
		t.Errorf("the unscoped runtime attached pasta %d to another scope's instance", got)
	}
	if got := scoped.PastaPid(id); got != first {
		t.Errorf("the scoped instance's pasta is %d after another runtime listed it, want %d", got, first)
	}
}
