package sched

// Counts is how many GPUs of one type a zone has.
type Counts struct {
	// Total is every GPU of the type on the zone's hosts, whatever its
	// health or its host's state: the installed base.
	Total int
	// Free is the GPUs a new instance could get now: free, healthy, on a
	// schedulable host.
	Free int
	// MaxPerHost is the most Free GPUs on one host: the largest count one
	// request can get in the zone, CPU and memory aside.
	MaxPerHost int
}

// Availability sums the snapshot per GPU type and zone: type ID → zone ID →
// Counts. GPUs without a type ID are left out. Every type and zone that has
// a GPU appears, even with nothing free. The maps are new on each call and
// belong to the caller.
func Availability(hosts []Host) map[string]map[string]Counts {
	out := make(map[string]map[string]Counts)
	// perHost counts one host's GPUs per type; hosts rarely carry more than
	// one type, so a short slice reused across hosts beats a map.
	type tally struct {
		typeID      string
		total, free int
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
			perHost[t].total++
			if h.Schedulable && g.Free && g.Healthy {
				perHost[t].free++
			}
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
			zones[h.ZoneID] = c
		}
	}
	return out
}
