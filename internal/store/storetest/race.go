package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gpurent/gpurent"
)

// testAllocationRace has 200 goroutines claim overlapping sets of the same 8
// GPUs at once, in several rounds. The database must let no GPU be held by
// two open allocations, every loser must get CodeConflict and leave nothing
// written, and the winners must be a maximal set of disjoint claims: a
// loser's set always overlaps a winner's (a refusal without a real holder
// would be a lost sale). Half the claims run inside InTx next to another
// write, which must commit with a won claim and vanish with a lost one.
func testAllocationRace(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	const workers = 200
	acc := SeedAccount(t, s, "race@example.com")
	h := SeedHost(t, s, "node", "h100-80g-sxm", 8)
	insts := make([]*gpurent.Instance, workers)
	must(t, s.InTx(ctx, func(q gpurent.Queries) error {
		for i := range insts {
			insts[i] = SeedInstance(t, q, acc.ID, fmt.Sprintf("w%03d", i))
		}
		return nil
	}), "create instances")

	wins := make([]int, workers)   // allocations each worker won, all rounds
	events := make([]int, workers) // events each worker committed

	round := func(name string, set func(i int) []int, minWins, maxWins int) {
		t.Helper()
		errs := make([]error, workers)
		allocs := make([]*gpurent.Allocation, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			allocs[i] = &gpurent.Allocation{InstanceID: insts[i].ID, HostID: h.ID, GPUIDs: ids(h, set(i)...),
				StartReason: "start"}
			wg.Go(func() {
				<-start
				a := allocs[i]
				if i%2 == 0 {
					errs[i] = s.CreateAllocation(ctx, a)
					return
				}
				errs[i] = s.InTx(ctx, func(q gpurent.Queries) error {
					if err := q.AddEvent(ctx, &gpurent.Event{InstanceID: a.InstanceID, Kind: "claim"}); err != nil {
						return err
					}
					return q.CreateAllocation(ctx, a)
				})
			})
		}
		close(start)
		wg.Wait()

		holder := map[string]int{} // GPU id → winning worker
		var winners []int
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, i)
				wins[i]++
				if i%2 == 1 {
					events[i]++
				}
				for _, g := range allocs[i].GPUIDs {
					if w, ok := holder[g]; ok {
						t.Fatalf("%s: GPU %s won by workers %d and %d", name, g, w, i)
					}
					holder[g] = i
				}
			case gpurent.IsCode(err, gpurent.CodeConflict):
			default:
				t.Fatalf("%s: worker %d got %v (code %q), want success or conflict", name, i, err, gpurent.ErrorCode(err))
			}
		}
		if len(winners) < minWins || len(winners) > maxWins {
			t.Fatalf("%s: %d claims won, want between %d and %d", name, len(winners), minWins, maxWins)
		}
		for i, err := range errs {
			if err == nil {
				continue
			}
			overlaps := false
			for _, g := range allocs[i].GPUIDs {
				if _, ok := holder[g]; ok {
					overlaps = true
				}
			}
			if !overlaps {
				t.Fatalf("%s: worker %d was refused %v although no winner holds any of them: %v", name, i, allocs[i].GPUIDs, err)
			}
		}

		// The database agrees with the outcome.
		got, err := s.HostByID(ctx, h.ID)
		must(t, err, name+": read host")
		for _, g := range got.GPUs {
			w, held := holder[g.ID]
			switch {
			case held && (g.AllocationID != allocs[w].ID || g.InstanceID != insts[w].ID):
				t.Fatalf("%s: GPU %s held by %q/%q, want %q/%q", name, g.ID, g.AllocationID, g.InstanceID, allocs[w].ID, insts[w].ID)
			case !held && g.AllocationID != "":
				t.Fatalf("%s: GPU %s held by %q, which lost", name, g.ID, g.AllocationID)
			}
		}
		open, err := s.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc.ID})
		must(t, err, name+": list instances")
		nOpen := 0
		for _, in := range open {
			if in.AllocationID != "" {
				nOpen++
			}
		}
		if nOpen != len(winners) {
			t.Fatalf("%s: %d instances hold an allocation, want the %d winners", name, nOpen, len(winners))
		}
		for _, w := range winners {
			must(t, s.EndAllocation(ctx, allocs[w].ID, at(59), "stop"), name+": end")
		}
		t.Logf("%s: %d of %d claims won", name, len(winners), workers)
	}

	round("disjoint pairs", func(i int) []int { k := i % 4; return []int{2 * k, 2*k + 1} }, 4, 4)
	round("ring pairs", func(i int) []int { return []int{i % 8, (i + 1) % 8} }, 3, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	sets := make([][]int, workers)
	for i := range sets {
		sets[i] = rng.Perm(8)[:1+rng.IntN(4)]
	}
	round("random sets", func(i int) []int { return sets[i] }, 1, 8)
	round("all eight", func(int) []int { return []int{0, 1, 2, 3, 4, 5, 6, 7} }, 1, 1)

	// Losers left nothing: allocations and events match the wins.
	for i, in := range insts {
		list, err := s.ListAllocations(ctx, in.ID)
		must(t, err, "list allocations")
		if len(list) != wins[i] {
			t.Fatalf("worker %d: %d allocations stored, won %d", i, len(list), wins[i])
		}
		ev, err := s.ListEvents(ctx, in.ID)
		must(t, err, "list events")
		if len(ev) != events[i] {
			t.Fatalf("worker %d: %d events stored, want %d (a lost claim's transaction must roll back)", i, len(ev), events[i])
		}
	}
	// Every GPU is free again and can be claimed.
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: insts[0].ID, HostID: h.ID,
		GPUIDs: ids(h, 0, 1, 2, 3, 4, 5, 6, 7)}), "claim all eight after the races")
}
