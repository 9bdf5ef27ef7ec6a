package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/delta"
)

func mustTrees(t *testing.T, rt *docker.Runtime, instanceID string) runtime.Trees {
	t.Helper()
	tr, err := rt.Trees(t.Context(), instanceID)
	if err != nil {
		t.Fatalf("Trees(%s): %v", instanceID, err)
	}
	return tr
}

func mustPrepare(t *testing.T, rt *docker.Runtime, spec runtime.Spec) runtime.Trees {
	t.Helper()
	tr, err := rt.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatalf("Prepare(%s, %s): %v", spec.InstanceID, spec.AllocationID, err)
	}
	return tr
}

func readHostFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s on the host: %v", path, err)
	}
	return strings.TrimSpace(string(b))
}

func writeHostFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTreesOfRunningContainer: the trees of a running instance are the
// host directories that hold what it wrote: a file in its data directory
// lies in Volume, a file written over the image in Layer; a stopped
// container has the same trees.
func TestTreesOfRunningContainer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)
	mustRun(t, rt, spec)
	dockertest.MustExec(t, cli, name, "sh", "-c",
		"echo checkpoint > "+runtime.DataPath+"/model.ckpt && echo layer > /etc/tool.conf")

	tr := mustTrees(t, rt, spec.InstanceID)
	if tr.Volume == "" || tr.Layer == "" || tr.Volume == tr.Layer {
		t.Fatalf("Trees = %+v", tr)
	}
	if got := readHostFile(t, filepath.Join(tr.Volume, "model.ckpt")); got != "checkpoint" {
		t.Errorf("Volume/model.ckpt = %q, want checkpoint", got)
	}
	if got := readHostFile(t, filepath.Join(tr.Layer, "etc", "tool.conf")); got != "layer" {
		t.Errorf("Layer/etc/tool.conf = %q, want layer", got)
	}
	if _, err := os.Stat(filepath.Join(tr.Layer, "root", "data", "model.ckpt")); err == nil {
		t.Error("the volume's file shows in the writable layer")
	}
	// The host directory is the daemon's: a file put there shows inside.
	writeHostFile(t, filepath.Join(tr.Volume, "from-host"), "hello")
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", runtime.DataPath+"/from-host")); got != "hello" {
		t.Errorf("a file written into Volume reads %q inside", got)
	}

	if err := rt.Stop(t.Context(), spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	if again := mustTrees(t, rt, spec.InstanceID); again != tr {
		t.Errorf("Trees after Stop = %+v, want %+v", again, tr)
	}
}

func TestTreesNotFound(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	_, err := rt.Trees(t.Context(), dockertest.NewInstanceID())
	if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("Trees of an instance without a container: %v, want not_found", err)
	}
	_, err = rt.Trees(t.Context(), "../etc")
	if !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("Trees of a bad instance id: %v, want invalid", err)
	}
	// A container of the instance under another scope is not this
	// runtime's to hand out.
	spec := newSpec(t)
	mustRun(t, newRuntime(t, docker.Config{Scope: "move-a"}), spec)
	_, err = newRuntime(t, docker.Config{Scope: "move-b"}).Trees(t.Context(), spec.InstanceID)
	if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("Trees of another scope's container: %v, want not_found", err)
	}
}

// TestPrepareIsIdempotentAndDoesNotStart: Prepare creates the volume and
// the container without starting it; a second Prepare returns the same
// trees and keeps what was copied into them.
func TestPrepareIsIdempotentAndDoesNotStart(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)

	tr := mustPrepare(t, rt, spec)
	c := dockertest.Inspect(t, cli, name)
	if c.State.Status != container.StateCreated {
		t.Fatalf("prepared container is %s, want created", c.State.Status)
	}
	if c.Config.Labels[runtime.LabelAllocation] != spec.AllocationID {
		t.Errorf("prepared container of allocation %q, want %q", c.Config.Labels[runtime.LabelAllocation], spec.AllocationID)
	}
	vol, err := cli.VolumeInspect(t.Context(), spec.VolumeName, client.VolumeInspectOptions{})
	if err != nil {
		t.Fatalf("the prepared volume: %v", err)
	}
	if tr.Volume != vol.Volume.Mountpoint {
		t.Errorf("Trees.Volume = %s, want the volume's mount point %s", tr.Volume, vol.Volume.Mountpoint)
	}
	if got := mustTrees(t, rt, spec.InstanceID); got != tr {
		t.Errorf("Trees of the prepared container = %+v, Prepare said %+v", got, tr)
	}
	writeHostFile(t, filepath.Join(tr.Layer, "opt", "copied"), "layer")
	writeHostFile(t, filepath.Join(tr.Volume, "copied"), "volume")

	if again := mustPrepare(t, rt, spec); again != tr {
		t.Errorf("second Prepare = %+v, first %+v", again, tr)
	}
	c2 := dockertest.Inspect(t, cli, name)
	if c2.ID != c.ID || c2.State.Status != container.StateCreated {
		t.Errorf("after a second Prepare: container %s %s, want %s created", c2.ID, c2.State.Status, c.ID)
	}
	if got := readHostFile(t, filepath.Join(tr.Layer, "opt", "copied")); got != "layer" {
		t.Errorf("the second Prepare lost the layer's copy: %q", got)
	}
	if got := readHostFile(t, filepath.Join(tr.Volume, "copied")); got != "volume" {
		t.Errorf("the second Prepare lost the volume's copy: %q", got)
	}
	st, ok := listed(t, rt, spec.InstanceID)
	if !ok || st.State != runtime.Stopped || st.AllocationID != spec.AllocationID {
		t.Errorf("List shows the prepared instance as %+v (listed %v), want stopped", st, ok)
	}
}

// TestMoveIntoPreparedContainer does on one host what a move does across
// two: the source instance writes files, installs over the image, deletes a
// file of the image and replaces a directory (a whiteout and an opaque
// directory in its layer), stops; its trees are copied with internal/delta
// into the trees of a prepared container; Run starts exactly that
// container, which sees it all.
func TestMoveIntoPreparedContainer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	src := newSpec(t)
	srcName := docker.ContainerName(src.InstanceID)
	mustRun(t, rt, src)
	dockertest.MustExec(t, cli, srcName, "sh", "-c",
		"echo installed > /etc/tool.conf && mkdir -p /opt/app/lib && echo v2 > /opt/app/lib/x && chmod 4755 /opt/app/lib/x && "+
			"rm /bin/sed && rm -rf /usr/sbin && mkdir /usr/sbin && echo only > /usr/sbin/only && "+
			"mkdir -p "+runtime.DataPath+"/ckpt && echo epoch7 > "+runtime.DataPath+"/ckpt/latest")
	if err := rt.Stop(t.Context(), src.InstanceID); err != nil {
		t.Fatal(err)
	}
	from := mustTrees(t, rt, src.InstanceID)

	dst := newSpec(t)
	dst.GPUUUIDs = []string{"GPU-99999999-8888-7777-6666-555555555555"}
	dstName := docker.ContainerName(dst.InstanceID)
	to := mustPrepare(t, rt, dst)
	prepared := dockertest.Inspect(t, cli, dstName)
	for _, pair := range [][2]string{{from.Layer, to.Layer}, {from.Volume, to.Volume}} {
		if _, err := delta.Copy(t.Context(), pair[0], pair[1]); err != nil {
			t.Fatalf("delta.Copy %s -> %s: %v", pair[0], pair[1], err)
		}
	}
	// A retried Prepare (a lost reply) keeps the copy.
	if again := mustPrepare(t, rt, dst); again != to {
		t.Fatalf("Prepare after the copy = %+v, want %+v", again, to)
	}

	st := mustRun(t, rt, dst)
	started := dockertest.Inspect(t, cli, dstName)
	if started.ID != prepared.ID {
		t.Fatalf("Run started container %s, not the prepared %s", started.ID, prepared.ID)
	}
	if st.State != runtime.Running || st.AllocationID != dst.AllocationID {
		t.Fatalf("after Run: %+v", st)
	}
	check := map[string]string{
		"cat /etc/tool.conf":                  "installed",
		"cat /opt/app/lib/x":                  "v2",
		"stat -c %a /opt/app/lib/x":           "4755",
		"test -e /bin/sed || echo gone":       "gone",
		"ls /usr/sbin":                        "only",
		"cat " + runtime.DataPath + "/ckpt/*": "epoch7",
		"echo $NVIDIA_VISIBLE_DEVICES":        dst.GPUUUIDs[0],
	}
	for cmd, want := range check {
		if got := strings.TrimSpace(dockertest.MustExec(t, cli, dstName, "sh", "-c", cmd)); got != want {
			t.Errorf("after the move, %s = %q, want %q", cmd, got, want)
		}
	}
	// Once it runs, Prepare of the same allocation sees the move done.
	if again := mustPrepare(t, rt, dst); again != to {
		t.Errorf("Prepare of the running target = %+v, want %+v", again, to)
	}
}

// TestPrepareBesideRunningContainer: Prepare of the allocation that runs
// already returns its trees and leaves it running; Prepare of another
// allocation while one runs is a conflict and kills nothing.
func TestPrepareBesideRunningContainer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)
	mustRun(t, rt, spec)
	before := dockertest.Inspect(t, cli, name)

	tr := mustPrepare(t, rt, spec)
	if want := mustTrees(t, rt, spec.InstanceID); tr != want {
		t.Errorf("Prepare of the running allocation = %+v, Trees = %+v", tr, want)
	}
	other := spec
	other.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	if _, err := rt.Prepare(t.Context(), other); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Prepare of another allocation beside a running one: %v, want conflict", err)
	}
	// Another scope on the same daemon may not take it over either.
	if _, err := newRuntime(t, docker.Config{Scope: "move-other"}).Prepare(t.Context(), other); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Prepare from another scope beside a running container: %v, want conflict", err)
	}
	after := dockertest.Inspect(t, cli, name)
	if after.ID != before.ID || after.State.Status != container.StateRunning || after.State.StartedAt != before.State.StartedAt {
		t.Errorf("the running container was disturbed: %s %s started %s (was %s started %s)",
			after.ID, after.State.Status, after.State.StartedAt, before.ID, before.State.StartedAt)
	}
}

// TestPrepareReplacesStoppedContainer: a stopped container of another
// allocation (the instance left this host, or an earlier move was rolled
// back) is replaced by the prepared one; the volume and its data stay.
func TestPrepareReplacesStoppedContainer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)
	mustRun(t, rt, spec)
	dockertest.MustExec(t, cli, name, "sh", "-c", "echo kept > "+runtime.DataPath+"/w && echo old > /etc/old")
	if err := rt.Stop(t.Context(), spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	old := dockertest.Inspect(t, cli, name)

	next := spec
	next.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	// A bad image fails before the old container goes.
	bad := next
	bad.Image = "gpurent-test/no-such-image:0"
	norun := newRuntime(t, docker.Config{NoPull: true})
	if _, err := norun.Prepare(t.Context(), bad); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("Prepare with a missing image: %v, want not_found", err)
	}
	if c := dockertest.Inspect(t, cli, name); c.ID != old.ID {
		t.Fatal("a failed Prepare removed the old container")
	}

	tr := mustPrepare(t, rt, next)
	c := dockertest.Inspect(t, cli, name)
	if c.ID == old.ID || c.Config.Labels[runtime.LabelAllocation] != next.AllocationID || c.State.Status != container.StateCreated {
		t.Fatalf("after Prepare: container %s of %s, %s", c.ID, c.Config.Labels[runtime.LabelAllocation], c.State.Status)
	}
	if got := readHostFile(t, filepath.Join(tr.Volume, "w")); got != "kept" {
		t.Errorf("the volume lost its data: %q", got)
	}
	if _, err := os.Stat(filepath.Join(tr.Layer, "etc", "old")); err == nil {
		t.Error("the prepared container holds the old container's layer")
	}
	mustRun(t, rt, next)
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", runtime.DataPath+"/w")); got != "kept" {
		t.Errorf("after Run the volume reads %q", got)
	}

	// A prepared container of another volume for the same allocation
	// means the caller's picture is wrong.
	if err := rt.Stop(t.Context(), spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	wrongVol := next
	wrongVol.VolumeName = gpurent.NewID(gpurent.PrefixVolume)
	if _, err := rt.Prepare(t.Context(), wrongVol); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("Prepare of the same allocation on another volume: %v, want conflict", err)
	}
}

func TestPrepareInvalidSpec(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{})
	spec := newSpec(t)
	spec.GPUUUIDs = []string{"all"}
	if _, err := rt.Prepare(t.Context(), spec); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("Prepare with GPUs %v: %v, want invalid", spec.GPUUUIDs, err)
	}
	if _, err := rt.Trees(t.Context(), spec.InstanceID); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("an invalid Prepare left a container behind: %v", err)
	}
}
