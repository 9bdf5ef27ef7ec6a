package docker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// BenchmarkRunWithInit compares, side by side on one daemon, an instance
// going to running under gpurent's init (Runtime.Run of a new instance: the
// image's command looked up, its data volume made, the container created
// and started, its status and startup status read back) with a bare
// `docker run -d -v VOLUME:/root/data IMAGE` of the same present image
// (ContainerCreate and ContainerStart, no init). Both on network none, so
// that neither measures the pasta NAT; removal is outside the timing.
// The goal: init ≤ 1.5× bare.
func BenchmarkRunWithInit(b *testing.B) {
	dockertest.Require(b)
	image := dockertest.BusyboxImage(b)
	rt, err := docker.New(b.Context(), docker.Config{InitBinary: dockertest.InitBinary(b), Network: docker.NetworkNone,
		Scope: "bench-init-" + strings.ToLower(dockertest.NewInstanceID())})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	cli := dockertest.Client(b)

	b.Run("gpurent-init", func(b *testing.B) {
		for b.Loop() {
			id := dockertest.NewInstanceID()
			spec := runtime.Spec{InstanceID: id, AllocationID: gpurent.NewID(gpurent.PrefixAllocation), Image: image,
				CPUMilli: 1000, MemoryMiB: 128, VolumeName: gpurent.NewID(gpurent.PrefixVolume)}
			st, err := rt.Run(b.Context(), spec)
			if err != nil || st.State != runtime.Running {
				b.Fatalf("Run: %+v %v", st, err)
			}
			b.StopTimer()
			if err := rt.Remove(context.Background(), id, spec.VolumeName, true); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("bare-docker-run", func(b *testing.B) {
		for b.Loop() {
			name := "gpurent-bench-bare-" + strings.ToLower(dockertest.NewInstanceID())
			volume := gpurent.NewID(gpurent.PrefixVolume)
			created, err := cli.ContainerCreate(b.Context(), client.ContainerCreateOptions{Name: name,
				Config: &container.Config{Image: image},
				HostConfig: &container.HostConfig{NetworkMode: "none", Resources: container.Resources{NanoCPUs: 1e9, Memory: 128 << 20},
					Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: volume, Target: runtime.DataPath}}}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cli.ContainerStart(b.Context(), created.ID, client.ContainerStartOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if _, err := cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			if _, err := cli.VolumeRemove(context.Background(), volume, client.VolumeRemoveOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}
