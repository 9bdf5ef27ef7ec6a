package docker_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// newRuntime connects to the test machine's daemon; the test fails (never
// skips) when there is none.
//
// A runtime without a scope gets its test's own: an unscoped runtime lists
// (and gives a pasta network to) every unscoped container on the daemon,
// so two parallel tests with state directories of their own would attach
// two pastas to one namespace, and the second finds the tap device taken
// ("Failed to open tun socket in namespace", a CI failure). The runtimes
// of one test share the scope, as an agent and its restart do.
func newRuntime(t *testing.T, cfg docker.Config) *docker.Runtime {
	t.Helper()
	if cfg.Scope == "" {
		cfg.Scope = testScope(t)
	}
	return newUnscopedRuntime(t, cfg)
}

// testScope is t's own runtime scope, unique across parallel tests and
// test processes.
func testScope(t *testing.T) string {
	return fmt.Sprintf("test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "."))
}

// newUnscopedRuntime is newRuntime keeping cfg.Scope as it is, empty
// included.
func newUnscopedRuntime(t *testing.T, cfg docker.Config) *docker.Runtime {
	t.Helper()
	dockertest.Require(t)
	if cfg.InitBinary == "" {
		cfg.InitBinary = dockertest.InitBinary(t)
	}
	rt, err := docker.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() {
		// After the test's containers went (cleanups run last first):
		// their NATs go too.
		rt.SweepNetworks(context.Background())
		_ = rt.Close()
	})
	return rt
}

// newSpec is a fresh instance on the busybox image, removed when the test
// ends.
func newSpec(t *testing.T) runtime.Spec {
	t.Helper()
	id := dockertest.NewInstanceID()
	// Registered first, so run after the containers are gone: the NATs
	// of the default state directory go with them.
	t.Cleanup(func() {
		if rt, err := docker.New(context.Background(), docker.Config{InitBinary: dockertest.InitBinary(t)}); err == nil {
			rt.SweepNetworks(context.Background())
			_ = rt.Close()
		}
	})
	dockertest.Cleanup(t, id)
	return runtime.Spec{
		InstanceID:   id,
		AllocationID: gpurent.NewID(gpurent.PrefixAllocation),
		Image:        dockertest.BusyboxImage(t),
		GPUUUIDs:     []string{"GPU-11111111-2222-3333-4444-555555555555", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},
		CPUMilli:     1500,
		MemoryMiB:    256,
		VolumeName:   gpurent.NewID(gpurent.PrefixVolume),
		VolumeGiB:    10,
		Env:          map[string]string{"FOO": "bar baz"},
	}
}

func mustRun(t *testing.T, rt *docker.Runtime, spec runtime.Spec) runtime.Status {
	t.Helper()
	st, err := rt.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run(%s, %s): %v", spec.InstanceID, spec.AllocationID, err)
	}
	return st
}

func listed(t *testing.T, rt *docker.Runtime, instanceID string) (runtime.Status, bool) {
	t.Helper()
	all, err := rt.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, st := range all {
		if st.InstanceID == instanceID {
			return st, true
		}
	}
	return runtime.Status{}, false
}

func envMap(lines string) map[string]string {
	m := make(map[string]string)
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// procStatus reads fields of /proc/self/status inside the container.
func procStatus(t *testing.T, cli *client.Client, name string) map[string]string {
	t.Helper()
	out := dockertest.MustExec(t, cli, name, "cat", "/proc/self/status")
	m := make(map[string]string)
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// cgroupValue reads the first of paths that exists in the container
// (cgroup v1 or v2 layout).
func cgroupValue(t *testing.T, cli *client.Client, name string, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		res := dockertest.Exec(t, cli, name, "cat", p)
		if res.ExitCode == 0 {
			return strings.TrimSpace(res.Stdout)
		}
	}
	t.Fatalf("none of %v readable in %s", paths, name)
	return ""
}

func TestRunCreatesHardenedContainer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	// A tenant (or a CUDA image) asking for every GPU must not get them.
	spec.Env[docker.EnvNvidiaVisibleDevices] = "all"
	spec.Env[docker.EnvCUDAVisibleDevices] = "0,1,2,3"

	st := mustRun(t, rt, spec)
	if st.State != runtime.Running || st.InstanceID != spec.InstanceID || st.AllocationID != spec.AllocationID {
		t.Fatalf("Run status = %+v, want running %s/%s", st, spec.InstanceID, spec.AllocationID)
	}
	if !slices.Equal(st.GPUUUIDs, spec.GPUUUIDs) {
		t.Errorf("status GPUs = %v, want %v", st.GPUUUIDs, spec.GPUUUIDs)
	}
	if st.StartedAt.IsZero() || st.StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt = %v, want a UTC start time", st.StartedAt)
	}

	name := docker.ContainerName(spec.InstanceID)
	c := dockertest.Inspect(t, cli, name)
	wantLabels := map[string]string{
		runtime.LabelManaged: "true", runtime.LabelInstance: spec.InstanceID,
		runtime.LabelAllocation: spec.AllocationID, runtime.LabelVolume: spec.VolumeName,
	}
	for k, v := range wantLabels {
		if c.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], v)
		}
	}
	h := c.HostConfig
	if h.NanoCPUs != 1_500_000_000 {
		t.Errorf("NanoCPUs = %d, want 1.5 CPUs", h.NanoCPUs)
	}
	if h.Memory != 256<<20 || h.MemorySwap != 256<<20 {
		t.Errorf("Memory/MemorySwap = %d/%d, want %d", h.Memory, h.MemorySwap, 256<<20)
	}
	if h.PidsLimit == nil || *h.PidsLimit != docker.DefaultPidsLimit {
		t.Errorf("PidsLimit = %v, want %d", h.PidsLimit, docker.DefaultPidsLimit)
	}
	if h.Privileged {
		t.Error("container is privileged")
	}
	if !slices.Contains(h.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("SecurityOpt = %v, want no-new-privileges", h.SecurityOpt)
	}
	if !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Equal(h.CapAdd, docker.Capabilities()) {
		t.Errorf("CapDrop/CapAdd = %v/%v, want ALL/%v", h.CapDrop, h.CapAdd, docker.Capabilities())
	}
	if slices.Contains(h.CapAdd, "CAP_NET_RAW") || slices.Contains(h.CapAdd, "CAP_MKNOD") {
		t.Errorf("CapAdd %v keeps NET_RAW or MKNOD", h.CapAdd)
	}
	wantMode := rt.Network()
	if wantMode == docker.NetworkPasta {
		wantMode = docker.NetworkNone // the agent attaches the NAT itself
	}
	if string(h.NetworkMode) != wantMode {
		t.Errorf("NetworkMode = %q, want %q", h.NetworkMode, wantMode)
	}
	if h.RestartPolicy.Name != container.RestartPolicyUnlessStopped {
		t.Errorf("RestartPolicy = %q, want unless-stopped", h.RestartPolicy.Name)
	}
	if rt.NvidiaRuntime() != (len(h.DeviceRequests) == 1) {
		t.Errorf("DeviceRequests = %+v with nvidia runtime %v", h.DeviceRequests, rt.NvidiaRuntime())
	}
	var volumeOK, initOK bool
	for _, m := range c.Mounts {
		switch m.Destination {
		case runtime.DataPath:
			volumeOK = m.Type == mount.TypeVolume && m.Name == spec.VolumeName && m.RW
		case docker.InitPath:
			initOK = m.Type == mount.TypeBind && !m.RW
		}
	}
	if len(c.Mounts) != 2 || !volumeOK || !initOK {
		t.Errorf("Mounts = %+v, want volume %s at %s and the init read-only at %s", c.Mounts, spec.VolumeName, runtime.DataPath, docker.InitPath)
	}
	if h.Init != nil && *h.Init {
		t.Error("Docker's init is on: gpurent's is PID 1")
	}
	// PID 1 is gpurent's init; the image's shell ran and exited, and the
	// instance stays up.
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", "/proc/1/cmdline")); !strings.HasPrefix(got, docker.InitPath+"\x00instance-init") {
		t.Errorf("PID 1 runs %q, want gpurent's init", got)
	}

	// What the processes inside see.
	env := envMap(dockertest.MustExec(t, cli, name, "env"))
	wantGPUs := strings.Join(spec.GPUUUIDs, ",")
	for k, want := range map[string]string{
		docker.EnvNvidiaVisibleDevices: wantGPUs,
		docker.EnvCUDAVisibleDevices:   wantGPUs,
		docker.EnvInstanceID:           spec.InstanceID,
		"FOO":                          "bar baz",
	} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q", k, env[k], want)
		}
	}
	ps := procStatus(t, cli, name)
	if ps["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q, want 1", ps["NoNewPrivs"])
	}
	// Linux capability numbers of the capabilities we keep.
	capBits := map[string]uint{
		"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4, "CAP_KILL": 5,
		"CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_NET_BIND_SERVICE": 10,
		"CAP_SYS_CHROOT": 18, "CAP_AUDIT_WRITE": 29, "CAP_SETFCAP": 31,
	}
	var want uint64
	for _, c := range docker.Capabilities() {
		bit, ok := capBits[c]
		if !ok {
			t.Fatalf("test knows no bit for %s", c)
		}
		want |= 1 << bit
	}
	for _, field := range []string{"CapEff", "CapBnd"} {
		got, err := strconv.ParseUint(ps[field], 16, 64)
		if err != nil || got != want {
			t.Errorf("%s = %s, want %016x", field, ps[field], want)
		}
	}
	if got := cgroupValue(t, cli, name, "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"); got != "4096" {
		t.Errorf("pids.max = %s, want 4096", got)
	}
	if got := cgroupValue(t, cli, name, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"); got != strconv.Itoa(256<<20) {
		t.Errorf("memory limit = %s, want %d", got, 256<<20)
	}
	if rt.Network() == "none" {
		if got := strings.Fields(dockertest.MustExec(t, cli, name, "ls", "/sys/class/net")); !slices.Equal(got, []string{"lo"}) {
			t.Errorf("network interfaces = %v, want only lo", got)
		}
	}
	dockertest.MustExec(t, cli, name, "sh", "-c", "echo ok > "+runtime.DataPath+"/probe")

	// The volume is labelled as the instance's.
	vol, err := cli.VolumeInspect(t.Context(), spec.VolumeName, client.VolumeInspectOptions{})
	if err != nil {
		t.Fatalf("inspect volume: %v", err)
	}
	if vol.Volume.Labels[runtime.LabelManaged] != "true" || vol.Volume.Labels[runtime.LabelInstance] != spec.InstanceID {
		t.Errorf("volume labels = %v", vol.Volume.Labels)
	}

	got, ok := listed(t, rt, spec.InstanceID)
	if !ok || got.State != runtime.Running || got.AllocationID != spec.AllocationID ||
		!slices.Equal(got.GPUUUIDs, spec.GPUUUIDs) || !got.StartedAt.Equal(st.StartedAt) {
		t.Errorf("List entry = %+v (found %v), want %+v", got, ok, st)
	}
}

func TestRunWithoutGPUs(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	spec.GPUUUIDs = nil
	spec.CPUMilli, spec.MemoryMiB, spec.PidsLimit = 0, 0, 64
	st := mustRun(t, rt, spec)
	if st.State != runtime.Running || len(st.GPUUUIDs) != 0 {
		t.Fatalf("status = %+v, want running without GPUs", st)
	}
	name := docker.ContainerName(spec.InstanceID)
	env := envMap(dockertest.MustExec(t, cli, name, "env"))
	if env[docker.EnvNvidiaVisibleDevices] != "void" || env[docker.EnvCUDAVisibleDevices] != "" {
		t.Errorf("NVIDIA_VISIBLE_DEVICES=%q CUDA_VISIBLE_DEVICES=%q, want void and empty",
			env[docker.EnvNvidiaVisibleDevices], env[docker.EnvCUDAVisibleDevices])
	}
	h := dockertest.Inspect(t, cli, name).HostConfig
	if len(h.DeviceRequests) != 0 || h.NanoCPUs != 0 || h.Memory != 0 || *h.PidsLimit != 64 {
		t.Errorf("host config: devices %v, cpus %d, memory %d, pids %d", h.DeviceRequests, h.NanoCPUs, h.Memory, *h.PidsLimit)
	}
}

func TestDataSurvivesStopStartAndReplacement(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)
	file := runtime.DataPath + "/weights.bin"

	mustRun(t, rt, spec)
	first := dockertest.Inspect(t, cli, name)
	dockertest.MustExec(t, cli, name, "sh", "-c", "echo checkpoint-42 > "+file)

	for range 2 { // idempotent
		if err := rt.Stop(t.Context(), spec.InstanceID); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	st, ok := listed(t, rt, spec.InstanceID)
	if !ok || st.State != runtime.Stopped || st.AllocationID != spec.AllocationID {
		t.Fatalf("after Stop, List entry = %+v (found %v), want stopped", st, ok)
	}
	if st.Message != "" {
		t.Errorf("stopped gracefully, yet message %q (the test image exits 0 on SIGTERM)", st.Message)
	}

	// Same allocation: the same container starts again.
	st = mustRun(t, rt, spec)
	again := dockertest.Inspect(t, cli, name)
	if st.State != runtime.Running || again.ID != first.ID {
		t.Fatalf("restart: state %s, container %s, want running %s", st.State, again.ID, first.ID)
	}
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", file)); got != "checkpoint-42" {
		t.Fatalf("after stop/start %s = %q", file, got)
	}

	// New allocation (an upgrade): a new container, the same volume.
	spec.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	spec.GPUUUIDs = []string{"GPU-99999999-8888-7777-6666-555555555555"}
	st = mustRun(t, rt, spec)
	replaced := dockertest.Inspect(t, cli, name)
	if replaced.ID == first.ID {
		t.Fatal("a new allocation kept the old container")
	}
	if st.State != runtime.Running || st.AllocationID != spec.AllocationID || !slices.Equal(st.GPUUUIDs, spec.GPUUUIDs) {
		t.Fatalf("after replacement status = %+v", st)
	}
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", file)); got != "checkpoint-42" {
		t.Fatalf("after replacement %s = %q", file, got)
	}
	if _, err := cli.ContainerInspect(t.Context(), first.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("old container still exists (err %v)", err)
	}
}

func TestRunLeavesRunningContainerAlone(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)

	first := mustRun(t, rt, spec)
	c1 := dockertest.Inspect(t, cli, name)
	for range 3 {
		st := mustRun(t, rt, spec)
		if !st.StartedAt.Equal(first.StartedAt) || st.State != runtime.Running {
			t.Fatalf("Run on a running container: StartedAt %v -> %v, state %s", first.StartedAt, st.StartedAt, st.State)
		}
	}
	c2 := dockertest.Inspect(t, cli, name)
	if c1.ID != c2.ID || c1.State.Pid != c2.State.Pid || c2.RestartCount != 0 {
		t.Fatalf("container changed: id %s->%s pid %d->%d restarts %d", c1.ID, c2.ID, c1.State.Pid, c2.State.Pid, c2.RestartCount)
	}
}

func TestConcurrentRunsCreateOneContainer(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	spec := newSpec(t)

	// Two calls through one runtime (serialised by it) and two through
	// runtimes of their own, as two processes would race.
	shared := newRuntime(t, docker.Config{})
	rts := []*docker.Runtime{shared, shared, newRuntime(t, docker.Config{}), newRuntime(t, docker.Config{})}
	var wg sync.WaitGroup
	errs := make([]error, len(rts))
	for i, rt := range rts {
		wg.Go(func() { _, errs[i] = rt.Run(t.Context(), spec) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Run #%d: %v", i, err)
		}
	}
	res, err := cli.ContainerList(t.Context(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", runtime.LabelInstance+"="+spec.InstanceID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].State != container.StateRunning {
		t.Fatalf("containers of the instance: %+v, want one running", res.Items)
	}
}

func TestStopAndRemoveAreIdempotent(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	ctx := t.Context()

	never := dockertest.NewInstanceID()
	if err := rt.Stop(ctx, never); err != nil {
		t.Errorf("Stop of an absent instance: %v", err)
	}
	if err := rt.Remove(ctx, never, gpurent.NewID(gpurent.PrefixVolume), true); err != nil {
		t.Errorf("Remove of an absent instance: %v", err)
	}

	spec := newSpec(t)
	mustRun(t, rt, spec)
	for range 2 {
		if err := rt.Remove(ctx, spec.InstanceID, spec.VolumeName, false); err != nil {
			t.Fatalf("Remove keeping the volume: %v", err)
		}
	}
	if _, ok := listed(t, rt, spec.InstanceID); ok {
		t.Error("removed instance still listed")
	}
	if _, err := cli.VolumeInspect(ctx, spec.VolumeName, client.VolumeInspectOptions{}); err != nil {
		t.Fatalf("volume gone although kept: %v", err)
	}

	// The volume comes back with its data under a fresh container...
	st := mustRun(t, rt, spec)
	if st.State != runtime.Running {
		t.Fatalf("Run after Remove: %+v", st)
	}
	// ...and Remove with "" finds the volume on the container.
	for range 2 {
		if err := rt.Remove(ctx, spec.InstanceID, "", true); err != nil {
			t.Fatalf("Remove with the volume: %v", err)
		}
	}
	if _, err := cli.VolumeInspect(ctx, spec.VolumeName, client.VolumeInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("volume still there after Remove(removeVolume): %v", err)
	}
	if err := rt.Remove(ctx, spec.InstanceID, spec.VolumeName, true); err != nil {
		t.Errorf("Remove again: %v", err)
	}
}

func TestMissingImage(t *testing.T) {
	t.Parallel()
	for _, noPull := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoPull=%v", noPull), func(t *testing.T) {
			rt := newRuntime(t, docker.Config{NoPull: noPull})
			cli := dockertest.Client(t)
			spec := newSpec(t)
			spec.Image = "gpurent-test/absent:" + strings.ToLower(gpurent.RandomSecret(6))
			_, err := rt.Run(t.Context(), spec)
			if !gpurent.IsCode(err, gpurent.CodeNotFound) {
				t.Fatalf("Run with a missing image: %v, want not_found", err)
			}
			msg := gpurent.ErrorMessage(err)
			if !strings.Contains(msg, spec.Image) || !strings.Contains(msg, "not present on this host") {
				t.Errorf("message %q does not say the image is not on the host", msg)
			}
			if _, err := cli.ContainerInspect(t.Context(), docker.ContainerName(spec.InstanceID), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
				t.Errorf("a container was created: %v", err)
			}
		})
	}
}

func TestReplacementWithMissingImageKeepsOldRunning(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	spec := newSpec(t)
	before := mustRun(t, rt, spec)

	next := spec
	next.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	next.Image = "gpurent-test/absent:" + strings.ToLower(gpurent.RandomSecret(6))
	if _, err := rt.Run(t.Context(), next); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("replacement with a missing image: %v, want not_found", err)
	}
	st, ok := listed(t, rt, spec.InstanceID)
	if !ok || st.State != runtime.Running || st.AllocationID != spec.AllocationID || !st.StartedAt.Equal(before.StartedAt) {
		t.Fatalf("old allocation disturbed: %+v (found %v)", st, ok)
	}
}

func TestForeignObjectsAreRefused(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	ctx := t.Context()

	// A volume of that name exists but is not this instance's.
	spec := newSpec(t)
	if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: spec.VolumeName}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.VolumeRemove(context.Background(), spec.VolumeName, client.VolumeRemoveOptions{Force: true})
	})
	if _, err := rt.Run(ctx, spec); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Run onto a foreign volume: %v, want conflict", err)
	}
	if err := rt.Remove(ctx, spec.InstanceID, spec.VolumeName, true); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Remove of a foreign volume: %v, want conflict", err)
	}

	// Another instance's volume is not mounted either.
	owner := newSpec(t)
	mustRun(t, rt, owner)
	thief := newSpec(t)
	thief.VolumeName = owner.VolumeName
	if _, err := rt.Run(ctx, thief); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Run onto another instance's volume: %v, want conflict", err)
	}

	// A container with our name that we did not make is left alone.
	squat := newSpec(t)
	_, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       docker.ContainerName(squat.InstanceID),
		Config:     &container.Config{Image: squat.Image},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(ctx, squat); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Run over a foreign container: %v, want conflict", err)
	}
	if err := rt.Remove(ctx, squat.InstanceID, "", false); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Remove of a foreign container: %v, want conflict", err)
	}
}

func TestInvalidSpecs(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	good := runtime.Spec{InstanceID: "i-x", AllocationID: "a", Image: "img", VolumeName: "v"}
	for name, mut := range map[string]func(*runtime.Spec){
		"empty instance":   func(s *runtime.Spec) { s.InstanceID = "" },
		"slash in id":      func(s *runtime.Spec) { s.InstanceID = "../x" },
		"no allocation":    func(s *runtime.Spec) { s.AllocationID = "" },
		"no image":         func(s *runtime.Spec) { s.Image = " " },
		"no volume":        func(s *runtime.Spec) { s.VolumeName = "" },
		"all GPUs":         func(s *runtime.Spec) { s.GPUUUIDs = []string{"all"} },
		"comma in uuid":    func(s *runtime.Spec) { s.GPUUUIDs = []string{"GPU-a,GPU-b"} },
		"duplicate GPU":    func(s *runtime.Spec) { s.GPUUUIDs = []string{"GPU-a", "GPU-a"} },
		"negative memory":  func(s *runtime.Spec) { s.MemoryMiB = -1 },
		"bad env name":     func(s *runtime.Spec) { s.Env = map[string]string{"A=B": "c"} },
		"negative pids":    func(s *runtime.Spec) { s.PidsLimit = -5 },
		"negative cpu":     func(s *runtime.Spec) { s.CPUMilli = -1 },
		"volume with path": func(s *runtime.Spec) { s.VolumeName = "/etc" },
	} {
		spec := good
		spec.Env = maps.Clone(good.Env)
		mut(&spec)
		if _, err := rt.Run(t.Context(), spec); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: Run = %v, want invalid", name, err)
		}
	}
	if err := rt.Stop(t.Context(), "a/b"); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("Stop(a/b) = %v, want invalid", err)
	}
}

func TestNewDetectsDaemon(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	if rt.Name() != "docker" {
		t.Errorf("Name = %q", rt.Name())
	}
	// Never a shared network by default: pasta where it runs (this test
	// machine has it), else none, even when the daemon has a bridge.
	requirePasta(t)
	if rt.Network() != docker.NetworkPasta {
		t.Errorf("auto network = %q, want pasta", rt.Network())
	}
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Info.Runtimes["nvidia"]; ok != rt.NvidiaRuntime() {
		t.Errorf("NvidiaRuntime = %v, daemon runtimes %v", rt.NvidiaRuntime(), slices.Collect(maps.Keys(info.Info.Runtimes)))
	}
	if rt.APIVersion() == "" {
		t.Error("no API version negotiated")
	}

	host := newRuntime(t, docker.Config{Network: "host"})
	if host.Network() != "host" {
		t.Errorf("Network = %q, want host", host.Network())
	}
	if _, err := docker.New(t.Context(), docker.Config{Network: "gpurent-no-such-network", InitBinary: dockertest.InitBinary(t)}); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("New with a missing network: %v, want not_found", err)
	}
}

func TestNewFailsWithoutDaemon(t *testing.T) {
	t.Parallel()
	_, err := docker.New(t.Context(), docker.Config{Host: "unix://" + t.TempDir() + "/no-docker.sock", InitBinary: dockertest.InitBinary(t)})
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("New against no daemon: %v, want unavailable", err)
	}
	if !strings.Contains(gpurent.ErrorMessage(err), "Docker Engine not reachable") {
		t.Errorf("message %q", gpurent.ErrorMessage(err))
	}
}

func TestScopesShareOneDaemon(t *testing.T) {
	t.Parallel()
	a := newRuntime(t, docker.Config{Scope: "host-a-" + dockertest.NewInstanceID()})
	b := newRuntime(t, docker.Config{Scope: "host-b-" + dockertest.NewInstanceID()})
	cli := dockertest.Client(t)
	ctx := t.Context()
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)

	mustRun(t, a, spec)
	dockertest.MustExec(t, cli, name, "sh", "-c", "echo moved > "+runtime.DataPath+"/f")
	if _, ok := listed(t, a, spec.InstanceID); !ok {
		t.Fatal("scope A does not list its instance")
	}
	if _, ok := listed(t, b, spec.InstanceID); ok {
		t.Fatal("scope B lists scope A's instance")
	}
	if err := b.Stop(ctx, spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	if st, _ := listed(t, a, spec.InstanceID); st.State != runtime.Running {
		t.Fatalf("scope B's Stop stopped scope A's container: %+v", st)
	}

	// The instance migrates to B: a new allocation there, the same volume.
	moved := spec
	moved.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	mustRun(t, b, moved)
	if _, ok := listed(t, a, spec.InstanceID); ok {
		t.Error("scope A still lists the migrated instance")
	}
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", runtime.DataPath+"/f")); got != "moved" {
		t.Errorf("data after migration = %q", got)
	}
	// A cleaning up its old placement must not touch B's container or
	// the volume it uses.
	if err := a.Remove(ctx, spec.InstanceID, "", true); err != nil {
		t.Fatal(err)
	}
	st, ok := listed(t, b, spec.InstanceID)
	if !ok || st.State != runtime.Running || st.AllocationID != moved.AllocationID {
		t.Fatalf("scope B's instance after scope A's Remove: %+v (found %v)", st, ok)
	}
	if _, err := cli.VolumeInspect(ctx, spec.VolumeName, client.VolumeInspectOptions{}); err != nil {
		t.Errorf("volume removed by the old scope: %v", err)
	}
	if c := dockertest.Inspect(t, cli, name); c.Config.Labels[docker.LabelScope] == "" {
		t.Error("no scope label on the container")
	}
}
