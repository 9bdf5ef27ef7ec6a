package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/faultrules"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/sla"
)

// recordingInjector stands in for the demo's fake GPUs: it keeps the
// faults it is given.
type recordingInjector struct {
	mu     sync.Mutex
	faults []incident.Fault
}

func (ri *recordingInjector) Inject(_ context.Context, f incident.Fault) error {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.faults = append(ri.faults, f)
	return nil
}

func (ri *recordingInjector) got() []incident.Fault {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return append([]incident.Fault(nil), ri.faults...)
}

// seedIncident stores an incident on a GPU of in, started ago before now,
// with a timeline, and a GPU event for it.
func (e *env) seedIncident(in apiv1.Instance, gpu string, ago time.Duration, open bool) gpurent.Incident {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	inc := gpurent.Incident{HostID: in.HostID, GPUID: gpu, InstanceID: in.ID, AccountID: in.AccountID,
		Class: gpurent.FaultReset, Attribution: gpurent.AttrHost, Cause: "Xid 79: GPU has fallen off the bus",
		State: gpurent.IncidentOpen, StartedAt: now.Add(-ago)}
	if !open {
		end := now.Add(-ago / 2)
		inc.State, inc.EndedAt = gpurent.IncidentResolved, &end
	}
	if err := e.st.CreateIncident(ctx, &inc); err != nil {
		e.t.Fatal(err)
	}
	for i, m := range []string{"detected", "failover", "resolved"} {
		if err := e.st.AddIncidentEntry(ctx, &gpurent.IncidentEntry{IncidentID: inc.ID, At: inc.StartedAt.Add(time.Duration(i) * time.Second),
			Kind: m, Message: m + " <b>&</b>"}); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, err := e.st.AddGPUEvents(ctx, []gpurent.GPUEvent{{ID: gpurent.NewID(gpurent.PrefixGPUEvent), HostID: in.HostID, GPUID: gpu,
		At: inc.StartedAt, Kind: "xid", Xid: 79, Detail: "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus"}}); err != nil {
		e.t.Fatal(err)
	}
	return inc
}

func TestHealthRoutesNeedAToken(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/instances/ins-x/incidents", ""},
		{"GET", "/api/v1/incidents", ""},
		{"PUT", "/api/v1/instances/ins-x/failover", `{"policy":"auto"}`},
		{"GET", "/api/v1/gpus/health", ""},
		{"POST", "/api/v1/gpus/GPU-x/cordon", `{"reason":"r"}`},
		{"POST", "/api/v1/gpus/GPU-x/repair", ""},
		{"GET", "/api/v1/rma", ""},
		{"POST", "/api/v1/faults", `{"host_id":"h","uuid":"GPU-x","xid":79}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		problem(t, e.do(req{method: c.method, path: c.path, body: body}), http.StatusUnauthorized, gpurent.CodeUnauthorized)
	}
}

func TestHealthOperatorRoutesForbidCustomers(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	u := e.customer()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/gpus/health", ""},
		{"POST", "/api/v1/gpus/GPU-gpu-a-00/cordon", `{"reason":"looks odd"}`},
		{"POST", "/api/v1/gpus/GPU-gpu-a-00/repair", `{"note":"fine"}`},
		{"GET", "/api/v1/rma", ""},
		{"POST", "/api/v1/faults", `{"host_id":"h","uuid":"GPU-gpu-a-00","xid":79}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		problem(t, e.do(req{method: c.method, path: c.path, token: u.token, body: body}), http.StatusForbidden, gpurent.CodeForbidden)
	}
	// The GPU was not touched.
	g := e.gpu("GPU-gpu-a-00")
	if g.Health != gpurent.GPUHealthy {
		t.Fatalf("GPU health after a customer's cordon: %s", g.Health)
	}
}

// gpu reads a GPU from the store.
func (e *env) gpu(uuid string) gpurent.GPU {
	e.t.Helper()
	hosts, err := e.st.ListHosts(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range hosts {
		for _, g := range h.GPUs {
			if g.ID == uuid {
				return g
			}
		}
	}
	e.t.Fatalf("no GPU %s", uuid)
	return gpurent.GPU{}
}

func TestIncidentsCrossTenantIsNotFound(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	alice, mallory := e.customer(), e.customer()
	in := e.rent(alice, 1)
	base := "/api/v1/instances/" + in.ID
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", base + "/incidents", nil},
		{"PUT", base + "/failover", `{"policy":"wait"}`},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			problem(t, e.do(req{method: c.method, path: c.path, token: mallory.token, body: c.body}), http.StatusNotFound, gpurent.CodeNotFound)
			problem(t, e.do(req{method: c.method, path: strings.Replace(c.path, in.ID, "ins-nope", 1), token: alice.token, body: c.body}),
				http.StatusNotFound, gpurent.CodeNotFound)
		})
	}
	// Mallory's try changed nothing: alice's instance still fails over.
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: base, token: alice.token}), http.StatusOK)
	for _, ev := range got.Events {
		if ev.Kind == "failover_policy" {
			t.Fatalf("mallory set alice's failover: %+v", ev)
		}
	}
}

func TestInstanceIncidentsReport(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	alice, mallory := e.customer(), e.customer()
	in := e.rent(alice, 1)
	inc := e.seedIncident(in, in.GPUs[0], 20*time.Minute, false)

	w := e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/incidents", token: alice.token})
	if strings.Contains(w.Body.String(), `"host_id"`) || strings.Contains(w.Body.String(), `"account_id"`) {
		t.Errorf("a customer's report shows where in the fleet: %s", w.Body.String())
	}
	rep := decode[apiv1.InstanceIncidents](t, w, http.StatusOK)
	if rep.InstanceID != in.ID || rep.MonthStart.IsZero() || rep.MonthStart.Location() != time.UTC {
		t.Fatalf("report header: %+v", rep)
	}
	if rep.AvailabilityBP < 0 || rep.AvailabilityBP > 10000 || rep.Availability != formatBasisPoints(rep.AvailabilityBP) {
		t.Fatalf("availability %d bp shown as %q", rep.AvailabilityBP, rep.Availability)
	}
	if len(rep.Incidents) != 1 {
		t.Fatalf("incidents: %+v", rep.Incidents)
	}
	got := rep.Incidents[0]
	if got.ID != inc.ID || got.Class != "reset" || got.Attribution != "host" || got.Cause != inc.Cause || got.State != "resolved" ||
		got.EndedAt == nil || !got.StartedAt.Equal(inc.StartedAt) || got.DurationSeconds != int64(10*time.Minute/time.Second) {
		t.Fatalf("incident %+v, want %+v lasting 600 s", got, inc)
	}
	if len(got.Entries) != 3 || got.Entries[0].Kind != "detected" || got.Entries[2].Message != "resolved <b>&</b>" {
		t.Fatalf("timeline %+v", got.Entries)
	}

	// The account's list has it; another account's has nothing.
	list := decode[apiv1.IncidentList](t, e.do(req{method: "GET", path: "/api/v1/incidents", token: alice.token}), http.StatusOK)
	if len(list.Incidents) != 1 || list.Incidents[0].ID != inc.ID || list.Incidents[0].InstanceID != in.ID {
		t.Fatalf("alice's incidents: %+v", list)
	}
	w = e.do(req{method: "GET", path: "/api/v1/incidents", token: mallory.token})
	if !strings.Contains(w.Body.String(), `"incidents":[]`) {
		t.Errorf("an empty list is not []: %s", w.Body.String())
	}
	if l := decode[apiv1.IncidentList](t, w, http.StatusOK); len(l.Incidents) != 0 {
		t.Fatalf("mallory sees %+v", l)
	}
}

func TestFailoverPolicy(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	u := e.customer()
	in := e.rent(u, 1)
	path := "/api/v1/instances/" + in.ID + "/failover"
	for _, body := range []string{`{"policy":"sometimes"}`, `{"policy":""}`, `{}`, `{"policy":1}`, `{"policy":"auto","when":"now"}`, ``, `[]`} {
		t.Run(body, func(t *testing.T) {
			p := problem(t, e.do(req{method: "PUT", path: path, token: u.token, body: body}), http.StatusBadRequest, gpurent.CodeInvalid)
			if strings.Contains(body, "sometimes") && !strings.Contains(p.Detail, `"auto"`) {
				t.Errorf("refusal %q does not name the choices", p.Detail)
			}
		})
	}
	problem(t, e.do(req{method: "PUT", path: path, token: u.token, body: `{"policy":"wait"}`, contentType: "text/plain"}),
		http.StatusBadRequest, gpurent.CodeInvalid)

	w := e.do(req{method: "PUT", path: path, token: u.token, body: `{"policy":" Wait "}`})
	res := decode[apiv1.FailoverResult](t, w, http.StatusOK)
	if res.ID != in.ID || res.Failover != "wait" || res.GPUType != testGPUType {
		t.Fatalf("failover answer %+v", res)
	}
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID, token: u.token}), http.StatusOK)
	if !hasEvent(got.Events, "failover_policy", "waits") {
		t.Fatalf("no failover_policy event in %+v", got.Events)
	}
	res = decode[apiv1.FailoverResult](t, e.do(req{method: "PUT", path: path, token: u.token, body: apiv1.FailoverRequest{Policy: "auto"}}), http.StatusOK)
	if res.Failover != "auto" {
		t.Fatalf("back to auto: %+v", res)
	}
}

func hasEvent(evs []apiv1.Event, kind, text string) bool {
	for _, ev := range evs {
		if ev.Kind == kind && strings.Contains(ev.Message, text) {
			return true
		}
	}
	return false
}

func TestGPUHealthCordonRepairAndRMA(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 2)
	op, u := e.operator(), e.customer()
	in := e.rent(u, 1)
	inc := e.seedIncident(in, in.GPUs[0], 5*time.Minute, true)

	w := e.do(req{method: "GET", path: "/api/v1/gpus/health", token: op.token})
	fleet := decode[apiv1.GPUHealthList](t, w, http.StatusOK)
	if len(fleet.GPUs) != 2 {
		t.Fatalf("fleet health lists %d GPUs: %s", len(fleet.GPUs), w.Body.String())
	}
	var faulty apiv1.GPUHealth
	for _, g := range fleet.GPUs {
		if g.HostID != h.id || g.HostName != "gpu-a" || g.Type != testGPUType || g.Recent == nil || g.OpenIncidents == nil {
			t.Fatalf("GPU %+v", g)
		}
		if g.UUID == in.GPUs[0] {
			faulty = g
		}
	}
	if len(faulty.Recent) != 1 || faulty.Recent[0].Kind != "xid" || faulty.Recent[0].Xid != 79 ||
		len(faulty.OpenIncidents) != 1 || faulty.OpenIncidents[0].ID != inc.ID || faulty.OpenIncidents[0].GPU != in.GPUs[0] ||
		faulty.OpenIncidents[0].HostID != h.id || faulty.OpenIncidents[0].AccountID != u.acc.ID ||
		faulty.OpenIncidents[0].EndedAt != nil || faulty.OpenIncidents[0].DurationSeconds < 300 {
		t.Fatalf("the faulty GPU: %+v", faulty)
	}

	// Cordon the other GPU, with a reason; then repair it.
	other := "GPU-gpu-a-00"
	if other == in.GPUs[0] {
		other = "GPU-gpu-a-01"
	}
	c := decode[apiv1.GPUHealth](t, e.do(req{method: "POST", path: "/api/v1/gpus/" + other + "/cordon", token: op.token,
		body: apiv1.CordonGPURequest{Reason: "fan noise"}}), http.StatusOK)
	if c.UUID != other || c.Health != "cordoned" || !strings.Contains(c.Reason, "fan noise") {
		t.Fatalf("cordoned: %+v", c)
	}
	if g := e.gpu(other); g.Health != gpurent.GPUCordoned {
		t.Fatalf("store has %s after cordon", g.Health)
	}
	r := decode[apiv1.GPUHealth](t, e.do(req{method: "POST", path: "/api/v1/gpus/" + other + "/repair", token: op.token}), http.StatusOK)
	if r.Health != "healthy" {
		t.Fatalf("repaired: %+v", r)
	}
	r = decode[apiv1.GPUHealth](t, e.do(req{method: "POST", path: "/api/v1/gpus/" + other + "/repair", token: op.token,
		body: apiv1.RepairGPURequest{Note: "reseated"}}), http.StatusOK)
	if r.Health != "healthy" {
		t.Fatalf("repaired with a note: %+v", r)
	}

	// One reset-class incident is no RMA; a second within 7 days is.
	rma := decode[apiv1.GPUHealthList](t, e.do(req{method: "GET", path: "/api/v1/rma", token: op.token}), http.StatusOK)
	if len(rma.GPUs) != 0 {
		t.Fatalf("RMA list after one reset: %+v", rma)
	}
	e.seedIncident(in, in.GPUs[0], 2*time.Minute, false)
	rma = decode[apiv1.GPUHealthList](t, e.do(req{method: "GET", path: "/api/v1/rma", token: op.token}), http.StatusOK)
	if len(rma.GPUs) != 1 || rma.GPUs[0].UUID != in.GPUs[0] || !rma.GPUs[0].RMACandidate || rma.GPUs[0].Reason == "" {
		t.Fatalf("RMA list after two resets: %+v", rma)
	}
}

func TestGPUActionValidation(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 1)
	op := e.operator()
	for name, c := range map[string]struct{ path, body string }{
		"no reason":        {"/api/v1/gpus/GPU-gpu-a-00/cordon", `{}`},
		"blank reason":     {"/api/v1/gpus/GPU-gpu-a-00/cordon", `{"reason":"   "}`},
		"long reason":      {"/api/v1/gpus/GPU-gpu-a-00/cordon", `{"reason":"` + strings.Repeat("x", 501) + `"}`},
		"control reason":   {"/api/v1/gpus/GPU-gpu-a-00/cordon", `{"reason":"a\u0007b"}`},
		"no body":          {"/api/v1/gpus/GPU-gpu-a-00/cordon", ``},
		"unknown field":    {"/api/v1/gpus/GPU-gpu-a-00/cordon", `{"reason":"x","force":true}`},
		"space in uuid":    {"/api/v1/gpus/GPU%20x/cordon", `{"reason":"x"}`},
		"long uuid":        {"/api/v1/gpus/" + strings.Repeat("G", 129) + "/repair", ``},
		"long note":        {"/api/v1/gpus/GPU-gpu-a-00/repair", `{"note":"` + strings.Repeat("笔", 501) + `"}`},
		"note of a number": {"/api/v1/gpus/GPU-gpu-a-00/repair", `{"note":7}`},
	} {
		t.Run(name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			problem(t, e.do(req{method: "POST", path: c.path, token: op.token, body: body}), http.StatusBadRequest, gpurent.CodeInvalid)
		})
	}
	if g := e.gpu("GPU-gpu-a-00"); g.Health != gpurent.GPUHealthy {
		t.Fatalf("refused requests changed the GPU: %s", g.Health)
	}
	// An unknown GPU is not found.
	problem(t, e.do(req{method: "POST", path: "/api/v1/gpus/GPU-nope/cordon", token: op.token, body: `{"reason":"x"}`}),
		http.StatusNotFound, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "POST", path: "/api/v1/gpus/GPU-nope/repair", token: op.token}), http.StatusNotFound, gpurent.CodeNotFound)
}

func TestFaultInjection(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 1)
	op := e.operator()
	for name, body := range map[string]string{
		"no host":         `{"uuid":"GPU-gpu-a-00","xid":79}`,
		"no gpu":          `{"host_id":"` + h.id + `","xid":79}`,
		"no kind":         `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00"}`,
		"unknown kind":    `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","kind":"meltdown"}`,
		"xid without n":   `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","kind":"xid"}`,
		"xid too big":     `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","xid":70000}`,
		"negative xid":    `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","xid":-1}`,
		"xid on ecc":      `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","kind":"ecc_dbe","xid":48}`,
		"detail too long": `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","xid":79,"detail":"` + strings.Repeat("d", 1001) + `"}`,
		"xid as string":   `{"host_id":"` + h.id + `","uuid":"GPU-gpu-a-00","xid":"79"}`,
	} {
		t.Run(name, func(t *testing.T) {
			problem(t, e.do(req{method: "POST", path: "/api/v1/faults", token: op.token, body: body}), http.StatusBadRequest, gpurent.CodeInvalid)
		})
	}

	// A real fleet (no injector) refuses, saying why.
	good := apiv1.Fault{HostID: h.id, UUID: "GPU-gpu-a-00", Xid: 79, Detail: "demo"}
	p := problem(t, e.do(req{method: "POST", path: "/api/v1/faults", token: op.token, body: good}), http.StatusServiceUnavailable, gpurent.CodeUnavailable)
	if !strings.Contains(p.Detail, "demo") {
		t.Errorf("refusal %q does not say injection is for the demo", p.Detail)
	}

	// The demo's fake GPUs take it: a bare xid is kind xid.
	inj := &recordingInjector{}
	rules, err := faultrules.DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	e.srv.incidents = incident.New(incident.Config{Store: e.st, Rules: rules, Terms: sla.DefaultTerms(), Injector: inj, Location: time.UTC})
	got := decode[apiv1.Fault](t, e.do(req{method: "POST", path: "/api/v1/faults", token: op.token, body: good}), http.StatusAccepted)
	want := incident.Fault{HostID: h.id, UUID: "GPU-gpu-a-00", Kind: "xid", Xid: 79, Detail: "demo"}
	if got != (apiv1.Fault{HostID: h.id, UUID: "GPU-gpu-a-00", Kind: "xid", Xid: 79, Detail: "demo"}) {
		t.Fatalf("answer %+v", got)
	}
	decode[apiv1.Fault](t, e.do(req{method: "POST", path: "/api/v1/faults", token: op.token,
		body: apiv1.Fault{HostID: h.id, UUID: "GPU-gpu-a-00", Kind: "GPU_LOST"}}), http.StatusAccepted)
	if fs := inj.got(); len(fs) != 2 || fs[0] != want || fs[1].Kind != "gpu_lost" || fs[1].Xid != 0 {
		t.Fatalf("injected %+v", fs)
	}
	problem(t, e.do(req{method: "POST", path: "/api/v1/faults", token: op.token,
		body: apiv1.Fault{HostID: h.id, UUID: "GPU-nope", Xid: 79}}), http.StatusNotFound, gpurent.CodeNotFound)
	if n := len(inj.got()); n != 2 {
		t.Fatalf("an unknown GPU's fault was injected: %d faults", n)
	}
}

func TestHealthRoutesWithoutTheService(t *testing.T) {
	e := newEnv(t)
	e.srv.incidents = nil
	op := e.operator()
	p := problem(t, e.do(req{method: "GET", path: "/api/v1/gpus/health", token: op.token}), http.StatusServiceUnavailable, gpurent.CodeUnavailable)
	if !strings.Contains(p.Detail, "not served") {
		t.Errorf("detail %q", p.Detail)
	}
}

func TestSLATermsArePublic(t *testing.T) {
	e := newEnv(t)
	w := e.do(req{method: "GET", path: "/api/v1/sla"})
	got := decode[sla.Terms](t, w, http.StatusOK)
	if !reflect.DeepEqual(got, sla.DefaultTerms()) {
		t.Fatalf("terms %+v, want the defaults %+v", got, sla.DefaultTerms())
	}
}

// slaServer is a server with only the SLA terms configured.
func slaServer(terms sla.Terms) http.Handler {
	return New(Config{SLA: terms}).Handler()
}

func getPage(t *testing.T, h http.Handler, path, acceptLanguage string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	if acceptLanguage != "" {
		r.Header.Set("Accept-Language", acceptLanguage)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w, w.Body.String()
}

func TestSLAPage(t *testing.T) {
	terms := sla.DefaultTerms()
	terms.HourRuleMinutes = 7
	terms.Tiers[0].CreditPercent = 15
	h := slaServer(terms)

	for _, c := range []struct {
		path, accept, lang string
		wants              []string
	}{
		{"/sla", "", "en", []string{"<h1>Service level agreement (SLA)</h1>", "more than 7 minutes", "<th>Monthly availability</th>",
			`<td class="r">15%</td>`, "<pre><code>credit = min(", "<strong>Hour rule.</strong>", `href="/sla?lang=zh"`,
			`href="/api/v1/sla"`, "<title>Service level agreement (SLA)</title>"}},
		{"/sla?lang=zh", "", "zh", []string{"<h1>服务等级协议（SLA）</h1>", "超过 7 分钟", "<th>月度可用性</th>", `<td class="r">15%</td>`,
			`href="/sla?lang=en"`}},
		{"/sla?lang=zh-CN", "", "zh", []string{"服务等级协议"}},
		{"/sla", "fr-FR, zh-CN;q=0.8, en;q=0.5", "zh", []string{"服务等级协议"}},
		{"/sla", "zh;q=0, en", "en", []string{"Service level agreement"}},
		{"/sla?lang=en", "zh-CN", "en", []string{"Service level agreement"}},
	} {
		t.Run(c.path+" "+c.accept, func(t *testing.T) {
			w, body := getPage(t, h, c.path, c.accept)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), body)
			}
			if !strings.HasPrefix(body, "<!DOCTYPE html>\n<html lang=\""+c.lang+"\">") || w.Header().Get("Content-Language") != c.lang {
				t.Fatalf("not a %s page: %.120s", c.lang, body)
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			for _, want := range c.wants {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			checkBalanced(t, body)
		})
	}
	// The page and the JSON come from the one value.
	w, body := getPage(t, h, "/api/v1/sla", "")
	var got sla.Terms
	if err := json.Unmarshal([]byte(body), &got); err != nil || w.Code != http.StatusOK || !reflect.DeepEqual(got, terms) {
		t.Fatalf("JSON terms %+v (%v), want %+v", got, err, terms)
	}
	w, body = getPage(t, h, "/sla?lang=fr", "")
	if w.Code != http.StatusBadRequest || !strings.Contains(body, "lang must be en or zh") {
		t.Fatalf("lang=fr: %d %s", w.Code, body)
	}
}

// checkBalanced fails unless every block tag the renderer writes is
// closed as often as it is opened.
func checkBalanced(t *testing.T, page string) {
	t.Helper()
	for _, tag := range []string{"p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "td", "th", "h1", "h2", "strong", "em", "code", "pre", "blockquote"} {
		open := strings.Count(page, "<"+tag+">") + strings.Count(page, "<"+tag+" ")
		if closed := strings.Count(page, "</"+tag+">"); open != closed {
			t.Errorf("<%s> opened %d times, closed %d", tag, open, closed)
		}
	}
}

func TestRenderMarkdownEscapes(t *testing.T) {
	md := "# Terms <script>alert(1)</script>\n\n" +
		"A paragraph with **bold <i>x</i>** and `a<b>&c` and *em* and a_b_c &amp; 5 < 6.\n" +
		"It continues here.\n\n" +
		"- item <img src=x onerror=alert(1)>\n" +
		"  continued\n" +
		"- [ok](https://example.com/a?b=1&c=2) [bad](javascript:alert(1)) [quote](https://x.example/\"onmouseover=\")\n\n" +
		"1. first\n2) second\n\n" +
		"| Col <a> | Right |\n|:---:|---:|\n| a \\| b | **9%** |\n\n" +
		"> quoted <q>\n\n" +
		"    code <b>\n\n" +
		"```\nfenced </pre><script>\n```\n\n" +
		"---\n"
	out, title := renderMarkdown(md)
	if title != "Terms <script>alert(1)</script>" {
		t.Errorf("title %q (the template escapes it)", title)
	}
	for _, bad := range []string{"<script", "<img", "<i>", "<a>", "<q>", `href="javascript`, "onmouseover=\"", "<b>"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"<h1>Terms &lt;script&gt;alert(1)&lt;/script&gt;</h1>",
		"<p>A paragraph with <strong>bold &lt;i&gt;x&lt;/i&gt;</strong> and <code>a&lt;b&gt;&amp;c</code> and <em>em</em> and a_b_c &amp;amp; 5 &lt; 6. It continues here.</p>",
		"<li>item &lt;img src=x onerror=alert(1)&gt; continued</li>",
		`<a href="https://example.com/a?b=1&amp;c=2">ok</a>`,
		"[bad](javascript:alert(1))",
		"<ol>\n<li>first</li>\n<li>second</li>\n</ol>",
		`<thead>` + "\n" + `<tr><th class="c">Col &lt;a&gt;</th><th class="r">Right</th></tr>`,
		`<tr><td class="c">a | b</td><td class="r"><strong>9%</strong></td></tr>`,
		"<blockquote><p>quoted &lt;q&gt;</p></blockquote>",
		"<pre><code>code &lt;b&gt;</code></pre>",
		"<pre><code>fenced &lt;/pre&gt;&lt;script&gt;</code></pre>",
		"<hr>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	checkBalanced(t, out)

	// The title goes through the page template, escaped.
	var buf bytes.Buffer
	if err := newSLAPage().Execute(&buf, slaPageData{Lang: "en", Title: title}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script") {
		t.Fatalf("page title not escaped: %s", buf.String())
	}
}

func FuzzRenderMarkdown(f *testing.F) {
	f.Add("# T\n\n- a\n- **b**\n\n| x | y |\n|---|--:|\n| 1 | 2 |\n")
	f.Add("[a](https://x) `c` *e* \\*")
	f.Fuzz(func(t *testing.T, md string) {
		out, _ := renderMarkdown(md)
		// Whatever the input, the only tags are the renderer's own.
		for i := strings.IndexByte(out, '<'); i >= 0; i = strings.IndexByte(out, '<') {
			out = out[i+1:]
			name := out
			if j := strings.IndexAny(name, " >"); j >= 0 {
				name = name[:j]
			}
			switch strings.TrimPrefix(name, "/") {
			case "p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6",
				"strong", "em", "code", "pre", "blockquote", "hr", "a":
			default:
				t.Fatalf("tag %q from %q", name, md)
			}
			if name == "a" && !strings.HasPrefix(out, `a href="`) {
				t.Fatalf("a link with attributes other than href: %q", out)
			}
		}
	})
}

func TestFormatBasisPoints(t *testing.T) {
	for bp, want := range map[int]string{10000: "100.00%", 9995: "99.95%", 9950: "99.50%", 9905: "99.05%", 0: "0.00%", 7: "0.07%", -5: "-0.05%"} {
		if got := formatBasisPoints(bp); got != want {
			t.Errorf("formatBasisPoints(%d) = %q, want %q", bp, got, want)
		}
	}
}

func TestIncidentView(t *testing.T) {
	start := time.Date(2026, 3, 1, 2, 0, 0, 0, time.FixedZone("CST", 8*3600))
	now := start.Add(90 * time.Second)
	in := gpurent.Incident{ID: "inc-1", HostID: "host-1", GPUID: "GPU-1", InstanceID: "ins-1", AccountID: "acc-1",
		Class: gpurent.FaultNode, Attribution: gpurent.AttrHost, Cause: "Xid 79", State: gpurent.IncidentOpen,
		StartedAt: start, CreditFen: 0}
	v := incidentView(&in, false, now)
	if v.DurationSeconds != 90 || v.EndedAt != nil || v.HostID != "" || v.GPU != "" || v.AccountID != "" ||
		v.InstanceID != "ins-1" || v.StartedAt.Location() != time.UTC || v.Entries == nil {
		t.Fatalf("customer view of an open incident: %+v", v)
	}
	end := start.Add(time.Hour)
	in.EndedAt, in.State, in.CreditFen = &end, gpurent.IncidentResolved, 1234
	v = incidentView(&in, true, now.Add(48*time.Hour))
	if v.DurationSeconds != 3600 || v.EndedAt == nil || !v.EndedAt.Equal(end) || v.HostID != "host-1" || v.GPU != "GPU-1" ||
		v.AccountID != "acc-1" || v.CreditFen != 1234 || v.State != "resolved" {
		t.Fatalf("operator view of a resolved incident: %+v", v)
	}
}
