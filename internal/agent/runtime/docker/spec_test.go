package docker

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// These tests check the pure parts without a daemon; docker_test.go checks
// the same against the real Docker Engine.

func TestContainerConfigWithNvidiaRuntime(t *testing.T) {
	r := &Runtime{cfg: Config{DefaultPidsLimit: 4096, StopTimeout: 7 * time.Second}, network: "bridge", nvidia: true}
	spec := runtime.Spec{
		InstanceID: "i-abc", AllocationID: "alloc-1", Image: "img", VolumeName: "vol-1",
		GPUUUIDs: []string{"GPU-b", "GPU-a"}, CPUMilli: 250, MemoryMiB: 1024, PidsLimit: 100,
	}
	cfg, host := r.containerConfig(spec)
	if len(host.DeviceRequests) != 1 {
		t.Fatalf("DeviceRequests = %+v, want one", host.DeviceRequests)
	}
	dr := host.DeviceRequests[0]
	if dr.Driver != "nvidia" || dr.Count != 0 || !slices.Equal(dr.DeviceIDs, []string{"GPU-b", "GPU-a"}) ||
		len(dr.Capabilities) != 1 || !slices.Equal(dr.Capabilities[0], []string{"gpu"}) {
		t.Errorf("DeviceRequest = %+v, want exactly the spec's UUIDs, never a count", dr)
	}
	if host.NanoCPUs != 250_000_000 || host.Memory != 1<<30 || *host.PidsLimit != 100 || host.ShmSize != 512<<20 {
		t.Errorf("limits: cpu %d mem %d pids %d shm %d", host.NanoCPUs, host.Memory, *host.PidsLimit, host.ShmSize)
	}
	if *cfg.StopTimeout != 7 || cfg.Hostname != "i-abc" || host.NetworkMode != "bridge" {
		t.Errorf("stop timeout %d, hostname %q, network %q", *cfg.StopTimeout, cfg.Hostname, host.NetworkMode)
	}
	if host.Init == nil || !*host.Init {
		t.Error("no init process to reap zombies")
	}

	// Without GPUs there is no device request even with the runtime.
	spec.GPUUUIDs = nil
	if _, host := r.containerConfig(spec); len(host.DeviceRequests) != 0 {
		t.Errorf("DeviceRequests without GPUs = %+v", host.DeviceRequests)
	}
}

func TestEnvironment(t *testing.T) {
	spec := runtime.Spec{InstanceID: "i-1", GPUUUIDs: []string{"GPU-1", "GPU-2"},
		Env: map[string]string{"Z": "1", "A": "x=y", EnvNvidiaVisibleDevices: "all", EnvInstanceID: "forged"}}
	got := environment(spec)
	want := []string{"A=x=y", "CUDA_VISIBLE_DEVICES=GPU-1,GPU-2", "GPURENT_INSTANCE_ID=i-1",
		"NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-2", "Z=1"}
	if !slices.Equal(got, want) {
		t.Errorf("environment = %q, want %q", got, want)
	}
	if g := gpusFromEnv(got); !slices.Equal(g, spec.GPUUUIDs) {
		t.Errorf("gpusFromEnv = %v", g)
	}
	if spec.Env[EnvNvidiaVisibleDevices] != "all" {
		t.Error("environment modified the spec's map")
	}
	none := environment(runtime.Spec{InstanceID: "i-2"})
	if !slices.Contains(none, "NVIDIA_VISIBLE_DEVICES=void") || !slices.Contains(none, "CUDA_VISIBLE_DEVICES=") {
		t.Errorf("environment without GPUs = %q", none)
	}
	if g := gpusFromEnv(none); g != nil {
		t.Errorf("gpusFromEnv(void) = %v", g)
	}
}

func TestStatusOf(t *testing.T) {
	labels := map[string]string{runtime.LabelInstance: "i-1", runtime.LabelAllocation: "a-1"}
	cases := []struct {
		name  string
		state container.State
		want  runtime.State
	}{
		{"running", container.State{Status: container.StateRunning, StartedAt: "2026-05-01T10:00:00.123456789+08:00"}, runtime.Running},
		{"stopped by us", container.State{Status: container.StateExited, ExitCode: 0}, runtime.Stopped},
		{"killed at stop timeout", container.State{Status: container.StateExited, ExitCode: 137}, runtime.Stopped},
		{"start failed", container.State{Status: container.StateExited, ExitCode: 128, Error: "nvidia-container-cli: device error"}, runtime.Failed},
		{"never started", container.State{Status: container.StateCreated}, runtime.Stopped},
		{"crash loop", container.State{Status: container.StateRestarting, ExitCode: 1}, runtime.Failed},
		{"dead", container.State{Status: container.StateDead}, runtime.Failed},
		{"paused", container.State{Status: container.StatePaused}, runtime.Stopped},
	}
	for _, c := range cases {
		st := statusOf(container.InspectResponse{State: &c.state, Config: &container.Config{Labels: labels}})
		if st.State != c.want || st.InstanceID != "i-1" || st.AllocationID != "a-1" {
			t.Errorf("%s: %+v, want %s", c.name, st, c.want)
		}
		if c.state.Status != container.StateRunning && c.want != runtime.Stopped && st.Message == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	st := statusOf(container.InspectResponse{State: &cases[0].state, Config: &container.Config{Labels: labels}})
	if want := time.Date(2026, 5, 1, 2, 0, 0, 123456789, time.UTC); !st.StartedAt.Equal(want) || st.StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt = %v, want %v in UTC", st.StartedAt, want)
	}
	never := statusOf(container.InspectResponse{State: &container.State{Status: container.StateCreated, StartedAt: "0001-01-01T00:00:00Z"},
		Config: &container.Config{Labels: labels}})
	if !never.StartedAt.IsZero() {
		t.Errorf("never-started StartedAt = %v", never.StartedAt)
	}
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{
		"i-0123abc": true, "vol_1.a": true, "": false, "-x": false, ".x": false,
		"a/b": false, "a b": false, "ä": false, string(make([]byte, 129)): false,
	} {
		if validName(s) != want {
			t.Errorf("validName(%q) = %v", s, !want)
		}
	}
}

func TestKeyLockSerialisesOneKey(t *testing.T) {
	var k keyLock
	ctx := t.Context()
	var mu sync.Mutex
	inside := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		key := []string{"a", "b"}[i%2]
		wg.Go(func() {
			unlock, err := k.lock(ctx, key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside[key]++
			if inside[key] > 1 {
				t.Errorf("two holders of %s", key)
			}
			mu.Unlock()
			goruntime.Gosched() // let another holder in, were the lock broken
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if len(k.held) != 0 {
		t.Errorf("entries left: %v", k.held)
	}

	unlock, err := k.lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := k.lock(short, "x"); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Errorf("lock with a done context = %v, want unavailable", err)
	}
	unlock()
	if len(k.held) != 0 {
		t.Errorf("entries left: %v", k.held)
	}
}

func TestLimitsCappedAtTheMachine(t *testing.T) {
	r := &Runtime{cfg: Config{DefaultPidsLimit: DefaultPidsLimit}, network: "none", hostCPUs: 2, hostMemory: 4 << 30}
	_, host := r.containerConfig(runtime.Spec{InstanceID: "i-cap", Image: "x", VolumeName: "v",
		CPUMilli: 80_000, MemoryMiB: 900 << 10})
	if host.NanoCPUs != 2_000_000_000 || host.Memory != 4<<30 || host.MemorySwap != 4<<30 {
		t.Errorf("cpu %d mem %d swap %d: want capped at 2 CPUs and 4 GiB", host.NanoCPUs, host.Memory, host.MemorySwap)
	}
	_, host = r.containerConfig(runtime.Spec{InstanceID: "i-cap", Image: "x", VolumeName: "v", CPUMilli: 500, MemoryMiB: 256})
	if host.NanoCPUs != 500_000_000 || host.Memory != 256<<20 {
		t.Errorf("cpu %d mem %d: limits below the machine must stay as asked", host.NanoCPUs, host.Memory)
	}
}
