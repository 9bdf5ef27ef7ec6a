package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// newRuntime opens a runtime over a fresh directory and, when the test
// ends, removes every instance it holds so no process outlives the test.
func newRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(t, r) })
	return r
}

func removeAll(t *testing.T, r *Runtime) {
	t.Helper()
	list, err := r.List(context.Background())
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, st := range list {
		if err := r.Remove(context.Background(), st.InstanceID, "", true); err != nil {
			t.Errorf("cleanup %s: %v", st.InstanceID, err)
		}
	}
}

func spec(id, alloc string) runtime.Spec {
	return runtime.Spec{
		InstanceID:   id,
		AllocationID: alloc,
		Image:        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
		GPUUUIDs:     []string{"GPU-11111111-2222-3333-4444-555555555555", "GPU-66666666-7777-8888-9999-000000000000"},
		VolumeName:   "vol-" + id,
		VolumeGiB:    50,
		Env:          map[string]string{"JUPYTER_TOKEN": "s3cret", "GPURENT_INSTANCE_ID": "spoofed"},
	}
}

func procEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

func mustPID(t *testing.T, r *Runtime, id string) int {
	t.Helper()
	pid, err := r.PID(id)
	if err != nil {
		t.Fatal(err)
	}
	if pid == 0 {
		t.Fatalf("instance %s is not running", id)
	}
	return pid
}

// gone reports whether pid no longer exists at all (not even as a zombie).
func gone(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, fs.ErrNotExist)
}

// waitFor polls cond; the deadline only bounds a hung test, it measures
// nothing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestName(t *testing.T) {
	r := newRuntime(t, Config{})
	if r.Name() != "process" {
		t.Fatalf("Name() = %q", r.Name())
	}
}

func TestRunStartsIsolatedSessionWithEnvAndVolume(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir})
	t.Setenv("GPURENT_TEST_AGENT_SECRET", "leak")
	sp := spec("i-a", "alloc-1")
	st, err := r.Run(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.Running || st.AllocationID != "alloc-1" || st.StartedAt.IsZero() || len(st.GPUUUIDs) != 2 {
		t.Fatalf("Run status = %+v", st)
	}
	pid := mustPID(t, r, "i-a")

	ps, err := readProcStat("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	if ps.session != pid {
		t.Errorf("process %d is in session %d, want its own", pid, ps.session)
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "volumes", "vol-i-a"); cwd != want {
		t.Errorf("cwd = %q, want %q", cwd, want)
	}
	env := procEnv(t, pid)
	gpus := strings.Join(sp.GPUUUIDs, ",")
	for k, want := range map[string]string{
		"NVIDIA_VISIBLE_DEVICES": gpus,
		"CUDA_VISIBLE_DEVICES":   gpus,
		"GPURENT_INSTANCE_ID":    "i-a", // the spec cannot spoof it
		"JUPYTER_TOKEN":          "s3cret",
	} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["GPURENT_TEST_AGENT_SECRET"]; ok {
		t.Error("the agent's environment leaked into the instance")
	}

	list, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].InstanceID != "i-a" || list[0].State != runtime.Running || !list[0].StartedAt.Equal(st.StartedAt) {
		t.Fatalf("List = %+v", list)
	}
}

func TestRunIsIdempotentAndReplacesOnNewAllocation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir})
	if _, err := r.Run(ctx, spec("i-b", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	pid1 := mustPID(t, r, "i-b")
	data := filepath.Join(dir, "volumes", "vol-i-b", "checkpoint.pt")
	if err := os.WriteFile(data, []byte("weights"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Same allocation: untouched.
	if _, err := r.Run(ctx, spec("i-b", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	if pid := mustPID(t, r, "i-b"); pid != pid1 {
		t.Fatalf("same allocation restarted the process: %d → %d", pid1, pid)
	}

	// Another allocation (an upgrade): replaced, volume kept.
	up := spec("i-b", "alloc-2")
	up.GPUUUIDs = []string{"GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}
	st, err := r.Run(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	pid2 := mustPID(t, r, "i-b")
	if pid2 == pid1 || st.AllocationID != "alloc-2" {
		t.Fatalf("new allocation: pid %d → %d, status %+v", pid1, pid2, st)
	}
	if !gone(pid1) {
		t.Errorf("old process %d still exists (zombie or running)", pid1)
	}
	if env := procEnv(t, pid2); env["CUDA_VISIBLE_DEVICES"] != up.GPUUUIDs[0] {
		t.Errorf("replacement sees GPUs %q", env["CUDA_VISIBLE_DEVICES"])
	}
	if b, err := os.ReadFile(data); err != nil || string(b) != "weights" {
		t.Fatalf("volume lost across replacement: %q, %v", b, err)
	}
}

func TestStopStartRemove(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir})
	if _, err := r.Run(ctx, spec("i-c", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	pid := mustPID(t, r, "i-c")
	if err := r.Stop(ctx, "i-c"); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("process %d not gone (or left a zombie) after Stop", pid)
	}
	list, _ := r.List(ctx)
	if len(list) != 1 || list[0].State != runtime.Stopped {
		t.Fatalf("after Stop: %+v", list)
	}
	if err := r.Stop(ctx, "i-c"); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := r.Stop(ctx, "i-never"); err != nil {
		t.Fatalf("Stop of an unknown instance: %v", err)
	}

	// Start again with the same allocation.
	if _, err := r.Run(ctx, spec("i-c", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	if mustPID(t, r, "i-c") == pid {
		t.Fatal("restart reused a dead pid record")
	}

	// Remove keeping the volume, then with it.
	vol := filepath.Join(dir, "volumes", "vol-i-c")
	if err := r.Remove(ctx, "i-c", "vol-i-c", false); err != nil {
		t.Fatal(err)
	}
	if list, _ := r.List(ctx); len(list) != 0 {
		t.Fatalf("after Remove: %+v", list)
	}
	if _, err := os.Stat(vol); err != nil {
		t.Fatalf("volume removed though removeVolume was false: %v", err)
	}
	if err := r.Remove(ctx, "i-c", "vol-i-c", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vol); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("volume still there: %v", err)
	}
	if _, err := r.PID("i-c"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("PID after Remove: %v", err)
	}
}

func TestNoGPUsMeansNoneVisible(t *testing.T) {
	r := newRuntime(t, Config{})
	sp := spec("i-cpu", "alloc-1")
	sp.GPUUUIDs = nil
	if _, err := r.Run(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	env := procEnv(t, mustPID(t, r, "i-cpu"))
	if v, ok := env["CUDA_VISIBLE_DEVICES"]; !ok || v != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES = %q (set %v), want set and empty", v, ok)
	}
	if env["NVIDIA_VISIBLE_DEVICES"] != "void" {
		t.Errorf("NVIDIA_VISIBLE_DEVICES = %q, want void", env["NVIDIA_VISIBLE_DEVICES"])
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, Config{
		StopTimeout: 100 * time.Millisecond,
		Command:     []string{"/bin/sh", "-c", `trap "" TERM; while :; do sleep 1; done`},
	})
	if _, err := r.Run(ctx, spec("i-stubborn", "a1")); err != nil {
		t.Fatal(err)
	}
	pid := mustPID(t, r, "i-stubborn")
	if err := r.Stop(ctx, "i-stubborn"); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("process %d survived Stop", pid)
	}
}

func TestRestartedRuntimeAdoptsRunningProcesses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Run(ctx, spec("i-d", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	pid := mustPID(t, first, "i-d")

	second := newRuntime(t, Config{Dir: dir})
	list, err := second.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].State != runtime.Running || list[0].AllocationID != "alloc-1" {
		t.Fatalf("adopted list = %+v", list)
	}
	if _, err := second.Run(ctx, spec("i-d", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	if got := mustPID(t, second, "i-d"); got != pid {
		t.Fatalf("adopting runtime restarted the process: %d → %d", pid, got)
	}
	// The adopting runtime is not the parent: Stop waits through /proc.
	if err := second.Stop(ctx, "i-d"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stopped process to be reaped", func() bool { return gone(pid) })
}

func TestProcessThatDiesIsReapedAndReportedStopped(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, Config{})
	if _, err := r.Run(ctx, spec("i-e", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	pid := mustPID(t, r, "i-e")
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed process to be reaped (no zombie)", func() bool { return gone(pid) })
	list, _ := r.List(ctx)
	if len(list) != 1 || list[0].State != runtime.Stopped || !strings.Contains(list[0].Message, "exited") {
		t.Fatalf("after the process died: %+v", list)
	}
	// Run starts it again.
	if _, err := r.Run(ctx, spec("i-e", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	mustPID(t, r, "i-e")
}

// A recorded pid now used by an unrelated process must never be taken for
// the instance, nor signalled.
func TestReusedPIDIsNotTheInstance(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir})
	sp := spec("i-f", "alloc-1")
	if _, err := r.Run(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx, "i-f"); err != nil {
		t.Fatal(err)
	}
	// Forge a record pointing at this test process with another start time.
	self, err := readProcStat("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	forged := procRecord{PID: os.Getpid(), StartTicks: self.startTicks + 1, BootID: r.bootID, StartedAt: time.Now().UTC()}
	if err := writeJSON(filepath.Join(dir, "instances", "i-f", "proc.json"), forged); err != nil {
		t.Fatal(err)
	}
	list, _ := r.List(ctx)
	if len(list) != 1 || list[0].State == runtime.Running {
		t.Fatalf("reused pid taken for the instance: %+v", list)
	}
	// Same pid and start time but another boot: not it either.
	forged.StartTicks, forged.BootID = self.startTicks, "another-boot"
	if err := writeJSON(filepath.Join(dir, "instances", "i-f", "proc.json"), forged); err != nil {
		t.Fatal(err)
	}
	if list, _ := r.List(ctx); list[0].State == runtime.Running {
		t.Fatalf("record from another boot taken for the instance: %+v", list)
	}
	// Stop and Remove must not signal us (we would die of SIGTERM).
	if err := r.Stop(ctx, "i-f"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "i-f", "", true); err != nil {
		t.Fatal(err)
	}
}

func TestBadInputIsRejected(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir})
	for name, mutate := range map[string]func(*runtime.Spec){
		"traversal instance": func(s *runtime.Spec) { s.InstanceID = "../etc" },
		"empty instance":     func(s *runtime.Spec) { s.InstanceID = "" },
		"traversal volume":   func(s *runtime.Spec) { s.VolumeName = "../../root" },
		"slash volume":       func(s *runtime.Spec) { s.VolumeName = "a/b" },
		"no image":           func(s *runtime.Spec) { s.Image = " " },
		"all GPUs":           func(s *runtime.Spec) { s.GPUUUIDs = []string{"all"} },
		"bad env key":        func(s *runtime.Spec) { s.Env = map[string]string{"A=B": "c"} },
	} {
		sp := spec("i-g", "alloc-1")
		mutate(&sp)
		if _, err := r.Run(ctx, sp); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: Run error = %v, want invalid", name, err)
		}
	}
	if err := r.Stop(ctx, ".."); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("Stop(..) = %v", err)
	}
	if err := r.Remove(ctx, "i-g", "../x", true); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("Remove with a bad volume = %v", err)
	}
	if list, _ := r.List(ctx); len(list) != 0 {
		t.Fatalf("bad specs left state: %+v", list)
	}
	if _, err := New(Config{}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("New without Dir = %v", err)
	}
	if _, err := New(Config{Dir: dir, Command: []string{"sh"}}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("New with a relative command = %v", err)
	}
}

func TestUnreadableStateIsListedFailed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir})
	if err := os.MkdirAll(filepath.Join(dir, "instances", "i-h"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "instances", "i-h", "spec.json"), []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].InstanceID != "i-h" || list[0].State != runtime.Failed || list[0].Message == "" {
		t.Fatalf("List = %+v", list)
	}
	// Run repairs it.
	if _, err := r.Run(ctx, spec("i-h", "alloc-1")); err != nil {
		t.Fatal(err)
	}
	mustPID(t, r, "i-h")
}

func TestConcurrentRunsStartOneProcess(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, Config{})
	var wg sync.WaitGroup
	pids := make(chan int, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Run(ctx, spec("i-j", "alloc-1")); err != nil {
				t.Error(err)
				return
			}
			pid, _ := r.PID("i-j")
			pids <- pid
		}()
	}
	wg.Wait()
	close(pids)
	first := -1
	for pid := range pids {
		if first == -1 {
			first = pid
		}
		if pid != first || pid == 0 {
			t.Fatalf("concurrent Runs gave pids %d and %d", first, pid)
		}
	}
}

func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	r, err := New(Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 16 {
		if _, err := r.Run(ctx, spec(fmt.Sprintf("i-%02d", i), "alloc-1")); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		list, _ := r.List(ctx)
		for _, st := range list {
			_ = r.Remove(ctx, st.InstanceID, "", true)
		}
	})
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.List(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
