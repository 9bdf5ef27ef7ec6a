package certification

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// benchFleet is a certified fleet of hosts × 8 H100 on SQLite: every card
// benchmarked once through the service (synthetic records, as from fake
// GPUs), one in fifty at 85%.
func benchFleet(b *testing.B, hosts int) *env {
	b.Helper()
	st := storetest.SQLite(b)
	storetest.SeedCatalog(b, st)
	e := &env{t: b, ctx: b.Context(), st: st, clk: clocktest.New(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))}
	e.hosts = storetest.SeedFleet(b, st, hosts, 8)
	svc, err := New(Config{Store: st, AcceptSynthetic: true, Now: e.clk.Now, MaxOpenJobs: hosts})
	if err != nil {
		b.Fatal(err)
	}
	e.svc = svc
	e.touch()
	if err := svc.Tick(e.ctx); err != nil {
		b.Fatal(err)
	}
	jobs, err := st.ListBenchJobs(e.ctx, gpurent.BenchJobFilter{OpenOnly: true, Limit: 10000})
	if err != nil || len(jobs) != hosts {
		b.Fatalf("%d jobs for %d hosts: %v", len(jobs), hosts, err)
	}
	for i, j := range jobs {
		slow := map[string]float64{}
		if i%50 == 0 {
			slow[j.GPUIDs[0]] = 0.85
		}
		if err := svc.Report(e.ctx, j.HostID, Result{JobID: j.ID, State: gpurent.BenchDone,
			Records: records(b, j.GPUType, j.GPUIDs, slow)}); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkReportAssemble: the public report of 250 hosts × 8 GPUs (2,000
// cards, three probes each, one job of history), from the store, uncached.
func BenchmarkReportAssemble(b *testing.B) {
	e := benchFleet(b, 250)
	b.ResetTimer()
	for b.Loop() {
		rep, err := e.svc.assemble(e.ctx, e.clk.Now())
		if err != nil || len(rep.Types) != 1 || rep.Types[0].GPUs != 2000 {
			b.Fatalf("report: %v", err)
		}
	}
}

// BenchmarkJudgeJob: one host's 8-card job (three probes, six runs each)
// parsed, judged against a fleet of 2,000 cards, and stored with its
// certifications.
func BenchmarkJudgeJob(b *testing.B) {
	e := benchFleet(b, 250)
	h := e.hosts[1]
	ids := make([]string, len(h.GPUs))
	for i, g := range h.GPUs {
		ids[i] = g.ID
	}
	lines := records(b, h100, ids, nil)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		j := &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids, GPUType: h100, Reason: gpurent.BenchManual, Tier: "t2", RequestedBy: "bench"}
		if err := e.st.CreateBenchJob(e.ctx, j); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := e.svc.Report(e.ctx, h.ID, Result{JobID: j.ID, State: gpurent.BenchDone, Records: lines}); err != nil {
			b.Fatal(err)
		}
	}
}
