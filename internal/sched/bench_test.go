package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchFleet makes a fleet of n 8-GPU hosts in three zones, shaped like a
// busy rental cloud: 40% H100 SXM (one NVSwitch domain), 40% RTX 4090 (two
// PCIe switches of four), 20% A100 SXM; a quarter of hosts empty, nearly half
// partly rented, a quarter full, 5% cordoned, 1% with a failed GPU. Each
// rented GPU holds 12 cores and 96 GiB of the host's 128 cores and 1 TiB.
func benchFleet(n int) []Host {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	zones := []string{"cd-a", "cd-b", "sh-a"}
	hosts := make([]Host, n)
	for i := range hosts {
		typeID, groupSize := h100, 8
		switch r := rng.IntN(10); {
		case r >= 8:
			typeID = "a100-80g-sxm"
		case r >= 4:
			typeID, groupSize = r4090, 4
		}
		h := box(fmt.Sprintf("host-%05d", i), zones[rng.IntN(len(zones))], typeID, 8, groupSize)
		var used int
		switch r := rng.IntN(100); {
		case r < 25:
			used = 0
		case r < 70:
			used = 1 + rng.IntN(7)
		default:
			used = 8
		}
		for _, j := range rng.Perm(8)[:used] {
			h.GPUs[j].Free = false
		}
		if rng.IntN(100) == 0 {
			h.GPUs[rng.IntN(8)].Healthy = false
		}
		h.Schedulable = rng.IntN(20) != 0
		h.CPUFree = 128_000 - int64(used)*12_000
		h.MemFreeMiB = 1<<20 - int64(used)*96*1024
		hosts[i] = h
	}
	return hosts
}

func BenchmarkPlace(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		hosts := benchFleet(n)
		for _, count := range []int{1, 2, 4, 8} {
			req := Request{TypeID: h100, Count: count, CPUMilli: int64(count) * 12_000, MemoryMiB: int64(count) * 96 * 1024}
			b.Run(fmt.Sprintf("hosts=%d/gpus=%d", n, count), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Place(req, hosts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		req := Request{TypeID: r4090, Count: 2, ZoneID: "cd-b", CPUMilli: 24_000, MemoryMiB: 192 * 1024}
		b.Run(fmt.Sprintf("hosts=%d/zone/gpus=2", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Place(req, hosts); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Sold out: the failing pass plus the second pass that explains it.
		req = Request{TypeID: h100, Count: 8, CPUMilli: 200_000}
		b.Run(fmt.Sprintf("hosts=%d/soldout", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Place(req, hosts); err == nil {
					b.Fatal("placed a request that cannot fit")
				}
			}
		})
	}
}

func BenchmarkAvailability(b *testing.B) {
	hosts := benchFleet(10_000)
	b.ReportAllocs()
	for b.Loop() {
		Availability(hosts)
	}
}
