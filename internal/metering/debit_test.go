package metering_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

type fixedBook struct{ b *rating.Book }

func (f fixedBook) Book(context.Context) (*rating.Book, error) { return f.b, nil }

func defaultBook(t *testing.T) fixedBook {
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := rating.DefaultBook(c.GPUTypes, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return fixedBook{b}
}

func (w *world) topUp(t *testing.T, fen int64) {
	in, err := w.st.InstanceByID(context.Background(), w.in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.PostLedger(context.Background(), &gpurent.LedgerTx{Op: "topup", Key: "seed:" + in.AccountID,
		Customer: in.AccountID, At: w.now, AmountFen: fen, Actor: "test", Note: "seed"}); err != nil {
		t.Fatal(err)
	}
}

func (w *world) cash(t *testing.T) int64 {
	in, _ := w.st.InstanceByID(context.Background(), w.in.ID)
	b, err := w.st.LedgerBalances(context.Background(), in.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	return b.CashFen
}

// TestBillRuns: a weekday-daytime hour of 2 x H100 costs 2 x 34.73 CNY;
// an open run is debited floor(exact so far) as it goes and the rest, once,
// when it ends; repeated and concurrent passes post nothing twice.
func TestBillRuns(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, b.open(t))
			book := defaultBook(t)
			w.topUp(t, 1_000_000)
			// Tuesday 2026-12-01 10:00 in Chengdu: peak all the way.
			start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
			w.now = start.Add(30 * time.Minute)
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "s1", Kind: agentproto.RunStarted,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start}}, w.running(start)); err != nil {
				t.Fatal(err)
			}
			// 30 minutes of 2 x 3,473 fen/h: 3,473 fen exactly.
			d, err := w.svc.Bill(ctx, book)
			if err != nil || d.Fen != 3473 || d.Settled != 0 {
				t.Fatalf("first pass: %+v %v", d, err)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Posted != 0 {
				t.Fatalf("a pass with nothing new posted: %+v %v", d, err)
			}
			// 45 minutes: floor(5,209.5) − 3,473 = 1,736.
			w.now = start.Add(45 * time.Minute)
			if err := w.st.TouchRun(ctx, w.host.ID, w.alloc.ID, start, w.now); err != nil {
				t.Fatal(err)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Fen != 1736 {
				t.Fatalf("second pass: %+v %v", d, err)
			}
			// It ends at 1:01:40; the final amount rounds once:
			// 6,946 × 3,700 / 3,600 = 7,138.94… → 7,139; 7,139 − 5,209 = 1,930.
			end := start.Add(time.Hour + 100*time.Second)
			w.now = end
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "e1", Kind: agentproto.RunEnded,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start, EndedAt: &end}}, nil); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 4 { // concurrent passes, as after a crash and restart
				wg.Go(func() {
					if _, err := w.svc.Bill(ctx, book); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got := w.cash(t); got != 1_000_000-7139 {
				t.Errorf("cash %d, want %d: the run costs 7,139 fen, debited exactly once", got, 1_000_000-7139)
			}
			runs, _ := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.in.ID})
			if len(runs) != 1 || !runs[0].Settled || runs[0].DebitedFen != 7139 {
				t.Errorf("run after the final debit: %+v", runs)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Posted != 0 || d.Settled != 0 {
				t.Errorf("a settled run was billed again: %+v %v", d, err)
			}
			// The operator's revenue: all of it H100 usage on 2026-12-01.
			loc, _ := rating.LoadBillingZone()
			rev, err := w.svc.Revenue(ctx, start.Add(-24*time.Hour), start.Add(48*time.Hour), loc)
			if err != nil || rev.TotalFen != 7139 || rev.ByType["h100-80g-sxm"] != 7139 || len(rev.Days) != 1 ||
				rev.Days[0].Day != "2026-12-01" {
				t.Errorf("revenue: %+v %v", rev, err)
			}
			if _, err := w.svc.Revenue(ctx, start, start, loc); !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Errorf("an empty range: %v", err)
			}
		})
	}
}

// TestBillShortfall: a wallet that cannot cover a debit loses what it has,
// never goes negative, and the instance is named for stopping.
func TestBillShortfall(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	w.topUp(t, 1000)
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	w.now = start.Add(time.Hour)
	if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "s1", Kind: agentproto.RunStarted,
		InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start}}, w.running(start)); err != nil {
		t.Fatal(err)
	}
	d, err := w.svc.Bill(ctx, defaultBook(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Shortfall) != 1 || d.Shortfall[0] != w.in.ID {
		t.Errorf("shortfall: %+v", d)
	}
	if got := w.cash(t); got != 0 {
		t.Errorf("cash %d after a shortfall, want 0 (never negative)", got)
	}
}

// TestBillPackagePlan: runs of package instances are prepaid.
func TestBillPackagePlan(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	w.topUp(t, 1_000_000)
	monthly := &gpurent.Instance{AccountID: w.in.AccountID, Name: "monthly", Image: "busybox", TypeID: "h100-80g-sxm",
		GPUCount: 1, State: gpurent.StateRunning, Plan: gpurent.PlanMonthly}
	if err := w.st.CreateInstance(ctx, monthly); err != nil {
		t.Fatal(err)
	}
	alloc := &gpurent.Allocation{InstanceID: monthly.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[3].ID},
		StartedAt: w.now, StartReason: "start"}
	if err := w.st.CreateAllocation(ctx, alloc); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	w.now = end
	if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "e1", Kind: agentproto.RunEnded,
		InstanceID: monthly.ID, AllocationID: alloc.ID, StartedAt: start, EndedAt: &end}}, nil); err != nil {
		t.Fatal(err)
	}
	d, err := w.svc.Bill(ctx, defaultBook(t))
	if err != nil || d.Posted != 0 || d.Settled != 1 || w.cash(t) != 1_000_000 {
		t.Errorf("package run: %+v %v, cash %d", d, err, w.cash(t))
	}
}

// TestBillSubSecondRun: a power-on shorter than a second owes the 60 s
// minimum whether or not it crossed a second boundary (the price of a run
// does not hang on where in the second it began); only a run that ended at
// the instant it began costs nothing.
func TestBillSubSecondRun(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	book := defaultBook(t)
	w.topUp(t, 1_000_000)
	// Tuesday 2026-12-01 10:00 in Chengdu, peak: 60 s of 2 x 3,473 fen/h
	// is 115.77 fen, 116 once rounded.
	for i, c := range []struct {
		name       string
		start, end time.Duration // after 02:00:00 UTC
		want       int64
	}{
		{"within one second", 100 * time.Millisecond, 600 * time.Millisecond, 116},
		{"across a second boundary", 10*time.Second + 800*time.Millisecond, 11*time.Second + 300*time.Millisecond, 116},
		{"ended as it began", 20*time.Second + 500*time.Millisecond, 20*time.Second + 500*time.Millisecond, 0},
	} {
		start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC).Add(c.start)
		end := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC).Add(c.end)
		w.now = end.Add(time.Second)
		before := w.cash(t)
		id := string(rune('a' + i))
		if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{
			{ID: "s" + id, Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start},
			{ID: "e" + id, Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start, EndedAt: &end},
		}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.Bill(ctx, book); err != nil {
			t.Fatal(err)
		}
		if got := before - w.cash(t); got != c.want {
			t.Errorf("%s: debited %d fen, want %d", c.name, got, c.want)
		}
	}
	runs, err := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.in.ID})
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	for _, r := range runs {
		if !r.Settled {
			t.Errorf("run %s not settled", r.ID)
		}
	}
}
