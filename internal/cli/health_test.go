package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/sla"
)

// Fixed answers of the health routes.
var (
	fxIncEnd = t0.Add(10*time.Minute + 5*time.Second)
	fxInc    = apiv1.Incident{ID: "inc-1", InstanceID: "ins-1", Class: "reset", Attribution: "host",
		Cause: "Xid 79: GPU has fallen off the bus", State: "resolved", StartedAt: t0, EndedAt: &fxIncEnd,
		DurationSeconds: 605, CreditFen: 1234, Entries: []apiv1.IncidentEntry{
			{At: t0, Kind: "detected", Message: "Xid 79 on GPU 0"},
			{At: t0.Add(time.Minute), Kind: "failover", Message: "failed over to host gpu-02"},
			{At: fxIncEnd, Kind: "resolved", Message: "running again"},
		}}
	fxIncOpen = apiv1.Incident{ID: "inc-2", InstanceID: "ins-2", Class: "app", Attribution: "tenant",
		Cause: "Xid 13: graphics engine exception", State: "open", StartedAt: fxNow.Add(-90 * time.Second),
		DurationSeconds: 90, Entries: []apiv1.IncidentEntry{}}
	fxMonth = apiv1.InstanceIncidents{InstanceID: "ins-1", MonthStart: time.Date(2025, 2, 28, 16, 0, 0, 0, time.UTC),
		AvailabilityBP: 9995, Availability: "99.95%", CreditsFen: 1234, Incidents: []apiv1.Incident{fxInc}}
	fxFleetHealth = apiv1.GPUHealthList{GPUs: []apiv1.GPUHealth{
		{HostID: "host-1", HostName: "gpu-01", UUID: "GPU-aaaa", Index: 0, Type: "h100-80g-sxm", Health: "healthy",
			Recent: []apiv1.GPUEvent{}, OpenIncidents: []apiv1.Incident{},
			Sample: &apiv1.GPUSample{At: fxNow, UtilPercent: 97, TemperatureC: 71, ECCSingleBit: 3}},
		{HostID: "host-1", HostName: "gpu-01", UUID: "GPU-cccc", Index: 1, Type: "h100-80g-sxm", Health: "failed",
			Reason: "reset-class faults twice within 7 days", RMACandidate: true,
			Recent: []apiv1.GPUEvent{
				{ID: "gev-2", At: fxNow.Add(-5 * time.Minute), Kind: "xid", Xid: 79, Detail: "fallen off the bus"},
				{ID: "gev-1", At: fxNow.Add(-48 * time.Hour), Kind: "ecc_dbe"},
			},
			OpenIncidents: []apiv1.Incident{{ID: "inc-9", Class: "reset", Attribution: "host", State: "open", StartedAt: fxNow.Add(-5 * time.Minute)}},
			Sample:        &apiv1.GPUSample{At: fxNow, TemperatureC: 40, ECCDoubleBit: 2, XidLast: 79}},
	}}
)

// healthAPI fakes the health routes and records what it was sent.
type healthAPI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []got
	terms sla.Terms
}

func newHealthAPI(t *testing.T) *healthAPI {
	f := &healthAPI{terms: sla.DefaultTerms()}
	f.terms.HourRuleMinutes = 9
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/instances/{id}/incidents", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("id") {
		case "ins-1":
			reply(w, 200, fxMonth)
		case "ins-quiet":
			m := fxMonth
			m.InstanceID, m.AvailabilityBP, m.Availability, m.CreditsFen, m.Incidents = "ins-quiet", 10000, "100.00%", 0, []apiv1.Incident{}
			reply(w, 200, m)
		default:
			problem(w, 404, "not_found", `instance "`+r.PathValue("id")+`" not found`)
		}
	})
	mux.HandleFunc("GET /api/v1/incidents", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, apiv1.IncidentList{Incidents: []apiv1.Incident{fxIncOpen, fxInc}})
	})
	mux.HandleFunc("PUT /api/v1/instances/{id}/failover", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.FailoverRequest
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		inst := fxRunning
		inst.Events = nil
		reply(w, 200, apiv1.FailoverResult{Instance: inst, Failover: req.Policy})
	})
	mux.HandleFunc("GET /api/v1/gpus/health", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxFleetHealth) })
	mux.HandleFunc("GET /api/v1/rma", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, apiv1.GPUHealthList{GPUs: fxFleetHealth.GPUs[1:]})
	})
	gpuAction := func(health string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("uuid") != "GPU-aaaa" {
				problem(w, 404, "not_found", `GPU "`+r.PathValue("uuid")+`" not found`)
				return
			}
			g := fxFleetHealth.GPUs[0]
			g.Health = health
			if health == "cordoned" {
				var req apiv1.CordonGPURequest
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &req)
				g.Reason = "operator ops@example.com: " + req.Reason
			}
			reply(w, 200, g)
		}
	}
	mux.HandleFunc("POST /api/v1/gpus/{uuid}/cordon", gpuAction("cordoned"))
	mux.HandleFunc("POST /api/v1/gpus/{uuid}/repair", gpuAction("healthy"))
	mux.HandleFunc("POST /api/v1/faults", func(w http.ResponseWriter, r *http.Request) {
		var fault apiv1.Fault
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &fault)
		if fault.HostID == "host-real" {
			problem(w, 503, "unavailable", "fault injection is for the demo's fake GPUs; this fleet has real ones")
			return
		}
		if fault.Kind == "" && fault.Xid > 0 {
			fault.Kind = "xid"
		}
		reply(w, 202, fault)
	})
	mux.HandleFunc("GET /api/v1/sla", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, f.terms) })
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		f.mu.Lock()
		f.reqs = append(f.reqs, got{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get("Idempotency-Key"), b})
		f.mu.Unlock()
		if r.URL.Path != "/api/v1/sla" && r.Header.Get("Authorization") != "Bearer tok-env" {
			problem(w, 401, "unauthorized", "missing or invalid token")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// sent returns the requests with method to path.
func (f *healthAPI) sent(method, path string) []got {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []got
	for _, r := range f.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (f *healthAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func healthHarness(t *testing.T) (*harness, *healthAPI) {
	f := newHealthAPI(t)
	h := newHarness(t)
	h.vars["GPURENT_SERVER"] = f.srv.URL
	h.vars["GPURENT_TOKEN"] = "tok-env"
	return h, f
}

func TestIncidentsOfAnInstance(t *testing.T) {
	h, _ := healthHarness(t)
	s := h.ok("incidents", "ins-1")
	contains(t, "month", s, "Instance:", "ins-1", "since 2025-02-28 16:00:00 UTC", "Availability:", "99.95% of the time it was meant to run",
		"SLA credits:", "¥12.34", "inc-1  Xid 79: GPU has fallen off the bus, platform fault (not billed, credited)",
		"Class:", "reset", "2025-03-01 08:00:00 UTC → 2025-03-01 08:10:05 UTC (10m5s)", "Credit:",
		"detected", "Xid 79 on GPU 0", "failover", "failed over to host gpu-02", "resolved", "running again", "gpurent sla")

	s = h.ok("incidents", "ins-quiet")
	contains(t, "quiet month", s, "100.00%", "¥0.00", "No incidents this month.")

	var rep apiv1.InstanceIncidents
	if err := json.Unmarshal([]byte(h.ok("incidents", "ins-1", "-o", "json")), &rep); err != nil || rep.AvailabilityBP != 9995 || len(rep.Incidents[0].Entries) != 3 {
		t.Fatalf("JSON %+v: %v", rep, err)
	}

	r := h.run("", "incidents", "ins-other")
	if r.code != 1 || !strings.Contains(r.stderr, `error: instance "ins-other" not found (not_found)`) {
		t.Fatalf("another's instance: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestIncidentsOfTheAccount(t *testing.T) {
	h, f := healthHarness(t)
	s := h.ok("incidents")
	contains(t, "list", s, "ID", "INSTANCE", "CHARGED TO", "inc-2", "ins-2", "1m30s so far", "open", "caused by the program (billed)",
		"Xid 13: graphics engine exception", "inc-1", "10m5s", "¥12.34", "platform fault", "gpurent incidents ID")
	if len(f.sent("GET", "/api/v1/incidents")) != 1 {
		t.Fatalf("requests %+v", f.reqs)
	}
	if r := h.run("", "incidents", "a", "b"); r.code != 2 {
		t.Fatalf("two ids: exit %d", r.code)
	}
}

func TestFailover(t *testing.T) {
	h, f := healthHarness(t)
	s := h.ok("failover", "ins-1", "--wait")
	contains(t, "wait", s, "Instance train (ins-1)", "stays where it is", "Failover: wait.")
	s = h.ok("failover", "ins-1", "--auto")
	contains(t, "auto", s, "moves to healthy GPUs", "Failover: auto.")
	puts := f.sent("PUT", "/api/v1/instances/ins-1/failover")
	if len(puts) != 2 || string(puts[0].Body) != `{"policy":"wait"}` || string(puts[1].Body) != `{"policy":"auto"}` {
		t.Fatalf("PUTs %+v", puts)
	}
	before := f.count()
	for _, args := range [][]string{{"failover", "ins-1"}, {"failover", "ins-1", "--auto", "--wait"}, {"failover", "--wait"}} {
		if r := h.run("", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %s)", args, r.code, r.stderr)
		}
	}
	if f.count() != before {
		t.Fatal("a refused command called the API")
	}
}

func TestGPUsHealth(t *testing.T) {
	h, f := healthHarness(t)
	s := h.ok("gpus", "--health")
	contains(t, "health", s, "HOST", "LAST XID", "ECC SBE/DBE", "OPEN INCIDENTS", "RMA",
		"GPU-aaaa", "healthy", "3/0", "71°C", "GPU-cccc", "failed", "79, 5m ago", "0/2", "1: reset",
		"GPU-cccc (gpu-01 #1): reset-class faults twice within 7 days")
	lines := strings.Split(s, "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[2]), "RMA") || strings.HasSuffix(strings.TrimSpace(lines[1]), "RMA") {
		t.Errorf("RMA mark on the wrong GPU:\n%s", s)
	}
	if len(f.sent("GET", "/api/v1/gpus/health")) != 1 || len(f.sent("GET", "/api/v1/gpu-types")) != 0 {
		t.Fatalf("requests %+v", f.reqs)
	}
	var list apiv1.GPUHealthList
	if err := json.Unmarshal([]byte(h.ok("gpus", "--health", "-o", "json")), &list); err != nil || len(list.GPUs) != 2 || !list.GPUs[1].RMACandidate {
		t.Fatalf("JSON %+v: %v", list, err)
	}
}

func TestGPUCordonAndRepair(t *testing.T) {
	h, f := healthHarness(t)
	if r := h.run("", "gpu", "cordon", "GPU-aaaa"); r.code != 2 || !strings.Contains(r.stderr, "--reason is required") {
		t.Fatalf("cordon without a reason: exit %d, %s", r.code, r.stderr)
	}
	if f.count() != 0 {
		t.Fatal("a refused cordon called the API")
	}
	s := h.ok("gpu", "cordon", "GPU-aaaa", "--reason", "fan noise")
	contains(t, "cordon", s, "GPU GPU-aaaa (gpu-01 #0) is cordoned: operator ops@example.com: fan noise.")
	if c := f.sent("POST", "/api/v1/gpus/GPU-aaaa/cordon"); len(c) != 1 || string(c[0].Body) != `{"reason":"fan noise"}` {
		t.Fatalf("cordon requests %+v", c)
	}
	s = h.ok("gpu", "repair", "GPU-aaaa", "--note", "reseated")
	contains(t, "repair", s, "GPU GPU-aaaa (gpu-01 #0) is healthy.")
	if c := f.sent("POST", "/api/v1/gpus/GPU-aaaa/repair"); len(c) != 1 || string(c[0].Body) != `{"note":"reseated"}` {
		t.Fatalf("repair requests %+v", c)
	}
	h.ok("gpu", "repair", "GPU-aaaa")
	if c := f.sent("POST", "/api/v1/gpus/GPU-aaaa/repair"); len(c) != 2 || string(c[1].Body) != `{}` {
		t.Fatalf("repair without a note %+v", c)
	}
	r := h.run("", "gpu", "repair", "GPU-nope")
	if r.code != 1 || !strings.Contains(r.stderr, `error: GPU "GPU-nope" not found (not_found)`) {
		t.Fatalf("unknown GPU: exit %d, %s", r.code, r.stderr)
	}
	if r := h.run("", "gpu", "polish", "GPU-aaaa"); r.code != 2 {
		t.Fatalf("unknown subcommand: exit %d", r.code)
	}
}

func TestRMA(t *testing.T) {
	h, _ := healthHarness(t)
	s := h.ok("rma")
	contains(t, "rma", s, "GPU-cccc", "failed", "reset-class faults twice within 7 days", "RMA-class fault")
	if strings.Contains(s, "GPU-aaaa") {
		t.Errorf("a healthy GPU in the RMA list:\n%s", s)
	}
}

func TestFaultInject(t *testing.T) {
	h, f := healthHarness(t)
	s := h.ok("fault", "inject", "--host", "host-1", "--gpu", "GPU-aaaa", "--xid", "79", "--detail", "demo")
	contains(t, "xid", s, "Injected Xid 79 into GPU GPU-aaaa on host host-1", "gpurent gpus --health")
	s = h.ok("fault", "inject", "--host", "host-1", "--gpu", "GPU-aaaa", "--kind", "ecc_dbe")
	contains(t, "kind", s, "Injected ecc_dbe into GPU GPU-aaaa")
	posts := f.sent("POST", "/api/v1/faults")
	if len(posts) != 2 || string(posts[0].Body) != `{"host_id":"host-1","uuid":"GPU-aaaa","xid":79,"detail":"demo"}` ||
		string(posts[1].Body) != `{"host_id":"host-1","uuid":"GPU-aaaa","kind":"ecc_dbe"}` {
		t.Fatalf("fault requests %+v", posts)
	}
	for _, args := range [][]string{
		{"fault", "inject", "--gpu", "GPU-aaaa", "--xid", "79"},
		{"fault", "inject", "--host", "host-1", "--xid", "79"},
		{"fault", "inject", "--host", "host-1", "--gpu", "GPU-aaaa"},
		{"fault", "inject", "--host", "host-1", "--gpu", "GPU-aaaa", "--xid", "79", "--kind", "gpu_lost"},
		{"fault", "inject", "--host", "host-1", "--gpu", "GPU-aaaa", "--xid", "0"},
		{"fault", "inject", "--host", "host-1", "--gpu", "GPU-aaaa", "--xid", "x"},
	} {
		if r := h.run("", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %s)", args, r.code, r.stderr)
		}
	}
	if len(f.sent("POST", "/api/v1/faults")) != 2 {
		t.Fatal("a refused injection called the API")
	}
	r := h.run("", "fault", "inject", "--host", "host-real", "--gpu", "GPU-aaaa", "--xid", "79")
	if r.code != 1 || !strings.Contains(r.stderr, "this fleet has real ones (unavailable)") {
		t.Fatalf("a real fleet: exit %d, %s", r.code, r.stderr)
	}
}

func TestSLAPrintsTheServersTerms(t *testing.T) {
	h, f := healthHarness(t)
	delete(h.vars, "GPURENT_TOKEN") // public: no login needed
	s := h.ok("sla")
	contains(t, "en", s, "# Service level agreement", "more than 9 minutes", "| below 99.5% | 10% |", "These are the terms of "+f.srv.URL)
	s = h.ok("sla", "--lang", "zh")
	contains(t, "zh", s, "服务等级协议", "超过 9 分钟")
	var terms sla.Terms
	if err := json.Unmarshal([]byte(h.ok("sla", "-o", "json")), &terms); err != nil || terms.HourRuleMinutes != 9 {
		t.Fatalf("JSON %+v: %v", terms, err)
	}
	if r := h.run("", "sla", "--lang", "fr"); r.code != 2 {
		t.Fatalf("--lang fr: exit %d", r.code)
	}
}
