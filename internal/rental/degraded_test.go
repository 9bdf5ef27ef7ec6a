package rental_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/sched"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// degrade lists the host's GPUs of the given indexes as degraded at the
// price share permille, as the certification service does after a
// confirmed FAIL under the degrade policy.
func (e *env) degrade(h *gpurent.Host, permille int, idx ...int) []string {
	e.T.Helper()
	var ids []string
	for _, g := range h.GPUs {
		if !slices.Contains(idx, g.Index) {
			continue
		}
		c := &gpurent.GPUCert{GPUID: g.ID, HostID: h.ID, TypeID: g.TypeID, State: gpurent.CertDegraded,
			RatioPermille: permille, PricePermille: permille, Reason: "below the fleet median", UpdatedAt: e.Clock.Now()}
		if err := e.St.SetGPUCert(e.Ctx, c); err != nil {
			e.T.Fatalf("certify %s degraded: %v", g.ID, err)
		}
		ids = append(ids, g.ID)
	}
	slices.Sort(ids)
	return ids
}

// gpuIDs names the host's GPUs of the given indexes, sorted.
func gpuIDs(h *gpurent.Host, idx ...int) []string {
	var ids []string
	for _, g := range h.GPUs {
		if slices.Contains(idx, g.Index) {
			ids = append(ids, g.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func degradedReq(n int) rental.RentRequest {
	r := rentaltest.Req(h100, n)
	r.Degraded = true
	return r
}

// TestRentDegraded: degraded GPUs go only to requests that ask for them,
// all of one host, and the allocation carries the mean of their price
// shares, rounded half up.
func TestRentDegraded(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		h := e.Register("node-1", zoneA, h100, 8)
		degraded := append(e.degrade(h, 850, 5), e.degrade(h, 875, 6, 7)...)
		slices.Sort(degraded)
		e.Rent.Invalidate()

		// Availability shows the degraded GPUs apart, with their range.
		av, err := e.Rent.Availability(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := sched.Counts{Total: 8, Free: 5, MaxPerHost: 5, DegradedFree: 3, DegradedMaxPerHost: 3,
			MinPricePermille: 850, MaxPricePermille: 875}
		if got := av[h100][zoneA]; got != want {
			t.Fatalf("availability %+v, want %+v", got, want)
		}

		// Without the option, only full-price GPUs: 5 fit, 6 do not.
		full := e.MustRent(e.Alice, rentaltest.Req(h100, 5)).Instance
		if got := slices.Sorted(slices.Values(full.GPUIDs)); !slices.Equal(got, gpuIDs(h, 0, 1, 2, 3, 4)) {
			t.Fatalf("full-price rent got %v", got)
		}
		if a := e.Allocation(full.AllocationID); a.PricePermille != 0 {
			t.Errorf("full-price allocation at %d‰, want 0", a.PricePermille)
		}
		_, _, err = e.Rent.Rent(e.Ctx, e.Bob, rentaltest.Req(h100, 1))
		rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "full-price rent with only degraded GPUs free")
		rentaltest.WantMessage(t, err, "degraded")

		// More degraded GPUs than are listed: refused.
		_, _, err = e.Rent.Rent(e.Ctx, e.Bob, degradedReq(4))
		rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "4 degraded of 3")

		// With it: two of the three, and the mean share.
		d := e.MustRent(e.Bob, degradedReq(2))
		in := d.Instance
		got := slices.Sorted(slices.Values(in.GPUIDs))
		if len(got) != 2 || !slices.Contains(degraded, got[0]) || !slices.Contains(degraded, got[1]) {
			t.Fatalf("degraded rent got %v, degraded GPUs are %v", got, degraded)
		}
		shareOf := map[string]int{gpuIDs(h, 5)[0]: 850, gpuIDs(h, 6)[0]: 875, gpuIDs(h, 7)[0]: 875}
		var sum int
		for _, id := range got {
			sum += shareOf[id]
		}
		wantPermille := (2*sum + 2) / 4 // mean rounded half up
		if a := e.Allocation(in.AllocationID); a.PricePermille != wantPermille {
			t.Errorf("degraded allocation at %d‰, want %d‰", a.PricePermille, wantPermille)
		}
		if ev := d.Events[1]; ev.Kind != "placed" || !strings.Contains(ev.Message, "degraded") {
			t.Errorf("placed event %q does not say degraded", ev.Message)
		}

		// The last one, alone: its own share.
		last := e.MustRent(e.Bob, degradedReq(1)).Instance
		rest := slices.DeleteFunc(slices.Clone(degraded), func(id string) bool { return slices.Contains(got, id) })
		if !slices.Equal(last.GPUIDs, rest) {
			t.Fatalf("last degraded rent got %v, want %v", last.GPUIDs, rest)
		}
		if share := shareOf[rest[0]]; e.Allocation(last.AllocationID).PricePermille != share {
			t.Errorf("single degraded GPU allocation at %d‰, want %d‰", e.Allocation(last.AllocationID).PricePermille, share)
		}
	})
}

// TestRentDegradedMean: the allocation's share is the mean of its GPUs'
// shares, rounded half up: 850 and 875 make 862.5, billed at 863‰.
func TestRentDegradedMean(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 2)
	e.degrade(h, 850, 0)
	e.degrade(h, 875, 1)
	e.Rent.Invalidate()
	in := e.MustRent(e.Alice, degradedReq(2)).Instance
	if a := e.Allocation(in.AllocationID); a.PricePermille != 863 {
		t.Fatalf("allocation at %d‰, want 863‰", a.PricePermille)
	}
}

// TestRentDegradedStaleSnapshot: a GPU listed as degraded after the
// placement snapshot was read is still never given to a full-price
// request: the claim checks the listing in the database.
func TestRentDegradedStaleSnapshot(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 4)
	e.MustRent(e.Alice, rentaltest.Req(h100, 1)) // loads the snapshot
	// No invalidation: the cache still shows every GPU at full price.
	deg := e.degrade(h, 800, 1, 2, 3)
	_, _, err := e.Rent.Rent(e.Ctx, e.Bob, rentaltest.Req(h100, 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "full-price rent after GPUs were degraded")
	in := e.MustRent(e.Bob, degradedReq(3)).Instance
	if got := slices.Sorted(slices.Values(in.GPUIDs)); !slices.Equal(got, deg) {
		t.Fatalf("degraded rent got %v, want %v", got, deg)
	}
	if a := e.Allocation(in.AllocationID); a.PricePermille != 800 {
		t.Fatalf("allocation at %d‰, want 800‰", a.PricePermille)
	}
}

// TestRentBenchHeld: GPUs a benchmark job holds are not free: not placed,
// not shown as available.
func TestRentBenchHeld(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 4)
	job := &gpurent.BenchJob{HostID: h.ID, GPUIDs: gpuIDs(h, 0, 1), GPUType: h100, Reason: gpurent.BenchWeekly,
		Tier: "t2", State: gpurent.BenchQueued, CreatedAt: e.Clock.Now()}
	if err := e.St.CreateBenchJob(e.Ctx, job); err != nil {
		t.Fatal(err)
	}
	e.Rent.Invalidate()
	av, err := e.Rent.Availability(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := av[h100][zoneA]; c.Free != 2 || c.Total != 4 {
		t.Fatalf("availability with 2 GPUs under test: %+v", c)
	}
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(h100, 3))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "3 GPUs with 2 under test")
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 2)).Instance
	if got := slices.Sorted(slices.Values(in.GPUIDs)); !slices.Equal(got, gpuIDs(h, 2, 3)) {
		t.Fatalf("got %v, want the GPUs not under test", got)
	}
}

// TestRentDegradedValidation: the option is of GPUs, on the hourly plan.
func TestRentDegradedValidation(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	e.Register("node-1", zoneA, h100, 4)
	_, _, err := e.Rent.Rent(e.Ctx, e.Alice, degradedReq(0))
	rentaltest.WantCode(t, err, gpurent.CodeInvalid, "degraded no-GPU")
	rentaltest.WantMessage(t, err, "gpu_count")
	r := degradedReq(1)
	r.Plan = gpurent.PlanDaily
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, r)
	rentaltest.WantCode(t, err, gpurent.CodeInvalid, "degraded daily")
	rentaltest.WantMessage(t, err, "hourly")

	// The same idempotency key for a degraded and a full-price request
	// is two different requests.
	r = rentaltest.Req(h100, 1)
	r.IdempotencyKey = "k1"
	e.MustRent(e.Alice, r)
	r.Degraded = true
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, r)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "same key, degraded")
}
