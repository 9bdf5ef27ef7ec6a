package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// controlPlane is a test double of the control plane's agent API over an
// in-memory desired state. It tests the agent alone; the real control plane
// is tested end to end elsewhere.
type controlPlane struct {
	t         *testing.T
	srv       *httptest.Server
	joinToken string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	closing chan struct{}
	// pollTimeout is how long a long poll waits without a change.
	pollTimeout time.Duration
	// deaf makes a long poll answer only what was already newer when it
	// arrived, like an answer lost on the way; the agent must notice from
	// a report answer that it is behind.
	deaf          bool
	down          bool // answer 503 to everything
	hosts         map[string]*fakeHost
	tokens        map[string]string // agent token → host name
	registrations []agentproto.RegisterRequest
	refused       int // requests answered while down
	polling       int // long polls waiting for a change
	reports       []agentproto.Report
	// ackHealth makes report answers acknowledge the health events.
	ackHealth bool
	// benchPosts are the benchmark results posted (and answered 204).
	benchPosts []agentproto.BenchResult
	// benchAnswer answers a post of "<job>/<state>" with that status
	// instead of taking it (404: the job is unknown or finished).
	benchAnswer map[string]int
	// benchFlaky answers the next so many bench posts 503.
	benchFlaky int
	// benchRefused counts the posts answered other than 204, by
	// "<job>/<state>".
	benchRefused map[string]int
}

type fakeHost struct {
	id         string
	generation int64
	instances  []agentproto.DesiredInstance
	bench      []agentproto.BenchJob
}

func newControlPlane(t *testing.T) *controlPlane {
	cp := &controlPlane{
		t:            t,
		joinToken:    "join-" + gpurent.RandomSecret(10),
		changed:      make(chan struct{}),
		closing:      make(chan struct{}),
		pollTimeout:  10 * time.Minute,
		hosts:        map[string]*fakeHost{},
		tokens:       map[string]string{},
		benchAnswer:  map[string]int{},
		benchRefused: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+agentproto.PathRegister, cp.register)
	mux.HandleFunc("GET "+agentproto.PathDesired, cp.desired)
	mux.HandleFunc("POST "+agentproto.PathReport, cp.report)
	mux.HandleFunc("POST "+agentproto.PathBench, cp.benchResult)
	cp.srv = httptest.NewServer(mux) // loopback only
	t.Cleanup(func() {
		close(cp.closing)
		cp.srv.Close()
	})
	return cp
}

func (cp *controlPlane) URL() string { return cp.srv.URL }

// broadcastLocked wakes everything waiting for a change. cp.mu is held.
func (cp *controlPlane) broadcastLocked() {
	close(cp.changed)
	cp.changed = make(chan struct{})
}

func problem(w http.ResponseWriter, status int, code gpurent.Code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiv1.Problem{Type: "about:blank", Title: http.StatusText(status),
		Status: status, Detail: detail, Code: string(code)})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// refuseIfDown answers 503 while the control plane is "down".
func (cp *controlPlane) refuseIfDown(w http.ResponseWriter) bool {
	cp.mu.Lock()
	down := cp.down
	if down {
		cp.refused++
		cp.broadcastLocked()
	}
	cp.mu.Unlock()
	if down {
		problem(w, http.StatusServiceUnavailable, gpurent.CodeUnavailable, "control plane restarting")
	}
	return down
}

// authenticate returns the host the bearer token belongs to.
func (cp *controlPlane) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	cp.mu.Lock()
	name, known := cp.tokens[tok]
	cp.mu.Unlock()
	if !ok || !known {
		problem(w, http.StatusUnauthorized, gpurent.CodeUnauthorized, "unknown agent token")
		return "", false
	}
	return name, true
}

func (cp *controlPlane) register(w http.ResponseWriter, r *http.Request) {
	if cp.refuseIfDown(w) {
		return
	}
	var req agentproto.RegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		problem(w, http.StatusBadRequest, gpurent.CodeInvalid, "bad registration")
		return
	}
	if req.JoinToken != cp.joinToken {
		problem(w, http.StatusUnauthorized, gpurent.CodeUnauthorized, "bad join token")
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	h := cp.hosts[req.Name]
	if h == nil {
		h = &fakeHost{id: gpurent.NewID(gpurent.PrefixHost)}
		cp.hosts[req.Name] = h
	}
	for tok, name := range cp.tokens { // one live token per host
		if name == req.Name {
			delete(cp.tokens, tok)
		}
	}
	tok := gpurent.RandomSecret(20)
	cp.tokens[tok] = req.Name
	cp.registrations = append(cp.registrations, req)
	cp.broadcastLocked()
	reply(w, agentproto.RegisterResponse{HostID: h.id, AgentToken: tok})
}

func (cp *controlPlane) desired(w http.ResponseWriter, r *http.Request) {
	if cp.refuseIfDown(w) {
		return
	}
	name, ok := cp.authenticate(w, r)
	if !ok {
		return
	}
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil {
		problem(w, http.StatusBadRequest, gpurent.CodeInvalid, "bad after")
		return
	}
	cp.mu.Lock()
	timeout := time.NewTimer(cp.pollTimeout)
	cp.mu.Unlock()
	defer timeout.Stop()
	waiting := false
	defer func() {
		if waiting {
			cp.mu.Lock()
			cp.polling--
			cp.broadcastLocked()
			cp.mu.Unlock()
		}
	}()
	first := true
	for {
		cp.mu.Lock()
		h := cp.hosts[name]
		changed := cp.changed
		if cp.down {
			cp.mu.Unlock()
			problem(w, http.StatusServiceUnavailable, gpurent.CodeUnavailable, "control plane restarting")
			return
		}
		if h.generation > after && (first || !cp.deaf) {
			d := agentproto.Desired{HostID: h.id, Generation: h.generation, Instances: slices.Clone(h.instances),
				Bench: slices.Clone(h.bench)}
			cp.mu.Unlock()
			reply(w, d)
			return
		}
		if !waiting {
			waiting = true
			cp.polling++
			cp.broadcastLocked()
			changed = cp.changed
		}
		cp.mu.Unlock()
		first = false
		select {
		case <-changed:
		case <-timeout.C:
			cp.mu.Lock()
			d := agentproto.Desired{HostID: h.id, Generation: h.generation, Instances: slices.Clone(h.instances),
				Bench: slices.Clone(h.bench)}
			cp.mu.Unlock()
			reply(w, d)
			return
		case <-r.Context().Done():
			return
		case <-cp.closing:
			return
		}
	}
}

func (cp *controlPlane) report(w http.ResponseWriter, r *http.Request) {
	if cp.refuseIfDown(w) {
		return
	}
	name, ok := cp.authenticate(w, r)
	if !ok {
		return
	}
	var rep agentproto.Report
	if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
		problem(w, http.StatusBadRequest, gpurent.CodeInvalid, "bad report")
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.reports = append(cp.reports, rep)
	cp.broadcastLocked()
	resp := agentproto.ReportResponse{Generation: cp.hosts[name].generation}
	for _, ev := range rep.Health {
		if cp.ackHealth {
			resp.HealthAcked = append(resp.HealthAcked, ev.ID)
		}
	}
	reply(w, resp)
}

// benchResult takes a benchmark result: 204, or what benchAnswer or
// benchFlaky say.
func (cp *controlPlane) benchResult(w http.ResponseWriter, r *http.Request) {
	if cp.refuseIfDown(w) {
		return
	}
	if _, ok := cp.authenticate(w, r); !ok {
		return
	}
	var res agentproto.BenchResult
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || res.JobID == "" {
		problem(w, http.StatusBadRequest, gpurent.CodeInvalid, "bad benchmark result")
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	defer cp.broadcastLocked()
	status := cp.benchAnswer[res.JobID+"/"+res.State]
	if status == 0 && cp.benchFlaky > 0 {
		cp.benchFlaky--
		status = http.StatusServiceUnavailable
	}
	if status != 0 {
		cp.benchRefused[res.JobID+"/"+res.State]++
		problem(w, status, codeOfStatus(status), "benchmark result not taken")
		return
	}
	cp.benchPosts = append(cp.benchPosts, res)
	w.WriteHeader(http.StatusNoContent)
}

func codeOfStatus(status int) gpurent.Code {
	switch status {
	case http.StatusNotFound:
		return gpurent.CodeNotFound
	case http.StatusServiceUnavailable:
		return gpurent.CodeUnavailable
	}
	return gpurent.CodeInvalid
}

// setBench replaces the benchmark jobs of host name and bumps its
// generation.
func (cp *controlPlane) setBench(name string, jobs ...agentproto.BenchJob) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	h := cp.hosts[name]
	if h == nil {
		cp.t.Fatalf("control plane: host %s not registered", name)
	}
	h.generation++
	h.bench = slices.Clone(jobs)
	cp.broadcastLocked()
}

// benchPostsOf returns the results taken for job. cp.mu is held.
func (cp *controlPlane) benchPostsOf(job string) []agentproto.BenchResult {
	var out []agentproto.BenchResult
	for _, res := range cp.benchPosts {
		if res.JobID == job {
			out = append(out, res)
		}
	}
	return out
}

// setDesired replaces the desired instances of host name and bumps its
// generation.
func (cp *controlPlane) setDesired(name string, instances ...agentproto.DesiredInstance) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	h := cp.hosts[name]
	if h == nil {
		cp.t.Fatalf("control plane: host %s not registered", name)
	}
	h.generation++
	h.instances = slices.Clone(instances)
	cp.broadcastLocked()
}

// revoke forgets every token of host name, as after a token rotation.
func (cp *controlPlane) revoke(name string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for tok, n := range cp.tokens {
		if n == name {
			delete(cp.tokens, tok)
		}
	}
	cp.broadcastLocked()
}

func (cp *controlPlane) setDown(down bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.down = down
	cp.broadcastLocked()
}

func (cp *controlPlane) setDeaf(deaf bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.deaf = deaf
}

func (cp *controlPlane) hostID(name string) string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if h := cp.hosts[name]; h != nil {
		return h.id
	}
	return ""
}

func (cp *controlPlane) registrationCount() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return len(cp.registrations)
}

func (cp *controlPlane) reportCount() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return len(cp.reports)
}

// waitUntil waits until cond (called with cp.mu held) holds. The deadline
// only bounds a hung test; it measures nothing.
func (cp *controlPlane) waitUntil(what string, cond func() bool) {
	cp.t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		cp.mu.Lock()
		ok := cond()
		changed := cp.changed
		cp.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			cp.t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// waitReport returns the first report after the since-th that satisfies
// pred.
func (cp *controlPlane) waitReport(what string, since int, pred func(agentproto.Report) bool) agentproto.Report {
	cp.t.Helper()
	var found agentproto.Report
	cp.waitUntil(what, func() bool {
		for _, rep := range cp.reports[min(since, len(cp.reports)):] {
			if pred(rep) {
				found = rep
				return true
			}
		}
		return false
	})
	return found
}

// instance finds id in a report.
func instance(rep agentproto.Report, id string) (agentproto.ActualInstance, bool) {
	for _, ai := range rep.Instances {
		if ai.InstanceID == id {
			return ai, true
		}
	}
	return agentproto.ActualInstance{}, false
}

// hasState is a report predicate: id is in state (with allocation alloc,
// unless alloc is "").
func hasState(id, state, alloc string) func(agentproto.Report) bool {
	return func(rep agentproto.Report) bool {
		ai, ok := instance(rep, id)
		return ok && ai.State == state && (alloc == "" || ai.AllocationID == alloc)
	}
}
