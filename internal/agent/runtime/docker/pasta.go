package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/egress"
)

// This file gives each instance of the "pasta" network mode its own
// network: the container is created with network mode none (only its
// loopback), then the agent installs the egress ruleset of internal/egress
// inside the container's network namespace (the instance has no
// CAP_NET_ADMIN, so it cannot remove it) and attaches a pasta process
// (Debian package passt), a userspace NAT, to that namespace. pasta runs
// with every port forward off (-t/-u/-T/-U none: nothing of the host's
// loopback reaches the instance and nothing of the instance is published on
// the host) and without the gateway mapping (--no-map-gw: the gateway
// address is not the host). Instances therefore share no network: each
// reaches the internet through its own NAT and nothing else, and the
// agent's port forwarding still dials inside the namespace.
//
// The rules go in before pasta starts, so the instance never has an
// unfiltered moment; when pasta cannot start the instance has no network
// at all. pasta is a daemon that outlives the agent; its state (pid, the
// namespace it serves, the ruleset's digest) is kept in a small file per
// container, so a new agent adopts the running ones, attaches again when the
// daemon restarted a container (a new namespace), refreshes the rules when
// the host's addresses change, and stops a pasta whose container stopped.

// Network modes of Config.Network beside Docker's own networks.
const (
	// NetworkPasta: a private namespace per instance with a userspace NAT
	// and egress rules (the default where pasta, nft and nsenter are
	// installed and the agent runs as root).
	NetworkPasta = "pasta"
	// NetworkNone: loopback only; no network at all.
	NetworkNone = "none"
)

// LabelNetwork marks the containers made for the pasta mode ("pasta"): only
// they get a NAT, never a container made under another network mode.
const LabelNetwork = "io.gpurent.network"

// PastaDNS is the address an instance sends DNS queries to in the pasta
// mode; pasta answers them by forwarding to the host's resolver. It is the
// only address of a denied range an instance reaches, on UDP port 53.
var PastaDNS = netip.MustParseAddr("169.254.0.53")

// pastaUsable says why the pasta mode cannot work here, or nil.
func pastaUsable() error {
	for _, t := range []string{"pasta", "nft", "nsenter"} {
		if _, err := exec.LookPath(t); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err,
				"the pasta instance network needs %s (Debian packages passt, nftables, util-linux)", t)
		}
	}
	if os.Geteuid() != 0 {
		return gpurent.Errorf(gpurent.CodeUnavailable,
			"the pasta instance network needs the agent to run as root (to enter the instances' network namespaces)")
	}
	return nil
}

// netState is what the agent remembers of one container's network.
type netState struct {
	ContainerID string `json:"container_id"`
	Instance    string `json:"instance"`
	// Pid is the container's init process the network was made for, and
	// Netns the inode of its network namespace.
	Pid   int    `json:"pid"`
	Netns uint64 `json:"netns"`
	// PastaPid is the pasta daemon serving that namespace.
	PastaPid int `json:"pasta_pid"`
	// Rules is the digest of the ruleset installed there.
	Rules string `json:"rules"`
}

// pastaNet manages the networks of the pasta mode.
type pastaNet struct {
	// scope is the runtime's Config.Scope: the containers it serves.
	scope string
	dir   string
	allow []netip.Prefix
	log   *slog.Logger
	mu    sync.Mutex
}

func (p *pastaNet) path(containerID string) string {
	return filepath.Join(p.dir, containerID+".json")
}

func (p *pastaNet) load(containerID string) (netState, bool) {
	b, err := os.ReadFile(p.path(containerID))
	if err != nil {
		return netState{}, false
	}
	var st netState
	if json.Unmarshal(b, &st) != nil || st.ContainerID != containerID {
		return netState{}, false
	}
	return st, true
}

func (p *pastaNet) save(st netState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := p.path(st.ContainerID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p.path(st.ContainerID))
}

// policy is the egress policy of an instance now: the host's addresses as
// they are at this moment.
func (p *pastaNet) policy() egress.Policy {
	pol := egress.Policy{Allow: p.allow, DNS: PastaDNS}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		p.log.Warn("docker: cannot list the host's addresses for the egress rules", "err", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
				pol.HostAddrs = append(pol.HostAddrs, ip.Unmap())
			}
		}
	}
	return pol
}

// ensure gives the running container c its network: rules and NAT, unless
// they are there and current.
func (p *pastaNet) ensure(ctx context.Context, c container.InspectResponse) error {
	if c.State == nil || c.State.Pid <= 0 || c.State.Status != container.StateRunning ||
		c.Config == nil || c.Config.Labels[LabelNetwork] != NetworkPasta {
		return nil // only containers made for the pasta mode get a NAT
	}
	if c.Config.Labels[LabelScope] != p.scope {
		// Another scope's runtime (its own state directory) serves it; a
		// second pasta here would race it for the namespace's tap device.
		// An unscoped runtime lists every scope's containers but serves
		// only the unscoped ones.
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Runtimes of other scopes, or another agent process, may look at
	// the same container: one at a time, across processes.
	unlock, err := p.lockFile(c.ID)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "lock the network state of container %s", c.ID)
	}
	defer unlock()
	instance := ""
	if c.Config != nil {
		instance = c.Config.Labels[runtime.LabelInstance]
	}
	pid := c.State.Pid
	nsPath := fmt.Sprintf("/proc/%d/ns/net", pid)
	ino, err := inode(nsPath)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "instance %s: its network namespace is gone", instance)
	}
	rules := egress.Ruleset(p.policy())
	sum := sha256.Sum256([]byte(rules))
	digest := hex.EncodeToString(sum[:])

	old, had := p.load(c.ID)
	same := had && old.Pid == pid && old.Netns == ino
	pastaUp := same && pastaAlive(old.PastaPid, ino)
	if pastaUp && old.Rules == digest {
		return nil
	}
	if had && !same {
		stopPasta(old) // it served the namespace of an earlier start
	}
	st := netState{ContainerID: c.ID, Instance: instance, Pid: pid, Netns: ino}
	if !same || old.Rules != digest {
		if err := nsRun(ctx, pid, rules, "nft", "-f", "-"); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "instance %s: install the egress rules", instance)
		}
	}
	st.Rules = digest
	if pastaUp {
		st.PastaPid = old.PastaPid
	} else {
		pp, err := p.startPasta(ctx, c.ID, nsPath)
		if err != nil {
			// The rules stay: record them, so a retry only starts pasta.
			st.PastaPid = 0
			_ = p.save(st)
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "instance %s: start its network (pasta)", instance)
		}
		st.PastaPid = pp
		p.log.Info("docker: instance network attached", "instance", instance, "pasta_pid", pp)
	}
	if err := p.save(st); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "instance %s: record its network", instance)
	}
	return nil
}

// pastaArgs are pasta's arguments; the namespace comes as its fd 3.
func pastaArgs(pidFile string) []string {
	return []string{
		// pasta drops its capabilities before it opens the namespace,
		// and may then not open another process's /proc/<pid>/ns/net:
		// the agent opens it and hands it over.
		"--netns", "/proc/self/fd/3",
		"--runas", "0:0", // as nobody it cannot enter a namespace owned by root
		"--config-net",
		"-t", "none", "-u", "none", // publish nothing of the instance on the host
		"-T", "none", "-U", "none", // and let nothing of the host's loopback in
		"--no-map-gw", // the gateway address is not the host
		"--dns-forward", PastaDNS.String(),
		"-P", pidFile,
		"-q",
	}
}

func (p *pastaNet) startPasta(ctx context.Context, containerID, nsPath string) (int, error) {
	ns, err := os.Open(nsPath)
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	pidFile := filepath.Join(p.dir, containerID+".pid")
	_ = os.Remove(pidFile)
	// pasta forks into the background and closes its standard streams; a
	// file (not a pipe) takes its errors, so the wait never hangs on the
	// daemon.
	errFile, err := os.CreateTemp(p.dir, "pasta-*.err")
	if err != nil {
		return 0, err
	}
	defer os.Remove(errFile.Name())
	defer errFile.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pasta", pastaArgs(pidFile)...)
	cmd.Stdout, cmd.Stderr = errFile, errFile
	cmd.ExtraFiles = []*os.File{ns}
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(errFile.Name())
		return 0, fmt.Errorf("%w: %s", err, pastaError(string(msg)))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("pasta wrote no pid file: %w", err)
	}
	_ = os.Remove(pidFile)
	pp, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pp <= 0 {
		return 0, fmt.Errorf("pasta wrote a bad pid file %q", b)
	}
	return pp, nil
}

// pastaError is pasta's complaint, without its notes about a missing
// syslog.
func pastaError(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Failed to send") {
			keep = append(keep, l)
		}
	}
	s := strings.Join(keep, "; ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// pidUnknown, from a sweep's lookup, keeps the container's network: the
// daemon could not say whether it runs.
const pidUnknown = -1

// sweep stops the pasta of every recorded container that is not running
// with the namespace it was made for; running tells, by container id, the
// pid of each running container (nil: look each up with lookup, which
// returns 0 for one that does not run).
func (p *pastaNet) sweep(running map[string]int, lookup func(id string) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		unlock, err := p.lockFile(id)
		if err != nil {
			continue
		}
		p.sweepOne(id, running, lookup)
		unlock()
	}
}

// sweepOne is sweep for one recorded container, under its lock.
func (p *pastaNet) sweepOne(id string, running map[string]int, lookup func(id string) int) {
	{
		st, ok := p.load(id)
		if !ok {
			return
		}
		var pid int
		if running != nil {
			pid = running[id]
		} else if pid = lookup(id); pid == pidUnknown {
			return
		}
		if pid > 0 && pid == st.Pid {
			if ino, err := inode(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && ino == st.Netns {
				return
			}
		}
		stopPasta(st)
		_ = os.Remove(p.path(id))
		_ = os.Remove(filepath.Join(p.dir, id+".lock"))
		p.log.Info("docker: instance network torn down", "instance", st.Instance, "container", id)
	}
}

// lockFile takes the exclusive lock of a container's network state.
func (p *pastaNet) lockFile(containerID string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(p.dir, containerID+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// pastaAlive reports whether pid is a pasta serving the network namespace
// of inode netns (and not a process that reused the pid): its fd 3 is that
// namespace.
func pastaAlive(pid int, netns uint64) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	prog, _, _ := strings.Cut(string(b), "\x00")
	if base := filepath.Base(prog); !strings.Contains(base, "pasta") && !strings.Contains(base, "passt") {
		return false
	}
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", pid))
	return err == nil && link == fmt.Sprintf("net:[%d]", netns)
}

func stopPasta(st netState) {
	if pastaAlive(st.PastaPid, st.Netns) {
		_ = syscall.Kill(st.PastaPid, syscall.SIGTERM)
	}
}

// PastaPid is the pasta process serving the container, for tests and
// diagnostics; 0 when none runs for it.
func (r *Runtime) PastaPid(containerID string) int {
	if r.pasta == nil {
		return 0
	}
	st, ok := r.pasta.load(containerID)
	if !ok || !pastaAlive(st.PastaPid, st.Netns) {
		return 0
	}
	return st.PastaPid
}

func inode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no inode")
	}
	return sys.Ino, nil
}

// nsRun runs a program inside the network namespace of process pid (and
// only that namespace), with stdin.
func nsRun(ctx context.Context, pid int, stdin string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	full := append([]string{"--net=/proc/" + strconv.Itoa(pid) + "/ns/net", "--"}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, firstLine(strings.TrimSpace(out.String())))
	}
	return nil
}

// defaultNetStateDir is where pasta state lives when Config.NetStateDir is
// empty.
func defaultNetStateDir(scope string) string {
	d := filepath.Join(os.TempDir(), "gpurent-net")
	if scope != "" {
		d = filepath.Join(d, scope)
	}
	return d
}

func mkdirState(dir string) error { return os.MkdirAll(dir, 0o700) }
