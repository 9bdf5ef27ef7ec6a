package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func testUsageRuns(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	acc := SeedAccount(t, s, "runs@example.com")
	h := SeedHost(t, s, "metered", "h100-80g-sxm", 2)
	in := SeedInstance(t, s, acc.ID, "metered-1")
	alloc := &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: []string{h.GPUs[0].ID}, StartedAt: time.Now(), StartReason: "start"}
	if err := s.CreateAllocation(ctx, alloc); err != nil {
		t.Fatal(err)
	}
	run := &gpurent.UsageRun{AccountID: acc.ID, TypeID: "h100-80g-sxm", GPUCount: 1}
	t0 := time.Date(2026, 11, 29, 21, 59, 30, 250000000, time.UTC)
	end := t0.Add(90 * time.Minute)
	before := t0.Add(-time.Hour)
	start := &gpurent.RunEvent{ID: "ev-start", HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0}
	stop := &gpurent.RunEvent{ID: "ev-stop", HostID: h.ID, Kind: gpurent.RunEnded, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0, EndedAt: &end}

	// The end arrives first (reordered), then the start, then both again.
	for i, c := range []struct {
		e    *gpurent.RunEvent
		hash string
		dup  bool
	}{{stop, "h-stop", false}, {start, "h-start", false}, {start, "h-start", true}, {stop, "h-stop", true}} {
		dup, err := s.IngestRunEvent(ctx, c.e, c.hash, run, t0.Add(time.Minute))
		if err != nil || dup != c.dup {
			t.Fatalf("step %d (%s): dup %v err %v, want dup %v", i, c.e.ID, dup, err, c.dup)
		}
	}
	if _, err := s.IngestRunEvent(ctx, start, "h-other", run, t0); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("same id, other content: %v, want conflict", err)
	}
	runs, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	r := runs[0]
	if !r.StartedAt.Equal(t0) || r.EndedAt == nil || !r.EndedAt.Equal(end) || r.EndReason != gpurent.RunEndReported ||
		r.AccountID != acc.ID || r.GPUCount != 1 || r.HostID != h.ID || r.AllocationID != alloc.ID {
		t.Errorf("run: %+v", r)
	}
	for name, bad := range map[string]gpurent.RunEvent{
		"no id":         {HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0},
		"bad kind":      {ID: "x1", HostID: h.ID, Kind: "paused", InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0},
		"end w/o time":  {ID: "x2", HostID: h.ID, Kind: gpurent.RunEnded, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0},
		"end before":    {ID: "x3", HostID: h.ID, Kind: gpurent.RunEnded, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0, EndedAt: &before},
		"start w/ end":  {ID: "x4", HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0, EndedAt: &end},
		"unknown alloc": {ID: "x5", HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: "alloc-none", StartedAt: t0},
	} {
		if _, err := s.IngestRunEvent(ctx, &bad, "h", run, t0); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}

	// A second run stays open; heartbeats move its last sign of life; a
	// silent host has it closed there.
	t1 := end.Add(time.Hour)
	again := &gpurent.RunEvent{ID: "ev-start-2", HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t1}
	if _, err := s.IngestRunEvent(ctx, again, "h2", run, t1.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchRun(ctx, h.ID, alloc.ID, t1, t1.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchRun(ctx, h.ID, alloc.ID, t1, t1.Add(5*time.Minute)); err != nil { // late, out of order: never backwards
		t.Fatal(err)
	}
	// Another host cannot keep this host's run alive.
	other := SeedHost(t, s, "metered-other", "h100-80g-sxm", 1)
	if err := s.TouchRun(ctx, other.ID, alloc.ID, t1, t1.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	open, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{HostID: h.ID, OpenOnly: true})
	if err != nil || len(open) != 1 || !open[0].LastSeenAt.Equal(t1.Add(10*time.Minute)) {
		t.Fatalf("open runs: %+v %v", open, err)
	}
	if n, err := s.CloseSilentRuns(ctx, h.ID); err != nil || n != 1 {
		t.Fatalf("close silent: %d %v", n, err)
	}
	// The agent comes back and reports the true end, later than the last
	// heartbeat: the run stays closed where the control plane lost sight.
	late := t1.Add(time.Hour)
	if _, err := s.IngestRunEvent(ctx, &gpurent.RunEvent{ID: "ev-stop-2", HostID: h.ID, Kind: gpurent.RunEnded, InstanceID: in.ID,
		AllocationID: alloc.ID, StartedAt: t1, EndedAt: &late}, "h3", run, late); err != nil {
		t.Fatal(err)
	}
	runs, _ = s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
	if len(runs) != 2 || runs[1].EndedAt == nil || !runs[1].EndedAt.Equal(t1.Add(10*time.Minute)) || runs[1].EndReason != gpurent.RunEndHostSilent {
		t.Errorf("silent run after the late end: %+v", runs)
	}
	// Since: only runs that ended at or after it (the first ended at end).
	if since, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID, Since: end.Add(time.Second)}); err != nil ||
		len(since) != 1 || !since[0].StartedAt.Equal(t1) {
		t.Errorf("runs since the first ended: %+v %v", since, err)
	}
	if since, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID, Since: end}); err != nil || len(since) != 2 {
		t.Errorf("runs since the first's end: %+v %v", since, err)
	}

	// Debits recorded against a run, optimistically.
	id0 := runs[0].ID
	if err := s.RecordRunDebit(ctx, id0, 0, 120, false); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRunDebit(ctx, id0, 0, 130, false); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("a stale debit record: %v, want conflict", err)
	}
	if err := s.RecordRunDebit(ctx, id0, 120, 150, true); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRunDebit(ctx, id0, 150, 160, true); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("debiting a settled run: %v, want conflict", err)
	}
	unsettled, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID, UnsettledOnly: true})
	if err != nil || len(unsettled) != 1 || unsettled[0].ID == id0 {
		t.Errorf("unsettled runs: %+v %v", unsettled, err)
	}
	all, _ := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
	if all[0].DebitedFen != 150 || !all[0].Settled {
		t.Errorf("settled run: %+v", all[0])
	}

	// Replays racing each other store each event once.
	var wg sync.WaitGroup
	dups := make(chan bool, 16)
	ev := &gpurent.RunEvent{ID: "ev-race", HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: late.Add(time.Hour)}
	for range 16 {
		wg.Go(func() {
			e := *ev
			dup, err := s.IngestRunEvent(ctx, &e, "h-race", run, late.Add(time.Hour))
			if err != nil {
				t.Error(err)
			}
			dups <- dup
		})
	}
	wg.Wait()
	close(dups)
	firsts := 0
	for d := range dups {
		if !d {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d concurrent replays were taken as the first", firsts)
	}
}
