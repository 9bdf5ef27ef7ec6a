package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// runEvents are the started and ended events of one run [s, e].
func runEvents(in *gpurent.Instance, alloc *gpurent.Allocation, s, e time.Time) []agentproto.RunEvent {
	return []agentproto.RunEvent{
		{ID: gpurent.NewID("run"), Kind: agentproto.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: s},
		{ID: gpurent.NewID("run"), Kind: agentproto.RunEnded, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: s, EndedAt: &e},
	}
}

// TestFailedInstanceNotBilled: nothing the platform failed at is billed.
// An instance that ran and then failed owes its time up to the failure,
// without the 60-second minimum of the power-on the failure cut, and
// nothing for the container's restarts after it (they were billed two
// 60-second minimums before); one that never reached running owes
// nothing at all.
func TestFailedInstanceNotBilled(t *testing.T) {
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
			s := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
			failedAt := s.Add(30 * time.Minute)
			if err := w.st.EndAllocation(ctx, w.alloc.ID, s, "stop"); err != nil {
				t.Fatal(err)
			}
			ran := &gpurent.Allocation{InstanceID: w.in.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[0].ID, w.host.GPUs[1].ID},
				StartedAt: s, StartReason: "start"}
			if err := w.st.CreateAllocation(ctx, ran); err != nil {
				t.Fatal(err)
			}
			if err := w.st.AddEvent(ctx, &gpurent.Event{ID: gpurent.NewID(gpurent.PrefixEvent), InstanceID: w.in.ID,
				At: s.Add(5 * time.Second), Kind: "running", Message: "running"}); err != nil {
				t.Fatal(err)
			}
			if err := w.st.EndAllocation(ctx, ran.ID, failedAt, "failed"); err != nil {
				t.Fatal(err)
			}
			var evs []agentproto.RunEvent
			evs = append(evs, runEvents(w.in, ran, s.Add(2*time.Second), failedAt.Add(4*time.Second))...)
			// The container restarted twice before the agent stopped it.
			evs = append(evs, runEvents(w.in, ran, failedAt.Add(10*time.Second), failedAt.Add(13*time.Second))...)
			evs = append(evs, runEvents(w.in, ran, failedAt.Add(20*time.Second), failedAt.Add(22*time.Second))...)

			// Another instance of the account never reached running.
			never := storetest.SeedInstance(t, w.st, w.in.AccountID, "never")
			nalloc := &gpurent.Allocation{InstanceID: never.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[2].ID},
				StartedAt: s, StartReason: "start"}
			if err := w.st.CreateAllocation(ctx, nalloc); err != nil {
				t.Fatal(err)
			}
			if err := w.st.EndAllocation(ctx, nalloc.ID, s.Add(8*time.Second), "failed"); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, runEvents(never, nalloc, s.Add(time.Second), s.Add(3*time.Second))...)
			evs = append(evs, runEvents(never, nalloc, s.Add(5*time.Second), s.Add(6*time.Second))...)

			w.now = failedAt.Add(time.Minute)
			if _, err := w.svc.Ingest(ctx, w.host, evs, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := w.svc.Bill(ctx, book); err != nil {
				t.Fatal(err)
			}
			// 1,798 s (02:00:02 to the failure at 02:30:00) of 2 x 3,473
			// fen/h: 1,798 × 6,946 / 3,600 = 3,469.14… → 3,469 fen. Before
			// the fix: 1,802 s (3,477) and two minimums of 116.
			if got := w.cash(t); got != 1_000_000-3469 {
				t.Errorf("cash %d, want %d: billed %d fen, want 3,469 (only the time before the failure)",
					got, 1_000_000-3469, 1_000_000-got)
			}
			runs, err := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{AccountID: w.in.AccountID})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				if !r.Settled {
					t.Errorf("run %s of %s not settled", r.ID, r.InstanceID)
				}
				if r.InstanceID == never.ID && r.DebitedFen != 0 {
					t.Errorf("a run of an instance that never reached running was debited %d fen", r.DebitedFen)
				}
			}
			// The statement says the same (lines are rounded per rate, so
			// within a fen of it).
			acc, err := w.st.AccountByID(ctx, w.in.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			stmt, err := w.svc.Statement(ctx, book, acc, s)
			if err != nil {
				t.Fatal(err)
			}
			if stmt.TotalFen < 3468 || stmt.TotalFen > 3470 {
				t.Errorf("statement total %d fen, want 3,469: %+v", stmt.TotalFen, stmt.Lines)
			}
			if d, err := w.svc.Bill(ctx, book); err != nil || d.Posted != 0 {
				t.Errorf("a second pass posted: %+v %v", d, err)
			}
		})
	}
}
