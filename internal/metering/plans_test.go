package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestChangePlan: hourly → monthly takes effect at once (the seconds before
// are billed by the second, the month is charged up front, the run goes on
// prepaid); monthly → hourly waits for the paid month to end, can be
// canceled, and from then on the run is billed by the second again.
func TestChangePlan(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, b.open(t))
			book := defaultBook(t)
			w.topUp(t, 10_000_000)
			acc, err := w.st.AccountByID(ctx, w.in.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			// Tuesday 2026-12-01 10:00 in Chengdu: peak.
			start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
			w.now = start.Add(30 * time.Minute)
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "s1", Kind: agentproto.RunStarted,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start}}, w.running(start)); err != nil {
				t.Fatal(err)
			}
			res, err := w.svc.ChangePlan(ctx, book, acc, w.in.ID, gpurent.PlanMonthly)
			if err != nil {
				t.Fatal(err)
			}
			if res.Change == nil || res.Change.State != gpurent.PlanChangeApplied || !res.Change.EffectiveAt.Equal(w.now) ||
				res.ChargedFen != 2_000_000 || res.Unpaid {
				t.Fatalf("to monthly: %+v (change %+v)", res, res.Change)
			}
			if in, _ := w.st.InstanceByID(ctx, w.in.ID); in.Plan != gpurent.PlanMonthly {
				t.Fatalf("plan %s after the change, want monthly", in.Plan)
			}
			// The first 30 minutes by the second: 2 x 3,473 / 2 = 3,473 fen.
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Fen != 3473 {
				t.Fatalf("bill after the change: %+v %v", d, err)
			}
			end := start.Add(2 * time.Hour)
			w.now = end
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "e1", Kind: agentproto.RunEnded,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start, EndedAt: &end}}, nil); err != nil {
				t.Fatal(err)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Fen != 0 || d.Settled != 1 {
				t.Fatalf("the rest of the run is prepaid: %+v %v", d, err)
			}
			if n, _, err := w.svc.ChargePackages(ctx, book); err != nil || n != 0 {
				t.Fatalf("the month was charged again: %d %v", n, err)
			}
			if got := w.cash(t); got != 10_000_000-2_000_000-3473 {
				t.Fatalf("cash %d, want the month and 30 minutes gone", got)
			}

			// Back to hourly: at the end of the paid month.
			paidEnd := start.Add(30*time.Minute + 30*24*time.Hour)
			w.now = start.Add(3 * time.Hour)
			res, err = w.svc.ChangePlan(ctx, book, acc, w.in.ID, gpurent.PlanHourly)
			if err != nil || res.Change == nil || res.Change.State != gpurent.PlanChangePending || !res.Change.EffectiveAt.Equal(paidEnd) {
				t.Fatalf("to hourly: %+v %v", res, err)
			}
			if _, err := w.svc.ChangePlan(ctx, book, acc, w.in.ID, gpurent.PlanHourly); !gpurent.IsCode(err, gpurent.CodeConflict) {
				t.Errorf("the same change twice: %v", err)
			}
			if res, err := w.svc.ChangePlan(ctx, book, acc, w.in.ID, gpurent.PlanMonthly); err != nil || res.Change != nil || res.Canceled == nil {
				t.Fatalf("asking for the plan in force cancels: %+v %v", res, err)
			}
			if _, err := w.svc.ChangePlan(ctx, book, acc, w.in.ID, gpurent.PlanHourly); err != nil {
				t.Fatal(err)
			}
			w.now = paidEnd.Add(-time.Second)
			if got, err := w.svc.ApplyDuePlanChanges(ctx); err != nil || len(got) != 0 {
				t.Fatalf("applied a second early: %+v %v", got, err)
			}
			// A run from an hour before the month ends to an hour after:
			// only the hour after is billed (Thursday 10:30–11:30, peak).
			s2, e2 := paidEnd.Add(-time.Hour), paidEnd.Add(time.Hour)
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "s2", Kind: agentproto.RunStarted,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s2}}, w.running(s2)); err != nil {
				t.Fatal(err)
			}
			w.now = e2
			if got, err := w.svc.ApplyDuePlanChanges(ctx); err != nil || len(got) != 1 {
				t.Fatalf("apply at the month's end: %+v %v", got, err)
			}
			if in, _ := w.st.InstanceByID(ctx, w.in.ID); in.Plan != gpurent.PlanHourly {
				t.Fatalf("plan %s after the month, want hourly", in.Plan)
			}
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "e2", Kind: agentproto.RunEnded,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s2, EndedAt: &e2}}, nil); err != nil {
				t.Fatal(err)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Fen != 6946 {
				t.Fatalf("the hour after the month: %+v %v, want 6,946 fen", d, err)
			}
			if n, _, err := w.svc.ChargePackages(ctx, book); err != nil || n != 0 {
				t.Fatalf("a second month charged after going hourly: %d %v", n, err)
			}
			// December's statement: the 30 minutes and the hour by the
			// second (1.5 h of 2 x 3,473 fen), and the month's package.
			st, err := w.svc.Statement(ctx, book, acc, start)
			if err != nil || st.TotalFen != 10419+2_000_000 || len(st.Lines) != 2 {
				t.Fatalf("December: %+v %v", st, err)
			}
			for _, l := range st.Lines {
				if !(l.Window == "peak" && l.Seconds == 5400 && l.Fen == 10419) &&
					!(l.Window == "monthly package" && l.Fen == 2_000_000 && l.Units == 1) {
					t.Errorf("line %+v", l)
				}
			}
		})
	}
}

// TestChangePlanRefusals: what cannot be converted says why.
func TestChangePlanRefusals(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	book := defaultBook(t)
	acc, err := w.st.AccountByID(ctx, w.in.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	other := storetest.SeedAccount(t, w.st, "other@example.com")
	stopped := storetest.SeedInstance(t, w.st, acc.ID, "stopped")
	noGPU := &gpurent.Instance{AccountID: acc.ID, Name: "cpu", Image: "busybox", TypeID: "h100-80g-sxm", GPUCount: 0,
		State: gpurent.StateRunning, Plan: gpurent.PlanHourly}
	if err := w.st.CreateInstance(ctx, noGPU); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		acc  *gpurent.Account
		id   string
		to   gpurent.Plan
		code gpurent.Code
	}{
		{"unknown plan", acc, w.in.ID, "yearly", gpurent.CodeInvalid},
		{"someone else's", other, w.in.ID, gpurent.PlanDaily, gpurent.CodeNotFound},
		{"missing", acc, "i-nope", gpurent.PlanDaily, gpurent.CodeNotFound},
		{"same plan", acc, w.in.ID, gpurent.PlanHourly, gpurent.CodeConflict},
		{"no GPUs held", acc, stopped.ID, gpurent.PlanDaily, gpurent.CodeConflict},
		{"no-GPU mode", acc, noGPU.ID, gpurent.PlanWeekly, gpurent.CodeInvalid},
	} {
		if _, err := w.svc.ChangePlan(ctx, book, c.acc, c.id, c.to); !gpurent.IsCode(err, c.code) {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}
