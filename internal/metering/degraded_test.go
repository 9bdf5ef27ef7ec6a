package metering_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// degradedWorld adds to w an instance on the host's other two GPUs,
// listed as degraded: its allocation is billed at 850‰ of the list price.
func degradedWorld(t *testing.T, w *world) (*gpurent.Instance, *gpurent.Allocation) {
	t.Helper()
	in := storetest.SeedInstance(t, w.st, w.in.AccountID, "m-degraded")
	a := &gpurent.Allocation{InstanceID: in.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[2].ID, w.host.GPUs[3].ID},
		StartedAt: w.now.Add(-time.Hour), StartReason: "start", PricePermille: 850}
	if err := w.st.CreateAllocation(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return in, a
}

// TestBillDegraded: a run on an allocation listed at 850‰ carries that
// share and is debited exactly 85% of the list price, live and at the
// close, and its statement line shows the scaled rate.
func TestBillDegraded(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, b.open(t))
			book := defaultBook(t)
			w.topUp(t, 1_000_000)
			in, alloc := degradedWorld(t, w)
			// Tuesday 2026-12-01 10:00 in Chengdu: peak all the way.
			start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
			w.now = start.Add(30 * time.Minute)
			running := []agentproto.ActualInstance{{InstanceID: in.ID, AllocationID: alloc.ID, State: agentproto.StateRunning, StartedAt: start}}
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "d1", Kind: agentproto.RunStarted,
				InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: start}}, running); err != nil {
				t.Fatal(err)
			}
			runs, err := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
			if err != nil || len(runs) != 1 || runs[0].PricePermille != 850 {
				t.Fatalf("runs %+v (%v): want one run at 850‰", runs, err)
			}
			// 30 minutes of 2 x 3,473 fen/h at 85%: 2,952.05 → 2,952 now.
			d, err := w.svc.Bill(ctx, book)
			if err != nil || d.Fen != 2952 {
				t.Fatalf("first pass: %+v %v", d, err)
			}
			// One hour: 5,904.1 exactly, 5,904 rounded; 2,952 more.
			end := start.Add(time.Hour)
			w.now = end
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "d2", Kind: agentproto.RunEnded,
				InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: start, EndedAt: &end}}, nil); err != nil {
				t.Fatal(err)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Fen != 2952 || d.Settled != 1 {
				t.Fatalf("final pass: %+v %v", d, err)
			}
			if got := w.cash(t); got != 1_000_000-5904 {
				t.Errorf("cash %d, want %d: an hour of 2 x H100 at 85%% is 5,904 fen", got, 1_000_000-5904)
			}
			txs, err := w.st.LedgerTxs(ctx, w.in.AccountID, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			noted := false
			for _, tx := range txs {
				noted = noted || (tx.Op == "debit" && strings.Contains(tx.Note, "degraded, 85% of the list price"))
			}
			if !noted {
				t.Errorf("no debit says it is at 85%%: %+v", txs)
			}

			acc, err := w.st.AccountByID(ctx, w.in.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			st, err := w.svc.Statement(ctx, book, acc, start)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Lines) != 1 || st.TotalFen != 5904 {
				t.Fatalf("statement %+v", st)
			}
			l := st.Lines[0]
			// 3,473 × 0.85 = 2,952.05 fen/h, shown as 2,952.
			if l.InstanceID != in.ID || l.Window != "peak" || l.RateFen != 2952 || l.ListRateFen != 3473 ||
				l.PricePermille != 850 || l.Fen != 5904 || l.ExactText != "59041/10" {
				t.Errorf("statement line %+v", l)
			}

			// No package is sold on degraded GPUs.
			_, err = w.svc.ChangePlan(ctx, book, acc, in.ID, gpurent.PlanDaily)
			if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(gpurent.ErrorMessage(err), "degraded") {
				t.Errorf("package on degraded GPUs: %v", err)
			}
		})
	}
}
