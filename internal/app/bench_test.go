package app

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// BenchmarkRentDecisions measures rent decisions per second through the
// API (authentication, validation, placement, the atomic claim and its
// records; no container start) on a fleet of 1,000 hosts x 8 GPUs, with 32
// clients in parallel. Run with -benchtime=Nx, N ≤ 8,000 (the fleet's GPUs).
func BenchmarkRentDecisions(b *testing.B) {
	for _, backend := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		b.Run(backend.name, func(b *testing.B) {
			if b.N > 8000 {
				b.Fatalf("the fleet has 8,000 GPUs; run with -benchtime=Nx, N ≤ 8000 (got %d)", b.N)
			}
			ctx := context.Background()
			s, err := StartServer(ctx, ServerConfig{Store: backend.open(b), Listen: "127.0.0.1:0",
				JoinToken: "join-race", BcryptCost: 4, HostTimeout: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			registerHosts(b, s, "bench", "h100-80g-sxm", 1000)
			cs := customers(b, s, 32)
			var next, failed atomic.Int64
			b.SetParallelism(16) // 32 clients on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				c := cs[int(next.Add(1)-1)%len(cs)]
				for pb.Next() {
					if _, err := c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "h100-80g-sxm", GPUCount: 1, Image: "busybox"}, ""); err != nil {
						failed.Add(1)
						b.Error(err)
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
			if failed.Load() > 0 {
				b.Fatalf("%d rents failed", failed.Load())
			}
		})
	}
}

// BenchmarkRentToRunning measures rent → running (as reported by the API)
// with the Docker runtime and one agent, against a bare `docker run -d` of
// the same image in the same run. It reports the median of each.
func BenchmarkRentToRunning(b *testing.B) {
	image := dockertest.BusyboxImage(b)
	ctx := context.Background()
	dir := b.TempDir()
	s, err := StartServer(ctx, ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0",
		JoinToken: "join-bench", BcryptCost: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	as, err := StartAgents(ctx, AgentsConfig{InitBinary: dockertest.InitBinary(b), ServerURL: s.URL, Join: s, DataDir: filepath.Join(dir, "agents"),
		Hosts:   []DemoHost{{Name: "bench-" + strings.ToLower(dockertest.NewInstanceID()[2:8]), Zone: "cd-tianfu-a", TypeID: "h100-80g-sxm", GPUs: 8, GroupSize: 8}},
		Catalog: c, Runtime: RuntimeDocker})
	if err != nil {
		b.Fatal(err)
	}
	defer as.Stop()
	cl := customers(b, s, 1)[0]
	waitState := func(id, state string) {
		deadline := time.Now().Add(time.Minute)
		for {
			in, err := cl.GetInstance(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if in.State == state {
				return
			}
			if in.State == "failed" || time.Now().After(deadline) {
				b.Fatalf("instance %s is %s (%s), waiting for %s", id, in.State, in.StateReason, state)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i := 0; i < 40; i++ { // wait for the agent's registration
		if types, err := cl.GPUTypes(ctx); err == nil && freeOf(types, "h100-80g-sxm") == 8 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	median := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.Run("gpurent", func(b *testing.B) {
		var took []time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			in, err := cl.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "h100-80g-sxm", GPUCount: 1, Image: image}, "")
			if err != nil {
				b.Fatal(err)
			}
			waitState(in.ID, "running")
			took = append(took, time.Since(t0))
			b.StopTimer()
			if _, err := cl.DeleteInstance(ctx, in.ID); err != nil {
				b.Fatal(err)
			}
			waitState(in.ID, "deleted")
			b.StartTimer()
		}
		b.ReportMetric(median(took), "median-ms")
	})
	b.Run("docker-run", func(b *testing.B) {
		var took []time.Duration
		for i := 0; i < b.N; i++ {
			name := fmt.Sprintf("gpurent-bench-bare-%d-%d", time.Now().UnixNano(), i)
			t0 := time.Now()
			if out, err := exec.Command("docker", "run", "-d", "--network", "none", "--name", name, image).CombinedOutput(); err != nil {
				b.Fatalf("docker run: %v\n%s", err, out)
			}
			took = append(took, time.Since(t0))
			b.StopTimer()
			if out, err := exec.Command("docker", "rm", "-f", name).CombinedOutput(); err != nil {
				b.Fatalf("docker rm: %v\n%s", err, out)
			}
			b.StartTimer()
		}
		b.ReportMetric(median(took), "median-ms")
	})
}

func freeOf(l apiv1.GPUTypeList, typ string) int {
	for _, t := range l.GPUTypes {
		if t.ID == typ {
			return t.Free
		}
	}
	return 0
}
