package metering_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// benchStores are the backends every benchmark here runs on.
var benchStores = []struct {
	name string
	open func(testing.TB) gpurent.Store
}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}}

// benchWorld seeds one account, one host of 8 H100s and one instance with
// an allocation a day old, and returns n run events: runs of one second,
// two seconds apart, each started and ended (so n/2 runs).
func benchWorld(b *testing.B, st gpurent.Store, n int) (*world, []agentproto.RunEvent) {
	b.Helper()
	ctx := context.Background()
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
	evs := make([]agentproto.RunEvent, 0, n+1)
	for i := 0; len(evs) < n; i++ {
		s := w.now.Add(-23 * time.Hour).Add(time.Duration(i) * 2 * time.Second)
		e := s.Add(time.Second)
		evs = append(evs,
			agentproto.RunEvent{ID: fmt.Sprintf("s%d", i), Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s},
			agentproto.RunEvent{ID: fmt.Sprintf("e%d", i), Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s, EndedAt: &e})
	}
	return w, evs[:n]
}

// BenchmarkIngest measures run events stored per second, in reports of 50
// events (25 runs started and ended), one transaction and one
// IngestRunEvents batch per report.
func BenchmarkIngest(b *testing.B) {
	for _, be := range benchStores {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			w, evs := benchWorld(b, be.open(b), b.N)
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

// BenchmarkIngestAndPost measures the goal, usage ingest with
// ledger posting: each report of 50 events (25 runs of one second, started
// and ended) is ingested (one transaction, one batch of events), then a
// billing pass (Service.Bill) rates the 25 runs and posts their debits to
// the ledger (one transaction for the account's runs: each run's debit
// under its own key with the run's debited amount). events/s counts the
// events over both; posts/s the ledger debits.
func BenchmarkIngestAndPost(b *testing.B) {
	for _, be := range benchStores {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			st := be.open(b)
			w, evs := benchWorld(b, st, b.N)
			book := benchBook(b)
			if _, err := st.PostLedger(ctx, &gpurent.LedgerTx{Op: "topup", Key: "bench-seed", Customer: w.in.AccountID,
				At: w.now, AmountFen: 1 << 45}); err != nil {
				b.Fatal(err)
			}
			posts := 0
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(evs); i += 50 {
				j := min(i+50, len(evs))
				if _, err := w.svc.Ingest(ctx, w.host, evs[i:j], nil); err != nil {
					b.Fatal(err)
				}
				d, err := w.svc.Bill(ctx, book)
				if err != nil {
					b.Fatal(err)
				}
				posts += d.Posted
			}
			elapsed := time.Since(start).Seconds()
			b.StopTimer()
			if want := b.N / 2; posts != want {
				b.Fatalf("%d debits posted for %d runs", posts, want)
			}
			b.ReportMetric(float64(b.N)/elapsed, "events/s")
			b.ReportMetric(float64(posts)/elapsed, "posts/s")
		})
	}
}

type benchPriceBook struct{ b *rating.Book }

func (p benchPriceBook) Book(context.Context) (*rating.Book, error) { return p.b, nil }

// benchBook is the default price book of the default catalog.
func benchBook(b *testing.B) benchPriceBook {
	b.Helper()
	c, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	book, err := rating.DefaultBook(c.GPUTypes, time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	return benchPriceBook{book}
}
