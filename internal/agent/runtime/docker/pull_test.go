package docker_test

import (
	"crypto/rand"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// TestImageSizeLimit pulls from a real registry on loopback: an image with
// a 24 MiB layer of random bytes (so compression cannot hide it) is
// refused by a host whose limit is 16 MiB, with a message naming the
// limit, and leaves nothing on the host, as is one that only unpacks to
// more; a host with a 64 MiB limit pulls
// and runs it; and an image already on the host is not limited.
func TestImageSizeLimit(t *testing.T) {
	reg := dockertest.StartRegistry(t)
	base := dockertest.BusyboxImage(t)
	blob := make([]byte, 24<<20)
	_, _ = rand.Read(blob)
	tag := "gpurent-test/big:" + strings.ToLower(gpurent.NewID("t"))
	dockertest.BuildImage(t, tag,
		dockertest.File{Name: "Dockerfile", Mode: 0o644, Body: []byte("FROM " + base + "\nCOPY blob /blob\n")},
		dockertest.File{Name: "blob", Mode: 0o644, Body: blob})
	ref := reg.Push(t, tag, "big:1")
	reg.Forget(t, tag)
	// Registered before the instances, so it runs after their containers
	// are gone.
	t.Cleanup(func() { reg.Forget(t, ref) })
	cli := dockertest.Client(t)

	small := newRuntime(t, docker.Config{MaxImageBytes: 16 << 20})
	spec := newSpec(t)
	spec.Image = ref
	_, err := small.Run(t.Context(), spec)
	if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "has layers of at least") ||
		!strings.Contains(err.Error(), "over this host's image size limit of 16.0 MiB") {
		t.Fatalf("an image over the limit: %v", err)
	}
	if _, err := cli.ImageInspect(t.Context(), ref); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the refused image is on the host: %v", err)
	}
	if n := len(dockertest.InstanceContainers(t, cli, spec.InstanceID)); n != 0 {
		t.Fatalf("a refused image left %d containers", n)
	}

	// A layer of zeros is announced small (compressed) and unpacks to 24
	// MiB: measured once pulled, refused and removed.
	zeros := "gpurent-test/zeros:" + strings.ToLower(gpurent.NewID("t"))
	dockertest.BuildImage(t, zeros,
		dockertest.File{Name: "Dockerfile", Mode: 0o644, Body: []byte("FROM " + base + "\nCOPY blob /blob\n")},
		dockertest.File{Name: "blob", Mode: 0o644, Body: make([]byte, 24<<20)})
	zref := reg.Push(t, zeros, "zeros:1")
	reg.Forget(t, zeros)
	zspec := newSpec(t)
	zspec.Image = zref
	if _, err := small.Run(t.Context(), zspec); !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "unpacks to") {
		t.Fatalf("an image that unpacks over the limit: %v", err)
	}
	if _, err := cli.ImageInspect(t.Context(), zref); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the image that unpacked over the limit is still on the host: %v", err)
	}

	large := newRuntime(t, docker.Config{MaxImageBytes: 64 << 20})
	if st := mustRun(t, large, spec); st.State != runtime.Running {
		t.Fatalf("under a 64 MiB limit: %s", st.State)
	}

	// Present now: the small host runs it too (the operator's pre-pulled
	// images are not limited).
	again := newSpec(t)
	again.Image = ref
	if st := mustRun(t, small, again); st.State != runtime.Running {
		t.Fatalf("a present image: %s", st.State)
	}
	if _, err := docker.New(t.Context(), docker.Config{MaxImageBytes: -1, InitBinary: dockertest.InitBinary(t)}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("a negative limit: %v", err)
	}
}
