package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/process"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu/fake"
)

const hostName = "cd-a-gpu-01"

// host is one test host: a state directory and a process runtime directory
// that survive agent restarts.
type host struct {
	t          *testing.T
	cp         *controlPlane
	stateDir   string
	runtimeDir string
	gpus       *fake.Provider
	heartbeat  time.Duration
}

func newHost(t *testing.T, cp *controlPlane) *host {
	h := &host{
		t:          t,
		cp:         cp,
		stateDir:   t.TempDir(),
		runtimeDir: t.TempDir(),
		gpus: fake.New(fake.Config{Host: hostName, TypeID: "rtx4090-24g", Name: "NVIDIA GeForce RTX 4090",
			Count: 8, MemoryMiB: 24564, GroupSize: 4, NUMANodes: 2}),
		heartbeat: time.Hour, // changes must come through the long poll
	}
	// Whatever a test leaves, no process outlives it.
	t.Cleanup(func() {
		rt := h.runtime()
		list, err := rt.List(context.Background())
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, st := range list {
			if err := rt.Remove(context.Background(), st.InstanceID, "", true); err != nil {
				t.Errorf("cleanup %s: %v", st.InstanceID, err)
			}
		}
	})
	return h
}

// runtime opens a process runtime over the host's runtime directory; each
// call is a fresh one, as after an agent restart.
func (h *host) runtime() *process.Runtime {
	h.t.Helper()
	rt, err := process.New(process.Config{Dir: h.runtimeDir, StopTimeout: 5 * time.Second, Logger: quiet()})
	if err != nil {
		h.t.Fatal(err)
	}
	return rt
}

func quiet() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (h *host) config(rt runtime.Runtime) Config {
	return Config{
		ServerURL:         h.cp.URL(),
		JoinToken:         h.cp.joinToken,
		Name:              hostName,
		Zone:              "cd-tianfu-a",
		StateDir:          h.stateDir,
		Runtime:           rt,
		GPUs:              h.gpus,
		CPUMilli:          64000,
		MemoryMiB:         512 * 1024,
		DiskGiB:           3800,
		Logger:            quiet(),
		HeartbeatInterval: h.heartbeat,
		Version:           "test",
		RetryMin:          5 * time.Millisecond,
		RetryMax:          50 * time.Millisecond,
		RunRetryMin:       time.Hour, // a failed Run is retried only on change
	}
}

// running is an agent in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start runs an agent with a fresh runtime over the host's directory.
func (h *host) start() *running {
	h.t.Helper()
	return h.startWith(h.config(h.runtime()))
}

func (h *host) startWith(cfg Config) *running {
	h.t.Helper()
	a, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	h.t.Cleanup(func() { r.stop(h.t) })
	return r
}

// stop cancels the agent and waits for Run to return.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("agent Run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("agent did not return after its context was cancelled")
		}
	})
}

func (h *host) pid(id string) int {
	h.t.Helper()
	pid, err := h.runtime().PID(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return pid
}

func desiredRunning(id, alloc string, gpus ...string) agentproto.DesiredInstance {
	return agentproto.DesiredInstance{
		InstanceID:   id,
		AllocationID: alloc,
		State:        agentproto.StateRunning,
		Image:        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
		GPUUUIDs:     gpus,
		CPUMilli:     16000,
		MemoryMiB:    64 * 1024,
		VolumeName:   "vol-" + id,
		VolumeGiB:    50,
		Env:          map[string]string{"JUPYTER_TOKEN": "t0ken"},
	}
}

func TestRegistersOnceAndReusesCredentials(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	ag := h.start()
	rep := cp.waitReport("the first report", 0, func(agentproto.Report) bool { return true })
	if rep.Runtime != "process" || len(rep.GPUs) != 8 || rep.ReportID == "" || rep.At.IsZero() {
		t.Fatalf("first report = %+v", rep)
	}

	cp.mu.Lock()
	reg := cp.registrations[0]
	cp.mu.Unlock()
	if reg.Name != hostName || reg.Zone != "cd-tianfu-a" || reg.Runtime != "process" || reg.AgentVersion != "test" ||
		reg.CPUMilli != 64000 || reg.MemoryMiB != 512*1024 || reg.DiskGiB != 3800 {
		t.Errorf("registration = %+v", reg)
	}
	if len(reg.GPUs) != 8 {
		t.Fatalf("registered %d GPUs, want 8", len(reg.GPUs))
	}
	for i, g := range reg.GPUs {
		want := agentproto.GPUInfo{UUID: fake.UUID(hostName, i), Index: i, Type: "rtx4090-24g", Name: "NVIDIA GeForce RTX 4090",
			MemoryMiB: 24564, TopoGroup: []string{"group0", "group1"}[i/4], NUMANode: i / 4, Health: "healthy"}
		if g != want {
			t.Errorf("GPU %d = %+v, want %+v", i, g, want)
		}
	}
	fi, err := os.Stat(credentialsPath(h.stateDir))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
	ag.stop(t)

	// A restarted agent uses the stored credentials.
	before := cp.reportCount()
	h.start()
	cp.waitReport("a report from the restarted agent", before, func(agentproto.Report) bool { return true })
	if n := cp.registrationCount(); n != 1 {
		t.Fatalf("restarted agent registered again: %d registrations", n)
	}
}

func TestRegistersAgainWhenTokenIsRejected(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	h.heartbeat = 20 * time.Millisecond
	h.start()
	cp.waitReport("the first report", 0, func(agentproto.Report) bool { return true })
	old, err := os.ReadFile(credentialsPath(h.stateDir))
	if err != nil {
		t.Fatal(err)
	}

	cp.revoke(hostName)
	cp.waitUntil("a second registration", func() bool { return len(cp.registrations) == 2 })
	before := cp.reportCount()
	cp.waitReport("a report with the new token", before, func(agentproto.Report) bool { return true })
	now, err := os.ReadFile(credentialsPath(h.stateDir))
	if err != nil {
		t.Fatal(err)
	}
	if string(now) == string(old) {
		t.Fatal("stored credentials not replaced after re-registration")
	}
	if !strings.Contains(string(now), cp.hostID(hostName)) {
		t.Fatalf("stored credentials %s do not name host %s", now, cp.hostID(hostName))
	}
}

func TestRefusedJoinTokenStopsTheAgent(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	cfg := h.config(h.runtime())
	cfg.JoinToken = "wrong"
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background())
	if !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("Run with a refused join token = %v, want unauthorized", err)
	}
}

func TestConvergesRunningStoppedAbsent(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)

	// An instance the control plane does not know must be left alone.
	if _, err := h.runtime().Run(context.Background(), runtime.Spec{InstanceID: "i-stray", AllocationID: "alloc-x",
		Image: "busybox", VolumeName: "vol-stray"}); err != nil {
		t.Fatal(err)
	}
	strayPID := h.pid("i-stray")

	h.start()
	cp.waitUntil("registration", func() bool { return len(cp.registrations) == 1 })
	gpus := []string{fake.UUID(hostName, 0), fake.UUID(hostName, 1)}

	// Running. The heartbeat is an hour: only the long poll can bring it.
	since := cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-1", "alloc-1", gpus...))
	rep := cp.waitReport("i-1 running", since, hasState("i-1", agentproto.StateRunning, "alloc-1"))
	if ai, _ := instance(rep, "i-1"); ai.StartedAt.IsZero() {
		t.Errorf("running instance reported without a start time: %+v", ai)
	}
	pid := h.pid("i-1")
	if pid == 0 {
		t.Fatal("i-1 reported running but has no process")
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"GPURENT_INSTANCE_ID=i-1", "JUPYTER_TOKEN=t0ken", "CUDA_VISIBLE_DEVICES=" + strings.Join(gpus, ",")} {
		if !strings.Contains(string(env), kv+"\x00") {
			t.Errorf("instance environment lacks %s", kv)
		}
	}
	if ai, ok := instance(rep, "i-stray"); !ok || ai.State != agentproto.StateRunning {
		t.Errorf("stray instance not reported as running: %+v", rep.Instances)
	}
	if err := os.WriteFile(filepath.Join(h.runtimeDir, "volumes", "vol-i-1", "data.bin"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Stopped.
	since = cp.reportCount()
	stopped := desiredRunning("i-1", "", gpus...)
	stopped.State, stopped.GPUUUIDs = agentproto.StateStopped, nil
	cp.setDesired(hostName, stopped)
	cp.waitReport("i-1 stopped", since, hasState("i-1", agentproto.StateStopped, ""))
	if p := h.pid("i-1"); p != 0 {
		t.Fatalf("i-1 still has process %d after stop", p)
	}

	// Running again on another allocation (another GPU), volume kept.
	since = cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-1", "alloc-2", fake.UUID(hostName, 5)))
	cp.waitReport("i-1 running on alloc-2", since, hasState("i-1", agentproto.StateRunning, "alloc-2"))
	if b, err := os.ReadFile(filepath.Join(h.runtimeDir, "volumes", "vol-i-1", "data.bin")); err != nil || string(b) != "keep" {
		t.Fatalf("volume lost across stop/start: %q %v", b, err)
	}

	// Absent: container and volume go.
	since = cp.reportCount()
	gone := desiredRunning("i-1", "", nil...)
	gone.State = agentproto.StateAbsent
	cp.setDesired(hostName, gone)
	cp.waitReport("i-1 absent", since, hasState("i-1", agentproto.StateAbsent, ""))
	if _, err := os.Stat(filepath.Join(h.runtimeDir, "volumes", "vol-i-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("volume of the absent instance still there: %v", err)
	}
	if p := h.pid("i-stray"); p != strayPID {
		t.Fatalf("stray instance touched: pid %d → %d", strayPID, p)
	}
}

func TestAgentRestartLeavesInstancesAndAdoptsThem(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	ag := h.start()
	cp.waitUntil("registration", func() bool { return len(cp.registrations) == 1 })
	since := cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-2", "alloc-1", fake.UUID(hostName, 2)))
	cp.waitReport("i-2 running", since, hasState("i-2", agentproto.StateRunning, "alloc-1"))
	pid := h.pid("i-2")

	ag.stop(t)
	if p := h.pid("i-2"); p != pid {
		t.Fatalf("stopping the agent touched the instance: pid %d → %d", pid, p)
	}

	since = cp.reportCount()
	h.start()
	rep := cp.waitReport("a report from the new agent", since, func(agentproto.Report) bool { return true })
	if ai, ok := instance(rep, "i-2"); !ok || ai.State != agentproto.StateRunning || ai.AllocationID != "alloc-1" {
		t.Fatalf("new agent reports %+v", rep.Instances)
	}
	// Let it converge to the same desired state again.
	since = cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-2", "alloc-1", fake.UUID(hostName, 2)))
	cp.waitReport("a converged report", since, hasState("i-2", agentproto.StateRunning, "alloc-1"))
	if p := h.pid("i-2"); p != pid {
		t.Fatalf("new agent restarted the instance: pid %d → %d", pid, p)
	}
	if n := cp.registrationCount(); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}
}

// countingRuntime counts Run calls per instance around a real runtime.
type countingRuntime struct {
	runtime.Runtime
	mu   sync.Mutex
	runs map[string]int
}

func (c *countingRuntime) Run(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	c.mu.Lock()
	c.runs[spec.InstanceID]++
	c.mu.Unlock()
	return c.Runtime.Run(ctx, spec)
}

func (c *countingRuntime) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

func TestRunFailureIsReportedAndNotRetriedInALoop(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	rt := &countingRuntime{Runtime: h.runtime(), runs: map[string]int{}}
	h.startWith(h.config(rt))
	cp.waitUntil("registration", func() bool { return len(cp.registrations) == 1 })

	bad := desiredRunning("i-3", "alloc-1", fake.UUID(hostName, 3))
	bad.VolumeName = "../../etc" // the runtime refuses it
	since := cp.reportCount()
	cp.setDesired(hostName, bad)
	rep := cp.waitReport("i-3 failed", since, hasState("i-3", agentproto.StateFailed, "alloc-1"))
	if ai, _ := instance(rep, "i-3"); !strings.Contains(ai.Message, "volume name") {
		t.Fatalf("failure message %q does not say why", ai.Message)
	}

	// Another instance changes: the unchanged failing one is not retried.
	since = cp.reportCount()
	cp.setDesired(hostName, bad, desiredRunning("i-4", "alloc-2", fake.UUID(hostName, 4)))
	rep = cp.waitReport("i-4 running", since, hasState("i-4", agentproto.StateRunning, "alloc-2"))
	if ai, _ := instance(rep, "i-3"); ai.State != agentproto.StateFailed {
		t.Fatalf("i-3 reported %+v, want still failed", ai)
	}
	if n := rt.count("i-3"); n != 1 {
		t.Fatalf("failing Run tried %d times, want once until it changes", n)
	}

	// Fixed: retried at once.
	fixed := bad
	fixed.VolumeName = "vol-i-3"
	since = cp.reportCount()
	cp.setDesired(hostName, fixed, desiredRunning("i-4", "alloc-2", fake.UUID(hostName, 4)))
	cp.waitReport("i-3 running once fixed", since, hasState("i-3", agentproto.StateRunning, "alloc-1"))
}

func TestOutageDoesNotTouchInstances(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	h.heartbeat = 20 * time.Millisecond
	h.start()
	cp.waitUntil("registration", func() bool { return len(cp.registrations) == 1 })
	since := cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-5", "alloc-1", fake.UUID(hostName, 0)))
	cp.waitReport("i-5 running", since, hasState("i-5", agentproto.StateRunning, "alloc-1"))
	pid := h.pid("i-5")

	cp.setDown(true)
	cp.waitUntil("the agent to retry through the outage", func() bool { return cp.refused >= 20 })
	if p := h.pid("i-5"); p != pid {
		t.Fatalf("outage touched the instance: pid %d → %d", pid, p)
	}

	cp.setDown(false)
	since = cp.reportCount()
	cp.waitReport("a report after the outage", since, hasState("i-5", agentproto.StateRunning, "alloc-1"))
	if p := h.pid("i-5"); p != pid {
		t.Fatalf("recovery touched the instance: pid %d → %d", pid, p)
	}
	if n := cp.registrationCount(); n != 1 {
		t.Fatalf("%d registrations after the outage, want 1", n)
	}
}

// A long-poll answer that never arrives (lost on the way) is made up for by
// the generation in a report answer.
func TestReportAheadFetchesDesiredAtOnce(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	h.heartbeat = 20 * time.Millisecond
	h.start()
	cp.waitUntil("a long poll waiting", func() bool { return cp.polling == 1 })
	cp.setDeaf(true)
	since := cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-6", "alloc-1", fake.UUID(hostName, 1)))
	cp.waitReport("i-6 running", since, hasState("i-6", agentproto.StateRunning, "alloc-1"))
}

func TestCrashedInstanceIsRestartedOnNextAnswer(t *testing.T) {
	cp := newControlPlane(t)
	cp.pollTimeout = 50 * time.Millisecond // answers without change come often
	h := newHost(t, cp)
	h.start()
	cp.waitUntil("registration", func() bool { return len(cp.registrations) == 1 })
	since := cp.reportCount()
	cp.setDesired(hostName, desiredRunning("i-7", "alloc-1"))
	cp.waitReport("i-7 running", since, hasState("i-7", agentproto.StateRunning, "alloc-1"))
	pid := h.pid("i-7")
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cp.waitUntil("i-7 restarted", func() bool {
		p, err := h.runtime().PID("i-7")
		return err == nil && p != 0 && p != pid
	})
}

func TestNewChecksConfigAndDetectsResources(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	cfg := h.config(h.runtime())
	cfg.CPUMilli, cfg.MemoryMiB, cfg.DiskGiB = 0, 0, 0
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.CPUMilli <= 0 || a.cfg.MemoryMiB <= 0 || a.cfg.DiskGiB <= 0 {
		t.Fatalf("detected resources: cpu %d mem %d disk %d", a.cfg.CPUMilli, a.cfg.MemoryMiB, a.cfg.DiskGiB)
	}
	for name, mutate := range map[string]func(*Config){
		"no server":     func(c *Config) { c.ServerURL = "" },
		"bad scheme":    func(c *Config) { c.ServerURL = "ftp://x" },
		"no state dir":  func(c *Config) { c.StateDir = "" },
		"no runtime":    func(c *Config) { c.Runtime = nil },
		"no gpus":       func(c *Config) { c.GPUs = nil },
		"short timeout": func(c *Config) { c.HTTPClient = &http.Client{Timeout: 10 * time.Second} },
		"no join token": func(c *Config) { c.JoinToken = "" },
	} {
		c := h.config(h.runtime())
		mutate(&c)
		if _, err := New(c); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: New = %v, want invalid", name, err)
		}
	}
}
