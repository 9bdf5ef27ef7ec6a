package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gpurent/gpurent"
)

// The checks below restate the policy with plain, slow code (maps, sorts)
// that shares nothing with Place, and hold any answer of Place to it.

// refUsable counts the host's free healthy GPUs of the request's type and
// listing (degraded or not) per group.
func refUsable(h *Host, req Request) (n int, perGroup map[string]int) {
	perGroup = map[string]int{}
	for _, g := range h.GPUs {
		if g.TypeID == req.TypeID && g.Degraded == req.Degraded && g.Free && g.Healthy {
			n++
			perGroup[g.TopoGroup]++
		}
	}
	return n, perGroup
}

// refFits is the filter of the policy, written out.
func refFits(req Request, h *Host) bool {
	n, _ := refUsable(h, req)
	return h.Schedulable &&
		(req.ZoneID == "" || h.ZoneID == req.ZoneID) &&
		(req.HostID == "" || h.ID == req.HostID) &&
		h.CPUFree >= req.CPUMilli && h.MemFreeMiB >= req.MemoryMiB &&
		n >= req.Count
}

// refOneGroup says whether req.Count usable GPUs share a group on h.
func refOneGroup(req Request, h *Host) bool {
	_, per := refUsable(h, req)
	for _, c := range per {
		if c >= req.Count {
			return true
		}
	}
	return false
}

// checkPlacement returns "" when p obeys every rule for req over hosts.
func checkPlacement(req Request, hosts []Host, p Placement) string {
	var h *Host
	for i := range hosts {
		if hosts[i].ID == p.HostID {
			h = &hosts[i]
			break
		}
	}
	if h == nil {
		return fmt.Sprintf("placed on unknown host %q", p.HostID)
	}
	if !refFits(req, h) {
		return fmt.Sprintf("host %s does not fit %+v", h.ID, req)
	}
	if len(p.GPUIDs) != req.Count {
		return fmt.Sprintf("got %d GPUs, want %d", len(p.GPUIDs), req.Count)
	}
	byID := map[string]GPU{}
	for _, g := range h.GPUs {
		byID[g.ID] = g
	}
	seen := map[string]bool{}
	groups := map[string]bool{}
	lastIndex := -1 << 62
	for _, id := range p.GPUIDs {
		g, ok := byID[id]
		switch {
		case !ok:
			return fmt.Sprintf("GPU %s is not on host %s", id, h.ID)
		case seen[id]:
			return fmt.Sprintf("GPU %s given twice", id)
		case g.TypeID != req.TypeID || !g.Free || !g.Healthy:
			return fmt.Sprintf("GPU %s is not a free healthy %s: %+v", id, req.TypeID, g)
		case g.Degraded != req.Degraded:
			return fmt.Sprintf("GPU %s is degraded=%v, the request asked degraded=%v", id, g.Degraded, req.Degraded)
		case g.Index < lastIndex:
			return fmt.Sprintf("GPU IDs not in index order: %v", p.GPUIDs)
		}
		seen[id] = true
		groups[g.TopoGroup] = true
		lastIndex = g.Index
	}

	// Host ranking: fewest left over, then one group.
	n, per := refUsable(h, req)
	left, one := n-req.Count, refOneGroup(req, h)
	for i := range hosts {
		o := &hosts[i]
		if !refFits(req, o) {
			continue
		}
		on, _ := refUsable(o, req)
		ol := on - req.Count
		if ol < left {
			return fmt.Sprintf("host %s leaves %d, but %s would leave %d", h.ID, left, o.ID, ol)
		}
		if ol == left && !one && refOneGroup(req, o) {
			return fmt.Sprintf("host %s splits groups, %s would not", h.ID, o.ID)
		}
	}

	// GPUs on the host: fewest groups; the tightest group when one fits.
	sizes := make([]int, 0, len(per))
	for _, c := range per {
		sizes = append(sizes, c)
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	need, sum := 0, 0
	for sum < req.Count {
		sum += sizes[need]
		need++
	}
	if len(groups) != need {
		return fmt.Sprintf("GPUs span %d groups, %d would do", len(groups), need)
	}
	if need == 1 {
		tightest := 1 << 62
		for _, c := range per {
			if c >= req.Count {
				tightest = min(tightest, c)
			}
		}
		for grp := range groups {
			if per[grp] != tightest {
				return fmt.Sprintf("group %q has %d free, the tightest that fits has %d", grp, per[grp], tightest)
			}
		}
	}
	return ""
}

// checkFailure returns "" when err is a right refusal of req over hosts.
func checkFailure(req Request, hosts []Host, err error) string {
	if req.TypeID == "" || req.Count < 0 || req.CPUMilli < 0 || req.MemoryMiB < 0 || (req.Degraded && req.Count == 0) {
		if !errors.Is(err, ErrInvalidRequest) || gpurent.ErrorCode(err) != gpurent.CodeInvalid {
			return fmt.Sprintf("invalid request %+v: err = %v", req, err)
		}
		return ""
	}
	var nc *NoCapacityError
	if !errors.As(err, &nc) || !errors.Is(err, ErrNoCapacity) {
		return fmt.Sprintf("err = %v (%T), want *NoCapacityError", err, err)
	}
	if gpurent.ErrorCode(err) != gpurent.CodeUnavailable || gpurent.ErrorMessage(err) != nc.Message || nc.Message == "" {
		return fmt.Sprintf("code %s message %q", gpurent.ErrorCode(err), gpurent.ErrorMessage(err))
	}
	mostFree, gpuFit := 0, 0
	for i := range hosts {
		h := &hosts[i]
		if refFits(req, h) {
			return fmt.Sprintf("refused %+v, but host %s fits", req, h.ID)
		}
		if !h.Schedulable || (req.ZoneID != "" && h.ZoneID != req.ZoneID) || (req.HostID != "" && h.ID != req.HostID) {
			continue
		}
		n, _ := refUsable(h, req)
		mostFree = max(mostFree, n)
		if n >= req.Count {
			gpuFit++
			if nc.Reason == ReasonCPU && h.CPUFree >= req.CPUMilli {
				return fmt.Sprintf("reason cpu, but host %s has the CPU", h.ID)
			}
			if nc.Reason == ReasonMemory && h.MemFreeMiB >= req.MemoryMiB {
				return fmt.Sprintf("reason memory, but host %s has the memory", h.ID)
			}
		}
	}
	if nc.MostFree != mostFree {
		return fmt.Sprintf("MostFree = %d, want %d", nc.MostFree, mostFree)
	}
	switch nc.Reason {
	case ReasonCPU, ReasonMemory, ReasonCPUAndMemory:
		if gpuFit == 0 {
			return fmt.Sprintf("reason %s, but no host has the GPUs", nc.Reason)
		}
	default:
		if gpuFit != 0 {
			return fmt.Sprintf("reason %s, but %d hosts have the GPUs", nc.Reason, gpuFit)
		}
	}
	return ""
}

// source feeds a snapshot generator: random numbers or fuzz bytes.
type source interface{ IntN(n int) int }

// bytesSource reads fuzz input; it gives 0 once the bytes run out.
type bytesSource struct{ b []byte }

func (s *bytesSource) IntN(n int) int {
	if len(s.b) == 0 || n <= 1 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	return v % n
}

var (
	testTypes = []string{"A", "B", "C"} // C never appears in snapshots
	testZones = []string{"z0", "z1", "z2"}
)

// genSnapshot makes up to maxHosts hosts with unique IDs and GPU IDs.
func genSnapshot(src source, maxHosts int) []Host {
	hosts := make([]Host, src.IntN(maxHosts+1))
	for i := range hosts {
		h := &hosts[i]
		h.ID = fmt.Sprintf("h%02d", src.IntN(100)*100+i) // unique, not in slice order
		h.ZoneID = testZones[src.IntN(len(testZones))]
		h.Schedulable = src.IntN(8) != 0
		h.CPUFree = int64(src.IntN(17)*4000 - 4000)
		h.MemFreeMiB = int64(src.IntN(17)*8192 - 8192)
		groupSize := 1 + src.IntN(4)
		for j, n := 0, src.IntN(11); j < n; j++ {
			h.GPUs = append(h.GPUs, GPU{
				ID:        fmt.Sprintf("%s-g%d", h.ID, j),
				Index:     j,
				TypeID:    testTypes[src.IntN(2)],
				TopoGroup: fmt.Sprintf("t%d", j/groupSize),
				NUMANode:  src.IntN(2),
				Healthy:   src.IntN(10) != 0,
				Free:      src.IntN(3) != 0,
			})
		}
		// Some hosts carry GPUs listed as degraded, at a price share.
		if src.IntN(3) == 0 {
			for j := range h.GPUs {
				if src.IntN(3) == 0 {
					h.GPUs[j].Degraded, h.GPUs[j].PricePermille = true, 500+src.IntN(400)
				}
			}
		}
	}
	return hosts
}

// genRequest makes a request that is sometimes invalid and sometimes pinned.
func genRequest(src source, hosts []Host) Request {
	r := Request{
		TypeID:    testTypes[src.IntN(2)],
		Count:     1 + src.IntN(4),
		CPUMilli:  int64(src.IntN(6)*4000 - 100*src.IntN(2)),
		MemoryMiB: int64(src.IntN(6) * 8192),
	}
	if src.IntN(5) == 0 {
		r.Count = src.IntN(12) - 1 // sometimes invalid, sometimes more than a host has
	}
	if src.IntN(2) == 0 {
		r.ZoneID = testZones[src.IntN(len(testZones))]
	}
	if src.IntN(6) == 0 {
		if len(hosts) > 0 && src.IntN(4) != 0 {
			r.HostID = hosts[src.IntN(len(hosts))].ID
		} else {
			r.HostID = "nope"
		}
	}
	switch src.IntN(40) {
	case 0:
		r.TypeID = ""
	case 1, 2, 3:
		r.TypeID = testTypes[2]
	}
	r.Degraded = src.IntN(5) == 0
	return r
}

// checkPlace runs Place and holds the answer to the rules. It also checks
// that Place leaves the snapshot alone and that the order of hosts and of
// GPUs does not change the answer.
func checkPlace(t *testing.T, req Request, hosts []Host, shuffle func(n int, swap func(i, j int))) {
	t.Helper()
	before := cloneHosts(hosts)
	p, err := Place(req, hosts)
	if !reflect.DeepEqual(before, hosts) {
		t.Fatalf("Place changed the snapshot")
	}
	if err != nil {
		if msg := checkFailure(req, hosts, err); msg != "" {
			t.Fatalf("%s\nrequest %+v\nhosts %+v", msg, req, hosts)
		}
	} else if msg := checkPlacement(req, hosts, p); msg != "" {
		t.Fatalf("%s\nrequest %+v\nplacement %+v\nhosts %+v", msg, req, p, hosts)
	}
	mixed := cloneHosts(hosts)
	shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
	for i := range mixed {
		g := mixed[i].GPUs
		shuffle(len(g), func(a, b int) { g[a], g[b] = g[b], g[a] })
	}
	p2, err2 := Place(req, mixed)
	if !reflect.DeepEqual(p, p2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
		t.Fatalf("order changed the answer: %+v %v, then %+v %v\nrequest %+v\nhosts %+v", p, err, p2, err2, req, hosts)
	}
}

func TestPlaceProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(20240601, 7))
	placed, refused := 0, 0
	for range 20_000 {
		hosts := genSnapshot(rng, 12)
		req := genRequest(rng, hosts)
		checkPlace(t, req, hosts, rng.Shuffle)
		if _, err := Place(req, hosts); err == nil {
			placed++
		} else {
			refused++
		}
	}
	// The generator must exercise both sides, or the test proves little.
	if placed < 4000 || refused < 4000 {
		t.Fatalf("generator is lopsided: %d placed, %d refused", placed, refused)
	}
}

func FuzzPlace(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x05\x01\x00\x03\x10\x10\x02\x08\x00\x00\x01\x01\x01\x00\x01\x01\x01\x01\x00\x03\x00\x00"))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		b := make([]byte, 64+rng.IntN(400))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &bytesSource{b: data}
		req := genRequest(src, nil)
		hosts := genSnapshot(src, 24)
		if len(hosts) > 0 && req.HostID == "nope" && len(data) > 0 && data[0]%2 == 0 {
			req.HostID = hosts[int(data[0])%len(hosts)].ID
		}
		// A fixed permutation seeded by the input keeps the fuzz target
		// deterministic.
		perm := rand.New(rand.NewPCG(uint64(len(data)), 3))
		checkPlace(t, req, hosts, perm.Shuffle)
	})
}
