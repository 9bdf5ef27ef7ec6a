package sched

import (
	"math/bits"
)

// Place chooses a host and GPUs for req from the snapshot hosts. It reads
// hosts and never changes them. The result depends only on the arguments:
// the same request over the same snapshot (in any order, host IDs being
// unique) gives the same placement.
//
// It makes one pass over the hosts without allocating per host, keeping the
// best candidate so far; it neither sorts nor copies the fleet. When nothing
// fits, a second pass works out why and the answer is a *NoCapacityError.
// A malformed request answers an error matching ErrInvalidRequest with
// gpurent.CodeInvalid.
func Place(req Request, hosts []Host) (Placement, error) {
	if err := validate(&req); err != nil {
		return Placement{}, err
	}
	l := listingOf(&req)
	best := -1
	var bestKey hostKey
	for i := range hosts {
		h := &hosts[i]
		if !h.Schedulable ||
			(req.ZoneID != "" && h.ZoneID != req.ZoneID) ||
			(req.HostID != "" && h.ID != req.HostID) || h.ID == req.ExcludeHostID ||
			h.CPUFree < req.CPUMilli || h.MemFreeMiB < req.MemoryMiB {
			continue
		}
		held := req.Prefer.Has(h.ID)
		// Count usable GPUs, stopping as soon as the host has more than
		// the best host so far would leave: it cannot win then (unless it
		// holds the image and the best does not).
		limit := len(h.GPUs)
		if best >= 0 && (bestKey.held || !held) {
			limit = req.Count + bestKey.left
		}
		n := 0
		for j := 0; j < len(h.GPUs) && n <= limit; j++ {
			if h.GPUs[j].usable(l) {
				n++
			}
		}
		if n < req.Count || n > limit {
			continue
		}
		k := hostKey{held: held, left: n - req.Count}
		k.split = !fitsOneGroup(h.GPUs, l, req.Count)
		k.spare = spare(h.CPUFree, req.CPUMilli) + spare(h.MemFreeMiB, req.MemoryMiB)
		if best < 0 || k.better(&bestKey, h.ID, hosts[best].ID) {
			best, bestKey = i, k
		}
	}
	if best < 0 {
		return Placement{}, diagnose(&req, hosts)
	}
	h := &hosts[best]
	return Placement{HostID: h.ID, GPUIDs: pick(h.GPUs, l, req.Count)}, nil
}

// hostKey ranks a candidate host; smaller is better in every field.
type hostKey struct {
	held  bool   // the host holds the image (Request.Prefer): better
	left  int    // usable GPUs of the type left on the host after placing
	split bool   // the GPUs cannot all come from one topology group
	spare uint64 // CPU and memory left over, parts per million of free, summed
}

// better reports whether k (on host id) beats o (on host oid).
func (k *hostKey) better(o *hostKey, id, oid string) bool {
	if k.held != o.held {
		return k.held
	}
	if k.left != o.left {
		return k.left < o.left
	}
	if k.split != o.split {
		return !k.split
	}
	if k.spare != o.spare {
		return k.spare < o.spare
	}
	return id < oid
}

// spare is the share of free that is left after taking need, in parts per
// million, computed exactly in 128 bits so no value can overflow. The
// caller guarantees 0 <= need <= free.
func spare(free, need int64) uint64 {
	if free <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(free-need), 1_000_000)
	q, _ := bits.Div64(hi, lo, uint64(free)) // hi < free since free-need <= free
	return q
}

// fitsOneGroup reports whether count usable GPUs of the listing share one
// topology group. Hosts have a handful of GPUs, so the quadratic scan beats
// any map and allocates nothing.
func fitsOneGroup(gpus []GPU, l listing, count int) bool {
	if count <= 1 {
		return true
	}
	for i := range gpus {
		if !gpus[i].usable(l) {
			continue
		}
		grp := gpus[i].TopoGroup
		first := true
		for j := 0; j < i; j++ {
			if gpus[j].TopoGroup == grp && gpus[j].usable(l) {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		n := 1
		for j := i + 1; j < len(gpus) && n < count; j++ {
			if gpus[j].TopoGroup == grp && gpus[j].usable(l) {
				n++
			}
		}
		if n >= count {
			return true
		}
	}
	return false
}
