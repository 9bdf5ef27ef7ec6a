package rental

import (
	"context"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sched"
)

// snapshotSource is what a snapshot is read from: the catalog, the hosts,
// the active instances and the active operations.
type snapshotSource interface {
	GPUType(ctx context.Context, id string) (*gpurent.GPUType, error)
	GPUTypes(ctx context.Context) ([]gpurent.GPUType, error)
	ListHosts(ctx context.Context) ([]gpurent.Host, error)
	ListInstances(ctx context.Context, f gpurent.InstanceFilter) ([]gpurent.Instance, error)
	ListOperations(ctx context.Context, f gpurent.OperationFilter) ([]gpurent.Operation, error)
}

// snapshotCache keeps the fleet as the scheduler sees it, so that a rent
// decision costs one pure placement in memory and one claim in the database
// instead of a read of the whole fleet. It is an optimisation only: the
// claim's constraint decides, and a refused claim drops the snapshot.
type snapshotCache struct {
	store       snapshotSource
	now         func() time.Time
	hostTimeout time.Duration
	maxAge      time.Duration

	mu    sync.Mutex
	hosts []sched.Host // nil: not loaded
	byID  map[string]int
	info  map[string]*gpurent.Host // host records without GPUs, for answers
	types map[string]gpurent.GPUType
	// ready and lastSeen, per host in hosts' order, let plan judge each
	// host's liveness at the moment of placement, not of the load.
	ready    []bool
	lastSeen []time.Time
	loadedAt time.Time
	gen      uint64 // bumped by every load
	// pending are placements whose claim is in flight. A reload reads the
	// database, which does not show them yet, so they are applied again on
	// top: otherwise every reload under load would hand the same GPUs out
	// twice and turn into a cascade of lost claims and reloads.
	pending map[*Reservation]struct{}
}

// Reservation is a placement held in the snapshot until its claim ends.
type Reservation struct {
	c        *snapshotCache
	gen      uint64
	hostID   string
	gpuIDs   []string
	cpu, mem int64
}

func newSnapshotCache(store snapshotSource, now func() time.Time, hostTimeout, maxAge time.Duration) *snapshotCache {
	return &snapshotCache{store: store, now: now, hostTimeout: hostTimeout, maxAge: maxAge,
		pending: map[*Reservation]struct{}{}}
}

func (c *snapshotCache) invalidate() {
	c.mu.Lock()
	c.hosts = nil
	c.mu.Unlock()
}

// fleetView is the fleet as the scheduler sees it, read from the store.
type fleetView struct {
	hosts    []sched.Host
	byID     map[string]int
	info     map[string]*gpurent.Host
	types    map[string]gpurent.GPUType
	ready    []bool
	lastSeen []time.Time
}

// read reads the fleet from the store, judging each host's liveness at now.
// A GPU is free when nothing holds it: no open allocation and no benchmark
// job; its listing (degraded or not, and its price share) comes from its
// certification. With resources, what instances and moves hold is taken
// from each host's CPU and memory (placement needs it; counting GPUs does
// not).
func (c *snapshotCache) read(ctx context.Context, now time.Time, resources bool) (*fleetView, error) {
	types, err := c.store.GPUTypes(ctx)
	if err != nil {
		return nil, err
	}
	perGPU := make(map[string]gpurent.GPUType, len(types))
	for _, t := range types {
		perGPU[t.ID] = t
	}
	hosts, err := c.store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	v := &fleetView{
		hosts:    make([]sched.Host, 0, len(hosts)),
		byID:     make(map[string]int, len(hosts)),
		info:     make(map[string]*gpurent.Host, len(hosts)),
		types:    perGPU,
		ready:    make([]bool, 0, len(hosts)),
		lastSeen: make([]time.Time, 0, len(hosts)),
	}
	for _, h := range hosts {
		sh := sched.Host{
			ID:          h.ID,
			ZoneID:      h.ZoneID,
			Schedulable: hostSchedulable(&h, now, c.hostTimeout),
			CPUFree:     h.CPUMilli,
			MemFreeMiB:  h.MemoryMiB,
			GPUs:        make([]sched.GPU, 0, len(h.GPUs)),
		}
		for _, g := range h.GPUs {
			held := g.AllocationID != "" || g.BenchJobID != ""
			sh.GPUs = append(sh.GPUs, sched.GPU{
				ID: g.ID, Index: g.Index, TypeID: g.TypeID, TopoGroup: g.TopoGroup,
				NUMANode: g.NUMANode, Healthy: g.Health == gpurent.GPUHealthy, Free: !held,
				Degraded: g.Degraded, PricePermille: g.PricePermille,
			})
		}
		v.byID[h.ID] = len(v.hosts)
		v.hosts = append(v.hosts, sh)
		v.ready = append(v.ready, h.State == gpurent.HostReady)
		var seen time.Time
		if h.LastSeenAt != nil {
			seen = *h.LastSeenAt
		}
		v.lastSeen = append(v.lastSeen, seen)
		h.GPUs = nil
		v.info[h.ID] = &h
	}
	if !resources {
		return v, nil
	}
	// What holds an allocation holds its CPU and memory (instances in
	// no-GPU mode included, which hold no GPU to show it).
	ins, err := c.store.ListInstances(ctx, gpurent.InstanceFilter{ActiveOnly: true})
	if err != nil {
		return nil, err
	}
	for _, in := range ins {
		if i, ok := v.byID[in.HostID]; ok && in.AllocationID != "" {
			v.hosts[i].CPUFree -= in.CPUMilli
			v.hosts[i].MemFreeMiB -= in.MemoryMiB
		}
	}
	// A move's target holds its resources from the claim: the instance
	// counts there too until the switch.
	ops, err := c.store.ListOperations(ctx, gpurent.OperationFilter{ActiveOnly: true})
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		switch op.Step {
		case gpurent.StepCopying, gpurent.StepFinal, gpurent.StepStarting:
			if i, ok := v.byID[op.ToHostID]; ok {
				v.hosts[i].CPUFree -= op.ToCPUMilli
				v.hosts[i].MemFreeMiB -= op.ToMemoryMiB
			}
		}
	}
	return v, nil
}

// load reads the fleet into the cache; c.mu is held.
func (c *snapshotCache) load(ctx context.Context) error {
	now := c.now()
	v, err := c.read(ctx, now, true)
	if err != nil {
		return err
	}
	c.hosts, c.byID, c.info, c.types, c.loadedAt = v.hosts, v.byID, v.info, v.types, now
	c.ready, c.lastSeen = v.ready, v.lastSeen
	c.gen++
	for r := range c.pending {
		c.take(r)
		r.gen = c.gen
	}
	return nil
}

// availability sums what a new instance could get now, per GPU type and
// zone (sched.Availability), from a fresh read of the store rather than
// the cache: an answer to show, which must not lag behind a stop.
func (c *snapshotCache) availability(ctx context.Context) (map[string]map[string]sched.Counts, error) {
	v, err := c.read(ctx, c.now(), false)
	if err != nil {
		return nil, err
	}
	return sched.Availability(v.hosts), nil
}

// take marks r's GPUs and resources used in the snapshot; c.mu is held.
func (c *snapshotCache) take(r *Reservation) { c.mark(r, false) }

func (c *snapshotCache) mark(r *Reservation, free bool) {
	i, ok := c.byID[r.hostID]
	if !ok {
		return
	}
	h := &c.hosts[i]
	sign := int64(-1)
	if free {
		sign = 1
	}
	h.CPUFree += sign * r.cpu
	h.MemFreeMiB += sign * r.mem
	for _, id := range r.gpuIDs {
		for j := range h.GPUs {
			if h.GPUs[j].ID == id {
				h.GPUs[j].Free = free
			}
		}
	}
}

// Done ends the reservation. After a lost claim the caller also invalidates;
// after any other failure the GPUs go back to the snapshot they came from.
func (r *Reservation) Done(claimed bool) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, r)
	if !claimed && c.hosts != nil && c.gen == r.gen {
		c.mark(r, true)
	}
}

// gpuType returns a GPU type from the snapshot (as fresh as it is), read
// from the store when the snapshot does not know it.
func (c *snapshotCache) gpuType(ctx context.Context, id string) (*gpurent.GPUType, error) {
	c.mu.Lock()
	t, ok := c.types[id]
	fresh := c.hosts != nil && c.now().Sub(c.loadedAt) <= c.maxAge
	c.mu.Unlock()
	if ok && fresh {
		return &t, nil
	}
	return c.store.GPUType(ctx, id)
}

// host returns the cached record of a host (without GPUs), nil if unknown.
func (c *snapshotCache) host(id string) *gpurent.Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.info[id]; ok {
		cp := *h
		return &cp
	}
	return nil
}

// hostSchedulable says whether a host takes new placements: ready, and its
// agent heard from recently.
func hostSchedulable(h *gpurent.Host, now time.Time, timeout time.Duration) bool {
	return h.State == gpurent.HostReady && h.LastSeenAt != nil && now.Sub(*h.LastSeenAt) <= timeout
}

// plan places req and reserves the GPUs in the snapshot until the caller
// ends the Reservation with the claim's outcome.
func (c *snapshotCache) plan(ctx context.Context, req sched.Request) (sched.Placement, *Reservation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hosts == nil || c.now().Sub(c.loadedAt) > c.maxAge {
		if err := c.load(ctx); err != nil {
			return sched.Placement{}, nil, err
		}
	}
	now := c.now()
	for i := range c.hosts {
		c.hosts[i].Schedulable = c.ready[i] && !c.lastSeen[i].IsZero() && now.Sub(c.lastSeen[i]) <= c.hostTimeout
	}
	p, err := sched.Place(req, c.hosts)
	if err != nil {
		// The scheduler's messages are written for the customer.
		return sched.Placement{}, nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "%s", err.Error())
	}
	r := &Reservation{c: c, gen: c.gen, hostID: p.HostID, gpuIDs: p.GPUIDs, cpu: req.CPUMilli, mem: req.MemoryMiB}
	c.take(r)
	c.pending[r] = struct{}{}
	return p, r, nil
}

// peek plans req without keeping the GPUs reserved: an answer to "would it
// fit now", not a claim.
func (c *snapshotCache) peek(ctx context.Context, req sched.Request) (sched.Placement, error) {
	p, r, err := c.plan(ctx, req)
	if err == nil {
		r.Done(false)
	}
	return p, err
}

// Availability answers, per GPU type and zone, what a new instance could
// get now: full-price GPUs and, apart, GPUs listed as degraded with their
// price range (sched.Counts). GPUs held by an allocation or a benchmark
// job are not free. It reads the store afresh.
func (s *Service) Availability(ctx context.Context) (map[string]map[string]sched.Counts, error) {
	return s.snap.availability(ctx)
}
