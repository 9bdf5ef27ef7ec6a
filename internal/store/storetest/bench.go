package storetest

import (
	"context"
	"testing"

	"github.com/gpurent/gpurent"
)

// BenchCreateAllocation measures the claim at the heart of renting: in one
// transaction, create an instance and an allocation of one GPU, on a fleet
// of 1,000 hosts x 8 GPUs. When every GPU is taken, the oldest allocation is
// ended outside the timer.
func BenchCreateAllocation(b *testing.B, s gpurent.Store) {
	ctx := context.Background()
	hosts := SeedFleet(b, s, 1000, 8)
	acc := SeedAccount(b, s, "bench@example.com")
	type slot struct{ host, gpu string }
	var slots []slot
	for _, h := range hosts {
		for _, g := range h.GPUs {
			slots = append(slots, slot{h.ID, g.ID})
		}
	}
	held := make([]string, len(slots))
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		k := n % len(slots)
		n++
		if held[k] != "" {
			b.StopTimer()
			if err := s.EndAllocation(ctx, held[k], at(0), "stop"); err != nil {
				b.Fatalf("end allocation: %v", err)
			}
			b.StartTimer()
		}
		var allocID string
		err := s.InTx(ctx, func(q gpurent.Queries) error {
			in := &gpurent.Instance{AccountID: acc.ID, Name: "bench", Image: "busybox", TypeID: "h100-80g-sxm",
				GPUCount: 1, State: gpurent.StatePending, Plan: gpurent.PlanHourly}
			if err := q.CreateInstance(ctx, in); err != nil {
				return err
			}
			a := &gpurent.Allocation{InstanceID: in.ID, HostID: slots[k].host, GPUIDs: []string{slots[k].gpu}, StartReason: "start"}
			if err := q.CreateAllocation(ctx, a); err != nil {
				return err
			}
			allocID = a.ID
			return nil
		})
		if err != nil {
			b.Fatalf("claim: %v", err)
		}
		held[k] = allocID
	}
}

// BenchListHosts measures ListHosts on a fleet of 1,000 hosts x 8 GPUs with
// a quarter of the GPUs held.
func BenchListHosts(b *testing.B, s gpurent.Store) {
	ctx := context.Background()
	hosts := SeedFleet(b, s, 1000, 8)
	acc := SeedAccount(b, s, "bench@example.com")
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		for _, h := range hosts {
			in := SeedInstance(b, q, acc.ID, "bench")
			if err := q.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID,
				GPUIDs: []string{h.GPUs[0].ID, h.GPUs[1].ID}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed allocations: %v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		list, err := s.ListHosts(ctx)
		if err != nil {
			b.Fatalf("list hosts: %v", err)
		}
		if len(list) != 1000 || len(list[0].GPUs) != 8 {
			b.Fatalf("listed %d hosts", len(list))
		}
	}
}

// BenchLatestSummaries measures the fleet view the certification reads
// per GPU type: ListBenchSummaries with LatestOnly and GPUType, over a
// history of 250 hosts x 8 GPUs x 3 probes, ten weekly jobs per host
// (60,000 summaries, 2,000 answered).
func BenchLatestSummaries(b *testing.B, s gpurent.Store) {
	ctx := context.Background()
	hosts := SeedFleet(b, s, 250, 8)
	for week := range 10 {
		for _, h := range hosts {
			j := &gpurent.BenchJob{HostID: h.ID, GPUIDs: make([]string, len(h.GPUs)), Reason: gpurent.BenchWeekly,
				Tier: "t2", CreatedAt: at(week * 600)}
			sums := make([]gpurent.BenchSummary, 0, 3*len(h.GPUs))
			for i, g := range h.GPUs {
				j.GPUIDs[i] = g.ID
				for _, p := range []string{"gemm", "stream", "pcie"} {
					sums = append(sums, summary(g.ID, p, week*600+1, 700))
				}
			}
			if err := s.CreateBenchJob(ctx, j); err != nil {
				b.Fatalf("create job: %v", err)
			}
			if ok, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone,
				At: at(week*600 + 2), Summaries: sums}); err != nil || !ok {
				b.Fatalf("finish job: %v %v", ok, err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{GPUType: "h100-80g-sxm", LatestOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != 250*8*3 {
			b.Fatalf("%d summaries, want %d", len(got), 250*8*3)
		}
	}
}
