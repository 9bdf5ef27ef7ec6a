package docker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// These tests check the pure parts without a daemon; docker_test.go checks
// the same against the real Docker Engine.

func TestContainerConfigWithNvidiaRuntime(t *testing.T) {
	r := &Runtime{cfg: Config{DefaultPidsLimit: 4096, StopTimeout: 7 * time.Second, InitBinary: "/opt/gpurent-static",
		LogMaxBytes: 1 << 20, LogMaxFiles: 3}, network: "bridge", nvidia: true}
	spec := runtime.Spec{
		InstanceID: "i-abc", AllocationID: "alloc-1", Image: "img", VolumeName: "vol-1",
		GPUUUIDs: []string{"GPU-b", "GPU-a"}, CPUMilli: 250, MemoryMiB: 1024, PidsLimit: 100,
	}
	cfg, host := r.containerConfig(spec, imageCommand{})
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
	if host.Init == nil || *host.Init {
		t.Error("Docker's init is on: gpurent's init must be PID 1")
	}
	var initMount bool
	for _, m := range host.Mounts {
		if m.Target == InitPath {
			initMount = m.Source == "/opt/gpurent-static" && m.ReadOnly && m.Type == "bind"
		}
	}
	if !initMount || host.Tmpfs[InitRunDir] == "" || cfg.StopSignal != "SIGTERM" {
		t.Errorf("init: mounts %+v tmpfs %v stop signal %q", host.Mounts, host.Tmpfs, cfg.StopSignal)
	}
	if host.LogConfig.Type != "json-file" || host.LogConfig.Config["max-size"] != "1048576" || host.LogConfig.Config["max-file"] != "3" {
		t.Errorf("log config %+v: want json-file bounded by the config", host.LogConfig)
	}

	// Without GPUs there is no device request even with the runtime.
	spec.GPUUUIDs = nil
	if _, host := r.containerConfig(spec, imageCommand{}); len(host.DeviceRequests) != 0 {
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

// TestStartupCommand: the init starts the image's entrypoint and command
// unless the spec sets a shell line or none.
func TestStartupCommand(t *testing.T) {
	r := &Runtime{cfg: Config{DefaultPidsLimit: 4096, InitBinary: "/x"}, network: "none"}
	img := imageCommand{Entrypoint: []string{"/entry.sh"}, Cmd: []string{"/bin/bash"}}
	line, none := "python train.py --epochs 3", ""
	for _, tc := range []struct {
		startup *string
		want    []string
	}{
		{nil, []string{"/entry.sh", "/bin/bash"}},
		{&none, nil},
		{&line, []string{"/bin/sh", "-c", line}},
	} {
		spec := runtime.Spec{InstanceID: "i-1", AllocationID: "a", Image: "img", VolumeName: "v", Startup: tc.startup}
		cfg, _ := r.containerConfig(spec, img)
		want := append([]string{InitPath, "instance-init", "--status", InitStatus, "--"}, tc.want...)
		if !slices.Equal(cfg.Entrypoint, want) || len(cfg.Cmd) != 0 {
			t.Errorf("startup %v: entrypoint %q cmd %q, want %q", tc.startup, cfg.Entrypoint, cfg.Cmd, want)
		}
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
		{"init keeps dying", container.State{Status: container.StateRestarting, ExitCode: 2}, runtime.Failed},
		{"init OOM-killed, restarting", container.State{Status: container.StateRestarting, ExitCode: 137, OOMKilled: true}, runtime.Failed},
		{"init OOM-killed", container.State{Status: container.StateExited, ExitCode: 137, OOMKilled: true}, runtime.Failed},
		{"stopped after a process ran out of memory", container.State{Status: container.StateExited, ExitCode: 0, OOMKilled: true}, runtime.Stopped},
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
	oom := statusOf(container.InspectResponse{State: &container.State{Status: container.StateExited, ExitCode: 137, OOMKilled: true},
		Config: &container.Config{Labels: labels}, HostConfig: &container.HostConfig{Resources: container.Resources{Memory: 512 << 20}}})
	if !strings.Contains(oom.Message, "out of memory") || !strings.Contains(oom.Message, "512 MiB") || !strings.Contains(oom.Message, "more memory") {
		t.Errorf("OOM message %q: want the limit and what to do", oom.Message)
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

// TestKeyLockSerialisesOneKey: an instance's lock (internal/keymutex, whose
// tests hold the one-holder-per-key rule) that cannot be had before the
// context ends is "unavailable: busy", and leaves no entry behind.
func TestKeyLockSerialisesOneKey(t *testing.T) {
	k := &Runtime{}
	ctx := t.Context()
	unlock, err := k.lockInstance(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := k.lockInstance(short, "x"); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Errorf("lock with a done context = %v, want unavailable", err)
	}
	unlock()
	if n := k.locks.Len(); n != 0 {
		t.Errorf("%d entries left", n)
	}
}

func TestLimitsCappedAtTheMachine(t *testing.T) {
	r := &Runtime{cfg: Config{DefaultPidsLimit: DefaultPidsLimit}, network: "none", hostCPUs: 2, hostMemory: 4 << 30}
	_, host := r.containerConfig(runtime.Spec{InstanceID: "i-cap", Image: "x", VolumeName: "v",
		CPUMilli: 80_000, MemoryMiB: 900 << 10}, imageCommand{})
	if host.NanoCPUs != 2_000_000_000 || host.Memory != 4<<30 || host.MemorySwap != 4<<30 {
		t.Errorf("cpu %d mem %d swap %d: want capped at 2 CPUs and 4 GiB", host.NanoCPUs, host.Memory, host.MemorySwap)
	}
	_, host = r.containerConfig(runtime.Spec{InstanceID: "i-cap", Image: "x", VolumeName: "v", CPUMilli: 500, MemoryMiB: 256}, imageCommand{})
	if host.NanoCPUs != 500_000_000 || host.Memory != 256<<20 {
		t.Errorf("cpu %d mem %d: limits below the machine must stay as asked", host.NanoCPUs, host.Memory)
	}
}

func TestContainerConfigLayerQuotaAndPastaDNS(t *testing.T) {
	r := &Runtime{cfg: Config{DefaultPidsLimit: 4096}, network: NetworkPasta, layerBytes: 50 << 30}
	cfg, host := r.containerConfig(runtime.Spec{InstanceID: "i-abc", AllocationID: "a", Image: "img", VolumeName: "v"}, imageCommand{})
	if cfg.Labels[LabelNetwork] != NetworkPasta {
		t.Errorf("labels %v lack the pasta network", cfg.Labels)
	}
	if host.StorageOpt["size"] != "53687091200" {
		t.Errorf("StorageOpt = %v, want the layer limit", host.StorageOpt)
	}
	if host.NetworkMode != NetworkNone || len(host.DNS) != 1 || host.DNS[0] != PastaDNS {
		t.Errorf("network %q DNS %v: want none (the agent attaches pasta) and pasta's DNS", host.NetworkMode, host.DNS)
	}
	r = &Runtime{cfg: Config{DefaultPidsLimit: 4096}, network: NetworkNone}
	if _, host := r.containerConfig(runtime.Spec{InstanceID: "i-abc", AllocationID: "a", Image: "img", VolumeName: "v"}, imageCommand{}); host.StorageOpt != nil || host.DNS != nil {
		t.Errorf("without a layer quota or pasta: StorageOpt %v DNS %v", host.StorageOpt, host.DNS)
	}
}
