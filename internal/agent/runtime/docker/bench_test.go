package docker_test

import (
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

func newBenchRuntime(b *testing.B) *docker.Runtime {
	b.Helper()
	dockertest.Require(b)
	rt, err := docker.New(b.Context(), docker.Config{InitBinary: dockertest.InitBinary(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	return rt
}

// BenchmarkRunRunning is the agent's steady state: Run on an instance that
// already runs (inspect, nothing to do).
func BenchmarkRunRunning(b *testing.B) {
	rt := newBenchRuntime(b)
	id := dockertest.NewInstanceID()
	dockertest.Cleanup(b, id)
	spec := benchSpec(b, id)
	if _, err := rt.Run(b.Context(), spec); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := rt.Run(b.Context(), spec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList lists the managed containers of the host.
func BenchmarkList(b *testing.B) {
	rt := newBenchRuntime(b)
	id := dockertest.NewInstanceID()
	dockertest.Cleanup(b, id)
	if _, err := rt.Run(b.Context(), benchSpec(b, id)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := rt.List(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunStopRemove is an instance's whole life: create and start,
// graceful stop, removal of container and volume.
func BenchmarkRunStopRemove(b *testing.B) {
	rt := newBenchRuntime(b)
	image := dockertest.BusyboxImage(b)
	for b.Loop() {
		id := dockertest.NewInstanceID()
		spec := benchSpec(b, id)
		spec.Image = image
		if _, err := rt.Run(b.Context(), spec); err != nil {
			b.Fatal(err)
		}
		if err := rt.Stop(b.Context(), id); err != nil {
			b.Fatal(err)
		}
		if err := rt.Remove(b.Context(), id, spec.VolumeName, true); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSpec(b *testing.B, id string) runtime.Spec {
	return runtime.Spec{
		InstanceID:   id,
		AllocationID: gpurent.NewID(gpurent.PrefixAllocation),
		Image:        dockertest.BusyboxImage(b),
		GPUUUIDs:     []string{"GPU-11111111-2222-3333-4444-555555555555"},
		CPUMilli:     1000,
		MemoryMiB:    128,
		VolumeName:   gpurent.NewID(gpurent.PrefixVolume),
	}
}
