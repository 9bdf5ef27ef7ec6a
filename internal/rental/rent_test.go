package rental_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/imageref"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestRentValidation: every malformed request is refused with the right
// code before anything is written.
func TestRentValidation(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	gen := h.Generation

	with := func(f func(r *rental.RentRequest)) rental.RentRequest {
		r := rentaltest.Req(h100, 1)
		f(&r)
		return r
	}
	cases := []struct {
		name string
		acc  *gpurent.Account
		r    rental.RentRequest
		code gpurent.Code
		msg  string
	}{
		{"signed out", nil, rentaltest.Req(h100, 1), gpurent.CodeUnauthorized, "sign in"},
		{"no type", e.Alice, with(func(r *rental.RentRequest) { r.TypeID = "" }), gpurent.CodeInvalid, "gpu_type"},
		{"unknown type", e.Alice, with(func(r *rental.RentRequest) { r.TypeID = "b200-192g" }), gpurent.CodeInvalid, `unknown GPU type "b200-192g"`},
		{"unknown zone", e.Alice, with(func(r *rental.RentRequest) { r.ZoneID = "mars-1" }), gpurent.CodeInvalid, `unknown zone "mars-1"`},
		{"no GPUs on a package", e.Alice, with(func(r *rental.RentRequest) { r.Count, r.Plan = 0, gpurent.PlanMonthly }), gpurent.CodeInvalid, "plan must be hourly"},
		{"count negative", e.Alice, with(func(r *rental.RentRequest) { r.Count = -2 }), gpurent.CodeInvalid, "must not be negative"},
		{"count 9", e.Alice, with(func(r *rental.RentRequest) { r.Count = 9 }), gpurent.CodeInvalid, "at most 8"},
		{"empty image", e.Alice, with(func(r *rental.RentRequest) { r.Image = "" }), gpurent.CodeInvalid, "image is required"},
		{"blank image", e.Alice, with(func(r *rental.RentRequest) { r.Image = "   " }), gpurent.CodeInvalid, "image is required"},
		{"image with space", e.Alice, with(func(r *rental.RentRequest) { r.Image = "busybox latest" }), gpurent.CodeInvalid, "without spaces"},
		{"image with newline", e.Alice, with(func(r *rental.RentRequest) { r.Image = "busybox\nrm" }), gpurent.CodeInvalid, "without spaces"},
		{"image too long", e.Alice, with(func(r *rental.RentRequest) { r.Image = strings.Repeat("a", 256) }), gpurent.CodeInvalid, "255"},
		{"bad plan", e.Alice, with(func(r *rental.RentRequest) { r.Plan = "yearly" }), gpurent.CodeInvalid, `"yearly"`},
		{"name with space", e.Alice, with(func(r *rental.RentRequest) { r.Name = "my box" }), gpurent.CodeInvalid, "name"},
		{"name with slash", e.Alice, with(func(r *rental.RentRequest) { r.Name = "a/b" }), gpurent.CodeInvalid, "name"},
		{"name too long", e.Alice, with(func(r *rental.RentRequest) { r.Name = strings.Repeat("n", 64) }), gpurent.CodeInvalid, "name"},
		{"name not ASCII", e.Alice, with(func(r *rental.RentRequest) { r.Name = "训练" }), gpurent.CodeInvalid, "name"},
		{"volume negative", e.Alice, with(func(r *rental.RentRequest) { r.VolumeGiB = -1 }), gpurent.CodeInvalid, "volume_gib"},
		{"volume too big", e.Alice, with(func(r *rental.RentRequest) { r.VolumeGiB = 4097 }), gpurent.CodeInvalid, "4096"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, created, err := e.Rent.Rent(e.Ctx, tc.acc, tc.r)
			rentaltest.WantCode(t, err, tc.code, tc.name)
			rentaltest.WantMessage(t, err, tc.msg)
			if d != nil || created {
				t.Errorf("refused request returned detail %v, created %v", d, created)
			}
		})
	}
	all, err := e.St.ListInstances(e.Ctx, gpurent.InstanceFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("refused requests left %d instances behind: %+v", len(all), all)
	}
	after := e.Host(h.ID)
	if n := rentaltest.Held(after); n != 0 {
		t.Errorf("refused requests hold %d GPUs", n)
	}
	if after.Generation != gen {
		t.Errorf("refused requests bumped the host generation %d → %d", gen, after.Generation)
	}

	// The bounds themselves are accepted.
	for _, r := range []rental.RentRequest{
		with(func(r *rental.RentRequest) { r.VolumeGiB = 1; r.Name = "a" }),
		with(func(r *rental.RentRequest) { r.VolumeGiB = 4096; r.Name = strings.Repeat("n", 63) }),
		with(func(r *rental.RentRequest) {
			r.Count = 6
			r.Image = "  registry.example.com:5000/team/train@sha256:" + strings.Repeat("0123", 16) + "  "
			r.Name = "Train_v1.2-x"
			r.Plan = gpurent.PlanWeekly
		}),
	} {
		d := e.MustRent(e.Alice, r)
		wantGiB := r.VolumeGiB
		if wantGiB == 0 {
			wantGiB = 50 // the default size
		}
		if d.Instance.Image != strings.TrimSpace(r.Image) || d.Volume == nil || d.Volume.SizeGiB != wantGiB {
			t.Errorf("rent %+v: image %q, volume %+v", r, d.Instance.Image, d.Volume)
		}
	}
}

// TestRentNoGPU: a rent of no GPUs (no-GPU mode) claims none, takes the
// configured CPU and memory, and leaves every GPU free for others.
func TestRentNoGPU(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	d := e.MustRent(e.Alice, rentaltest.Req(h100, 0))
	in := d.Instance
	if in.GPUCount != 0 || len(in.GPUIDs) != 0 || in.HostID != h.ID || in.AllocationID == "" {
		t.Fatalf("instance %+v: want an allocation of no GPUs on %s", in, h.ID)
	}
	if in.CPUMilli != 1000 || in.MemoryMiB != 4096 {
		t.Errorf("resources %dm / %d MiB, want the no-GPU defaults 1000m / 4096 MiB", in.CPUMilli, in.MemoryMiB)
	}
	if held := rentaltest.HeldBy(e.Host(h.ID), in.ID); len(held) != 0 {
		t.Errorf("a no-GPU instance holds GPUs %v", held)
	}
	all := e.MustRent(e.Bob, rentaltest.Req(h100, 8)) // every GPU is still for rent
	if len(all.Instance.GPUIDs) != 8 {
		t.Errorf("bob got %v, want all 8 GPUs", all.Instance.GPUIDs)
	}
}

// TestRentPlacement: a rent claims GPUs on one host, records the instance,
// its volume and first events, and bumps the host's generation so its agent
// hears of it.
func TestRentPlacement(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	before := h.Generation

	d := e.MustRent(e.Alice, rentaltest.Req(h100, 2))
	in := d.Instance
	if in.State != gpurent.StateProvisioning || in.AccountID != e.Alice.ID || in.HostID != h.ID {
		t.Fatalf("instance %+v: want provisioning, alice's, on %s", in, h.ID)
	}
	if in.Plan != gpurent.PlanHourly || in.GPUCount != 2 || in.TypeID != h100 {
		t.Errorf("instance %+v: want hourly, 2 x %s", in, h100)
	}
	if !strings.HasPrefix(in.Name, h100+"-x2-") {
		t.Errorf("default name %q, want prefix %s-x2-", in.Name, h100)
	}
	gt, err := e.St.GPUType(e.Ctx, h100)
	if err != nil {
		t.Fatal(err)
	}
	if in.CPUMilli != 2*gt.CPUMilliPerGPU || in.MemoryMiB != 2*gt.MemoryMiBPerGPU {
		t.Errorf("resources %dm / %d MiB, want twice the per-GPU figures of %s", in.CPUMilli, in.MemoryMiB, h100)
	}
	if in.AllocationID == "" || len(in.GPUIDs) != 2 {
		t.Fatalf("instance holds allocation %q, GPUs %v; want 2 GPUs", in.AllocationID, in.GPUIDs)
	}
	after := e.Host(h.ID)
	got := slices.Sorted(slices.Values(in.GPUIDs))
	if held := rentaltest.HeldBy(after, in.ID); !slices.Equal(held, got) || held == nil {
		t.Errorf("the database holds %v for the instance, the answer says %v", held, got)
	}
	if after.Generation <= before {
		t.Errorf("host generation %d → %d: not bumped", before, after.Generation)
	}
	// Best fit keeps an NVLink group whole: both GPUs in one group.
	groups := map[string]bool{}
	for _, g := range after.GPUs {
		if slices.Contains(in.GPUIDs, g.ID) {
			groups[g.TopoGroup] = true
		}
	}
	if len(groups) != 1 {
		t.Errorf("2 GPUs spread over topology groups %v", groups)
	}
	if d.Host == nil || d.Host.ID != h.ID || d.Host.GPUs != nil {
		t.Errorf("detail host %+v: want %s without GPUs", d.Host, h.ID)
	}
	if d.Volume == nil || d.Volume.SizeGiB != 50 || d.Volume.HostID != h.ID || d.Volume.ID != in.VolumeID || d.Volume.DeletedAt != nil {
		t.Errorf("volume %+v: want a live default 50 GiB volume on %s", d.Volume, h.ID)
	}
	if k := rentaltest.Kinds(d.Events); !slices.Equal(k, []string{"created", "placed"}) {
		t.Errorf("events %v, want created, placed", k)
	}
	allocs, err := e.St.ListAllocations(e.Ctx, in.ID)
	if err != nil || len(allocs) != 1 || allocs[0].ID != in.AllocationID || allocs[0].EndedAt != nil {
		t.Errorf("allocations %+v (%v): want one open allocation %s", allocs, err, in.AllocationID)
	}

	// The agent's desired state carries the instance to run.
	ds := e.DesiredNow(h.ID)
	if ds.Generation != after.Generation {
		t.Errorf("desired generation %d, host at %d", ds.Generation, after.Generation)
	}
	di := rentaltest.DesiredOf(t, ds, in.ID)
	if di.State != "running" || di.AllocationID != in.AllocationID || !slices.Equal(di.GPUUUIDs, in.GPUIDs) ||
		di.Image != in.Image || di.VolumeName != d.Volume.Name || di.VolumeGiB != 50 || di.CPUMilli != in.CPUMilli {
		t.Errorf("desired %+v does not match instance %+v", di, in)
	}

	// Get answers the same.
	g, err := e.Rent.Get(e.Ctx, e.Alice, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g.Instance.ID != in.ID || g.Instance.AllocationID != in.AllocationID || len(g.Events) != 2 {
		t.Errorf("get %+v differs from rent %+v", g.Instance, in)
	}
}

// TestRentZone: a zone in the request keeps the instance in that zone.
func TestRentZone(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	a := e.Register("node-a", zoneA, h100, 8)
	b := e.Register("node-b", zoneB, h100, 8)
	for _, tc := range []struct{ zone, host string }{{zoneB, b.ID}, {zoneA, a.ID}, {zoneB, b.ID}} {
		r := rentaltest.Req(h100, 3)
		r.ZoneID = tc.zone
		d := e.MustRent(e.Alice, r)
		if d.Instance.HostID != tc.host || d.Instance.ZoneID != tc.zone {
			t.Errorf("rent in %s landed on %s (zone %q), want %s", tc.zone, d.Instance.HostID, d.Instance.ZoneID, tc.host)
		}
	}
	// Zone B has 2 GPUs left: 3 there is sold out although zone A has 5.
	r := rentaltest.Req(h100, 3)
	r.ZoneID = zoneB
	_, _, err := e.Rent.Rent(e.Ctx, e.Alice, r)
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "3 GPUs in a zone with 2 free")
	rentaltest.WantMessage(t, err, "sold out", zoneB)
}

// TestRentIdempotencyKey: one key and one request make one instance; one key
// with another request is a conflict; keys belong to accounts.
func TestRentIdempotencyKey(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	e.Register("node-1", zoneA, h100, 8)

	r := rentaltest.Req(h100, 1)
	r.IdempotencyKey = "key-1"
	first := e.MustRent(e.Alice, r)

	// The same request again (plan spelled out: the default is the same
	// request) answers the same instance.
	again := r
	again.Plan = gpurent.PlanHourly
	again.Image = " " + r.Image
	d, created, err := e.Rent.Rent(e.Ctx, e.Alice, again)
	if err != nil {
		t.Fatal(err)
	}
	if created || d.Instance.ID != first.Instance.ID || d.Instance.AllocationID != first.Instance.AllocationID {
		t.Errorf("replay: created %v, instance %s; want created false and %s", created, d.Instance.ID, first.Instance.ID)
	}

	// The same key with another request is refused and writes nothing.
	other := r
	other.Image = "pytorch/pytorch:2.3"
	_, created, err = e.Rent.Rent(e.Ctx, e.Alice, other)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "same key, other request")
	rentaltest.WantMessage(t, err, "idempotency key")
	if created {
		t.Error("conflict reported created")
	}
	other = r
	other.Count = 2
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, other)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "same key, other count")

	// Another account's key is its own.
	d = e.MustRent(e.Bob, r)
	if d.Instance.ID == first.Instance.ID {
		t.Error("bob's request with alice's key answered alice's instance")
	}
	all, err := e.St.ListInstances(e.Ctx, gpurent.InstanceFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Errorf("%d instances, want 2 (alice's and bob's)", len(all))
	}
}

// TestRentIdempotencyConcurrent: concurrent requests with one key make one
// instance, all of them answer it, and the GPUs the losers planned on stay
// rentable.
func TestRentIdempotencyConcurrent(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		h := e.Register("node-1", zoneA, h100, 8)
		const n = 32 // more than the host's GPUs: a replay must not compete for them
		r := rentaltest.Req(h100, 1)
		r.IdempotencyKey = "same-key"
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			ids     = map[string]int{}
			created int
			errs    []error
		)
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				d, c, err := e.Rent.Rent(e.Ctx, e.Alice, r)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				ids[d.Instance.ID]++
				if c {
					created++
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			// A replay that lands while the first is mid-transaction may
			// be told to retry; anything else is wrong.
			if !gpurent.IsCode(err, gpurent.CodeConflict) {
				t.Errorf("concurrent same-key rent: %v", err)
			}
		}
		if len(ids) != 1 || created != 1 {
			t.Fatalf("answers %v, %d created; want one instance created once", ids, created)
		}
		all, err := e.St.ListInstances(e.Ctx, gpurent.InstanceFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 {
			t.Fatalf("%d instances in the database, want 1", len(all))
		}
		if got := rentaltest.Held(e.Host(h.ID)); got != 1 {
			t.Fatalf("%d GPUs held, want 1", got)
		}
		// The other 7 GPUs are free and must be rentable now, whatever the
		// losers planned on (the clock stands still, so only an explicit
		// invalidation can free a planned-but-unclaimed GPU in the cache).
		if _, _, err := e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(h100, 7)); err != nil {
			t.Fatalf("renting the 7 free GPUs after the same-key burst: %v", err)
		}
	})
}

// TestRentSoldOut: when nothing fits, the answer is unavailable with a
// message for the customer, and nothing is written.
func TestRentSoldOut(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	e.MustRent(e.Alice, rentaltest.Req(h100, 5))
	gen := e.Host(h.ID).Generation

	_, _, err := e.Rent.Rent(e.Ctx, e.Bob, rentaltest.Req(h100, 4))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "4 GPUs with 3 free")
	rentaltest.WantMessage(t, err, "sold out", h100, "most free on one host: 3")

	_, _, err = e.Rent.Rent(e.Ctx, e.Bob, rentaltest.Req("a100-80g-sxm", 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "a type no host has")
	rentaltest.WantMessage(t, err, "sold out", "a100-80g-sxm")

	e.MustRent(e.Bob, rentaltest.Req(h100, 3))
	_, _, err = e.Rent.Rent(e.Ctx, e.Bob, rentaltest.Req(h100, 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "a full fleet")
	rentaltest.WantMessage(t, err, "sold out")

	list, err := e.Rent.List(e.Ctx, e.Bob, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("bob has %d instances, want 1: sold-out requests must leave nothing", len(list))
	}
	if g := e.Host(h.ID).Generation; g != gen+1 {
		t.Errorf("generation %d → %d, want exactly one bump (bob's one placement)", gen, g)
	}
}

// TestRentCordonedHost: a cordoned host takes no placements; uncordoned, it
// takes them again at once.
func TestRentCordonedHost(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	e.MustRent(e.Alice, rentaltest.Req(h100, 1)) // the placement cache is warm
	if _, err := e.Fleet.SetHostState(e.Ctx, e.Op, h.ID, gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(h100, 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "rent on a cordoned fleet")
	rentaltest.WantMessage(t, err, "cordoned")

	// Another, ready host takes it.
	other := e.Register("node-2", zoneA, h100, 8)
	d := e.MustRent(e.Alice, rentaltest.Req(h100, 1))
	if d.Instance.HostID != other.ID {
		t.Errorf("placed on %s, want the ready host %s", d.Instance.HostID, other.ID)
	}
	if got := rentaltest.Held(e.Host(h.ID)); got != 1 {
		t.Errorf("cordoned host holds %d GPUs, want its 1 from before", got)
	}

	if _, err := e.Fleet.SetHostState(e.Ctx, e.Op, other.ID, gpurent.HostDraining); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(h100, 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "rent with one host cordoned, one draining")

	if _, err := e.Fleet.SetHostState(e.Ctx, e.Op, h.ID, gpurent.HostReady); err != nil {
		t.Fatal(err)
	}
	if d := e.MustRent(e.Alice, rentaltest.Req(h100, 1)); d.Instance.HostID != h.ID {
		t.Errorf("placed on %s after uncordon, want %s", d.Instance.HostID, h.ID)
	}
}

// TestRentSilentHost: a host whose agent has not been heard from for longer
// than HostTimeout gets no placements; its next report brings it back.
func TestRentSilentHost(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	e.MustRent(e.Alice, rentaltest.Req(h100, 1)) // warm the cache while the host is fresh

	e.Clock.Advance(31 * time.Second)
	_, _, err := e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(h100, 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "rent on a silent host")
	rentaltest.WantMessage(t, err, "sold out")
	if got := rentaltest.Held(e.Host(h.ID)); got != 1 {
		t.Errorf("%d GPUs held, want 1", got)
	}

	// A heartbeat brings it back, and the placement cache sees it at once.
	e.Heartbeat(h.ID)
	if d := e.MustRent(e.Alice, rentaltest.Req(h100, 1)); d.Instance.HostID != h.ID {
		t.Errorf("placed on %s, want %s", d.Instance.HostID, h.ID)
	}
}

// TestOwnership: customers see and act on their own instances only;
// operators see all.
func TestOwnership(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 2)).Instance

	_, err := e.Rent.Get(e.Ctx, e.Bob, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "bob gets alice's instance")
	rentaltest.WantMessage(t, err, in.ID)
	_, err = e.Rent.Stop(e.Ctx, e.Bob, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "bob stops alice's instance")
	_, err = e.Rent.Start(e.Ctx, e.Bob, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "bob starts alice's instance")
	_, err = e.Rent.Delete(e.Ctx, e.Bob, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "bob deletes alice's instance")
	_, err = e.Rent.Get(e.Ctx, e.Bob, "i-doesnotexist0000")
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "get of an unknown instance")
	_, err = e.Rent.Get(e.Ctx, nil, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeUnauthorized, "signed-out get")
	_, err = e.Rent.Start(e.Ctx, nil, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeUnauthorized, "signed-out start")

	// Nothing bob tried changed the instance.
	if got := e.Instance(in.ID); got.State != gpurent.StateProvisioning || got.Version != in.Version {
		t.Errorf("after bob's attempts: state %s, version %d → %d", got.State, in.Version, got.Version)
	}

	list, err := e.Rent.List(e.Ctx, e.Bob, false)
	if err != nil || len(list) != 0 {
		t.Errorf("bob's list: %d instances, %v; want none", len(list), err)
	}
	_, err = e.Rent.List(e.Ctx, e.Bob, true)
	rentaltest.WantCode(t, err, gpurent.CodeForbidden, "customer lists all")
	_, err = e.Rent.List(e.Ctx, nil, false)
	rentaltest.WantCode(t, err, gpurent.CodeUnauthorized, "signed-out list")

	list, err = e.Rent.List(e.Ctx, e.Alice, false)
	if err != nil || len(list) != 1 || list[0].Instance.ID != in.ID {
		t.Fatalf("alice's list: %+v, %v", list, err)
	}
	if list[0].Host == nil || list[0].Host.ID != h.ID || list[0].Volume == nil {
		t.Errorf("list entry lacks host or volume: %+v", list[0])
	}
	bobs := e.MustRent(e.Bob, rentaltest.Req(h100, 1)).Instance

	// The operator sees every account's instances and may act on them.
	if g, err := e.Rent.Get(e.Ctx, e.Op, in.ID); err != nil || g.Instance.ID != in.ID {
		t.Errorf("operator get: %v", err)
	}
	all, err := e.Rent.List(e.Ctx, e.Op, true)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range all {
		ids = append(ids, d.Instance.ID)
	}
	slices.Sort(ids)
	want := []string{in.ID, bobs.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("operator's list of all: %v, want %v", ids, want)
	}
	if own, err := e.Rent.List(e.Ctx, e.Op, false); err != nil || len(own) != 0 {
		t.Errorf("operator's own list: %d, %v; want none", len(own), err)
	}
	if d, err := e.Rent.Stop(e.Ctx, e.Op, in.ID); err != nil || d.Instance.State != gpurent.StateStopping {
		t.Errorf("operator stop: %+v, %v", d, err)
	}
}

// TestRentHostGoesSilentWhileCached: the host timeout holds to the second,
// also when the placement cache was loaded moments before the host crossed
// it (the cache may be up to SnapshotMaxAge old, the host's silence is
// measured now).
func TestRentHostGoesSilentWhileCached(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)

	e.Clock.Advance(29 * time.Second)
	e.MustRent(e.Alice, rentaltest.Req(h100, 1)) // 29 s of silence: placed, and the cache is loaded now

	e.Clock.Advance(2 * time.Second) // 31 s of silence, the cache 2 s old
	d, _, err := e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(h100, 1))
	if err == nil {
		t.Fatalf("placed %s on host %s, silent for 31 s with a 30 s host timeout", d.Instance.ID, h.ID)
	}
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "rent on a host silent past the timeout")
}

// TestSignedOutActions: without an account, Stop and Delete are refused
// like every other customer action (nil must not mean "the system").
func TestSignedOutActions(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance

	_, err := e.Rent.Stop(e.Ctx, nil, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeUnauthorized, "signed-out stop")
	_, err = e.Rent.Delete(e.Ctx, nil, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeUnauthorized, "signed-out delete")
	if got := e.Instance(in.ID); got.State != gpurent.StateProvisioning {
		t.Errorf("signed-out calls moved the instance to %s", got.State)
	}
}

// TestRentIdempotencyReplayWhenFull: a replay answers the instance its key
// made even when the fleet has nothing left to place (the retry of a rent
// that took the last GPUs is the most common replay of all).
func TestRentIdempotencyReplayWhenFull(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	e.Register("node-1", zoneA, h100, 8)
	r := rentaltest.Req(h100, 8)
	r.IdempotencyKey = "take-all"
	first := e.MustRent(e.Alice, r)

	d, created, err := e.Rent.Rent(e.Ctx, e.Alice, r)
	if err != nil {
		t.Fatalf("replay of the rent that took the last GPUs: %v", err)
	}
	if created || d.Instance.ID != first.Instance.ID {
		t.Errorf("replay: created %v, instance %s; want created false and %s", created, d.Instance.ID, first.Instance.ID)
	}
	other := r
	other.Image = "other:1"
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, other)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "the key with another request on a full fleet")
}

// TestRentChecksImageRegistry: an image from a registry off the operator's
// allow-list, or on the host itself, is refused at rent with why; an
// allowed one rents.
func TestRentChecksImageRegistry(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	policy, err := imageref.NewPolicy([]string{"docker.io", "registry.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e.Rent = rental.New(rental.Config{Store: e.St, Now: e.Clock.Now, HostTimeout: 30 * time.Second, Images: policy})
	e.Register("img-1", "cd-tianfu-a", "rtx4090-24g", 2)
	for img, want := range map[string]string{
		"localhost:5000/x:1":         "host itself",
		"127.0.0.1:5000/x:1":         "loopback",
		"169.254.169.254/meta":       "link-local",
		"10.0.0.8:5000/internal/x":   "private address",
		"u:p@registry.example.com/x": "user information",
		"quay.io/someone/img":        "does not allow",
	} {
		_, _, err := e.Rent.Rent(e.Ctx, e.Alice, rental.RentRequest{TypeID: "rtx4090-24g", Count: 1, Image: img})
		rentaltest.WantCode(t, err, gpurent.CodeInvalid, img)
		rentaltest.WantMessage(t, err, want)
	}
	e.MustRent(e.Alice, rental.RentRequest{TypeID: "rtx4090-24g", Count: 1, Image: "registry.example.com/base/cuda:12"})
}
