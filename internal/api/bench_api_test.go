package api

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/benchjudge"
)

// benchRecords makes a run's records for the GPUs: each at its factor of
// the healthy reference (1 when not listed).
func benchRecords(t testing.TB, typ string, gpus []string, factor map[string]float64) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for i, g := range gpus {
		f := factor[g]
		if f == 0 {
			f = 1
		}
		for _, probe := range []string{benchjudge.ProbeGEMMBF16, benchjudge.ProbeResNet50Train} {
			for _, r := range benchjudge.Synthesize(typ, g, probe, f, 5, int64(i+7)) {
				b, err := benchjudge.EncodeRecord(r)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
		}
	}
	return out
}

// benchAgent plays a host's agent for its benchmark jobs: it reads the
// desired state and answers every job there, running then done.
func (e *env) benchAgent(h agentHost, factor map[string]float64) []agentproto.BenchJob {
	e.t.Helper()
	d := decode[agentproto.Desired](e.t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), http.StatusOK)
	for _, j := range d.Bench {
		w := e.do(req{method: "POST", path: agentproto.PathBench, token: h.token,
			body: agentproto.BenchResult{JobID: j.JobID, State: agentproto.BenchRunning, StartedAt: time.Now().UTC()}})
		if w.Code != http.StatusNoContent {
			e.t.Fatalf("running: %d %s", w.Code, w.Body.String())
		}
		w = e.do(req{method: "POST", path: agentproto.PathBench, token: h.token,
			body: agentproto.BenchResult{JobID: j.JobID, State: agentproto.BenchDone, EndedAt: time.Now().UTC(),
				Records: benchRecords(e.t, j.GPUType, j.GPUUUIDs, factor)}})
		if w.Code != http.StatusNoContent {
			e.t.Fatalf("done: %d %s", w.Code, w.Body.String())
		}
		// A resend of a finished job is 404: the agent drops it.
		w = e.do(req{method: "POST", path: agentproto.PathBench, token: h.token,
			body: agentproto.BenchResult{JobID: j.JobID, State: agentproto.BenchDone}})
		if w.Code != http.StatusNotFound {
			e.t.Fatalf("resend: %d %s", w.Code, w.Body.String())
		}
	}
	return d.Bench
}

func TestTransparencyPublicAndOperatorRuns(t *testing.T) {
	e := newEnv(t)
	h := e.typedHost("h-a", "h100-80g-sxm", 3)
	op := e.operator()
	cust := e.customer()

	// The report is public, before anything was measured too.
	rep := decode[apiv1.Transparency](t, e.do(req{method: "GET", path: "/api/v1/transparency"}), http.StatusOK)
	if len(rep.Types) != 1 || rep.Types[0].Uncertified != 3 {
		t.Fatalf("report before runs: %+v", rep.Types)
	}

	// Customers cannot start runs; operators can.
	problem(t, e.do(req{method: "POST", path: "/api/v1/bench/jobs", token: cust.token, body: apiv1.BenchRunRequest{Hosts: []string{h.id}}}),
		http.StatusForbidden, gpurent.CodeForbidden)
	problem(t, e.do(req{method: "POST", path: "/api/v1/bench/jobs", token: op.token, body: apiv1.BenchRunRequest{}}),
		http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: "/api/v1/bench/jobs", token: op.token, body: apiv1.BenchRunRequest{Hosts: []string{h.id}, Tier: "t9"}}),
		http.StatusBadRequest, gpurent.CodeInvalid)
	run := decode[apiv1.BenchRunResponse](t, e.do(req{method: "POST", path: "/api/v1/bench/jobs", token: op.token,
		body: apiv1.BenchRunRequest{Hosts: []string{h.id}, Tier: "t1"}}), http.StatusAccepted)
	if len(run.Jobs) != 1 || len(run.Jobs[0].GPUs) != 3 || run.Jobs[0].State != "queued" || run.Jobs[0].Reason != "manual" {
		t.Fatalf("run: %+v", run)
	}
	jobs := e.benchAgent(h, map[string]float64{"GPU-h-a-02": 0.8})
	if len(jobs) != 1 || jobs[0].JobID != run.Jobs[0].ID || jobs[0].Tier != "t1" {
		t.Fatalf("desired benchmark jobs: %+v", jobs)
	}
	j := decode[apiv1.BenchJob](t, e.do(req{method: "GET", path: "/api/v1/bench/jobs/" + run.Jobs[0].ID, token: op.token}), http.StatusOK)
	if j.State != "done" || len(j.Results) != 6 {
		t.Fatalf("job after the run: %+v", j)
	}
	certs := decode[[]apiv1.GPUCert](t, e.do(req{method: "GET", path: "/api/v1/gpus/certification", token: op.token}), http.StatusOK)
	states := map[string]string{}
	for _, c := range certs {
		states[c.GPU] = c.State
	}
	if states["GPU-h-a-00"] != "certified" || states["GPU-h-a-02"] != "rerun" {
		t.Fatalf("certifications: %+v", certs)
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/gpus/certification", token: cust.token}), http.StatusForbidden, gpurent.CodeForbidden)
	problem(t, e.do(req{method: "GET", path: "/api/v1/bench/jobs/" + run.Jobs[0].ID, token: cust.token}), http.StatusNotFound, gpurent.CodeNotFound)

	// The re-run of the provisional FAIL is in the desired state at once.
	rerun := e.benchAgent(h, map[string]float64{"GPU-h-a-02": 0.8})
	if len(rerun) != 1 || len(rerun[0].GPUUUIDs) != 1 || rerun[0].GPUUUIDs[0] != "GPU-h-a-02" {
		t.Fatalf("re-run: %+v", rerun)
	}

	rep = decode[apiv1.Transparency](t, e.do(req{method: "GET", path: "/api/v1/transparency"}), http.StatusOK)
	if len(rep.Delisted) != 1 || rep.Types[0].Delisted != 1 || rep.Types[0].Certified != 2 {
		t.Fatalf("report after the runs: delisted %+v, type %+v", rep.Delisted, rep.Types[0])
	}

	// The page in both languages, the CSV, and gzip.
	w := e.do(req{method: "GET", path: "/transparency?lang=zh"})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `lang="zh-CN"`) || w.Header().Get("Content-Security-Policy") == "" {
		t.Fatalf("page zh: %d %s", w.Code, w.Header())
	}
	problem(t, e.do(req{method: "GET", path: "/transparency?lang=fr"}), http.StatusBadRequest, gpurent.CodeInvalid)
	w = e.do(req{method: "GET", path: "/api/v1/transparency.csv"})
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s", w.Code, w.Header())
	}
	rows, err := csv.NewReader(bytes.NewReader(w.Body.Bytes())).ReadAll()
	if err != nil || len(rows) < 1+6 {
		t.Fatalf("csv rows: %d %v", len(rows), err)
	}
	w = e.do(req{method: "GET", path: "/transparency?lang=en", headers: map[string]string{"Accept-Encoding": "gzip, br"}})
	if w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("page not gzipped: %s", w.Header())
	}
	zr, err := gzip.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil || !strings.Contains(string(page), "</html>") {
		t.Fatalf("gzipped page: %v", err)
	}
	if w := e.do(req{method: "GET", path: "/transparency", headers: map[string]string{"Accept-Encoding": "gzip;q=0"}}); w.Header().Get("Content-Encoding") != "" {
		t.Fatal("gzipped although refused")
	}

	// Settings.
	problem(t, e.do(req{method: "PUT", path: "/api/v1/bench/settings", token: op.token,
		body: apiv1.CertSettings{Policy: "burn", EveryHours: 168, Tier: "t2"}}), http.StatusBadRequest, gpurent.CodeInvalid)
	st := decode[apiv1.CertSettings](t, e.do(req{method: "PUT", path: "/api/v1/bench/settings", token: op.token,
		body: apiv1.CertSettings{Policy: "degrade", EveryHours: 24, Tier: "t1"}}), http.StatusOK)
	if st.Policy != "degrade" || st.EveryHours != 24 {
		t.Fatalf("settings: %+v", st)
	}
	if got := decode[apiv1.CertSettings](t, e.do(req{method: "GET", path: "/api/v1/bench/settings", token: op.token}), http.StatusOK); got != st {
		t.Fatalf("settings read back %+v, want %+v", got, st)
	}
}

func TestVerifyAPI(t *testing.T) {
	e := newEnv(t)
	h := e.typedHost("h-v", "h100-80g-sxm", 2)
	cust, other := e.customer(), e.customer()
	in := e.rentTyped(cust, "h100-80g-sxm", 1, "")
	// Not running yet.
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/verify", token: cust.token, body: "{}"}),
		http.StatusConflict, gpurent.CodeConflict)
	e.converge(h)
	// The fleet (the other card) is certified first: a verify is judged
	// against it.
	op := e.operator()
	decode[apiv1.BenchRunResponse](t, e.do(req{method: "POST", path: "/api/v1/bench/jobs", token: op.token,
		body: apiv1.BenchRunRequest{Hosts: []string{h.id}}}), http.StatusAccepted)
	e.benchAgent(h, nil)
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/verify", token: other.token, body: "{}"}),
		http.StatusNotFound, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/verify", token: cust.token,
		body: apiv1.VerifyRequest{Tier: "t7"}}), http.StatusBadRequest, gpurent.CodeInvalid)
	j := decode[apiv1.BenchJob](t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/verify", token: cust.token,
		headers: map[string]string{"Idempotency-Key": "verify-1"}}), http.StatusAccepted)
	if j.Reason != "verify" || j.Tier != "t1" || j.InstanceID != in.ID || j.HostID != "" {
		t.Fatalf("verify job as the customer sees it: %+v", j)
	}
	// The same key answers the same job.
	again := decode[apiv1.BenchJob](t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/verify", token: cust.token,
		headers: map[string]string{"Idempotency-Key": "verify-1"}}), http.StatusAccepted)
	if again.ID != j.ID {
		t.Fatalf("idempotent verify made job %s then %s", j.ID, again.ID)
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/bench/jobs/" + j.ID, token: other.token}), http.StatusNotFound, gpurent.CodeNotFound)
	e.benchAgent(h, nil)
	list := decode[[]apiv1.BenchJob](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/verify", token: cust.token}), http.StatusOK)
	if len(list) != 1 || list[0].State != "done" || len(list[0].Results) == 0 {
		t.Fatalf("verify list: %+v", list)
	}
	for _, r := range list[0].Results {
		if r.Outcome != "PASS" || r.FleetMedian <= 0 {
			t.Fatalf("verify result of a healthy card against itself: %+v", r)
		}
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/bench/jobs", token: cust.token}), http.StatusForbidden, gpurent.CodeForbidden)
}
