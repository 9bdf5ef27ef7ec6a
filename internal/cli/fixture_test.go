package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/cli"
)

// Fixed answers of the fake API.
var (
	t0 = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)

	fxAccount = apiv1.Account{ID: "acc-1", Email: "li@example.com", Name: "Li Wei", Role: "customer",
		BalanceFen: 123456789, CreatedAt: t0}

	fxGPUTypes = apiv1.GPUTypeList{GPUTypes: []apiv1.GPUType{
		{ID: "h100-80g-sxm", Name: "NVIDIA H100 80GB SXM", MemoryGB: 80, MemBandwidthGBs: 3350,
			FP32TFLOPS: 67, BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, NVLinkGBs: 900, PeerToPeer: true,
			Prices: apiv1.Prices{HourlyFen: 1999, DailyFen: 43000, WeeklyFen: 280000, MonthlyFen: 1100000},
			Total:  16, Free: 5, Zones: []apiv1.ZoneAvailability{
				{ZoneID: "cd-tianfu-a", Total: 8, Free: 3, MaxPerHost: 3},
				{ZoneID: "sh-lingang-b", Total: 8, Free: 2, MaxPerHost: 2}}},
		{ID: "rtx4090-24g", Name: "NVIDIA GeForce RTX 4090", MemoryGB: 24, MemBandwidthGBs: 1008,
			FP32TFLOPS: 82.6, BF16TFLOPS: 165.2, Prices: apiv1.Prices{HourlyFen: 199, DailyFen: 4200, WeeklyFen: 26000, MonthlyFen: 99000},
			Total: 8, Free: 0, Zones: []apiv1.ZoneAvailability{{ZoneID: "cd-tianfu-a", Total: 8, Free: 0}}},
	}}

	fxZones = apiv1.ZoneList{Zones: []apiv1.Zone{
		{ID: "cd-tianfu-a", Name: "Chengdu Tianfu Software Park A", Region: "chengdu", ProbeURL: "https://cd-a.example.com/probe"},
		{ID: "sh-lingang-b", Name: "Shanghai Lingang B", Region: "shanghai"},
	}}

	fxRunning = apiv1.Instance{ID: "ins-1", Name: "train", AccountID: "acc-1", State: "running",
		Image: "pytorch:2.4", GPUType: "h100-80g-sxm", GPUCount: 2, Zone: "cd-tianfu-a",
		HostID: "host-1", HostName: "gpu-01", Runtime: "docker", Plan: "hourly", CPUMilli: 32000, MemoryMiB: 262144,
		GPUs:      []string{"GPU-aaaa", "GPU-bbbb"},
		Volume:    &apiv1.Volume{ID: "vol-1", SizeGiB: 100, MountPath: "/data"},
		CreatedAt: t0, UpdatedAt: t0.Add(time.Minute),
		Events: []apiv1.Event{
			{At: t0, Kind: "created", Message: "requested 2 × h100-80g-sxm"},
			{At: t0.Add(30 * time.Second), Kind: "running", Message: "container started"},
		}}

	fxDemo = apiv1.Instance{ID: "ins-2", Name: "demo", State: "failed", StateReason: "image not found",
		Image: "nope", GPUType: "rtx4090-24g", GPUCount: 1, Runtime: "process", Plan: "daily",
		CreatedAt: t0, UpdatedAt: t0}

	fxHosts = apiv1.HostList{Hosts: []apiv1.Host{
		{ID: "host-1", Name: "gpu-01", Zone: "cd-tianfu-a", State: "ready", Runtime: "docker",
			AgentVersion: "0.1.0", LastSeenAt: ptr(fxNow.Add(-42 * time.Second)), GPUsTotal: 2, GPUsFree: 1,
			GPUs: []apiv1.HostGPU{
				{ID: "GPU-aaaa", Index: 0, Type: "h100-80g-sxm", Health: "healthy", TopoGroup: "nvl0", InstanceID: "ins-1"},
				{ID: "GPU-cccc", Index: 1, Type: "h100-80g-sxm", Health: "failed", TopoGroup: "nvl0"}}},
		{ID: "host-2", Name: "demo-01", Zone: "cd-tianfu-a", State: "cordoned", Runtime: "process",
			GPUsTotal: 1, GPUsFree: 1},
	}}

	fxNow = t0.Add(time.Hour)
)

func ptr[T any](v T) *T { return &v }

// got is one request as the fake API saw it.
type got struct {
	Method, Path, Query, Auth, Key string
	Body                           []byte
}

// fakeAPI answers the /api/v1 routes with the fixed bodies above and
// records every request. Tests adjust its behaviour through its fields
// before running a command.
type fakeAPI struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []got
	// states, when set for an id, are the states GET /instances/{id}
	// answers in turn (the last one repeats); "gone" answers 404, "busy" 503.
	states map[string][]string
	// dropCreates is how many POST /instances to answer by closing the
	// connection, a network error.
	dropCreates int
	// override, when set, is an extra instance GET /instances/{id} knows.
	override *apiv1.Instance
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{states: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/auth/login", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.LoginRequest
		_ = json.Unmarshal(f.body(r), &req)
		if req.Email != fxAccount.Email || req.Password != "s3cret pass" {
			problem(w, 401, "unauthorized", "wrong email or password")
			return
		}
		reply(w, 200, apiv1.LoginResponse{Token: "tok-session", Account: fxAccount})
	})
	mux.HandleFunc("POST /api/v1/auth/register", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.RegisterRequest
		_ = json.Unmarshal(f.body(r), &req)
		if req.Email == "taken@example.com" {
			problem(w, 409, "conflict", "an account with this email exists")
			return
		}
		a := fxAccount
		a.Email, a.Name = req.Email, req.Name
		reply(w, 201, a)
	})
	mux.HandleFunc("POST /api/v1/auth/logout", f.authed(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(204)
	}))
	mux.HandleFunc("GET /api/v1/me", f.authed(func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxAccount) }))
	mux.HandleFunc("POST /api/v1/tokens", f.authed(func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.CreateTokenRequest
		_ = json.Unmarshal(f.body(r), &req)
		reply(w, 201, apiv1.Token{Token: "gpr_secret", ID: "tok-9", Name: req.Name, Kind: "api", CreatedAt: t0})
	}))
	mux.HandleFunc("GET /api/v1/gpu-types", f.authed(func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxGPUTypes) }))
	mux.HandleFunc("GET /api/v1/zones", f.authed(func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxZones) }))
	mux.HandleFunc("PUT /api/v1/zones/{id}/probe", f.authed(func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.SetZoneProbeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, 400, apiv1.Problem{Title: "bad body", Code: "invalid"})
			return
		}
		reply(w, 200, apiv1.Zone{ID: r.PathValue("id"), Name: "Chengdu Tianfu Software Park A", Region: "chengdu", ProbeURL: req.ProbeURL})
	}))
	mux.HandleFunc("POST /api/v1/instances", f.authed(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		drop := f.dropCreates > 0
		if drop {
			f.dropCreates--
		}
		f.mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		var req apiv1.CreateInstanceRequest
		_ = json.Unmarshal(f.body(r), &req)
		inst := apiv1.Instance{ID: "ins-new", Name: req.Name, State: "pending", Image: req.Image,
			GPUType: req.GPUType, GPUCount: req.GPUCount, Plan: "hourly", CreatedAt: t0, UpdatedAt: t0}
		reply(w, 201, inst)
	}))
	mux.HandleFunc("GET /api/v1/instances", f.authed(func(w http.ResponseWriter, r *http.Request) {
		list := apiv1.InstanceList{Instances: []apiv1.Instance{fxRunning, fxDemo}}
		if r.URL.Query().Get("all") != "true" {
			list.Instances = list.Instances[:1]
		}
		reply(w, 200, list)
	}))
	mux.HandleFunc("GET /api/v1/instances/{id}", f.authed(func(w http.ResponseWriter, r *http.Request) {
		inst, ok := f.instance(r.PathValue("id"))
		if !ok {
			problem(w, 404, "not_found", "instance "+r.PathValue("id")+" not found")
			return
		}
		if st := f.nextState(inst.ID); st == "gone" {
			problem(w, 404, "not_found", "instance "+inst.ID+" not found")
			return
		} else if st == "busy" {
			problem(w, 503, "unavailable", "database is busy")
			return
		} else if st != "" {
			inst.State = st
			if st == "failed" {
				inst.StateReason = "no GPU free in zone"
			}
		}
		reply(w, 200, inst)
	}))
	instanceAction := func(state string, status int) http.HandlerFunc {
		return f.authed(func(w http.ResponseWriter, r *http.Request) {
			inst, ok := f.instance(r.PathValue("id"))
			if !ok {
				problem(w, 404, "not_found", "instance "+r.PathValue("id")+" not found")
				return
			}
			inst.State, inst.Events = state, nil
			reply(w, status, inst)
		})
	}
	mux.HandleFunc("POST /api/v1/instances/{id}/stop", instanceAction("stopping", 200))
	mux.HandleFunc("POST /api/v1/instances/{id}/start", instanceAction("pending", 200))
	mux.HandleFunc("DELETE /api/v1/instances/{id}", instanceAction("deleting", 202))
	mux.HandleFunc("PUT /api/v1/instances/{id}/startup", f.authed(func(w http.ResponseWriter, r *http.Request) {
		inst, ok := f.instance(r.PathValue("id"))
		if !ok {
			problem(w, 404, "not_found", "instance "+r.PathValue("id")+" not found")
			return
		}
		var req apiv1.SetStartupRequest
		_ = json.Unmarshal(f.body(r), &req)
		inst.StartupCommand = req.StartupCommand
		msg := "startup command: the image's own entrypoint and command; it applies at the next start"
		if req.StartupCommand != nil {
			msg = "startup command: \"" + *req.StartupCommand + "\"; it applies at the next start"
		}
		reply(w, 200, apiv1.SetStartupResult{Instance: inst, Applies: "next_start", Message: msg})
	}))
	mux.HandleFunc("GET /api/v1/instances/{id}/logs", f.authed(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "ins-1" {
			problem(w, 409, "conflict", "instance "+r.PathValue("id")+" is failed: its logs are read from its host while it runs")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "epoch 1\nepoch 2\n")
	}))
	mux.HandleFunc("GET /api/v1/hosts", f.authed(func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxHosts) }))
	hostAction := func(state string) http.HandlerFunc {
		return f.authed(func(w http.ResponseWriter, r *http.Request) {
			for _, h := range fxHosts.Hosts {
				if h.ID == r.PathValue("id") {
					h.State = state
					reply(w, 200, h)
					return
				}
			}
			problem(w, 404, "not_found", "host "+r.PathValue("id")+" not found")
		})
	}
	mux.HandleFunc("POST /api/v1/hosts/{id}/cordon", hostAction("cordoned"))
	mux.HandleFunc("POST /api/v1/hosts/{id}/uncordon", hostAction("ready"))

	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		f.mu.Lock()
		f.reqs = append(f.reqs, got{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get("Idempotency-Key"), b})
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the fake server's base URL.
func (f *fakeAPI) URL() string { return f.srv.URL }

func (f *fakeAPI) body(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// authed refuses requests without one of the tokens the fake knows.
func (f *fakeAPI) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer tok-session", "Bearer tok-env", "Bearer tok-flag", "Bearer tok-api":
			h(w, r)
		default:
			problem(w, 401, "unauthorized", "missing or invalid token")
		}
	}
}

func (f *fakeAPI) instance(id string) (apiv1.Instance, bool) {
	switch id {
	case fxRunning.ID:
		return fxRunning, true
	case fxDemo.ID:
		return fxDemo, true
	case "ins-new":
		inst := fxRunning
		inst.ID, inst.Events = "ins-new", nil
		return inst, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.override != nil && f.override.ID == id {
		return *f.override, true
	}
	return apiv1.Instance{}, false
}

func (f *fakeAPI) nextState(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := f.states[id]
	if len(seq) == 0 {
		return ""
	}
	st := seq[0]
	if len(seq) > 1 {
		f.states[id] = seq[1:]
	}
	return st
}

// requests returns the requests so far.
func (f *fakeAPI) requests() []got {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]got(nil), f.reqs...)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiv1.Problem{Type: "about:blank", Title: http.StatusText(status),
		Status: status, Detail: detail, Code: code})
}

// harness runs commands in-process with a private config directory and
// environment.
type harness struct {
	t    *testing.T
	vars map[string]string
	dir  string
	hc   *http.Client
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, vars: map[string]string{}, dir: filepath.Join(t.TempDir(), "gpurent"),
		hc: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
}

func (h *harness) env() cli.Env {
	return cli.Env{
		ConfigDir:    h.dir,
		Getenv:       func(k string) string { return h.vars[k] },
		HTTPClient:   h.hc,
		Now:          func() time.Time { return fxNow },
		Location:     time.UTC,
		PollInterval: time.Millisecond,
	}
}

// result is what one command run printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	root := cli.NewRootWith(h.env())
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	code := cli.Execute(context.Background(), root, append([]string{}, args...))
	return result{stdout.String(), stderr.String(), code}
}

// ok runs a command that must succeed.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.run("", args...)
	if r.code != 0 {
		h.t.Fatalf("gpurent %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// login saves a session for srv in the harness's config directory.
func (h *harness) login(f *fakeAPI) {
	h.t.Helper()
	r := h.run("s3cret pass\n", "login", "--server", f.srv.URL, "--email", fxAccount.Email, "--password-stdin")
	if r.code != 0 {
		h.t.Fatalf("login: exit %d: %s", r.code, r.stderr)
	}
}

func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}
