package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/testtier"
)

// TestVolumeQuotaIsEnforced: with a volume quota directory, an instance's
// data volume is a file system of its rented size; writing past it fails
// with ENOSPC inside, the host holds nothing beyond the volume's image, the
// data survives a new container, and removing the volume frees it all.
func TestVolumeQuotaIsEnforced(t *testing.T) {
	testtier.Require(t, "root (loop mounts)")
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the volume quota test needs root (loop mounts)")
	}
	dir := t.TempDir()
	rt := newRuntime(t, docker.Config{Network: docker.NetworkNone, VolumeQuotaDir: dir})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	spec.GPUUUIDs = nil
	spec.VolumeGiB = 1
	t.Cleanup(func() { _ = rt.Remove(t.Context(), spec.InstanceID, spec.VolumeName, true) })
	mustRun(t, rt, spec)
	name := dockertest.InstanceContainer(t, cli, spec.InstanceID)

	df := dockertest.MustExec(t, cli, name, "df", "-k", runtime.DataPath)
	if !strings.Contains(df, runtime.DataPath) {
		t.Fatalf("df of the volume:\n%s", df)
	}
	// 1100 MiB into a 1 GiB volume: the write fails with ENOSPC.
	r := dockertest.Exec(t, cli, name, "dd", "if=/dev/zero", "of="+runtime.DataPath+"/fill", "bs=1M", "count=1100")
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "No space left on device") {
		t.Fatalf("writing past the quota: %s, want ENOSPC", r)
	}
	img := filepath.Join(dir, spec.VolumeName+".img")
	var st syscall.Stat_t
	if err := syscall.Stat(img, &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 1<<30+1<<20 {
		t.Errorf("the volume's image holds %d bytes on the host, want at most its 1 GiB", used)
	}
	// Small writes still work after freeing, and the data stays across a
	// new allocation's container.
	dockertest.MustExec(t, cli, name, "sh", "-c", "rm "+runtime.DataPath+"/fill && echo kept > "+runtime.DataPath+"/note")
	spec.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	mustRun(t, rt, spec)
	name = dockertest.InstanceContainer(t, cli, spec.InstanceID)
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "cat", runtime.DataPath+"/note")); got != "kept" {
		t.Errorf("note = %q after the replacement", got)
	}

	if err := rt.Remove(t.Context(), spec.InstanceID, spec.VolumeName, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("the image outlived its volume: %v", err)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), filepath.Join(dir, spec.VolumeName)) {
		t.Error("the volume's file system is still mounted")
	}
}

// TestLayerQuotaPolicy: where the storage driver cannot limit a writable
// layer (this machine's overlay2 on ext4), "require" refuses to start and
// "warn" starts without a limit; where it can, the limit is put on every
// instance's container.
func TestLayerQuotaPolicy(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Network: docker.NetworkNone, LayerQuota: docker.LayerQuotaWarn})
	if rt.LayerQuotaBytes() != 0 {
		// A daemon on xfs with pquota: the limit is there.
		if rt.LayerQuotaBytes() != docker.DefaultLayerGiB<<30 {
			t.Errorf("layer limit %d", rt.LayerQuotaBytes())
		}
		return
	}
	if _, err := docker.New(t.Context(), docker.Config{Network: docker.NetworkNone, LayerQuota: docker.LayerQuotaRequire, InitBinary: dockertest.InitBinary(t)}); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Errorf("require on a driver without layer quotas: %v, want unavailable", err)
	}
	if _, err := docker.New(t.Context(), docker.Config{LayerQuota: "maybe", InitBinary: dockertest.InitBinary(t)}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("a bad policy: %v, want invalid", err)
	}
}
