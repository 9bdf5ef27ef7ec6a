package metering_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

type world struct {
	st          gpurent.Store
	svc         *metering.Service
	now         time.Time
	host, other *gpurent.Host
	in          *gpurent.Instance
	alloc       *gpurent.Allocation
}

func newWorld(t *testing.T, st gpurent.Store) *world {
	ctx := context.Background()
	w := &world{st: st, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	w.svc = metering.New(metering.Config{Store: st, Now: func() time.Time { return w.now }, HostTimeout: time.Minute})
	acc := storetest.SeedAccount(t, st, "metered@example.com")
	w.host = storetest.SeedHost(t, st, "m-host", "h100-80g-sxm", 4)
	w.other = storetest.SeedHost(t, st, "m-other", "h100-80g-sxm", 4)
	w.in = storetest.SeedInstance(t, st, acc.ID, "m-1")
	w.alloc = &gpurent.Allocation{InstanceID: w.in.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[0].ID, w.host.GPUs[1].ID},
		StartedAt: w.now.Add(-time.Hour), StartReason: "start"}
	if err := st.CreateAllocation(ctx, w.alloc); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) events(start time.Time, runs int, each time.Duration) []agentproto.RunEvent {
	var out []agentproto.RunEvent
	for i := 0; i < runs; i++ {
		s := start.Add(time.Duration(i) * 2 * each)
		e := s.Add(each)
		out = append(out,
			agentproto.RunEvent{ID: gpurent.NewID("run"), Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s},
			agentproto.RunEvent{ID: gpurent.NewID("run"), Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s, EndedAt: &e})
	}
	return out
}

// seconds sums the runs' lengths, the quantity rating bills.
func seconds(t *testing.T, st gpurent.Store, instanceID string) (int64, int) {
	runs, err := st.ListUsageRuns(context.Background(), gpurent.UsageRunFilter{InstanceID: instanceID})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range runs {
		if r.EndedAt == nil {
			t.Fatalf("run %s still open", r.ID)
		}
		total += int64(r.EndedAt.Sub(r.StartedAt) / time.Second)
	}
	return total, len(runs)
}

// TestExactlyOnce: the same run events delivered duplicated, reordered and
// replayed, in random batches, give the same runs as one clean delivery.
func TestExactlyOnce(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, b.open(t))
			evs := w.events(w.now.Add(-50*time.Minute), 10, 90*time.Second)
			rng := rand.New(rand.NewPCG(1, 2))
			var deliveries []agentproto.RunEvent
			for round := 0; round < 3; round++ { // every event three times
				deliveries = append(deliveries, evs...)
			}
			rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
			for len(deliveries) > 0 {
				n := 1 + rng.IntN(7)
				if n > len(deliveries) {
					n = len(deliveries)
				}
				acked, err := w.svc.Ingest(ctx, w.host, deliveries[:n], nil)
				if err != nil || len(acked) != n {
					t.Fatalf("ingest: %d of %d acked, %v", len(acked), n, err)
				}
				deliveries = deliveries[n:]
			}
			total, runs := seconds(t, w.st, w.in.ID)
			if runs != 10 || total != 10*90 {
				t.Fatalf("%d runs, %d s; want 10 runs, 900 s", runs, total)
			}
			// The same id with other content is refused (and acknowledged,
			// so it is not resent forever), and changes nothing.
			forged := evs[1]
			later := forged.EndedAt.Add(time.Hour)
			forged.EndedAt = &later
			if acked, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{forged}, nil); err != nil || len(acked) != 1 {
				t.Fatalf("forged: %v %v", acked, err)
			}
			if total2, _ := seconds(t, w.st, w.in.ID); total2 != total {
				t.Errorf("a forged replay changed the usage: %d s, want %d", total2, total)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	future := w.now.Add(time.Hour)
	for name, e := range map[string]agentproto.RunEvent{
		"another host's allocation": {ID: "r1", Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: w.now},
		"unknown allocation":        {ID: "r2", Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: "alloc-x", StartedAt: w.now},
		"no id":                     {Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: w.now},
		"in the future":             {ID: "r3", Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: future},
		"bad kind":                  {ID: "r4", Kind: "paused", InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: w.now},
	} {
		host := w.host
		if name == "another host's allocation" {
			host = w.other
		}
		acked, err := w.svc.Ingest(ctx, host, []agentproto.RunEvent{e}, nil)
		if err != nil || len(acked) != 1 {
			t.Errorf("%s: acked %v err %v; want it refused and acknowledged", name, acked, err)
		}
	}
	if runs, _ := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{}); len(runs) != 0 {
		t.Errorf("refused events made runs: %+v", runs)
	}
}

// TestSilentHost: an open run is closed at the host's last heartbeat when
// the host falls silent; the customer is not billed for the silence.
func TestSilentHost(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	start := w.now.Add(-10 * time.Minute)
	e := agentproto.RunEvent{ID: "open-1", Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start}
	if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{e}, w.running(start)); err != nil {
		t.Fatal(err)
	}
	lastBeat := w.now
	if err := w.st.TouchHost(ctx, w.host.ID, lastBeat); err != nil {
		t.Fatal(err)
	}
	if n, err := w.svc.CloseSilent(ctx); err != nil || n != 0 {
		t.Fatalf("a live host's runs closed: %d %v", n, err)
	}
	w.now = w.now.Add(5 * time.Minute) // no heartbeat since
	if n, err := w.svc.CloseSilent(ctx); err != nil || n != 1 {
		t.Fatalf("silent host: closed %d, %v", n, err)
	}
	total, _ := seconds(t, w.st, w.in.ID)
	if total != int64(lastBeat.Sub(start)/time.Second) {
		t.Errorf("billed %d s, want %d (to the last heartbeat)", total, int64(lastBeat.Sub(start)/time.Second))
	}
}

// running is what the agent's report says of the world's instance: running
// since start.
func (w *world) running(start time.Time) []agentproto.ActualInstance {
	return []agentproto.ActualInstance{{InstanceID: w.in.ID, AllocationID: w.alloc.ID, State: agentproto.StateRunning, StartedAt: start}}
}

// TestTouchRunOtherHost: a host's report that shows another host's run as
// running does not keep that run alive; the silent owner's run closes at
// its own last heartbeat.
func TestTouchRunOtherHost(t *testing.T) {
	for name, st := range map[string]func(testing.TB) gpurent.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, st(t))
			start := w.now.Add(-10 * time.Minute)
			e := agentproto.RunEvent{ID: "open-1", Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start}
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{e}, w.running(start)); err != nil {
				t.Fatal(err)
			}
			seen := w.now
			if err := w.st.TouchHost(ctx, w.host.ID, seen); err != nil {
				t.Fatal(err)
			}
			// The host falls silent; the other host claims the run runs.
			w.now = w.now.Add(5 * time.Minute)
			if _, err := w.svc.Ingest(ctx, w.other, nil, w.running(start)); err != nil {
				t.Fatal(err)
			}
			runs, err := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.in.ID})
			if err != nil || len(runs) != 1 || !runs[0].LastSeenAt.Equal(seen) {
				t.Fatalf("run after another host's report: %+v %v (want last seen %v)", runs, err, seen)
			}
			if n, err := w.svc.CloseSilent(ctx); err != nil || n != 1 {
				t.Fatalf("silent host: closed %d, %v", n, err)
			}
			if total, _ := seconds(t, w.st, w.in.ID); total != int64(seen.Sub(start)/time.Second) {
				t.Errorf("billed %d s, want %d", total, int64(seen.Sub(start)/time.Second))
			}
		})
	}
}
