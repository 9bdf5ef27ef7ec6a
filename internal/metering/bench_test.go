package metering_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// BenchmarkIngest measures run events stored per second, in reports of 50
// events (25 runs started and ended), each event its own transaction.
func BenchmarkIngest(b *testing.B) {
	for _, be := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			st := be.open(b)
			w := &world{st: st, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
			acc := storetest.SeedAccount(b, st, "bench@example.com")
			w.host = storetest.SeedHost(b, st, "bench-host", "h100-80g-sxm", 8)
			w.in = storetest.SeedInstance(b, st, acc.ID, "bench")
			w.alloc = &gpurent.Allocation{InstanceID: w.in.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[0].ID},
				StartedAt: w.now.Add(-24 * time.Hour), StartReason: "start"}
			if err := st.CreateAllocation(ctx, w.alloc); err != nil {
				b.Fatal(err)
			}
			w.svc = metering.New(metering.Config{Store: st, Now: func() time.Time { return w.now }})
			var evs []agentproto.RunEvent
			for i := 0; len(evs) < b.N; i++ {
				s := w.now.Add(-23 * time.Hour).Add(time.Duration(i) * 2 * time.Second)
				e := s.Add(time.Second)
				evs = append(evs,
					agentproto.RunEvent{ID: fmt.Sprintf("s%d", i), Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s},
					agentproto.RunEvent{ID: fmt.Sprintf("e%d", i), Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s, EndedAt: &e})
			}
			evs = evs[:b.N]
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(evs); i += 50 {
				j := min(i+50, len(evs))
				if _, err := w.svc.Ingest(ctx, w.host, evs[i:j], nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}
