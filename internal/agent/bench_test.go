package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime/process"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu/fake"
)

// BenchmarkConvergeSteadyState is the cost of one level-triggered pass
// (converge, then build the report) when nothing has to change: what every
// long-poll answer and heartbeat costs a host with 32 running instances.
func BenchmarkConvergeSteadyState(b *testing.B) {
	ctx := context.Background()
	rt, err := process.New(process.Config{Dir: b.TempDir(), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{
		ServerURL: "http://127.0.0.1:1", JoinToken: "unused", Name: "bench", StateDir: b.TempDir(),
		Runtime: rt, GPUs: fake.New(fake.Config{Host: "bench", Count: 8}), CPUMilli: 1, MemoryMiB: 1, DiskGiB: 1,
		Logger: quiet(), HeartbeatInterval: time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	d := &agentproto.Desired{Generation: 1}
	for i := range 32 {
		d.Instances = append(d.Instances, desiredRunning(fmt.Sprintf("i-%02d", i), "alloc-1"))
	}
	b.Cleanup(func() {
		for _, di := range d.Instances {
			_ = rt.Remove(ctx, di.InstanceID, "", true)
		}
	})
	a.desired = d
	a.converge(ctx, d) // starts them
	b.ResetTimer()
	for b.Loop() {
		a.converge(ctx, d)
		if _, err := a.buildReport(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
