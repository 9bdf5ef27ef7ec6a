package app

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// TestStopStartKeepsFileSystem: an hourly instance gives its GPUs back when
// stopped and gets new ones when started; what was installed or written
// anywhere in its file system is still there, not only on the volume.
func TestStopStartKeepsFileSystem(t *testing.T) {
	f := startDockerFleet(t, "rootfs", "rtx4090-24g", 2)
	f.credit(t, 100_000, "seed")
	in := f.u.instance("rent", "--gpu", "rtx4090-24g", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	cli := dockertest.Client(t)
	name := dockertest.InstanceContainer(t, dockertest.Client(t), in.ID)
	dockertest.MustExec(t, cli, name, "sh", "-c", "mkdir -p /opt/tool && echo 1.2.3 > /opt/tool/VERSION && rm /bin/sed")
	before := dockertest.Inspect(t, cli, name)
	f.u.must("stop", in.ID, "--wait")
	again := f.u.instance("start", in.ID, "--wait")
	if again.State != "running" {
		t.Fatalf("after start: %s", again.State)
	}
	after := dockertest.Inspect(t, cli, name)
	if after.ID == before.ID {
		t.Fatal("the same container again: this test needs a new allocation (the hourly plan releases GPUs on stop)")
	}
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "sh", "-c", "cat /opt/tool/VERSION; test -e /bin/sed || echo no-sed")); got != "1.2.3\nno-sed" {
		t.Fatalf("after stop and start: %q", got)
	}
}
