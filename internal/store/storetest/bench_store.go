package storetest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// The compute-transparency contract (issue #7), run by Run once per
// function on a fresh store: benchmark jobs and their lifecycle, the holds
// they take and how they exclude allocations both ways, FinishBenchJob's
// one transaction, raw records, summaries and the latest-per-GPU view,
// certifications as GPU reads show them, the settings, and the share of
// the list price allocations and usage runs carry.

// hostGeneration reads the host's generation.
func hostGeneration(t *testing.T, q gpurent.Queries, hostID string) int64 {
	t.Helper()
	h, err := q.HostByID(t.Context(), hostID)
	must(t, err, "read host "+hostID)
	return h.Generation
}

// gpuByID answers the GPU id as HostByID shows it.
func gpuByID(t *testing.T, q gpurent.Queries, hostID, id string) gpurent.GPU {
	t.Helper()
	h, err := q.HostByID(t.Context(), hostID)
	must(t, err, "read host "+hostID)
	for _, g := range h.GPUs {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("GPU %s not on host %s", id, hostID)
	return gpurent.GPU{}
}

// benchHolders answers, per GPU of the host, the open job holding it as
// both fleet reads show it (failing when they disagree).
func benchHolders(t *testing.T, q gpurent.Queries, hostID string) map[string]string {
	t.Helper()
	h, err := q.HostByID(t.Context(), hostID)
	must(t, err, "read host")
	out := map[string]string{}
	for _, g := range h.GPUs {
		out[g.ID] = g.BenchJobID
	}
	hosts, err := q.ListHosts(t.Context())
	must(t, err, "list hosts")
	for _, lh := range hosts {
		if lh.ID != hostID {
			continue
		}
		for _, g := range lh.GPUs {
			if out[g.ID] != g.BenchJobID {
				t.Fatalf("GPU %s: HostByID says job %q, ListHosts %q", g.ID, out[g.ID], g.BenchJobID)
			}
		}
	}
	return out
}

// newJob is a weekly t2 job on the GPUs of h at idx.
func newJob(h *gpurent.Host, reason gpurent.BenchReason, idx ...int) *gpurent.BenchJob {
	return &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids(h, idx...), Reason: reason, Tier: "t2"}
}

// summary is a PASS summary of the GPU key on probe at sec.
func summary(key, probe string, sec int, median float64) gpurent.BenchSummary {
	return gpurent.BenchSummary{GPUKey: key, Probe: probe, GPUs: strings.Count(key, ",") + 1, Setup: "bf16-8192",
		Unit: "TFLOPS", Runs: 5, Failed: 0, Median: median, Min: median - 3, Max: median + 2, Spread: 0.05, MAD: 1.25,
		MaxTempC: 71.5, MinSMClockMHz: 1755, MeanPowerW: 688.25, ThrottleReasons: "sw_power_cap", Outcome: "PASS",
		FleetMedian: median + 1, FleetRatio: median / (median + 1), SpecRatio: 0.82, Note: "ok", At: at(sec)}
}

func testBenchJobs(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "bench-a", "h100-80g-sxm", 4)
	other := SeedHost(t, s, "bench-b", "a100-80g-sxm", 2)
	gen := hostGeneration(t, s, h.ID)

	j := &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids(h, 2, 0), Reason: gpurent.BenchOnboarding, Tier: "t2",
		RequestedBy: "acc-op", CreatedAt: at(1)}
	must(t, s.CreateBenchJob(ctx, j), "create job")
	if !strings.HasPrefix(j.ID, gpurent.PrefixBenchJob+"-") {
		t.Fatalf("job id %q not generated with prefix", j.ID)
	}
	if !slices.Equal(j.GPUIDs, []string{h.GPUs[0].ID, h.GPUs[2].ID}) || j.State != gpurent.BenchQueued ||
		j.GPUType != "h100-80g-sxm" || !j.CreatedAt.Equal(utc(at(1))) || j.CreatedAt.Location() != time.UTC {
		t.Fatalf("created job not filled as stored: %+v", j)
	}
	if g := hostGeneration(t, s, h.ID); g != gen+1 {
		t.Fatalf("generation %d after creating a job, want %d", g, gen+1)
	}
	got, err := s.BenchJobByID(ctx, j.ID)
	must(t, err, "job by id")
	same(t, "job round trip", got, j)
	same(t, "holds as GPU reads show them", benchHolders(t, s, h.ID),
		map[string]string{h.GPUs[0].ID: j.ID, h.GPUs[1].ID: "", h.GPUs[2].ID: j.ID, h.GPUs[3].ID: ""})

	// The same id again is a conflict, and writes nothing.
	dup := newJob(h, gpurent.BenchManual, 3)
	dup.ID = j.ID
	wantCode(t, s.CreateBenchJob(ctx, dup), gpurent.CodeConflict, "job with a taken id")
	if benchHolders(t, s, h.ID)[h.GPUs[3].ID] != "" {
		t.Fatalf("a refused job left a hold")
	}

	for name, bad := range map[string]*gpurent.BenchJob{
		"no host":           {GPUIDs: ids(h, 1), Reason: gpurent.BenchManual, Tier: "t2"},
		"no GPUs":           {HostID: h.ID, Reason: gpurent.BenchManual, Tier: "t2"},
		"GPU twice":         {HostID: h.ID, GPUIDs: ids(h, 1, 1), Reason: gpurent.BenchManual, Tier: "t2"},
		"unknown GPU":       {HostID: h.ID, GPUIDs: []string{"GPU-none"}, Reason: gpurent.BenchManual, Tier: "t2"},
		"GPU of other host": {HostID: h.ID, GPUIDs: ids(other, 0), Reason: gpurent.BenchManual, Tier: "t2"},
		"unknown reason":    {HostID: h.ID, GPUIDs: ids(h, 1), Reason: "whim", Tier: "t2"},
		"unknown tier":      {HostID: h.ID, GPUIDs: ids(h, 1), Reason: gpurent.BenchManual, Tier: "t9"},
		"not queued":        {HostID: h.ID, GPUIDs: ids(h, 1), Reason: gpurent.BenchManual, Tier: "t2", State: gpurent.BenchRunning},
		"verify, no owner":  {HostID: h.ID, GPUIDs: ids(h, 1), Reason: gpurent.BenchVerify, Tier: "t1"},
	} {
		wantCode(t, s.CreateBenchJob(ctx, bad), gpurent.CodeInvalid, name)
	}
	if g := hostGeneration(t, s, h.ID); g != gen+1 {
		t.Fatalf("refused jobs bumped the generation to %d", g)
	}

	// Running: once, from queued only.
	ok, err := s.SetBenchJobRunning(ctx, j.ID, at(2))
	if err != nil || !ok {
		t.Fatalf("set running: %v %v", ok, err)
	}
	ok, err = s.SetBenchJobRunning(ctx, j.ID, at(3))
	if err != nil || ok {
		t.Fatalf("set running again: %v %v, want false", ok, err)
	}
	_, err = s.SetBenchJobRunning(ctx, "bench-none", at(3))
	wantCode(t, err, gpurent.CodeNotFound, "set running an unknown job")
	got, err = s.BenchJobByID(ctx, j.ID)
	must(t, err, "job after start")
	if got.State != gpurent.BenchRunning || got.StartedAt == nil || !got.StartedAt.Equal(utc(at(2))) {
		t.Fatalf("started job: %+v", got)
	}
	_, err = s.BenchJobByID(ctx, "bench-none")
	wantCode(t, err, gpurent.CodeNotFound, "unknown job")

	// More jobs to list: a verify job on the other host, a manual one.
	acc := SeedAccount(t, s, "bench@example.com")
	in := SeedInstance(t, s, acc.ID, "verify-me")
	v := &gpurent.BenchJob{HostID: other.ID, GPUIDs: ids(other, 1, 0), Reason: gpurent.BenchVerify, Tier: "t1",
		InstanceID: in.ID, AccountID: acc.ID, RequestedBy: acc.ID, CreatedAt: at(5)}
	must(t, s.CreateBenchJob(ctx, v), "create verify job")
	m := newJob(h, gpurent.BenchManual, 1)
	m.CreatedAt = at(4)
	must(t, s.CreateBenchJob(ctx, m), "create manual job")
	if v.GPUType != "a100-80g-sxm" {
		t.Fatalf("verify job type %q, want the GPUs' type", v.GPUType)
	}

	list := func(f gpurent.BenchJobFilter) []string {
		t.Helper()
		jobs, err := s.ListBenchJobs(ctx, f)
		must(t, err, fmt.Sprintf("list jobs %+v", f))
		out := []string{}
		for _, x := range jobs {
			if len(x.GPUIDs) == 0 {
				t.Fatalf("listed job %s without its GPUs", x.ID)
			}
			out = append(out, x.ID)
		}
		return out
	}
	same(t, "every job, newest first", list(gpurent.BenchJobFilter{}), []string{v.ID, m.ID, j.ID})
	same(t, "jobs of a host", list(gpurent.BenchJobFilter{HostID: h.ID}), []string{m.ID, j.ID})
	same(t, "jobs of a GPU", list(gpurent.BenchJobFilter{GPUID: h.GPUs[2].ID}), []string{j.ID})
	same(t, "jobs of an instance", list(gpurent.BenchJobFilter{InstanceID: in.ID}), []string{v.ID})
	same(t, "jobs of an account", list(gpurent.BenchJobFilter{AccountID: acc.ID}), []string{v.ID})
	same(t, "limit", list(gpurent.BenchJobFilter{Limit: 2}), []string{v.ID, m.ID})
	_, err = s.ListBenchJobs(ctx, gpurent.BenchJobFilter{Limit: -1})
	wantCode(t, err, gpurent.CodeInvalid, "negative limit")
	jobs, err := s.ListBenchJobs(ctx, gpurent.BenchJobFilter{InstanceID: in.ID})
	must(t, err, "list verify job")
	same(t, "verify job round trip", jobs[0], *v)

	// Finish: the job ends, its holds go, the host is told.
	gen = hostGeneration(t, s, h.ID)
	f := &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9),
		Records:   [][]byte{[]byte(`{"probe":"gemm"}`), []byte(`{"probe":"stream"}`)},
		Summaries: []gpurent.BenchSummary{summary(h.GPUs[0].ID, "gemm", 8, 700)}}
	ok, err = s.FinishBenchJob(ctx, f)
	if err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	got, err = s.BenchJobByID(ctx, j.ID)
	must(t, err, "finished job")
	if got.State != gpurent.BenchDone || got.EndedAt == nil || !got.EndedAt.Equal(utc(at(9))) || got.Error != "" {
		t.Fatalf("finished job: %+v", got)
	}
	if g := hostGeneration(t, s, h.ID); g != gen+1 {
		t.Fatalf("generation %d after finishing, want %d", g, gen+1)
	}
	same(t, "holds after finishing", benchHolders(t, s, h.ID),
		map[string]string{h.GPUs[0].ID: "", h.GPUs[1].ID: m.ID, h.GPUs[2].ID: "", h.GPUs[3].ID: ""})
	same(t, "open jobs", list(gpurent.BenchJobFilter{OpenOnly: true}), []string{v.ID, m.ID})

	// Finishing again writes nothing and answers false.
	again := &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchFailed, Error: "late", At: at(30),
		Records:   [][]byte{[]byte("late")},
		Summaries: []gpurent.BenchSummary{summary(h.GPUs[2].ID, "gemm", 30, 1)}}
	ok, err = s.FinishBenchJob(ctx, again)
	if err != nil || ok {
		t.Fatalf("finish again: %v %v, want false", ok, err)
	}
	got2, err := s.BenchJobByID(ctx, j.ID)
	must(t, err, "job after second finish")
	same(t, "job after a second finish", got2, got)
	recs, err := s.BenchRecords(ctx, j.ID)
	must(t, err, "records")
	same(t, "records after a second finish", recs, f.Records)
	sums, err := s.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{JobID: j.ID})
	must(t, err, "summaries")
	if len(sums) != 1 || sums[0].GPUKey != h.GPUs[0].ID {
		t.Fatalf("summaries after a second finish: %+v", sums)
	}
	if g := hostGeneration(t, s, h.ID); g != gen+1 {
		t.Fatalf("a second finish bumped the generation to %d", g)
	}
	ok, err = s.SetBenchJobRunning(ctx, j.ID, at(31))
	if err != nil || ok {
		t.Fatalf("set a finished job running: %v %v, want false", ok, err)
	}

	_, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: "bench-none", State: gpurent.BenchDone})
	wantCode(t, err, gpurent.CodeNotFound, "finish an unknown job")
	_, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: m.ID, State: gpurent.BenchRunning})
	wantCode(t, err, gpurent.CodeInvalid, "finish to an open state")

	// A queued job can be canceled, with its reason.
	ok, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: m.ID, State: gpurent.BenchCanceled, Error: "operator", At: at(12)})
	if err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	got, err = s.BenchJobByID(ctx, m.ID)
	must(t, err, "canceled job")
	if got.State != gpurent.BenchCanceled || got.Error != "operator" || got.StartedAt != nil || got.EndedAt == nil {
		t.Fatalf("canceled job: %+v", got)
	}
	if benchHolders(t, s, h.ID)[h.GPUs[1].ID] != "" {
		t.Fatalf("a canceled job still holds its GPU")
	}
}

func testBenchHolds(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "holds@example.com")
	h := SeedHost(t, s, "holds", "h100-80g-sxm", 4)
	a := SeedInstance(t, s, acc.ID, "a")
	b := SeedInstance(t, s, acc.ID, "b")

	// A job holds GPUs 0 and 1: an allocation touching either is refused
	// and writes nothing.
	j := newJob(h, gpurent.BenchWeekly, 0, 1)
	must(t, s.CreateBenchJob(ctx, j), "hold 0, 1")
	err := s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 1, 2), StartReason: "start"})
	wantCode(t, err, gpurent.CodeConflict, "allocation on a held GPU")
	allocs, err := s.ListAllocations(ctx, a.ID)
	must(t, err, "list allocations")
	if len(allocs) != 0 {
		t.Fatalf("a refused allocation was stored: %+v", allocs)
	}
	if g := gpuByID(t, s, h.ID, h.GPUs[2].ID); g.AllocationID != "" {
		t.Fatalf("GPU 2 held by %q after a refused allocation", g.AllocationID)
	}
	// Inside a transaction, the refusal rolls back only itself.
	must(t, s.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.AddEvent(ctx, &gpurent.Event{InstanceID: a.ID, Kind: "placing"}); err != nil {
			return err
		}
		err := q.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 0), StartReason: "start"})
		if !gpurent.IsCode(err, gpurent.CodeConflict) {
			return fmt.Errorf("allocation on a held GPU in a transaction: %v, want conflict", err)
		}
		return q.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 2), StartReason: "start"})
	}), "re-planned claim next to a held GPU")

	// Another job on a held GPU is refused; one on free GPUs is not.
	gen := hostGeneration(t, s, h.ID)
	wantCode(t, s.CreateBenchJob(ctx, newJob(h, gpurent.BenchManual, 1, 3)), gpurent.CodeConflict, "second job on a held GPU")
	// A job on an allocated GPU is refused too.
	wantCode(t, s.CreateBenchJob(ctx, newJob(h, gpurent.BenchAfterFault, 2, 3)), gpurent.CodeConflict, "job on an allocated GPU")
	if g := hostGeneration(t, s, h.ID); g != gen {
		t.Fatalf("refused jobs bumped the generation %d → %d", gen, g)
	}
	same(t, "holds after refusals", benchHolders(t, s, h.ID),
		map[string]string{h.GPUs[0].ID: j.ID, h.GPUs[1].ID: j.ID, h.GPUs[2].ID: "", h.GPUs[3].ID: ""})
	open, err := s.ListBenchJobs(ctx, gpurent.BenchJobFilter{HostID: h.ID})
	must(t, err, "list jobs")
	if len(open) != 1 {
		t.Fatalf("refused jobs were stored: %+v", open)
	}

	// A verify job holds nothing: it runs on the customer's own GPUs, and
	// an allocation can still be made next to it.
	v := &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids(h, 2), Reason: gpurent.BenchVerify, Tier: "t1",
		InstanceID: a.ID, AccountID: acc.ID, RequestedBy: acc.ID}
	must(t, s.CreateBenchJob(ctx, v), "verify job on the instance's own GPU")
	v2 := &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids(h, 3), Reason: gpurent.BenchVerify, Tier: "t1",
		InstanceID: b.ID, AccountID: acc.ID}
	must(t, s.CreateBenchJob(ctx, v2), "verify job on a free GPU")
	if g := gpuByID(t, s, h.ID, h.GPUs[3].ID); g.BenchJobID != "" {
		t.Fatalf("verify job holds GPU 3: %q", g.BenchJobID)
	}
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 3), StartReason: "start"}),
		"allocation beside a verify job")

	// Once the job ends its GPUs can be allocated.
	ok, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchFailed, Error: "xid 79", At: at(20)})
	if err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	c := SeedInstance(t, s, acc.ID, "c")
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: c.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1), StartReason: "start"}),
		"allocation after the job ended")
}

func testBenchFinishAtomic(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "atomic", "h100-80g-sxm", 2)
	j := newJob(h, gpurent.BenchWeekly, 0, 1)
	must(t, s.CreateBenchJob(ctx, j), "create job")
	gen := hostGeneration(t, s, h.ID)
	good := summary(h.GPUs[0].ID, "gemm", 5, 700)

	check := func(what string) {
		t.Helper()
		got, err := s.BenchJobByID(ctx, j.ID)
		must(t, err, what+": read job")
		if got.State != gpurent.BenchQueued || got.EndedAt != nil {
			t.Fatalf("%s: job changed: %+v", what, got)
		}
		recs, err := s.BenchRecords(ctx, j.ID)
		must(t, err, what+": records")
		sums, err := s.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{JobID: j.ID})
		must(t, err, what+": summaries")
		certs, err := s.ListGPUCerts(ctx, "")
		must(t, err, what+": certs")
		if len(recs) != 0 || len(sums) != 0 || len(certs) != 0 {
			t.Fatalf("%s: left %d records, %d summaries, %d certs", what, len(recs), len(sums), len(certs))
		}
		same(t, what+": holds", benchHolders(t, s, h.ID), map[string]string{h.GPUs[0].ID: j.ID, h.GPUs[1].ID: j.ID})
		if g := hostGeneration(t, s, h.ID); g != gen {
			t.Fatalf("%s: generation %d, want %d", what, g, gen)
		}
	}

	// A certification of an unknown GPU fails the whole finish late.
	_, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9),
		Records: [][]byte{[]byte("r1")}, Summaries: []gpurent.BenchSummary{good},
		Certs: []gpurent.GPUCert{{GPUID: h.GPUs[0].ID, State: gpurent.CertPassed, PricePermille: 1000},
			{GPUID: "GPU-none", State: gpurent.CertPassed, PricePermille: 1000}}})
	wantCode(t, err, gpurent.CodeNotFound, "finish with a cert of an unknown GPU")
	check("after a failed finish")

	// So does a Next that cannot be created (its GPU is on another host).
	other := SeedHost(t, s, "atomic-2", "h100-80g-sxm", 1)
	_, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9),
		Records: [][]byte{[]byte("r1")}, Summaries: []gpurent.BenchSummary{good},
		Next: &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids(other, 0), Reason: gpurent.BenchRerun, Tier: "t2"}})
	wantCode(t, err, gpurent.CodeInvalid, "finish with a bad next job")
	check("after a finish with a bad next job")

	// Two summaries of one GPU, probe and setup in a job are refused.
	_, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9),
		Summaries: []gpurent.BenchSummary{good, good}})
	wantCode(t, err, gpurent.CodeConflict, "finish with a summary twice")
	check("after a finish with a summary twice")

	// Malformed input is refused before anything is written.
	nan := good
	nan.Median = math.NaN()
	inf := good
	inf.FleetRatio = math.Inf(1)
	other2 := good
	other2.JobID = "bench-other"
	for name, f := range map[string]*gpurent.BenchFinish{
		"NaN median":         {JobID: j.ID, State: gpurent.BenchDone, Summaries: []gpurent.BenchSummary{nan}},
		"infinite ratio":     {JobID: j.ID, State: gpurent.BenchDone, Summaries: []gpurent.BenchSummary{inf}},
		"summary of another": {JobID: j.ID, State: gpurent.BenchDone, Summaries: []gpurent.BenchSummary{other2}},
		"no probe":           {JobID: j.ID, State: gpurent.BenchDone, Summaries: []gpurent.BenchSummary{{GPUKey: "x"}}},
		"bad cert state":     {JobID: j.ID, State: gpurent.BenchDone, Certs: []gpurent.GPUCert{{GPUID: h.GPUs[0].ID, State: "gold"}}},
		"cert price > 1000":  {JobID: j.ID, State: gpurent.BenchDone, Certs: []gpurent.GPUCert{{GPUID: h.GPUs[0].ID, State: gpurent.CertPassed, PricePermille: 1001}}},
		"no job":             {State: gpurent.BenchDone},
	} {
		_, err := s.FinishBenchJob(ctx, f)
		wantCode(t, err, gpurent.CodeInvalid, name)
	}
	check("after malformed finishes")

	// Inside a transaction that rolls back, a finish leaves nothing.
	err = s.InTx(ctx, func(q gpurent.Queries) error {
		ok, err := q.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9),
			Records: [][]byte{[]byte("r1")}, Summaries: []gpurent.BenchSummary{good}})
		if err != nil || !ok {
			return fmt.Errorf("finish in a transaction: %v %v", ok, err)
		}
		return errTestRollback
	})
	if err != errTestRollback {
		t.Fatalf("rolled-back transaction: %v", err)
	}
	check("after a rolled-back finish")

	// The finish that works writes it all, and the certs with it.
	lastRun := at(9)
	f := &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9),
		Records: [][]byte{[]byte("r1")}, Summaries: []gpurent.BenchSummary{good},
		Certs: []gpurent.GPUCert{{GPUID: h.GPUs[0].ID, State: gpurent.CertPassed, RatioPermille: 1003, PricePermille: 1000,
			Reason: "PASS on every probe", LastJobID: j.ID, LastRunAt: &lastRun, UpdatedAt: at(9)}}}
	ok, err := s.FinishBenchJob(ctx, f)
	if err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	certs, err := s.ListGPUCerts(ctx, h.ID)
	must(t, err, "certs")
	if len(certs) != 1 || certs[0].State != gpurent.CertPassed || certs[0].HostID != h.ID || certs[0].TypeID != "h100-80g-sxm" {
		t.Fatalf("certs after finish: %+v", certs)
	}
	sums, err := s.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{JobID: j.ID})
	must(t, err, "summaries")
	if len(sums) != 1 || sums[0].HostID != h.ID || sums[0].GPUType != "h100-80g-sxm" || sums[0].JobID != j.ID {
		t.Fatalf("summary did not take the job's host and type: %+v", sums)
	}
}

func testBenchFinishNext(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "next@example.com")
	in := SeedInstance(t, s, acc.ID, "waiting")
	h := SeedHost(t, s, "next", "h100-80g-sxm", 2)
	j := newJob(h, gpurent.BenchWeekly, 0, 1)
	must(t, s.CreateBenchJob(ctx, j), "create job")
	gen := hostGeneration(t, s, h.ID)

	next := &gpurent.BenchJob{HostID: h.ID, GPUIDs: ids(h, 1, 0), Reason: gpurent.BenchRerun, Tier: "t2", CreatedAt: at(10)}
	ok, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(9), Next: next})
	if err != nil || !ok {
		t.Fatalf("finish with a re-run: %v %v", ok, err)
	}
	if !strings.HasPrefix(next.ID, gpurent.PrefixBenchJob+"-") || next.State != gpurent.BenchQueued ||
		!slices.Equal(next.GPUIDs, ids(h, 0, 1)) {
		t.Fatalf("next job not filled: %+v", next)
	}
	same(t, "the re-run took over the holds", benchHolders(t, s, h.ID),
		map[string]string{h.GPUs[0].ID: next.ID, h.GPUs[1].ID: next.ID})
	got, err := s.BenchJobByID(ctx, next.ID)
	must(t, err, "next job")
	same(t, "next job round trip", got, next)
	if g := hostGeneration(t, s, h.ID); g <= gen {
		t.Fatalf("generation %d after a finish with a re-run, want above %d", g, gen)
	}
	wantCode(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: ids(h, 0), StartReason: "start"}),
		gpurent.CodeConflict, "allocation on a GPU the re-run holds")

	// A re-run that cannot hold its GPUs (one is allocated meanwhile)
	// fails the whole finish: the job stays open.
	ok, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: next.ID, State: gpurent.BenchDone, At: at(11)})
	if err != nil || !ok {
		t.Fatalf("finish the re-run: %v %v", ok, err)
	}
	al := &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: ids(h, 0), StartReason: "start"}
	must(t, s.CreateAllocation(ctx, al), "allocate GPU 0")
	k := newJob(h, gpurent.BenchManual, 1)
	must(t, s.CreateBenchJob(ctx, k), "job on GPU 1")
	_, err = s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: k.ID, State: gpurent.BenchDone, At: at(12),
		Next: newJob(h, gpurent.BenchRerun, 0, 1)})
	wantCode(t, err, gpurent.CodeConflict, "re-run on an allocated GPU")
	got, err = s.BenchJobByID(ctx, k.ID)
	must(t, err, "job after a refused re-run")
	if got.State != gpurent.BenchQueued {
		t.Fatalf("a finish whose re-run was refused still ended the job: %+v", got)
	}
}

func testBenchRecords(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "records", "h100-80g-sxm", 1)
	j := newJob(h, gpurent.BenchManual, 0)
	must(t, s.CreateBenchJob(ctx, j), "create job")
	empty, err := s.BenchRecords(ctx, j.ID)
	must(t, err, "records of an open job")
	if len(empty) != 0 {
		t.Fatalf("records before finish: %q", empty)
	}
	// Enough lines to span several INSERT batches, raw bytes included.
	lines := make([][]byte, 1203)
	for i := range lines {
		lines[i] = []byte(fmt.Sprintf(`{"seq":%d,"probe":"gemm","value":%d.5}`, i, 1000-i))
	}
	lines[7] = []byte{}
	lines[8] = []byte{0x00, 0xff, '\n', 0xc3}
	ok, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: gpurent.BenchDone, At: at(3), Records: lines})
	if err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	got, err := s.BenchRecords(ctx, j.ID)
	must(t, err, "records")
	if len(got) != len(lines) {
		t.Fatalf("%d records back, want %d", len(got), len(lines))
	}
	for i := range lines {
		if !bytes.Equal(got[i], lines[i]) {
			t.Fatalf("record %d: %q, want %q", i, got[i], lines[i])
		}
	}
	_, err = s.BenchRecords(ctx, "bench-none")
	wantCode(t, err, gpurent.CodeNotFound, "records of an unknown job")
}

// finishWith creates a job of reason on h's GPUs idx created at sec and
// finishes it with state and summaries at sec+1.
func finishWith(t *testing.T, s gpurent.Store, h *gpurent.Host, reason gpurent.BenchReason, state gpurent.BenchJobState,
	sec int, sums []gpurent.BenchSummary, idx ...int) *gpurent.BenchJob {
	t.Helper()
	ctx := t.Context()
	j := newJob(h, reason, idx...)
	j.CreatedAt = at(sec)
	if reason == gpurent.BenchVerify {
		acc := SeedAccount(t, s, fmt.Sprintf("v%d@example.com", sec))
		in := SeedInstance(t, s, acc.ID, "v")
		j.InstanceID, j.AccountID = in.ID, acc.ID
	}
	must(t, s.CreateBenchJob(ctx, j), "create job")
	ok, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: j.ID, State: state, At: at(sec + 1), Summaries: sums})
	if err != nil || !ok {
		t.Fatalf("finish %s: %v %v", reason, ok, err)
	}
	return j
}

func testBenchSummaries(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "sums", "h100-80g-sxm", 2)
	a := SeedHost(t, s, "sums-a100", "a100-80g-sxm", 1)
	g0, g1, pair, x0 := h.GPUs[0].ID, h.GPUs[1].ID, h.GPUs[0].ID+","+h.GPUs[1].ID, a.GPUs[0].ID

	s1 := summary(g0, "gemm", 10, 700)
	s1.Provisional, s1.Synthetic, s1.Outcome = true, true, "FAIL"
	s2 := summary(g1, "gemm", 10, 705)
	s3 := summary(pair, "nccl", 11, 380)
	weekly := finishWith(t, s, h, gpurent.BenchWeekly, gpurent.BenchDone, 9, []gpurent.BenchSummary{s1, s2, s3}, 0, 1)

	s4 := summary(g0, "gemm", 20, 702)
	rerun := finishWith(t, s, h, gpurent.BenchRerun, gpurent.BenchDone, 19, []gpurent.BenchSummary{s4}, 0)
	s5 := summary(g0, "gemm", 30, 650)
	verify := finishWith(t, s, h, gpurent.BenchVerify, gpurent.BenchDone, 29, []gpurent.BenchSummary{s5}, 0)
	s6 := summary(g0, "gemm", 40, 10)
	failed := finishWith(t, s, h, gpurent.BenchManual, gpurent.BenchFailed, 39, []gpurent.BenchSummary{s6}, 0)
	s7 := summary(x0, "gemm", 15, 300)
	other := finishWith(t, s, a, gpurent.BenchOnboarding, gpurent.BenchDone, 14, []gpurent.BenchSummary{s7}, 0)

	// Stored as written, with the job's id, host and type filled in.
	fill := func(b gpurent.BenchSummary, j *gpurent.BenchJob) gpurent.BenchSummary {
		b.JobID, b.HostID, b.GPUType, b.At = j.ID, j.HostID, j.GPUType, utc(b.At)
		return b
	}
	w1, w2, w3 := fill(s1, weekly), fill(s2, weekly), fill(s3, weekly)
	r4, v5, f6, o7 := fill(s4, rerun), fill(s5, verify), fill(s6, failed), fill(s7, other)

	list := func(f gpurent.BenchSummaryFilter) []gpurent.BenchSummary {
		t.Helper()
		got, err := s.ListBenchSummaries(ctx, f)
		must(t, err, fmt.Sprintf("list summaries %+v", f))
		return got
	}
	same(t, "every summary, oldest first", list(gpurent.BenchSummaryFilter{}), []gpurent.BenchSummary{w1, w2, w3, o7, r4, v5, f6})
	same(t, "of a job", list(gpurent.BenchSummaryFilter{JobID: weekly.ID}), []gpurent.BenchSummary{w1, w2, w3})
	same(t, "of a GPU", list(gpurent.BenchSummaryFilter{GPUKey: g0}), []gpurent.BenchSummary{w1, r4, v5, f6})
	same(t, "of a type", list(gpurent.BenchSummaryFilter{GPUType: "a100-80g-sxm"}), []gpurent.BenchSummary{o7})
	same(t, "since", list(gpurent.BenchSummaryFilter{Since: at(20)}), []gpurent.BenchSummary{r4, v5, f6})
	same(t, "no verify", list(gpurent.BenchSummaryFilter{GPUKey: g0, NoVerify: true}), []gpurent.BenchSummary{w1, r4, f6})
	// Latest: per GPU key and probe, the newest of a done, non-verify job.
	same(t, "latest", list(gpurent.BenchSummaryFilter{LatestOnly: true}), []gpurent.BenchSummary{w2, w3, o7, r4})
	same(t, "latest of a type", list(gpurent.BenchSummaryFilter{LatestOnly: true, GPUType: "h100-80g-sxm"}),
		[]gpurent.BenchSummary{w2, w3, r4})
	same(t, "latest of a GPU", list(gpurent.BenchSummaryFilter{LatestOnly: true, GPUKey: g0}), []gpurent.BenchSummary{r4})
	same(t, "still latest of a job", list(gpurent.BenchSummaryFilter{LatestOnly: true, JobID: weekly.ID}),
		[]gpurent.BenchSummary{w2, w3})
	same(t, "latest since", list(gpurent.BenchSummaryFilter{LatestOnly: true, Since: at(15)}), []gpurent.BenchSummary{o7, r4})
	if got := list(gpurent.BenchSummaryFilter{LatestOnly: true, JobID: verify.ID}); len(got) != 0 {
		t.Fatalf("latest of a verify job: %+v", got)
	}
}

func testGPUCerts(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "certs", "h100-80g-sxm", 3)
	b := SeedHost(t, s, "certs-b", "a100-80g-sxm", 1)

	g := gpuByID(t, s, h.ID, h.GPUs[1].ID)
	if g.PricePermille != 0 || g.Degraded || g.BenchJobID != "" {
		t.Fatalf("uncertified GPU reads %+v", g)
	}
	last := at(5)
	c := &gpurent.GPUCert{GPUID: h.GPUs[1].ID, State: gpurent.CertDegraded, RatioPermille: 850, PricePermille: 850,
		Reason: "gemm at 0.85 of the fleet median", LastJobID: "bench-1", LastRunAt: &last, UpdatedAt: at(6)}
	must(t, s.SetGPUCert(ctx, c), "set degraded")
	if c.HostID != h.ID || c.TypeID != "h100-80g-sxm" || !c.UpdatedAt.Equal(utc(at(6))) || c.UpdatedAt.Location() != time.UTC {
		t.Fatalf("cert not filled: %+v", c)
	}
	g = gpuByID(t, s, h.ID, h.GPUs[1].ID)
	if g.PricePermille != 850 || !g.Degraded {
		t.Fatalf("degraded GPU reads price %d degraded %v", g.PricePermille, g.Degraded)
	}
	hosts, err := s.ListHosts(ctx)
	must(t, err, "list hosts")
	for _, lh := range hosts {
		for _, lg := range lh.GPUs {
			want := lg.ID == h.GPUs[1].ID
			if lg.Degraded != want || (lg.PricePermille == 850) != want {
				t.Fatalf("ListHosts GPU %s: price %d degraded %v", lg.ID, lg.PricePermille, lg.Degraded)
			}
		}
	}

	c0 := &gpurent.GPUCert{GPUID: h.GPUs[0].ID, State: gpurent.CertDelisted, RatioPermille: 600, PricePermille: 1000,
		Reason: "confirmed FAIL", UpdatedAt: at(7)}
	must(t, s.SetGPUCert(ctx, c0), "set delisted")
	cb := &gpurent.GPUCert{GPUID: b.GPUs[0].ID, State: gpurent.CertWarn, RatioPermille: 960, PricePermille: 1000, UpdatedAt: at(8)}
	must(t, s.SetGPUCert(ctx, cb), "set warn")
	if g := gpuByID(t, s, h.ID, h.GPUs[0].ID); g.Degraded || g.PricePermille != 1000 {
		t.Fatalf("delisted GPU reads %+v", g)
	}

	certs, err := s.ListGPUCerts(ctx, h.ID)
	must(t, err, "certs of a host")
	same(t, "certs of a host, by GPU index", certs, []gpurent.GPUCert{*c0, *c})
	all, err := s.ListGPUCerts(ctx, "")
	must(t, err, "every cert")
	wantAll := []gpurent.GPUCert{*c0, *c, *cb}
	if b.ID < h.ID {
		wantAll = []gpurent.GPUCert{*cb, *c0, *c}
	}
	same(t, "every cert, by host and index", all, wantAll)

	// Replace: the GPU is certified again at full price.
	c.State, c.PricePermille, c.RatioPermille, c.Reason, c.LastRunAt, c.UpdatedAt = gpurent.CertPassed, 1000, 1002, "PASS", nil, at(9)
	must(t, s.SetGPUCert(ctx, c), "replace")
	certs, err = s.ListGPUCerts(ctx, h.ID)
	must(t, err, "certs after replace")
	same(t, "replaced cert", certs, []gpurent.GPUCert{*c0, *c})
	if g := gpuByID(t, s, h.ID, h.GPUs[1].ID); g.Degraded || g.PricePermille != 1000 {
		t.Fatalf("re-certified GPU reads %+v", g)
	}

	wantCode(t, s.SetGPUCert(ctx, &gpurent.GPUCert{GPUID: "GPU-none", State: gpurent.CertPassed, PricePermille: 1000}),
		gpurent.CodeNotFound, "cert of an unknown GPU")
	for name, bad := range map[string]*gpurent.GPUCert{
		"no GPU":         {State: gpurent.CertPassed},
		"unknown state":  {GPUID: h.GPUs[2].ID, State: "platinum"},
		"negative price": {GPUID: h.GPUs[2].ID, State: gpurent.CertDegraded, PricePermille: -1},
		"price > 1000":   {GPUID: h.GPUs[2].ID, State: gpurent.CertDegraded, PricePermille: 1200},
		"negative ratio": {GPUID: h.GPUs[2].ID, State: gpurent.CertDegraded, RatioPermille: -5},
	} {
		wantCode(t, s.SetGPUCert(ctx, bad), gpurent.CodeInvalid, name)
	}
	certs, err = s.ListGPUCerts(ctx, "host-none")
	must(t, err, "certs of an unknown host")
	if len(certs) != 0 {
		t.Fatalf("certs of an unknown host: %+v", certs)
	}
}

func testCertSettings(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	got, err := s.CertSettings(ctx)
	must(t, err, "default settings")
	same(t, "defaults", *got, gpurent.CertSettings{Policy: gpurent.PolicyDelist, Every: 7 * 24 * time.Hour, Tier: "t2"})

	cs := &gpurent.CertSettings{Policy: gpurent.PolicyDegrade, Every: 72*time.Hour + 1500*time.Millisecond, Tier: "t1", UpdatedAt: at(3)}
	must(t, s.SaveCertSettings(ctx, cs), "save")
	got, err = s.CertSettings(ctx)
	must(t, err, "read saved")
	same(t, "saved settings", got, cs)
	if !cs.UpdatedAt.Equal(utc(at(3))) || cs.UpdatedAt.Location() != time.UTC {
		t.Fatalf("UpdatedAt not normalised: %v", cs.UpdatedAt)
	}

	off := &gpurent.CertSettings{Policy: gpurent.PolicyDelist, Every: 0, Tier: "t2"}
	must(t, s.SaveCertSettings(ctx, off), "turn the schedule off")
	if off.UpdatedAt.IsZero() {
		t.Fatalf("a zero UpdatedAt was not set to now")
	}
	got, err = s.CertSettings(ctx)
	must(t, err, "read after second save")
	same(t, "schedule off", got, off)

	for name, bad := range map[string]*gpurent.CertSettings{
		"unknown policy":   {Policy: "shrug", Every: time.Hour, Tier: "t2"},
		"negative every":   {Policy: gpurent.PolicyDelist, Every: -time.Hour, Tier: "t2"},
		"unknown tier":     {Policy: gpurent.PolicyDelist, Every: time.Hour, Tier: "t3"},
		"everything empty": {},
	} {
		wantCode(t, s.SaveCertSettings(ctx, bad), gpurent.CodeInvalid, name)
	}
	got, err = s.CertSettings(ctx)
	must(t, err, "read after refusals")
	same(t, "settings after refusals", got, off)
}

func testPricePermille(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "price@example.com")
	h := SeedHost(t, s, "price", "h100-80g-sxm", 3)
	a := SeedInstance(t, s, acc.ID, "degraded")
	b := SeedInstance(t, s, acc.ID, "full")
	c := SeedInstance(t, s, acc.ID, "own")

	al := &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 0), StartedAt: at(1), StartReason: "start", PricePermille: 850}
	must(t, s.CreateAllocation(ctx, al), "allocate at 850‰")
	got, err := s.AllocationByID(ctx, al.ID)
	must(t, err, "read")
	same(t, "allocation round trip", got, al)
	full := &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 1), StartedAt: at(1), StartReason: "start"}
	must(t, s.CreateAllocation(ctx, full), "allocate at full price")
	open, err := s.OpenAllocation(ctx, b.ID)
	must(t, err, "open allocation")
	if open.PricePermille != 0 {
		t.Fatalf("full-price allocation reads %d‰", open.PricePermille)
	}
	own := &gpurent.Allocation{InstanceID: c.ID, HostID: h.ID, GPUIDs: ids(h, 2), StartedAt: at(1), StartReason: "start", PricePermille: 900}
	must(t, s.CreateAllocation(ctx, own), "allocate at 900‰")
	for _, p := range []int{-1, 1001} {
		err := s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, StartReason: "start", PricePermille: p})
		wantCode(t, err, gpurent.CodeInvalid, fmt.Sprintf("allocation at %d‰", p))
	}

	// A run takes the share it is given, or else its allocation's. Both
	// ingest paths (one event, a batch) do.
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ev := func(id string, al *gpurent.Allocation) gpurent.RunEvent {
		return gpurent.RunEvent{ID: id, HostID: h.ID, Kind: gpurent.RunStarted, InstanceID: al.InstanceID, AllocationID: al.ID, StartedAt: t0}
	}
	e1 := ev("pp-1", al)
	_, err = s.IngestRunEvent(ctx, &e1, "h1", &gpurent.UsageRun{AccountID: acc.ID, TypeID: "h100-80g-sxm", GPUCount: 1}, t0)
	must(t, err, "ingest a run of the 850‰ allocation")
	res, err := s.IngestRunEvents(ctx, []gpurent.RunEvent{ev("pp-2", full), ev("pp-3", own)}, []string{"h2", "h3"},
		[]*gpurent.UsageRun{{AccountID: acc.ID, TypeID: "h100-80g-sxm", GPUCount: 1},
			{AccountID: acc.ID, TypeID: "h100-80g-sxm", GPUCount: 1, PricePermille: 700}}, t0)
	must(t, err, "ingest a batch")
	for i, r := range res {
		must(t, r.Err, fmt.Sprintf("batch event %d", i))
	}
	runs, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{AccountID: acc.ID})
	must(t, err, "list runs")
	byAlloc := map[string]int{}
	for _, r := range runs {
		byAlloc[r.AllocationID] = r.PricePermille
	}
	same(t, "runs' price shares", byAlloc, map[string]int{al.ID: 850, full.ID: 0, own.ID: 700})
}

// testBenchAllocationRace has 120 goroutines race, in several rounds, to
// hold overlapping sets of one host's 8 GPUs: half by CreateAllocation,
// half by CreateBenchJob (some inside InTx). No GPU may end up held by an
// allocation and a job, or by two of either; every loser gets
// CodeConflict and leaves nothing; a loser's set always overlaps a
// winner's.
func testBenchAllocationRace(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	const workers = 120
	acc := SeedAccount(t, s, "brace@example.com")
	h := SeedHost(t, s, "brace", "h100-80g-sxm", 8)
	insts := make([]*gpurent.Instance, workers)
	must(t, s.InTx(ctx, func(q gpurent.Queries) error {
		for i := range insts {
			insts[i] = SeedInstance(t, q, acc.ID, fmt.Sprintf("w%03d", i))
		}
		return nil
	}), "create instances")
	jobsWon, allocsWon := 0, 0

	round := func(name string, set func(i int) []int) {
		t.Helper()
		errs := make([]error, workers)
		allocs := make([]*gpurent.Allocation, workers)
		jobs := make([]*gpurent.BenchJob, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			if i%2 == 0 {
				allocs[i] = &gpurent.Allocation{InstanceID: insts[i].ID, HostID: h.ID, GPUIDs: ids(h, set(i)...), StartReason: "start"}
			} else {
				jobs[i] = newJob(h, gpurent.BenchWeekly, set(i)...)
			}
			wg.Go(func() {
				<-start
				switch {
				case i%2 == 0:
					errs[i] = s.CreateAllocation(ctx, allocs[i])
				case i%4 == 1:
					errs[i] = s.CreateBenchJob(ctx, jobs[i])
				default:
					errs[i] = s.InTx(ctx, func(q gpurent.Queries) error { return q.CreateBenchJob(ctx, jobs[i]) })
				}
			})
		}
		close(start)
		wg.Wait()

		holder := map[string]string{} // GPU → the winner's allocation or job id
		gpusOf := func(i int) []string {
			if allocs[i] != nil {
				return allocs[i].GPUIDs
			}
			return jobs[i].GPUIDs
		}
		var winners []int
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, i)
				id := ""
				if allocs[i] != nil {
					id = allocs[i].ID
					allocsWon++
				} else {
					id = jobs[i].ID
					jobsWon++
				}
				for _, g := range gpusOf(i) {
					if w, ok := holder[g]; ok {
						t.Fatalf("%s: GPU %s won by %s and %s", name, g, w, id)
					}
					holder[g] = id
				}
			case gpurent.IsCode(err, gpurent.CodeConflict):
			default:
				t.Fatalf("%s: worker %d got %v (code %q), want success or conflict", name, i, err, gpurent.ErrorCode(err))
			}
		}
		if len(winners) == 0 {
			t.Fatalf("%s: nobody won", name)
		}
		for i, err := range errs {
			if err == nil {
				continue
			}
			overlaps := slices.ContainsFunc(gpusOf(i), func(g string) bool { _, ok := holder[g]; return ok })
			if !overlaps {
				t.Fatalf("%s: worker %d was refused %v although no winner holds any: %v", name, i, gpusOf(i), err)
			}
		}

		// The database agrees: each GPU held by its winner alone.
		got, err := s.HostByID(ctx, h.ID)
		must(t, err, name+": read host")
		for _, g := range got.GPUs {
			w := holder[g.ID]
			if g.AllocationID != "" && g.BenchJobID != "" {
				t.Fatalf("%s: GPU %s held by allocation %s and job %s", name, g.ID, g.AllocationID, g.BenchJobID)
			}
			if have := g.AllocationID + g.BenchJobID; have != w {
				t.Fatalf("%s: GPU %s held by %q, want %q", name, g.ID, have, w)
			}
		}
		open, err := s.ListBenchJobs(ctx, gpurent.BenchJobFilter{HostID: h.ID, OpenOnly: true})
		must(t, err, name+": open jobs")
		nJobs := 0
		for _, w := range winners {
			if jobs[w] != nil {
				nJobs++
			}
		}
		if len(open) != nJobs {
			t.Fatalf("%s: %d open jobs stored, %d won (a lost job must write nothing)", name, len(open), nJobs)
		}
		for _, w := range winners {
			if allocs[w] != nil {
				must(t, s.EndAllocation(ctx, allocs[w].ID, at(59), "stop"), name+": end")
				continue
			}
			ok, err := s.FinishBenchJob(ctx, &gpurent.BenchFinish{JobID: jobs[w].ID, State: gpurent.BenchDone, At: at(59)})
			if err != nil || !ok {
				t.Fatalf("%s: finish %s: %v %v", name, jobs[w].ID, ok, err)
			}
		}
		t.Logf("%s: %d of %d claims won", name, len(winners), workers)
	}

	round("all eight", func(int) []int { return []int{0, 1, 2, 3, 4, 5, 6, 7} })
	round("ring pairs", func(i int) []int { return []int{i % 8, (i + 1) % 8} })
	rng := rand.New(rand.NewPCG(7, 11))
	sets := make([][]int, workers)
	for i := range sets {
		sets[i] = rng.Perm(8)[:1+rng.IntN(4)]
	}
	round("random sets", func(i int) []int { return sets[i] })
	for r := range 3 {
		round(fmt.Sprintf("single GPU %d", r), func(i int) []int { return []int{r} })
	}
	t.Logf("won overall: %d allocations, %d benchmark jobs", allocsWon, jobsWon)

	// Losers left nothing: one allocation per allocation won.
	n := 0
	for _, in := range insts {
		list, err := s.ListAllocations(ctx, in.ID)
		must(t, err, "list allocations")
		n += len(list)
	}
	if n != allocsWon {
		t.Fatalf("%d allocations stored, %d won", n, allocsWon)
	}
	jobs, err := s.ListBenchJobs(ctx, gpurent.BenchJobFilter{HostID: h.ID, Limit: 10000})
	must(t, err, "list jobs")
	if len(jobs) != jobsWon {
		t.Fatalf("%d jobs stored, %d won", len(jobs), jobsWon)
	}
}
