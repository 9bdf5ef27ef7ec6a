// Package sched places instances on GPUs. It is a pure function over a
// snapshot of the fleet: no database, no clock, no I/O, no randomness. The
// store's atomic claim decides races; a loser re-plans on a fresh snapshot.
//
// Place picks one host and the GPUs on it for a request. Its policy, in
// order:
//
//   - Filters: the host is schedulable, in the requested zone and is the
//     requested host (when either is set), has the CPU and memory the request
//     needs free, and has at least Count GPUs of the type that are healthy,
//     free and of the requested listing: a request with Degraded set gets
//     only GPUs listed as degraded (sold at a price scaled by their measured
//     speed), any other request only GPUs that are not. A degraded GPU is
//     never given to a request that did not ask for one. All GPUs of one
//     instance are on one host.
//   - Among hosts, first one that holds the instance's image (Prefer), so
//     that it starts without a pull; then best fit, so that whole hosts
//     stay free for 8-GPU rentals:
//     the fewest free GPUs of the type left on the host after placing (ideally
//     none); then a host where the GPUs fit in one topology group; then the
//     least CPU and memory left over, each as a share of what the host has
//     free now; then the smaller host ID.
//   - Among the GPUs of the chosen host: the topology group (NVLink domain or
//     PCIe switch) that fits the request with the fewest free GPUs left over;
//     if no one group fits, whole groups largest first and then the group
//     that best fits the rest, so the request spans as few groups as
//     possible. Inside a group the same rule picks NUMA nodes, and ties go to
//     the lowest GPU index. GPUs with an empty TopoGroup count as one group.
//
// A request for no GPUs (no-GPU mode) needs only CPU and memory; best fit
// then prefers hosts with the fewest free GPUs of the type, so it leaves
// GPU capacity to those who rent it.
//
// Place answers a *NoCapacityError (errors.Is ErrNoCapacity) saying why
// nothing fits, and an invalid-request error for a malformed request; both
// carry a gpurent error code. Availability sums what is free per type and
// zone for the fleet view, degraded GPUs apart from the others.
package sched

import "slices"

// Request is what an instance needs.
type Request struct {
	TypeID string
	Count  int    // GPUs; 0 is no-GPU mode (CPU and memory only)
	ZoneID string // "" for any zone
	HostID string // "" for any host; set to restart on the same host
	// ExcludeHostID leaves a host out (a move must leave its host).
	ExcludeHostID string
	CPUMilli      int64 // total for the instance
	MemoryMiB     int64 // total for the instance
	// Degraded asks for GPUs listed as degraded, and only those; false
	// asks only for GPUs that are not. It needs Count ≥ 1.
	Degraded bool
	// Prefer are the hosts that hold the instance's image already (they
	// pre-pulled it): among the hosts that fit, one of them wins over any
	// other, so that the instance starts without a pull. Nil: none. (A
	// pointer, so that a Request stays comparable.)
	Prefer *HostSet
}

// HostSet is a set of host IDs.
type HostSet struct{ sorted []string }

// NewHostSet makes the set of ids (copied).
func NewHostSet(ids ...string) *HostSet {
	s := slices.Clone(ids)
	slices.Sort(s)
	return &HostSet{sorted: slices.Compact(s)}
}

// Has reports whether id is in the set; a nil set holds none.
func (s *HostSet) Has(id string) bool {
	if s == nil || len(s.sorted) == 0 {
		return false
	}
	_, ok := slices.BinarySearch(s.sorted, id)
	return ok
}

// Len is the set's size.
func (s *HostSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.sorted)
}

// GPU is one GPU of a host in the snapshot.
type GPU struct {
	ID        string
	Index     int
	TypeID    string
	TopoGroup string
	NUMANode  int
	Healthy   bool
	// Free is false while anything holds the GPU: an open allocation or
	// a benchmark job.
	Free bool
	// Degraded marks a GPU listed only as degraded: given only to
	// requests with Degraded set. PricePermille is its listing price as a
	// share of the list price in permille (0: full price); Place ignores
	// it, Availability reports its range.
	Degraded      bool
	PricePermille int
}

// Host is one host in the snapshot, with what is free on it now.
type Host struct {
	ID          string
	ZoneID      string
	Schedulable bool // ready, not cordoned/draining/down
	CPUFree     int64
	MemFreeMiB  int64
	GPUs        []GPU
}

// Placement is where a request goes.
type Placement struct {
	HostID string
	GPUIDs []string // ordered by GPU index
}

// listing is what a request asks of a GPU besides being free and healthy:
// its type and whether it is listed as degraded.
type listing struct {
	typeID   string
	degraded bool
}

// listingOf is the listing req asks for.
func listingOf(req *Request) listing { return listing{typeID: req.TypeID, degraded: req.Degraded} }

// matches reports whether g is of the listing, free or not.
func (g *GPU) matches(l listing) bool { return g.TypeID == l.typeID && g.Degraded == l.degraded }

// usable reports whether g can be given to a request for the listing.
func (g *GPU) usable(l listing) bool {
	return g.Free && g.Healthy && g.matches(l)
}
