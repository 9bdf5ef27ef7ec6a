package docker_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// tarCopy is a TreeCopier made of GNU tar (devices, owners, modes, times,
// all extended attributes), enough to test the runtime's side of a carry;
// the agent uses internal/delta.
func tarCopy(ctx context.Context, src, dst string) error {
	cmd := exec.CommandContext(ctx, "sh", "-c",
		`tar --xattrs --xattrs-include='*' --numeric-owner -C "$1" -cpf - . | tar --xattrs --xattrs-include='*' --numeric-owner -C "$2" -xpf -`,
		"carry", src, dst)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, out)
	}
	return nil
}

// TestReplacementCarriesFileSystem: when an instance's allocation changes
// on its host (an upgrade to other GPUs), the new container starts with the
// old one's writable layer: files written anywhere, a directory made, a
// file of the image deleted, all as they were; the volume too; the GPUs
// are the new ones; a failed copy leaves the old container as it was.
func TestReplacementCarriesFileSystem(t *testing.T) {
	t.Parallel()
	copies := 0
	fail := false
	rt := newRuntime(t, docker.Config{CarryLayer: func(ctx context.Context, src, dst string, final bool) error {
		if !final {
			return tarCopy(ctx, src, dst) // the live pass before the stop
		}
		copies++
		if fail {
			return fmt.Errorf("copy refused by the test")
		}
		return tarCopy(ctx, src, dst)
	}})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	name := docker.ContainerName(spec.InstanceID)
	mustRun(t, rt, spec)
	first := dockertest.Inspect(t, cli, name)
	dockertest.MustExec(t, cli, name, "sh", "-c",
		"echo installed > /etc/tool.conf && mkdir -p /opt/app/lib && echo v2 > /opt/app/lib/x && "+
			"rm /bin/sed && mkfifo /opt/app/pipe && chmod 4755 /opt/app/lib/x && echo ckpt > "+runtime.DataPath+"/w")

	// A failed copy: the old container stays, stopped, and nothing is lost.
	fail = true
	old := spec
	spec.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	spec.GPUUUIDs = []string{"GPU-99999999-8888-7777-6666-555555555555"}
	if _, err := rt.Run(t.Context(), spec); err == nil || !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("Run with a failing copy: %v", err)
	}
	if c := dockertest.Inspect(t, cli, name); c.ID != first.ID {
		t.Fatal("the old container lost its name after a failed copy")
	}
	if _, err := cli.ContainerInspect(t.Context(), name+"-next", client.ContainerInspectOptions{}); err == nil {
		t.Fatal("the new container of a failed copy was left behind")
	}
	mustRun(t, rt, old) // the old allocation still runs it, files intact
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", "/etc/tool.conf")); got != "installed" {
		t.Fatalf("after a failed copy /etc/tool.conf = %q", got)
	}

	fail = false
	st := mustRun(t, rt, spec)
	moved := dockertest.Inspect(t, cli, name)
	if moved.ID == first.ID || st.State != runtime.Running || st.AllocationID != spec.AllocationID ||
		!slices.Equal(st.GPUUUIDs, spec.GPUUUIDs) {
		t.Fatalf("after the carry: container %s (was %s), status %+v", moved.ID, first.ID, st)
	}
	check := map[string]string{
		"cat /etc/tool.conf":                 "installed",
		"cat /opt/app/lib/x":                 "v2",
		"stat -c %a /opt/app/lib/x":          "4755",
		"test -p /opt/app/pipe && echo fifo": "fifo",
		"test -e /bin/sed || echo gone":      "gone",
		"cat " + runtime.DataPath + "/w":     "ckpt",
		"echo $NVIDIA_VISIBLE_DEVICES":       spec.GPUUUIDs[0],
	}
	for cmd, want := range check {
		if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "sh", "-c", cmd)); got != want {
			t.Errorf("after the carry, %s = %q, want %q", cmd, got, want)
		}
	}
	for _, extra := range []string{name + "-next", name + "-prev"} {
		if _, err := cli.ContainerInspect(t.Context(), extra, client.ContainerInspectOptions{}); err == nil {
			t.Errorf("%s left behind", extra)
		}
	}
	if all, err := rt.List(t.Context()); err != nil {
		t.Fatal(err)
	} else {
		n := 0
		for _, s := range all {
			if s.InstanceID == spec.InstanceID {
				n++
			}
		}
		if n != 1 {
			t.Errorf("List shows the instance %d times", n)
		}
	}
	if copies != 2 {
		t.Errorf("copies = %d, want 2 (one failed, one done)", copies)
	}
}
