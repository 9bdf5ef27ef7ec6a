package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/cli"
)

// Fixed answers of the move routes.
var (
	fxSpeed = 989.0 * 4 / 312
	fxPlan  = apiv1.UpgradePlan{InstanceID: "ins-1",
		From: apiv1.UpgradeShape{GPUType: "a100-80g-sxm", GPUCount: 1, CPUMilli: 14000, MemoryMiB: 114688, BF16TFLOPS: 312,
			PricePerHour: apiv1.HourPrice{ListFen: 3125, AcademicFen: 2500, ApplicableFen: 3125}},
		To: apiv1.UpgradeShape{GPUType: "h100-80g-sxm", GPUCount: 4, CPUMilli: 80000, MemoryMiB: 917504, BF16TFLOPS: 3956,
			PricePerHour: apiv1.HourPrice{ListFen: 13892, AcademicFen: 11116, ApplicableFen: 13892}},
		HostID: "host-2", Available: true, PricedAt: t0,
		DifferencePerHour: apiv1.HourPrice{ListFen: 10767, AcademicFen: 8616, ApplicableFen: 10767},
		SpeedRatio:        &fxSpeed, SpeedBasis: "spec"}
	fxOp = apiv1.Operation{ID: "op-1", InstanceID: "ins-1", Kind: "upgrade", Step: "copying",
		From:      apiv1.OperationSource{AllocationID: "al-1", HostID: "host-1"},
		To:        apiv1.OperationTarget{AllocationID: "al-2", HostID: "host-2", GPUType: "h100-80g-sxm", GPUCount: 4},
		CreatedAt: t0, UpdatedAt: t0}
)

// moveAPI fakes the move routes and records what it was sent.
type moveAPI struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []got
	// steps are the steps GET operations answers in turn (the last
	// repeats); message is the operation's message from then on.
	steps   []string
	message string
	kind    string // of the last operation made
}

func newMoveAPI(t *testing.T) *moveAPI {
	f := &moveAPI{steps: []string{"copying"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/instances/{id}/upgrade/plan", func(w http.ResponseWriter, r *http.Request) {
		p := fxPlan
		q := r.URL.Query()
		if v := q.Get("gpu_type"); v != "" {
			p.To.GPUType = v
		} else {
			p.To.GPUType = p.From.GPUType
		}
		if v := q.Get("gpu_count"); v != "" {
			p.To.GPUCount, _ = strconv.Atoi(v)
		} else {
			p.To.GPUCount = p.From.GPUCount
		}
		if r.PathValue("id") == "ins-full" {
			p.Available, p.HostID, p.Reason = false, "", "no host has 4 free h100-80g-sxm GPUs"
		}
		reply(w, 200, p)
	})
	accepted := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			op := fxOp
			op.Kind, op.InstanceID = kind, r.PathValue("id")
			f.mu.Lock()
			f.kind = kind
			f.mu.Unlock()
			reply(w, 202, apiv1.OperationDetail{Operation: op, Instance: fxRunning})
		}
	}
	mux.HandleFunc("POST /api/v1/instances/{id}/upgrade", accepted("upgrade"))
	mux.HandleFunc("POST /api/v1/instances/{id}/migrate", accepted("migrate"))
	mux.HandleFunc("GET /api/v1/instances/{id}/operations", func(w http.ResponseWriter, r *http.Request) {
		op := fxOp
		f.mu.Lock()
		op.Step = f.steps[0]
		if f.kind != "" {
			op.Kind = f.kind
		}
		if len(f.steps) > 1 {
			f.steps = f.steps[1:]
		}
		if op.Step == "final" || op.Step == "done" || op.Step == "rolled_back" {
			op.Passes, op.BytesMoved, op.Message = 3, 5<<30+512<<20, f.message
		}
		if op.Step == "done" || op.Step == "rolled_back" {
			op.FinishedAt = &fxNow
		}
		f.mu.Unlock()
		reply(w, 200, apiv1.OperationList{Operations: []apiv1.Operation{op}})
	})
	mux.HandleFunc("GET /api/v1/instances/{id}", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxRunning) })
	mux.HandleFunc("POST /api/v1/instances/{id}/start", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.StartRequest
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			_ = json.Unmarshal(b, &req)
		}
		inst := fxRunning
		inst.State, inst.Events = "stopped", nil
		if !req.Move && !req.Queue {
			problem(w, 409, "conflict", "host gpu-01 has no free GPU for ins-1")
			return
		}
		op := fxOp
		op.Kind, op.Step, op.To.AllocationID, op.To.HostID = "start", "queued", "", ""
		op.Message = "waiting for 4 x h100-80g-sxm on any host"
		reply(w, 202, apiv1.StartResult{Instance: inst, Operation: &op})
	})
	mux.HandleFunc("DELETE /api/v1/instances/{id}/queue", func(w http.ResponseWriter, r *http.Request) {
		op := fxOp
		op.Kind, op.Step, op.Message, op.FinishedAt = "start", "rolled_back", "canceled by the customer", &fxNow
		reply(w, 200, op)
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		f.mu.Lock()
		f.reqs = append(f.reqs, got{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get("Idempotency-Key"), b})
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok-env" {
			problem(w, 401, "unauthorized", "missing or invalid token")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// sent returns the requests with method to a path ending in suffix.
func (f *moveAPI) sent(method, suffix string) []got {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []got
	for _, r := range f.reqs {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

func (f *moveAPI) setSteps(message string, steps ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps, f.message = steps, message
}

func moveHarness(t *testing.T) (*harness, *moveAPI) {
	f := newMoveAPI(t)
	h := newHarness(t)
	h.vars["GPURENT_SERVER"] = f.srv.URL
	h.vars["GPURENT_TOKEN"] = "tok-env"
	return h, f
}

func TestUpgradeShowsThePlanAndNeedsConfirmation(t *testing.T) {
	h, f := moveHarness(t)
	r := h.run("", "upgrade", "ins-1", "--gpu", "h100-80g-sxm", "--count", "4")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	contains(t, "plan", r.stdout, "From:", "1 × a100-80g-sxm, 14 cores, 112 GiB memory, ¥31.25/h",
		"To:", "4 × h100-80g-sxm, 80 cores, 896 GiB memory, ¥138.92/h", "Difference:", "+¥107.67/h",
		"list prices", "host host-2: the data is copied while it runs", "×12.68 expected, from the spec's BF16 figures (312 → 3956 TFLOPS)")
	contains(t, "refusal", r.stderr, "standard input is not a terminal", "--yes")
	if len(f.sent("POST", "/upgrade")) != 0 {
		t.Fatal("an upgrade was sent without confirmation")
	}
	plan := f.sent("GET", "/upgrade/plan")
	if len(plan) != 1 || plan[0].Query != "gpu_count=4&gpu_type=h100-80g-sxm" {
		t.Fatalf("plan requests %+v", plan)
	}
}

func TestUpgradeYesWaitsUntilDone(t *testing.T) {
	h, f := moveHarness(t)
	f.setSteps("", "copying", "final", "starting", "done")
	r := h.run("", "upgrade", "ins-1", "--gpu", "h100-80g-sxm", "--count", "4", "--zone", "cd-tianfu-a", "--yes", "--wait")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	ups := f.sent("POST", "/upgrade")
	if len(ups) != 1 || ups[0].Key == "" || string(ups[0].Body) != `{"gpu_type":"h100-80g-sxm","gpu_count":4,"zone":"cd-tianfu-a"}` {
		t.Fatalf("upgrade requests %+v", ups)
	}
	contains(t, "progress", r.stderr, "op-1: copying", "op-1: final (3 passes, 5.5 GiB copied)", "op-1: starting", "op-1: done")
	contains(t, "result", r.stdout, "Upgrade ins-1 (op-1): host-1 → 4 × h100-80g-sxm on host-2, done")
}

func TestUpgradeWaitExitsNonZeroOnRollback(t *testing.T) {
	h, f := moveHarness(t)
	f.setSteps("the new container did not start: image pull failed", "copying", "rolling_back", "rolled_back")
	r := h.run("", "upgrade", "ins-1", "--gpu", "h100-80g-sxm", "--yes", "--wait", "-o", "json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	contains(t, "stderr", r.stderr, "upgrade of ins-1 rolled back (operation op-1): the new container did not start: image pull failed (conflict)")
	var d apiv1.OperationDetail
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Operation.Step != "rolled_back" {
		t.Fatalf("json result %q: %v", r.stdout, err)
	}
	// With -o json the plan goes to stderr, stdout holds only the result.
	contains(t, "plan on stderr", r.stderr, "Difference:")
}

func TestUpgradeTargets(t *testing.T) {
	h, f := moveHarness(t)
	// --count alone keeps the type; --count 0 is no-GPU mode.
	for _, tc := range []struct {
		args        []string
		query, body string
	}{
		{[]string{"--count", "2"}, "gpu_count=2", `{"gpu_count":2}`},
		{[]string{"--count", "0"}, "gpu_count=0", `{"gpu_count":0}`},
		{[]string{"--gpu", "h100-80g-sxm"}, "gpu_type=h100-80g-sxm", `{"gpu_type":"h100-80g-sxm"}`},
	} {
		r := h.run("", append([]string{"upgrade", "ins-1", "--yes"}, tc.args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, r.code, r.stderr)
		}
		plans, ups := f.sent("GET", "/upgrade/plan"), f.sent("POST", "/upgrade")
		if plans[len(plans)-1].Query != tc.query || string(ups[len(ups)-1].Body) != tc.body {
			t.Errorf("%v: plan ?%s, upgrade %s; want ?%s, %s", tc.args, plans[len(plans)-1].Query, ups[len(ups)-1].Body, tc.query, tc.body)
		}
		contains(t, "result", r.stdout, "Follow it with: gpurent operations ins-1")
	}
	contains(t, "no-GPU plan", h.ok("upgrade", "ins-1", "--count", "0", "--dry-run"), "no GPU (a100-80g-sxm host)")

	// Nothing named, or a negative count: usage errors, nothing sent.
	n := len(f.sent("GET", "/upgrade/plan"))
	for _, args := range [][]string{{"upgrade", "ins-1"}, {"upgrade", "ins-1", "--count", "-1"}, {"upgrade", "--count", "2"}} {
		if r := h.run("", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
	}
	if len(f.sent("GET", "/upgrade/plan")) != n {
		t.Error("a usage error still asked for a plan")
	}
}

func TestUpgradeNotAvailableAndDryRun(t *testing.T) {
	h, f := moveHarness(t)
	r := h.run("", "upgrade", "ins-full", "--gpu", "h100-80g-sxm", "--count", "4", "--yes")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	contains(t, "stderr", r.stderr, "cannot upgrade ins-full now: no host has 4 free h100-80g-sxm GPUs (unavailable)")
	contains(t, "plan", r.stdout, "not available now")

	var p apiv1.UpgradePlan
	out := h.ok("upgrade", "ins-1", "--gpu", "h100-80g-sxm", "--count", "4", "--dry-run", "-o", "json")
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.DifferencePerHour.ListFen != 10767 || p.SpeedRatio == nil {
		t.Fatalf("dry-run json %q: %v", out, err)
	}
	if len(f.sent("POST", "/upgrade")) != 0 {
		t.Fatal("an upgrade was sent")
	}
}

func TestMigrate(t *testing.T) {
	h, f := moveHarness(t)
	f.setSteps("", "copying", "done")
	out := h.ok("migrate", "ins-1", "--zone", "cd-gaoxin-b", "--wait")
	contains(t, "migrate", out, "Migrate ins-1 (op-1): host-1 → 4 × h100-80g-sxm on host-2, done (3 passes, 5.5 GiB copied)")
	m := f.sent("POST", "/migrate")
	if len(m) != 1 || m[0].Key == "" || string(m[0].Body) != `{"zone":"cd-gaoxin-b"}` {
		t.Fatalf("migrate requests %+v", m)
	}
	h.ok("migrate", "ins-1", "--host", "host-9")
	if m = f.sent("POST", "/migrate"); string(m[1].Body) != `{"host_id":"host-9"}` {
		t.Fatalf("migrate --host sent %s", m[1].Body)
	}
}

func TestStartMoveQueueAndCancel(t *testing.T) {
	h, f := moveHarness(t)
	// The plain start sends no body and keeps its old error.
	r := h.run("", "start", "ins-1")
	if r.code != 1 || !strings.Contains(r.stderr, "no free GPU") {
		t.Fatalf("plain start: %+v", r)
	}
	if s := f.sent("POST", "/start"); len(s[0].Body) != 0 {
		t.Fatalf("plain start sent a body: %s", s[0].Body)
	}
	out := h.ok("start", "ins-1", "--move", "--queue")
	contains(t, "queued", out, "OPERATION", "op-1 queued: waiting for 4 x h100-80g-sxm on any host")
	if s := f.sent("POST", "/start"); string(s[1].Body) != `{"move":true,"queue":true}` || s[1].Key == "" {
		t.Fatalf("start --move --queue sent %+v", s[1])
	}
	contains(t, "cancel", h.ok("queue", "cancel", "ins-1"), "Canceled the queued start of ins-1 (op-1); it stays stopped.")
	if c := f.sent("DELETE", "/queue"); len(c) != 1 || c[0].Path != "/api/v1/instances/ins-1/queue" {
		t.Fatalf("cancel requests %+v", c)
	}
}

func TestOperationsList(t *testing.T) {
	h, f := moveHarness(t)
	f.setSteps("", "done")
	contains(t, "operations", h.ok("operations", "ins-1"),
		"ID", "KIND", "STEP", "COPIED", "op-1", "upgrade", "done", "host-1", "4 × h100-80g-sxm on host-2", "5.5 GiB in 3 passes",
		"2025-03-01 08:00:00 UTC", "2025-03-01 09:00:00 UTC")
	var list apiv1.OperationList
	if err := json.Unmarshal([]byte(h.ok("operations", "ins-1", "-o", "json")), &list); err != nil || len(list.Operations) != 1 {
		t.Fatalf("operations -o json: %+v %v", list, err)
	}
}

// TestUpgradeConfirmOnTerminal answers the confirmation on a real
// terminal: yes upgrades, anything else changes nothing and exits 1.
func TestUpgradeConfirmOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		code   int
		posts  int
	}{{"y\n", 0, 1}, {"YES\n", 0, 1}, {"n\n", 1, 0}, {"\n", 1, 0}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			h, f := moveHarness(t)
			master, slave := openPTY(t)
			// Typed ahead: the terminal keeps the line until it is read.
			if _, err := master.Write([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			root := cli.NewRootWith(h.env())
			root.SetIn(slave)
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			code := cli.Execute(context.Background(), root, []string{"upgrade", "ins-1", "--gpu", "h100-80g-sxm", "--count", "4"})
			if code != tc.code || len(f.sent("POST", "/upgrade")) != tc.posts {
				t.Fatalf("exit %d with %d upgrades, want %d with %d; stderr %s", code, len(f.sent("POST", "/upgrade")), tc.code, tc.posts, stderr.String())
			}
			contains(t, "prompt", stderr.String(), "Upgrade ins-1 to 4 × h100-80g-sxm? [y/N] ")
			if tc.posts == 0 {
				contains(t, "declined", stderr.String(), "Nothing changed.")
				if strings.Contains(stderr.String(), "error:") {
					t.Errorf("a declined confirmation printed an error: %s", stderr.String())
				}
			}
		})
	}
}
