package sched

import (
	"cmp"
	"slices"
)

// pick chooses count usable GPUs of the listing from one host's GPUs, which
// has at least that many: topology group first, NUMA node inside a group,
// then the lowest index. The IDs come back ordered by GPU index.
func pick(gpus []GPU, l listing, count int) []string {
	usable := make([]*GPU, 0, len(gpus))
	for i := range gpus {
		if gpus[i].usable(l) {
			usable = append(usable, &gpus[i])
		}
	}
	slices.SortFunc(usable, byIndex)
	byNUMA := func(part []*GPU, k int) []*GPU {
		return chooseParts(part, k, func(g *GPU) int { return g.NUMANode }, lowest)
	}
	chosen := chooseParts(usable, count, func(g *GPU) string { return g.TopoGroup }, byNUMA)
	slices.SortFunc(chosen, byIndex)
	ids := make([]string, len(chosen))
	for i, g := range chosen {
		ids[i] = g.ID
	}
	return ids
}

// byIndex orders GPUs by index, then ID, so a snapshot with a repeated
// index still gives one answer.
func byIndex(a, b *GPU) int {
	if c := cmp.Compare(a.Index, b.Index); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// lowest takes the first k GPUs of a part ordered by index.
func lowest(part []*GPU, k int) []*GPU { return part[:k:k] }

// chooseParts takes k of items (ordered by index, len(items) >= k),
// partitioned by key. If one part holds k, it takes from the part that
// leaves the fewest over (best fit). Otherwise it takes whole parts,
// largest first, until one part can hold the rest, and takes the rest from
// the best-fitting such part; that spans the fewest parts. Ties go to the
// part with the lowest index. Inside the part it takes only some of, inner
// chooses.
func chooseParts[K comparable](items []*GPU, k int, key func(*GPU) K, inner func([]*GPU, int) []*GPU) []*GPU {
	type part struct {
		key   K
		items []*GPU
		used  bool
	}
	var parts []part
	for _, g := range items {
		kk := key(g)
		i := slices.IndexFunc(parts, func(p part) bool { return p.key == kk })
		if i < 0 {
			parts = append(parts, part{key: kk})
			i = len(parts) - 1
		}
		parts[i].items = append(parts[i].items, g)
	}
	// parts are in order of their lowest index, so strict comparisons
	// below keep the lowest index on ties.
	out := make([]*GPU, 0, k)
	for rest := k; rest > 0; {
		fit, largest := -1, -1
		for i := range parts {
			p := &parts[i]
			if p.used {
				continue
			}
			if len(p.items) >= rest && (fit < 0 || len(p.items) < len(parts[fit].items)) {
				fit = i
			}
			if largest < 0 || len(p.items) > len(parts[largest].items) {
				largest = i
			}
		}
		if fit >= 0 {
			if len(parts[fit].items) == rest {
				return append(out, parts[fit].items...)
			}
			return append(out, inner(parts[fit].items, rest)...)
		}
		parts[largest].used = true
		out = append(out, parts[largest].items...)
		rest -= len(parts[largest].items)
	}
	return out
}
