package sched

// Counts is how many GPUs of one type a zone has.
type Counts struct {
	// Total is every GPU of the type on the zone's hosts, whatever its
	// health, its listing or its host's state: the installed base.
	Total int
	// Free is the full-price GPUs a new instance could get now: free,
	// healthy, not degraded, on a schedulable host.
	Free int
	// MaxPerHost is the most Free GPUs on one host: the largest count one
	// request can get in the zone, CPU and memory aside.
	MaxPerHost int
	// DegradedFree and DegradedMaxPerHost are the same for the GPUs
	// listed as degraded, which only a request for degraded GPUs gets.
	DegradedFree       int
	DegradedMaxPerHost int
	// MinPricePermille and MaxPricePermille are the lowest and highest
	// price share (PriceShare) of the DegradedFree GPUs; 0 when there
	// are none.
	MinPricePermille int
	MaxPricePermille int
}

// PriceShare is the share of the list price a GPU listed at permille is
// sold at, in permille: permille when it lies in (0, 1000), else 1000 (0
// means no certification, full price; a share is never above the list
// price).
func PriceShare(permille int) int {
	if permille <= 0 || permille >= 1000 {
		return 1000
	}
	return permille
}

// Availability sums the snapshot per GPU type and zone: type ID → zone ID →
// Counts. GPUs without a type ID are left out. Every type and zone that has
// a GPU appears, even with nothing free. Degraded GPUs are counted apart
// from the others (DegradedFree, with their price range). The maps are new
// on each call and belong to the caller.
func Availability(hosts []Host) map[string]map[string]Counts {
	out := make(map[string]map[string]Counts)
	// perHost counts one host's GPUs per type; hosts rarely carry more than
	// one type, so a short slice reused across hosts beats a map.
	type tally struct {
		typeID               string
		total, free, degFree int
		minP, maxP           int
	}
	perHost := make([]tally, 0, 4)
	for i := range hosts {
		h := &hosts[i]
		perHost = perHost[:0]
		for j := range h.GPUs {
			g := &h.GPUs[j]
			if g.TypeID == "" {
				continue
			}
			t := -1
			for k := range perHost {
				if perHost[k].typeID == g.TypeID {
					t = k
					break
				}
			}
			if t < 0 {
				perHost = append(perHost, tally{typeID: g.TypeID})
				t = len(perHost) - 1
			}
			c := &perHost[t]
			c.total++
			if !h.Schedulable || !g.Free || !g.Healthy {
				continue
			}
			if !g.Degraded {
				c.free++
				continue
			}
			p := PriceShare(g.PricePermille)
			if c.degFree == 0 || p < c.minP {
				c.minP = p
			}
			c.maxP = max(c.maxP, p)
			c.degFree++
		}
		for _, t := range perHost {
			zones := out[t.typeID]
			if zones == nil {
				zones = make(map[string]Counts)
				out[t.typeID] = zones
			}
			c := zones[h.ZoneID]
			c.Total += t.total
			c.Free += t.free
			c.MaxPerHost = max(c.MaxPerHost, t.free)
			if t.degFree > 0 {
				if c.DegradedFree == 0 || t.minP < c.MinPricePermille {
					c.MinPricePermille = t.minP
				}
				c.MaxPricePermille = max(c.MaxPricePermille, t.maxP)
				c.DegradedFree += t.degFree
				c.DegradedMaxPerHost = max(c.DegradedMaxPerHost, t.degFree)
			}
			zones[h.ZoneID] = c
		}
	}
	return out
}
