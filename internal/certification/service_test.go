package certification

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/transparency"
)

const h100 = "h100-80g-sxm"

type env struct {
	t     testing.TB
	ctx   context.Context
	st    gpurent.Store
	svc   *Service
	clk   *clocktest.Clock
	hosts []*gpurent.Host
	op    *gpurent.Account
}

func newEnv(t *testing.T, st gpurent.Store, hosts, gpus int) *env {
	t.Helper()
	storetest.SeedCatalog(t, st)
	e := &env{t: t, ctx: context.Background(), st: st, clk: clocktest.New(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))}
	for i := range hosts {
		e.hosts = append(e.hosts, storetest.SeedHost(t, st, "node-"+string(rune('a'+i)), h100, gpus))
	}
	e.touch()
	svc, err := New(Config{Store: st, AcceptSynthetic: true, Now: e.clk.Now, RetryAfter: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	e.op = storetest.SeedAccount(t, st, "ops@example.com")
	e.op.Role = gpurent.RoleOperator
	return e
}

// touch marks every host as just heard from.
func (e *env) touch() {
	for _, h := range e.hosts {
		if err := e.st.TouchHost(e.ctx, h.ID, e.clk.Now()); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) tick() {
	e.t.Helper()
	e.touch()
	if err := e.svc.Tick(e.ctx); err != nil {
		e.t.Fatalf("tick: %v", err)
	}
}

func (e *env) openJobs() []gpurent.BenchJob {
	e.t.Helper()
	jobs, err := e.st.ListBenchJobs(e.ctx, gpurent.BenchJobFilter{OpenOnly: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return jobs
}

// records makes a run's records for each GPU of a job: each GPU at its
// factor of the healthy reference (1 when not listed).
func records(t testing.TB, typeID string, gpus []string, factor map[string]float64) [][]byte {
	t.Helper()
	var out [][]byte
	for i, g := range gpus {
		f := factor[g]
		if f == 0 {
			f = 1
		}
		for _, probe := range []string{benchjudge.ProbeGEMMBF16, benchjudge.ProbeGEMMFP8, benchjudge.ProbeResNet50Train} {
			for _, r := range benchjudge.Synthesize(typeID, g, probe, f, 5, int64(i+1)) {
				b, err := benchjudge.EncodeRecord(r)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no synthetic records: the reference lost its H100 figures?")
	}
	return out
}

// run answers an open job as its agent would: running, then done with
// records at the given factors.
func (e *env) run(j gpurent.BenchJob, factor map[string]float64) {
	e.t.Helper()
	if err := e.svc.Report(e.ctx, j.HostID, Result{JobID: j.ID, State: gpurent.BenchRunning}); err != nil {
		e.t.Fatalf("running: %v", err)
	}
	e.clk.Advance(time.Minute)
	if err := e.svc.Report(e.ctx, j.HostID, Result{JobID: j.ID, State: gpurent.BenchDone,
		Records: records(e.t, j.GPUType, j.GPUIDs, factor)}); err != nil {
		e.t.Fatalf("done: %v", err)
	}
}

func (e *env) cert(gpu string) gpurent.GPUCert {
	e.t.Helper()
	certs, err := e.svc.certMap(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	c, ok := certs[gpu]
	if !ok {
		e.t.Fatalf("GPU %s has no certification", gpu)
	}
	return c
}

func (e *env) gpu(id string) gpurent.GPU {
	e.t.Helper()
	for _, h := range e.hosts {
		got, err := e.st.HostByID(e.ctx, h.ID)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, g := range got.GPUs {
			if g.ID == id {
				return g
			}
		}
	}
	e.t.Fatalf("no GPU %s", id)
	return gpurent.GPU{}
}

// markRunning marks the instance running on the host, as its agent's
// report would, and answers it as stored.
func (e *env) markRunning(in *gpurent.Instance, hostID string) *gpurent.Instance {
	e.t.Helper()
	in, err := e.st.InstanceByID(e.ctx, in.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	in.State, in.HostID = gpurent.StateRunning, hostID
	if err := e.st.UpdateInstance(e.ctx, in); err != nil {
		e.t.Fatal(err)
	}
	return in
}

func stores(t *testing.T) map[string]func(testing.TB) gpurent.Store {
	return map[string]func(testing.TB) gpurent.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres}
}

// TestSlowCardFlaggedRerunDelisted: a fleet of healthy H100s and one at
// 85%: onboarding benchmarks every idle card, the slow one FAILs, is held
// and re-run at once, the re-run confirms it, and it is delisted (out of
// placement, on the report with why); the others stay listed.
func TestSlowCardFlaggedRerunDelisted(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), 2, 2)
			healthyHost, slowHost := e.hosts[0], e.hosts[1]
			slow := slowHost.GPUs[1].ID
			e.tick()
			jobs := e.openJobs()
			if len(jobs) != 2 {
				t.Fatalf("onboarding: %d jobs, want one per host: %+v", len(jobs), jobs)
			}
			for _, j := range jobs {
				if j.Reason != gpurent.BenchOnboarding || len(j.GPUIDs) != 2 {
					t.Fatalf("job %+v: want onboarding of both GPUs", j)
				}
			}
			// Held GPUs are not free while their job is open.
			if g := e.gpu(slow); g.BenchJobID == "" {
				t.Fatalf("GPU %s under an onboarding job is not held: %+v", slow, g)
			}
			byHost := map[string]gpurent.BenchJob{}
			for _, j := range jobs {
				byHost[j.HostID] = j
			}
			e.run(byHost[healthyHost.ID], nil)
			e.run(byHost[slowHost.ID], map[string]float64{slow: 0.85})

			c := e.cert(slow)
			if c.State != gpurent.CertPending || c.RatioPermille < 840 || c.RatioPermille > 860 {
				t.Fatalf("slow card after its first run: %+v, want held for a re-run at about 0.85", c)
			}
			rerun := e.openJobs()
			if len(rerun) != 1 || rerun[0].Reason != gpurent.BenchRerun || len(rerun[0].GPUIDs) != 1 || rerun[0].GPUIDs[0] != slow {
				t.Fatalf("want one re-run of %s, got %+v", slow, rerun)
			}
			if g := e.gpu(slow); g.BenchJobID != rerun[0].ID {
				t.Fatalf("the re-run does not hold %s: %+v", slow, g)
			}
			for _, g := range append(healthyHost.GPUs, slowHost.GPUs[0]) {
				if c := e.cert(g.ID); c.State != gpurent.CertPassed {
					t.Fatalf("healthy card %s: %+v, want certified", g.ID, c)
				}
				if got := e.gpu(g.ID); got.Health != gpurent.GPUHealthy || got.BenchJobID != "" {
					t.Fatalf("healthy card %s not listed after its run: %+v", g.ID, got)
				}
			}

			e.run(rerun[0], map[string]float64{slow: 0.85})
			c = e.cert(slow)
			if c.State != gpurent.CertDelisted || !strings.Contains(c.Reason, "gemm") {
				t.Fatalf("slow card after the re-run: %+v, want delisted with why", c)
			}
			if g := e.gpu(slow); g.Health != gpurent.GPUDegraded || g.BenchJobID != "" {
				t.Fatalf("delisted card still placeable: %+v", g)
			}
			if open := e.openJobs(); len(open) != 0 {
				t.Fatalf("jobs left open: %+v", open)
			}

			rep, err := e.svc.Transparency(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Types) != 1 || rep.Types[0].ID != h100 || rep.Types[0].GPUs != 4 || rep.Types[0].Delisted != 1 || rep.Types[0].Certified != 3 {
				t.Fatalf("report types: %+v", rep.Types)
			}
			if !rep.Synthetic {
				t.Fatal("the report of synthetic results does not say so")
			}
			if len(rep.Delisted) != 1 || rep.Delisted[0].Hash != transparency.HashUUID(slow) || rep.Delisted[0].State != "delisted" {
				t.Fatalf("delisted on the report: %+v", rep.Delisted)
			}
			var bf16 bool
			for _, p := range rep.Types[0].Probes {
				if p.Probe == benchjudge.ProbeGEMMBF16 {
					bf16 = true
					if p.Spec == nil || p.Spec.Value != 989 || p.Cards != 4 || p.FleetMedian < 780 || p.FleetMedian > 810 {
						t.Fatalf("BF16 on the report: %+v (spec %+v)", p, p.Spec)
					}
				}
			}
			if !bf16 {
				t.Fatalf("no BF16 probe on the report: %+v", rep.Types[0].Probes)
			}
			for _, h := range rep.Types[0].Hosts {
				for _, g := range h.GPUs {
					if strings.HasPrefix(g.Hash, "GPU-") || len(g.Hash) != 16 {
						t.Fatalf("the report publishes a UUID or a bad hash: %q", g.Hash)
					}
					if len(g.Results) == 0 || g.LastRunAt == nil {
						t.Fatalf("GPU %s has no results on the report: %+v", g.Hash, g)
					}
				}
			}
		})
	}
}

// TestSlowCardFoundWhenPeersArrive: the slow card is measured first, when
// its only peer is itself and one healthy card (a WARN at most); once the
// rest of the fleet is measured the fleet median moves, the card is held
// for a re-run when idle, and the re-run delists it.
func TestSlowCardFoundWhenPeersArrive(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), 2, 2)
	slow := e.hosts[0].GPUs[0].ID
	e.tick()
	byHost := map[string]gpurent.BenchJob{}
	for _, j := range e.openJobs() {
		byHost[j.HostID] = j
	}
	e.run(byHost[e.hosts[0].ID], map[string]float64{slow: 0.85})
	if c := e.cert(slow); c.State != gpurent.CertWarn {
		t.Fatalf("judged against one peer only: %+v, want WARN", c)
	}
	e.run(byHost[e.hosts[1].ID], nil)
	if c := e.cert(slow); c.State != gpurent.CertPending {
		t.Fatalf("after the peers: %+v, want held for a re-run", c)
	}
	e.tick() // before RetryAfter: not yet
	if open := e.openJobs(); len(open) != 0 {
		t.Fatalf("re-run before RetryAfter: %+v", open)
	}
	e.clk.Advance(10 * time.Minute)
	e.tick()
	open := e.openJobs()
	if len(open) != 1 || open[0].Reason != gpurent.BenchRerun || open[0].GPUIDs[0] != slow {
		t.Fatalf("want a re-run of %s, got %+v", slow, open)
	}
	e.run(open[0], map[string]float64{slow: 0.85})
	if c := e.cert(slow); c.State != gpurent.CertDelisted {
		t.Fatalf("after the re-run: %+v, want delisted", c)
	}
}

// TestDegradePolicy: with policy degrade, a confirmed FAIL lists the card
// as degraded at its measured share of the price; it stays healthy.
func TestDegradePolicy(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), 1, 4)
	if _, err := e.svc.SaveSettings(e.ctx, e.op, gpurent.CertSettings{Policy: gpurent.PolicyDegrade, Every: 7 * 24 * time.Hour, Tier: "t2"}); err != nil {
		t.Fatal(err)
	}
	slow := e.hosts[0].GPUs[2].ID
	e.tick()
	open := e.openJobs()
	if len(open) != 1 {
		t.Fatalf("jobs: %+v", open)
	}
	e.run(open[0], map[string]float64{slow: 0.85})
	open = e.openJobs()
	if len(open) != 1 || open[0].Reason != gpurent.BenchRerun {
		t.Fatalf("want a re-run: %+v", open)
	}
	e.run(open[0], map[string]float64{slow: 0.85})
	c := e.cert(slow)
	if c.State != gpurent.CertDegraded || c.PricePermille < 840 || c.PricePermille > 860 {
		t.Fatalf("degraded card: %+v, want listed at about 85%%", c)
	}
	g := e.gpu(slow)
	if g.Health != gpurent.GPUHealthy || !g.Degraded || g.PricePermille != c.PricePermille {
		t.Fatalf("degraded card as placement sees it: %+v", g)
	}
}

// TestRerunThatPassesClears: a provisional FAIL that the re-run does not
// confirm certifies the card.
func TestRerunThatPassesClears(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), 1, 3)
	g := e.hosts[0].GPUs[0].ID
	e.tick()
	e.run(e.openJobs()[0], map[string]float64{g: 0.8})
	open := e.openJobs()
	if len(open) != 1 {
		t.Fatalf("want a re-run: %+v", open)
	}
	e.run(open[0], nil)
	if c := e.cert(g); c.State != gpurent.CertPassed {
		t.Fatalf("after a passing re-run: %+v", c)
	}
}

// TestBadResultsFailTheJob: records of a GPU that is not in the job, of
// another type, synthetic ones on a control plane that refuses them, and
// garbage fail the job with a clear error, and the GPUs are released.
func TestBadResultsFailTheJob(t *testing.T) {
	cases := []struct {
		name  string
		lines func(j gpurent.BenchJob) [][]byte
		want  string
	}{
		{"other GPU", func(j gpurent.BenchJob) [][]byte {
			return records(t, h100, []string{"GPU-stranger"}, nil)
		}, "not in the job"},
		{"other type", func(j gpurent.BenchJob) [][]byte {
			return records(t, "a100-80g-sxm", j.GPUIDs, nil)
		}, "type"},
		{"garbage", func(j gpurent.BenchJob) [][]byte { return [][]byte{[]byte(`{"schema":1,"probe":"nope"}`)} }, "records"},
		{"nothing", func(j gpurent.BenchJob) [][]byte { return nil }, "no measurement"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, storetest.SQLite(t), 1, 1)
			e.tick()
			j := e.openJobs()[0]
			if err := e.svc.Report(e.ctx, j.HostID, Result{JobID: j.ID, State: gpurent.BenchDone, Records: c.lines(j)}); err != nil {
				t.Fatal(err)
			}
			got, err := e.st.BenchJobByID(e.ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != gpurent.BenchFailed || !strings.Contains(got.Error, c.want) {
				t.Fatalf("job: %s %q, want failed saying %q", got.State, got.Error, c.want)
			}
			if g := e.gpu(j.GPUIDs[0]); g.BenchJobID != "" {
				t.Fatalf("GPU still held after the job failed: %+v", g)
			}
			// Finished: the agent's resend is not_found.
			err = e.svc.Report(e.ctx, j.HostID, Result{JobID: j.ID, State: gpurent.BenchDone})
			if !gpurent.IsCode(err, gpurent.CodeNotFound) {
				t.Fatalf("report on a finished job: %v, want not_found", err)
			}
		})
	}

	t.Run("synthetic refused", func(t *testing.T) {
		e := newEnv(t, storetest.SQLite(t), 1, 1)
		e.svc.cfg.AcceptSynthetic = false
		e.tick()
		j := e.openJobs()[0]
		if err := e.svc.Report(e.ctx, j.HostID, Result{JobID: j.ID, State: gpurent.BenchDone, Records: records(t, h100, j.GPUIDs, nil)}); err != nil {
			t.Fatal(err)
		}
		got, _ := e.st.BenchJobByID(e.ctx, j.ID)
		if got.State != gpurent.BenchFailed || !strings.Contains(got.Error, "synthetic") {
			t.Fatalf("synthetic records certified a card: %+v", got)
		}
	})

	t.Run("another host's job", func(t *testing.T) {
		e := newEnv(t, storetest.SQLite(t), 2, 1)
		e.tick()
		j := e.openJobs()[0]
		other := e.hosts[0].ID
		if other == j.HostID {
			other = e.hosts[1].ID
		}
		err := e.svc.Report(e.ctx, other, Result{JobID: j.ID, State: gpurent.BenchRunning})
		if !gpurent.IsCode(err, gpurent.CodeNotFound) {
			t.Fatalf("another host reported on the job: %v", err)
		}
	})
}

// TestScheduleRules: stale jobs fail, a silent or cordoned host is not
// scheduled, a rented GPU is not touched, the weekly schedule re-runs idle
// cards, and an operator's run names what it skipped.
func TestScheduleRules(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), 1, 2)
	h := e.hosts[0]
	// A silent host gets nothing.
	e.clk.Advance(5 * time.Minute)
	if err := e.svc.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if open := e.openJobs(); len(open) != 0 {
		t.Fatalf("a silent host got jobs: %+v", open)
	}
	// A rented GPU is left alone; the other is benchmarked.
	acc := storetest.SeedAccount(t, e.st, "c@example.com")
	in := storetest.SeedInstance(t, e.st, acc.ID, "busy")
	if err := e.st.CreateAllocation(e.ctx, &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: []string{h.GPUs[0].ID},
		StartReason: "start"}); err != nil {
		t.Fatal(err)
	}
	e.tick()
	open := e.openJobs()
	if len(open) != 1 || len(open[0].GPUIDs) != 1 || open[0].GPUIDs[0] != h.GPUs[1].ID {
		t.Fatalf("want one job on the idle GPU only: %+v", open)
	}
	// A held GPU cannot be rented.
	err := e.st.CreateAllocation(e.ctx, &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: []string{h.GPUs[1].ID}, StartReason: "start"})
	if !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Fatalf("renting a GPU under a benchmark: %v, want conflict", err)
	}
	// A job with no answer fails after its timeout; the GPU is released.
	e.clk.Advance(3 * time.Hour)
	e.tick()
	got, _ := e.st.BenchJobByID(e.ctx, open[0].ID)
	if got.State != gpurent.BenchFailed || !strings.Contains(got.Error, "no result") {
		t.Fatalf("stale job: %+v", got)
	}
	// Not re-run before RetryAfter... then onboarding again.
	if o := e.openJobs(); len(o) != 0 {
		t.Fatalf("rescheduled at once: %+v", o)
	}
	e.clk.Advance(10 * time.Minute)
	e.tick()
	open = e.openJobs()
	if len(open) != 1 {
		t.Fatalf("onboarding not retried: %+v", open)
	}
	e.run(open[0], nil)
	if c := e.cert(h.GPUs[1].ID); c.State != gpurent.CertPassed {
		t.Fatalf("cert: %+v", c)
	}
	// A week later the idle card is run again.
	e.clk.Advance(7*24*time.Hour + time.Minute)
	e.tick()
	open = e.openJobs()
	if len(open) != 1 || open[0].Reason != gpurent.BenchWeekly {
		t.Fatalf("weekly: %+v", open)
	}
	// An operator's run on the host: the rented GPU is skipped and named,
	// the other is under the weekly job already.
	jobs, skipped, err := e.svc.RunNow(e.ctx, e.op, RunRequest{Hosts: []string{h.Name}, Tier: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 || len(skipped) != 2 || !strings.Contains(strings.Join(skipped, " "), "rented") {
		t.Fatalf("run now: jobs %+v skipped %v", jobs, skipped)
	}
	if _, _, err := e.svc.RunNow(e.ctx, e.op, RunRequest{GPUs: []string{"GPU-nope"}}); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("run on an unknown GPU: %v", err)
	}
	cust := storetest.SeedAccount(t, e.st, "x@example.com")
	if _, _, err := e.svc.RunNow(e.ctx, cust, RunRequest{Hosts: []string{h.Name}}); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Fatalf("a customer started a run: %v", err)
	}
	// Canceling releases the GPU.
	if _, err := e.svc.Cancel(e.ctx, e.op, open[0].ID); err != nil {
		t.Fatal(err)
	}
	if g := e.gpu(h.GPUs[1].ID); g.BenchJobID != "" {
		t.Fatalf("canceled job still holds: %+v", g)
	}
	// Cordoned hosts are not scheduled.
	if err := e.st.SetHostState(e.ctx, h.ID, gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	e.tick()
	if o := e.openJobs(); len(o) != 0 {
		t.Fatalf("a cordoned host got jobs: %+v", o)
	}
}

// TestVerify: a customer's verify runs on their running instance without
// holding its GPUs; a FAIL is re-run at once and, confirmed, flags the GPU
// for an idle run; customers see only their own runs.
func TestVerify(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), 1, 4)
	h := e.hosts[0]
	// Certify the fleet first: the verify is judged against it.
	e.tick()
	e.run(e.openJobs()[0], nil)
	acc := storetest.SeedAccount(t, e.st, "lab@example.com")
	in := storetest.SeedInstance(t, e.st, acc.ID, "train")
	gpu := h.GPUs[3].ID
	if err := e.st.CreateAllocation(e.ctx, &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: []string{gpu}, StartReason: "start"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Verify(e.ctx, acc, in.ID, ""); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Fatalf("verify of a pending instance: %v, want conflict", err)
	}
	in = e.markRunning(in, h.ID)
	other := storetest.SeedAccount(t, e.st, "other@example.com")
	if _, err := e.svc.Verify(e.ctx, other, in.ID, ""); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("verify of another's instance: %v", err)
	}
	j, err := e.svc.Verify(e.ctx, acc, in.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if j.Tier != "t1" || j.Reason != gpurent.BenchVerify || len(j.GPUIDs) != 1 || j.GPUIDs[0] != gpu {
		t.Fatalf("verify job: %+v", j)
	}
	if _, err := e.svc.Verify(e.ctx, acc, in.ID, ""); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Fatalf("second verify: %v", err)
	}
	if _, err := e.svc.Job(e.ctx, other, j.ID); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("another customer read the verify: %v", err)
	}
	e.run(*j, map[string]float64{gpu: 0.8})
	v, err := e.svc.Job(e.ctx, acc, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var failed bool
	for _, r := range v.Results {
		if r.Outcome == "FAIL" && r.Provisional && r.FleetMedian > 0 {
			failed = true
		}
	}
	if !failed {
		t.Fatalf("verify results: %+v", v.Results)
	}
	open := e.openJobs()
	if len(open) != 1 || open[0].Reason != gpurent.BenchVerify || open[0].InstanceID != in.ID {
		t.Fatalf("want the verify re-run: %+v", open)
	}
	e.run(open[0], map[string]float64{gpu: 0.8})
	// A confirmed verify FAIL only flags the card for an idle run.
	if g := e.gpu(gpu); g.Health != gpurent.GPUHealthy {
		t.Fatalf("a verify took the GPU out: %s", g.Health)
	}
	if flags, err := e.st.ListIdleRunFlags(e.ctx, h.ID); err != nil || len(flags) != 1 || flags[0].GPUID != gpu {
		t.Fatalf("idle-run flags: %+v %v", flags, err)
	}
	// A verify never moves the fleet median or the card's certification.
	if c := e.cert(gpu); c.State != gpurent.CertPassed {
		t.Fatalf("a verify changed the certification: %+v", c)
	}
	list, err := e.svc.Jobs(e.ctx, acc, gpurent.BenchJobFilter{InstanceID: in.ID})
	if err != nil || len(list) != 2 {
		t.Fatalf("verify list: %v %+v", err, list)
	}
}

// TestRelist: a repaired GPU is held under a benchmark before it is listed
// again; after a reset-class fault the reason says so.
func TestRelist(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), 1, 2)
	h := e.hosts[0]
	g := h.GPUs[0].ID
	if err := e.st.SetGPUHealth(e.ctx, g, gpurent.GPUCordoned, "Xid 79"); err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateIncident(e.ctx, &gpurent.Incident{HostID: h.ID, GPUID: g, Class: gpurent.FaultReset,
		Attribution: gpurent.AttrHost, Cause: "Xid 79", State: gpurent.IncidentOpen, StartedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	held, err := e.svc.Relist(e.ctx, h.ID, g, e.op.ID)
	if err != nil || !held {
		t.Fatalf("relist: %v %v", held, err)
	}
	open := e.openJobs()
	if len(open) != 1 || open[0].Reason != gpurent.BenchAfterFault || open[0].GPUIDs[0] != g {
		t.Fatalf("relist job: %+v", open)
	}
	if got := e.gpu(g); got.BenchJobID != open[0].ID {
		t.Fatalf("relisted GPU not held: %+v", got)
	}
}

// incidents records what reaches the incident service.
type incidents struct {
	mu     sync.Mutex
	events []string // GPU UUIDs
}

func (r *incidents) Ingest(_ context.Context, _ *gpurent.Host, rep agentproto.Report) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range rep.Health {
		r.events = append(r.events, ev.UUID)
	}
	return nil, nil
}

func (r *incidents) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.events) }

// TestVerifyOnlyFlags: a customer loads their own GPU during a verify so
// that it measures slow (here: scripted at 0.8 of its peers), twice. The
// verify changes no certification, listing or price, sends nothing to the
// incident service (so no incident and no SLA credit) and flags the card;
// no run starts while it is rented; once the rental ends the idle run
// alone decides: a card that was only loaded passes and stays certified
// at the full price, a card slow for real is delisted. Both stores.
func TestVerifyOnlyFlags(t *testing.T) {
	for name, open := range stores(t) {
		for _, idle := range []float64{1, 0.8} {
			t.Run(fmt.Sprintf("%s/idle-%.1f", name, idle), func(t *testing.T) {
				e := newEnv(t, open(t), 1, 4)
				rec := &incidents{}
				withIncidents := e.svc.cfg
				withIncidents.Incidents = rec
				svc, err := New(withIncidents)
				if err != nil {
					t.Fatal(err)
				}
				e.svc = svc
				h := e.hosts[0]
				e.tick()
				e.run(e.openJobs()[0], nil)
				acc := storetest.SeedAccount(t, e.st, "loader@example.com")
				in := storetest.SeedInstance(t, e.st, acc.ID, "loaded")
				gpu := h.GPUs[2].ID
				alloc := &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: []string{gpu}, StartedAt: e.clk.Now(), StartReason: "start"}
				if err := e.st.CreateAllocation(e.ctx, alloc); err != nil {
					t.Fatal(err)
				}
				in = e.markRunning(in, h.ID)
				before := e.cert(gpu)
				j, err := e.svc.Verify(e.ctx, acc, in.ID, "")
				if err != nil {
					t.Fatal(err)
				}
				e.run(*j, map[string]float64{gpu: 0.8})
				again := e.openJobs()
				if len(again) != 1 || again[0].Reason != gpurent.BenchVerify {
					t.Fatalf("want the verify's re-run: %+v", again)
				}
				e.run(again[0], map[string]float64{gpu: 0.8})

				if n := rec.count(); n != 0 {
					t.Fatalf("a verify sent %d events to the incident service (an incident, a credit)", n)
				}
				if incs, err := e.st.ListIncidents(e.ctx, gpurent.IncidentFilter{}); err != nil || len(incs) != 0 {
					t.Fatalf("incidents after a verify: %+v %v", incs, err)
				}
				if c := e.cert(gpu); c.State != before.State || c.PricePermille != before.PricePermille || c.LastJobID != before.LastJobID {
					t.Fatalf("a verify changed the certification: %+v, was %+v", c, before)
				}
				if g := e.gpu(gpu); g.Health != gpurent.GPUHealthy {
					t.Fatalf("a verify changed the GPU's health: %s", g.Health)
				}
				flags, err := e.st.ListIdleRunFlags(e.ctx, "")
				if err != nil || len(flags) != 1 || flags[0].GPUID != gpu || flags[0].JobID != again[0].ID {
					t.Fatalf("idle-run flags: %+v %v", flags, err)
				}
				// Rented: nothing runs on it.
				e.clk.Advance(time.Hour)
				e.tick()
				for _, o := range e.openJobs() {
					if slices.Contains(o.GPUIDs, gpu) {
						t.Fatalf("a job on the rented card: %+v", o)
					}
				}
				// The rental ends: the idle run comes at once and decides.
				if err := e.st.EndAllocation(e.ctx, alloc.ID, e.clk.Now(), "stop"); err != nil {
					t.Fatal(err)
				}
				e.tick()
				jobs := e.openJobs()
				if len(jobs) != 1 || jobs[0].Reason != gpurent.BenchRerun || !slices.Equal(jobs[0].GPUIDs, []string{gpu}) {
					t.Fatalf("want the idle run of the flagged card: %+v", jobs)
				}
				e.run(jobs[0], map[string]float64{gpu: idle})
				c := e.cert(gpu)
				if idle == 1 {
					if c.State != gpurent.CertPassed || c.PricePermille != 1000 || rec.count() != 0 {
						t.Fatalf("a card only loaded by its renter, idle: %+v, %d incident events", c, rec.count())
					}
				} else if c.State != gpurent.CertDelisted || rec.count() != 1 {
					t.Fatalf("a card slow for real, idle: %+v, %d incident events", c, rec.count())
				}
				if flags, err := e.st.ListIdleRunFlags(e.ctx, ""); err != nil || len(flags) != 0 {
					t.Fatalf("flags after the idle run: %+v %v", flags, err)
				}
			})
		}
	}
}
