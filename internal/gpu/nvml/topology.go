package nvml

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// topology is what NVML says about how a host's GPUs connect, by device
// position in the host's list.
type topology struct {
	busIDs   []string // PCI bus id of each device
	nvlink   [][2]int // pairs joined by a direct NVLink
	nvswitch []int    // devices with an NVLink into an NVSwitch fabric
	pcie     [][2]int // pairs under one PCIe switch (no host bridge between)
}

// groups names each device's TopoGroup: GPUs joined by NVLink, directly or
// through NVSwitch, share "nvlink:<lowest bus id>"; other GPUs under one
// PCIe switch share "pcie:<lowest bus id>"; a GPU alone has
// "pci:<its bus id>". Names are stable across agent restarts because bus ids
// are.
func (t topology) groups() []string {
	n := len(t.busIDs)
	nv := newUnionFind(n)
	linked := make([]bool, n)
	for _, p := range t.nvlink {
		nv.union(p[0], p[1])
		linked[p[0]], linked[p[1]] = true, true
	}
	for k, i := range t.nvswitch {
		linked[i] = true
		if k > 0 {
			nv.union(t.nvswitch[0], i)
		}
	}
	pc := newUnionFind(n)
	for _, p := range t.pcie {
		if !linked[p[0]] && !linked[p[1]] {
			pc.union(p[0], p[1])
		}
	}
	lowest := func(uf unionFind, i int) string {
		low := t.busIDs[i]
		for j := range n {
			if uf.find(j) == uf.find(i) && t.busIDs[j] < low {
				low = t.busIDs[j]
			}
		}
		return low
	}
	out := make([]string, n)
	for i := range n {
		switch {
		case linked[i]:
			out[i] = "nvlink:" + lowest(nv, i)
		case pc.size(i) > 1:
			out[i] = "pcie:" + lowest(pc, i)
		default:
			out[i] = "pci:" + t.busIDs[i]
		}
	}
	return out
}

// unionFind joins device positions into groups.
type unionFind []int

func newUnionFind(n int) unionFind {
	uf := make(unionFind, n)
	for i := range uf {
		uf[i] = i
	}
	return uf
}

func (uf unionFind) find(i int) int {
	for uf[i] != i {
		uf[i] = uf[uf[i]]
		i = uf[i]
	}
	return i
}

func (uf unionFind) union(a, b int) { uf[uf.find(a)] = uf.find(b) }

func (uf unionFind) size(i int) int {
	n := 0
	for j := range uf {
		if uf.find(j) == uf.find(i) {
			n++
		}
	}
	return n
}

// sysfsBusID turns NVML's "00000000:3B:00.0" into sysfs's "0000:3b:00.0".
func sysfsBusID(busID string) (string, error) {
	dom, rest, ok := strings.Cut(strings.ToLower(busID), ":")
	if !ok || len(dom) < 4 || strings.Count(rest, ":") != 1 {
		return "", fmt.Errorf("not a PCI bus id: %q", busID)
	}
	return dom[len(dom)-4:] + ":" + rest, nil
}

// numaNodeFromSysfs reads a PCI device's NUMA node the way the kernel
// reports it under root (normally /sys). A kernel without NUMA information
// reports -1: the host has one node, 0.
func numaNodeFromSysfs(root, busID string) (int, error) {
	id, err := sysfsBusID(busID)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(root, "bus", "pci", "devices", id, "numa_node"))
	if err != nil {
		return 0, err
	}
	node, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("numa_node of %s: %w", busID, err)
	}
	return max(node, 0), nil
}
