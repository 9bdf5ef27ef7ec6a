package sched

import (
	"fmt"
	"slices"
)

const (
	h100   = "h100-80g-sxm"
	r4090  = "rtx4090-24g"
	bigCPU = 256_000
	bigMem = 2 << 20 // 2 TiB in MiB
)

// box is a test host: n GPUs of one type with index 0..n-1, groupSize GPUs
// per topology group ("<id>-t<k>"), two NUMA nodes (lower half 0), all free,
// healthy, schedulable, with plenty of CPU and memory.
func box(id, zone, typeID string, n, groupSize int) Host {
	h := Host{ID: id, ZoneID: zone, Schedulable: true, CPUFree: bigCPU, MemFreeMiB: bigMem}
	for i := range n {
		h.GPUs = append(h.GPUs, GPU{
			ID:        fmt.Sprintf("%s-g%d", id, i),
			Index:     i,
			TypeID:    typeID,
			TopoGroup: fmt.Sprintf("%s-t%d", id, i/groupSize),
			NUMANode:  i * 2 / max(n, 1),
			Healthy:   true,
			Free:      true,
		})
	}
	return h
}

// used marks GPUs by index as taken.
func (h Host) used(idx ...int) Host {
	h.GPUs = slices.Clone(h.GPUs)
	for _, i := range idx {
		h.GPUs[i].Free = false
	}
	return h
}

// sick marks GPUs by index as unhealthy.
func (h Host) sick(idx ...int) Host {
	h.GPUs = slices.Clone(h.GPUs)
	for _, i := range idx {
		h.GPUs[i].Healthy = false
	}
	return h
}

// retype gives GPUs by index another type.
func (h Host) retype(typeID string, idx ...int) Host {
	h.GPUs = slices.Clone(h.GPUs)
	for _, i := range idx {
		h.GPUs[i].TypeID = typeID
	}
	return h
}

// cordoned makes the host unschedulable.
func (h Host) cordoned() Host { h.Schedulable = false; return h }

// res sets the host's free CPU and memory.
func (h Host) res(cpu, mem int64) Host { h.CPUFree, h.MemFreeMiB = cpu, mem; return h }

// groups rewrites the topology groups: groups[i] is GPU i's group.
func (h Host) groups(g ...string) Host {
	h.GPUs = slices.Clone(h.GPUs)
	for i := range h.GPUs {
		h.GPUs[i].TopoGroup = g[i]
	}
	return h
}

// numa rewrites the NUMA nodes: n[i] is GPU i's node.
func (h Host) numa(n ...int) Host {
	h.GPUs = slices.Clone(h.GPUs)
	for i := range h.GPUs {
		h.GPUs[i].NUMANode = n[i]
	}
	return h
}

// ids names GPUs of host id by index, as box names them.
func ids(id string, idx ...int) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = fmt.Sprintf("%s-g%d", id, x)
	}
	return out
}

// cloneHosts deep-copies a snapshot.
func cloneHosts(hosts []Host) []Host {
	out := slices.Clone(hosts)
	for i := range out {
		out[i].GPUs = slices.Clone(out[i].GPUs)
	}
	return out
}
