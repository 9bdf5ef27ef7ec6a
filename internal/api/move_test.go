package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rental"
)

const (
	typeA100 = "a100-80g-sxm"
	typeH100 = "h100-80g-sxm"
)

// peakHour is a Tuesday 10:00 in Chengdu: peak prices, far from a boundary.
var peakHour = time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("CST", 8*3600))

// newMoveEnv is newEnv with the API's clock at peakHour, so the plan's
// quotes are the peak (list) prices.
func newMoveEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.srv.now = func() time.Time { return peakHour }
	return e
}

// typedHost registers a host with n GPUs of typ through the agent API.
func (e *env) typedHost(name, typ string, n int) agentHost {
	e.t.Helper()
	gpus := make([]agentproto.GPUInfo, n)
	for i := range gpus {
		gpus[i] = agentproto.GPUInfo{UUID: fmt.Sprintf("GPU-%s-%02d", name, i), Index: i, Type: typ,
			Name: typ, MemoryMiB: 81920, TopoGroup: "nvl0", Health: "healthy"}
	}
	w := e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: e.joinToken(), Name: name, Zone: testZone, CPUMilli: 256000, MemoryMiB: 2048 * 1024,
		DiskGiB: 8000, Runtime: "docker", AgentVersion: "v-test", GPUs: gpus,
	}})
	resp := decode[agentproto.RegisterResponse](e.t, w, http.StatusOK)
	return agentHost{id: resp.HostID, token: resp.AgentToken}
}

// rentTyped creates an instance of count GPUs of typ on plan for u.
func (e *env) rentTyped(u user, typ string, count int, plan string) apiv1.Instance {
	e.t.Helper()
	w := e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		Name: "train", GPUType: typ, GPUCount: count, Image: "pytorch/pytorch:2.4", Plan: plan,
	}})
	return decode[apiv1.Instance](e.t, w, http.StatusCreated)
}

// converge plays the agent of h once: it reads the desired state and
// reports every instance in it as being in the desired state.
func (e *env) converge(h agentHost) {
	e.t.Helper()
	d := decode[agentproto.Desired](e.t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), http.StatusOK)
	// The agent's access server, where a moved instance's data is received.
	rep := agentproto.Report{ReportID: gpurent.NewID("rep"), At: time.Now().UTC(), Runtime: "docker",
		AccessAddr: "127.0.0.1:2222", AccessHostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeHostKeyForTests"}
	for _, di := range d.Instances {
		a := agentproto.ActualInstance{InstanceID: di.InstanceID, AllocationID: di.AllocationID, State: di.State}
		if di.State == agentproto.StateRunning {
			a.StartedAt = time.Now().UTC()
		}
		rep.Instances = append(rep.Instances, a)
	}
	decode[agentproto.ReportResponse](e.t, e.do(req{method: "POST", path: agentproto.PathReport, token: h.token, body: rep}), http.StatusOK)
}

// catalogHourly is the catalog's list price per GPU-hour of typ.
func (e *env) catalogHourly(typ string) int64 {
	e.t.Helper()
	gt, err := e.st.GPUType(context.Background(), typ)
	if err != nil {
		e.t.Fatal(err)
	}
	return gt.PriceHourlyFen
}

// quoteHour is the billing service's own quote of one hour at peakHour.
func (e *env) quoteHour(acc *gpurent.Account, typ string, count int) *pricing.Quotes {
	e.t.Helper()
	q, err := e.billing.Quote(context.Background(), acc, pricing.QuoteRequest{TypeID: typ, Count: count, Start: peakHour, Duration: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	return q
}

// rentalUpgrade is a service request for count GPUs with key.
func rentalUpgrade(count *int, key string) rental.UpgradeRequest {
	return rental.UpgradeRequest{Count: count, IdempotencyKey: key}
}

func TestUpgradePlanPrices(t *testing.T) {
	e := newMoveEnv(t)
	a100Host := e.typedHost("a100-box", typeA100, 2)
	h100 := e.typedHost("h100-box", typeH100, 4)
	u := e.customer()
	in := e.rentTyped(u, typeA100, 1, "")
	e.converge(a100Host) // running: a move is planned for it

	w := e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/upgrade/plan?gpu_type=" + typeH100, token: u.token})
	p := decode[apiv1.UpgradePlan](t, w, http.StatusOK)
	a100, h100Price := e.catalogHourly(typeA100), e.catalogHourly(typeH100)
	if p.InstanceID != in.ID || p.From.GPUType != typeA100 || p.From.GPUCount != 1 || p.To.GPUType != typeH100 || p.To.GPUCount != 1 {
		t.Fatalf("plan shapes: %+v", p)
	}
	// The difference is the catalog's list prices apart (peak hour).
	if p.From.PricePerHour.ListFen != a100 || p.To.PricePerHour.ListFen != h100Price ||
		p.DifferencePerHour.ListFen != h100Price-a100 {
		t.Fatalf("list prices from %d to %d (difference %d); want %d to %d (difference %d)",
			p.From.PricePerHour.ListFen, p.To.PricePerHour.ListFen, p.DifferencePerHour.ListFen, a100, h100Price, h100Price-a100)
	}
	// Academic figures are billing's own; a customer pays the list price.
	qa, qh := e.quoteHour(u.acc, typeA100, 1), e.quoteHour(u.acc, typeH100, 1)
	if p.From.PricePerHour.AcademicFen != qa.Academic.HourlyFen || p.To.PricePerHour.AcademicFen != qh.Academic.HourlyFen ||
		p.DifferencePerHour.AcademicFen != qh.Academic.HourlyFen-qa.Academic.HourlyFen || p.AcademicApplies ||
		p.To.PricePerHour.ApplicableFen != h100Price || p.DifferencePerHour.ApplicableFen != h100Price-a100 {
		t.Fatalf("academic and applicable prices: %+v", p)
	}
	if !p.PricedAt.Equal(peakHour) {
		t.Errorf("priced at %s, want %s", p.PricedAt, peakHour)
	}
	// The expected speed is the spec's BF16 ratio, labelled as such.
	if p.SpeedRatio == nil || p.SpeedBasis != "spec" || p.From.BF16TFLOPS <= 0 ||
		*p.SpeedRatio != p.To.BF16TFLOPS/p.From.BF16TFLOPS || *p.SpeedRatio <= 1 {
		t.Fatalf("speed ratio %v (%s), BF16 %v → %v", p.SpeedRatio, p.SpeedBasis, p.From.BF16TFLOPS, p.To.BF16TFLOPS)
	}
	// No H100 on the A100's host: it would move.
	if p.SameHost || p.HostID != h100.id || !p.Available {
		t.Fatalf("placement: same host %v, host %q, available %v (%s); want the H100 host %s", p.SameHost, p.HostID, p.Available, p.Reason, h100.id)
	}

	// No-GPU mode: no speed ratio (null on the wire), the token price.
	w = e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/upgrade/plan?gpu_count=0", token: u.token})
	if !strings.Contains(w.Body.String(), `"speed_ratio":null`) {
		t.Errorf("no-GPU plan lacks a null speed_ratio: %s", w.Body.String())
	}
	p = decode[apiv1.UpgradePlan](t, w, http.StatusOK)
	noGPU := e.quoteHour(u.acc, typeA100, 0)
	if p.SpeedRatio != nil || p.To.GPUCount != 0 || p.To.GPUType != typeA100 || p.To.PricePerHour.ListFen != noGPU.List.HourlyFen ||
		p.DifferencePerHour.ListFen != noGPU.List.HourlyFen-a100 {
		t.Fatalf("no-GPU plan: %+v", p)
	}
}

func TestUpgradePlanAcademicPrices(t *testing.T) {
	e := newMoveEnv(t)
	e.typedHost("a100-box", typeA100, 4)
	u := e.customer()
	ctx := context.Background()
	appl := &gpurent.AcademicApplication{AccountID: u.acc.ID, Method: gpurent.AcademicProof, Institution: "UESTC", Proof: "card"}
	if err := e.st.CreateAcademicApplication(ctx, appl); err != nil {
		t.Fatal(err)
	}
	until := peakHour.AddDate(1, 0, 0)
	if _, err := e.st.DecideAcademicApplication(ctx, appl.ID, gpurent.AcademicApproved, "op", "", time.Now(), &until); err != nil {
		t.Fatal(err)
	}
	acc, err := e.st.AccountByID(ctx, u.acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	in := e.rentTyped(u, typeA100, 1, "")
	p := decode[apiv1.UpgradePlan](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/upgrade/plan?gpu_count=2", token: u.token}), http.StatusOK)
	q1, q2 := e.quoteHour(acc, typeA100, 1), e.quoteHour(acc, typeA100, 2)
	if !q2.AcademicApplies || !p.AcademicApplies || p.To.PricePerHour.ApplicableFen != q2.Academic.HourlyFen ||
		p.From.PricePerHour.ApplicableFen != q1.Academic.HourlyFen ||
		p.DifferencePerHour.ApplicableFen != q2.Academic.HourlyFen-q1.Academic.HourlyFen ||
		q2.Academic.HourlyFen >= q2.List.HourlyFen {
		t.Fatalf("academic plan %+v; quotes %d/%d", p, q1.Academic.HourlyFen, q2.Academic.HourlyFen)
	}
	// Same type, more GPUs: the same spec per GPU, twice the throughput.
	if p.SpeedRatio == nil || *p.SpeedRatio != 2 || !p.SameHost {
		t.Fatalf("2 of 1: speed %v, same host %v", p.SpeedRatio, p.SameHost)
	}
}

func TestUpgradeValidation(t *testing.T) {
	e := newMoveEnv(t)
	e.typedHost("a100-box", typeA100, 8)
	u := e.customer()
	in := e.rentTyped(u, typeA100, 1, "")
	pkg := e.rentTyped(u, typeA100, 1, "daily")
	planPath := "/api/v1/instances/" + in.ID + "/upgrade/plan"
	upPath := "/api/v1/instances/" + in.ID + "/upgrade"
	for _, q := range []string{"?gpu_type=b200-192g", "?gpu_count=-1", "?gpu_count=9", "?gpu_count=two", "?gpu_count=1.5"} {
		t.Run("plan"+q, func(t *testing.T) {
			problem(t, e.do(req{method: "GET", path: planPath + q, token: u.token}), http.StatusBadRequest, gpurent.CodeInvalid)
		})
	}
	for _, body := range []string{`{"gpu_type":"b200-192g"}`, `{"gpu_count":-1}`, `{"gpu_count":9}`, `{"gpu_count":"2"}`,
		`{"gpus":2}`, ``} {
		t.Run("upgrade "+body, func(t *testing.T) {
			problem(t, e.do(req{method: "POST", path: upPath, token: u.token, body: body}), http.StatusBadRequest, gpurent.CodeInvalid)
		})
	}
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/migrate", token: u.token, body: `{"zone":1}`}),
		http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/start", token: u.token, body: `{"move":"yes"}`}),
		http.StatusBadRequest, gpurent.CodeInvalid)

	// A package is paid for its GPU type and count: no upgrade of one.
	for _, w := range []*httptest.ResponseRecorder{
		e.do(req{method: "GET", path: "/api/v1/instances/" + pkg.ID + "/upgrade/plan?gpu_count=2", token: u.token}),
		e.do(req{method: "POST", path: "/api/v1/instances/" + pkg.ID + "/upgrade", token: u.token, body: `{"gpu_count":2}`}),
	} {
		p := problem(t, w, http.StatusBadRequest, gpurent.CodeInvalid)
		if !strings.Contains(p.Detail, "hourly") {
			t.Errorf("package refusal %q does not say to switch to hourly", p.Detail)
		}
	}
	// Asking for what it has already is no upgrade.
	problem(t, e.do(req{method: "GET", path: planPath + "?gpu_count=1", token: u.token}), http.StatusBadRequest, gpurent.CodeInvalid)
}

func TestMoveRoutesCrossTenantIsNotFound(t *testing.T) {
	e := newMoveEnv(t)
	e.typedHost("a100-box", typeA100, 4)
	alice, mallory := e.customer(), e.customer()
	in := e.rentTyped(alice, typeA100, 1, "")
	base := "/api/v1/instances/" + in.ID
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", base + "/upgrade/plan?gpu_count=2", nil},
		{"POST", base + "/upgrade", `{"gpu_count":2}`},
		{"POST", base + "/migrate", `{}`},
		{"POST", base + "/migrate", nil},
		{"POST", base + "/start", `{"move":true}`},
		{"POST", base + "/start", `{"queue":true}`},
		{"GET", base + "/operations", nil},
		{"DELETE", base + "/queue", nil},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			problem(t, e.do(req{method: c.method, path: c.path, token: mallory.token, body: c.body}), http.StatusNotFound, gpurent.CodeNotFound)
			// And an id that does not exist at all answers the same.
			problem(t, e.do(req{method: c.method, path: strings.Replace(c.path, in.ID, "ins-nope", 1), token: alice.token, body: c.body}),
				http.StatusNotFound, gpurent.CodeNotFound)
		})
	}
	// Alice's instance is untouched: no operation.
	ops := decode[apiv1.OperationList](t, e.do(req{method: "GET", path: base + "/operations", token: alice.token}), http.StatusOK)
	if len(ops.Operations) != 0 {
		t.Fatalf("operations after mallory's tries: %+v", ops)
	}
}

func TestUpgradeSameHostAndOperations(t *testing.T) {
	e := newMoveEnv(t)
	h := e.typedHost("a100-box", typeA100, 4)
	u := e.customer()
	in := e.rentTyped(u, typeA100, 1, "")
	e.converge(h)

	w := e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/upgrade", token: u.token, body: `{"gpu_count":2}`})
	d := decode[apiv1.OperationDetail](t, w, http.StatusAccepted)
	op := d.Operation
	if op.ID == "" || op.InstanceID != in.ID || op.Kind != "upgrade" || op.To.GPUType != typeA100 || op.To.GPUCount != 2 ||
		op.From.HostID != h.id || d.Instance.ID != in.ID || op.CreatedAt.IsZero() {
		t.Fatalf("upgrade answer %+v", d)
	}
	ops := decode[apiv1.OperationList](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/operations", token: u.token}), http.StatusOK)
	if len(ops.Operations) != 1 || ops.Operations[0].ID != op.ID {
		t.Fatalf("operations %+v", ops)
	}
	// One operation at a time.
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/migrate", token: u.token}), http.StatusConflict, gpurent.CodeConflict)
}

func TestUpgradeIdempotencyKeyReplays(t *testing.T) {
	e := newMoveEnv(t)
	h := e.typedHost("a100-box", typeA100, 8)
	u := e.customer()
	in := e.rentTyped(u, typeA100, 1, "")
	other := e.rentTyped(u, typeA100, 1, "")
	e.converge(h)
	path := "/api/v1/instances/" + in.ID + "/upgrade"
	key := map[string]string{"Idempotency-Key": "up-1"}

	first := decode[apiv1.OperationDetail](t, e.do(req{method: "POST", path: path, token: u.token, body: `{"gpu_count":2}`, headers: key}), http.StatusAccepted)
	w := e.do(req{method: "POST", path: path, token: u.token, body: `{"gpu_count":2}`, headers: key})
	again := decode[apiv1.OperationDetail](t, w, http.StatusAccepted)
	if again.Operation.ID != first.Operation.ID || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %s (replayed %q), want %s", again.Operation.ID, w.Header().Get("Idempotent-Replayed"), first.Operation.ID)
	}
	// The same key for another request is a conflict about the key.
	p := problem(t, e.do(req{method: "POST", path: path, token: u.token, body: `{"gpu_count":4}`, headers: key}), http.StatusConflict, gpurent.CodeConflict)
	if !strings.Contains(p.Detail, "Idempotency-Key") {
		t.Fatalf("detail %q", p.Detail)
	}
	// The key reaches the service: an operation it made with a key (no API
	// record of it) is found again, 200 and not a second one.
	count := 2
	d, created, err := e.rental.Upgrade(context.Background(), u.acc, other.ID, rentalUpgrade(&count, "made-by-service"))
	if err != nil || !created {
		t.Fatalf("direct upgrade: %v (created %v)", err, created)
	}
	w = e.do(req{method: "POST", path: "/api/v1/instances/" + other.ID + "/upgrade", token: u.token, body: `{"gpu_count":2}`,
		headers: map[string]string{"Idempotency-Key": "made-by-service"}})
	found := decode[apiv1.OperationDetail](t, w, http.StatusOK)
	if found.Operation.ID != d.Operation.ID || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("got %s, want %s", found.Operation.ID, d.Operation.ID)
	}
	ops := decode[apiv1.OperationList](t, e.do(req{method: "GET", path: "/api/v1/instances/" + other.ID + "/operations", token: u.token}), http.StatusOK)
	if len(ops.Operations) != 1 {
		t.Fatalf("%d operations, want 1", len(ops.Operations))
	}
}

// stoppedOnFullHost makes a stopped instance of u whose host's only GPU
// another customer then takes; it returns the instance and the blocker.
func (e *env) stoppedOnFullHost(h agentHost, u user) (in, blocker apiv1.Instance, blockerOwner user) {
	e.t.Helper()
	in = e.rentTyped(u, typeA100, 1, "")
	e.converge(h)
	decode[apiv1.Instance](e.t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/stop", token: u.token}), http.StatusOK)
	e.converge(h)
	blockerOwner = e.customer()
	blocker = e.rentTyped(blockerOwner, typeA100, 1, "")
	e.converge(h)
	return in, blocker, blockerOwner
}

func TestStartBodyMovesOrQueues(t *testing.T) {
	e := newMoveEnv(t)
	h := e.typedHost("a100-box", typeA100, 1)
	u := e.customer()
	in, blocker, owner := e.stoppedOnFullHost(h, u)
	start := "/api/v1/instances/" + in.ID + "/start"

	// The plain start (no body, or neither option) is a conflict, as before.
	problem(t, e.do(req{method: "POST", path: start, token: u.token}), http.StatusConflict, gpurent.CodeConflict)
	problem(t, e.do(req{method: "POST", path: start, token: u.token, body: `{}`}), http.StatusConflict, gpurent.CodeConflict)

	// Queued: an operation waits for GPUs, nothing is claimed.
	res := decode[apiv1.StartResult](t, e.do(req{method: "POST", path: start, token: u.token, body: `{"queue":true}`}), http.StatusAccepted)
	if res.ID != in.ID || res.Operation == nil || res.Operation.Kind != "start" || res.Operation.Step != "queued" {
		t.Fatalf("queued start: %+v", res)
	}
	ops := decode[apiv1.OperationList](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/operations", token: u.token}), http.StatusOK)
	if len(ops.Operations) != 1 || ops.Operations[0].ID != res.Operation.ID {
		t.Fatalf("operations: %+v", ops)
	}
	canceled := decode[apiv1.Operation](t, e.do(req{method: "DELETE", path: "/api/v1/instances/" + in.ID + "/queue", token: u.token}), http.StatusOK)
	if canceled.ID != res.Operation.ID || canceled.FinishedAt == nil {
		t.Fatalf("canceled: %+v", canceled)
	}
	// Nothing left to cancel.
	problem(t, e.do(req{method: "DELETE", path: "/api/v1/instances/" + in.ID + "/queue", token: u.token}), http.StatusConflict, gpurent.CodeConflict)
	ops = decode[apiv1.OperationList](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/operations", token: u.token}), http.StatusOK)
	if len(ops.Operations) != 1 || ops.Operations[0].Step != "rolled_back" {
		t.Fatalf("operations after the cancel: %+v", ops)
	}

	// Once the GPU is free, the plain start answers as it always did: an
	// instance, no operation field (decode refuses unknown fields).
	decode[apiv1.Instance](t, e.do(req{method: "DELETE", path: "/api/v1/instances/" + blocker.ID, token: owner.token}), http.StatusAccepted)
	e.converge(h)
	started := decode[apiv1.Instance](t, e.do(req{method: "POST", path: start, token: u.token}), http.StatusOK)
	if started.ID != in.ID {
		t.Fatalf("started %+v", started)
	}
}

func TestStartMovedToAnotherHost(t *testing.T) {
	e := newMoveEnv(t)
	h := e.typedHost("a100-box", typeA100, 1)
	u := e.customer()
	in, _, _ := e.stoppedOnFullHost(h, u)
	// Only then another host, so that everything above is on the first.
	other := e.typedHost("a100-other", typeA100, 1)
	e.converge(other) // its access server is known

	w := e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/start", token: u.token, body: `{"move":true}`})
	res := decode[apiv1.StartResult](t, w, http.StatusAccepted)
	op := res.Operation
	if op == nil || op.Kind != "start" || op.From.HostID != h.id || op.To.HostID != other.id || op.To.AllocationID == "" ||
		op.Step == "queued" {
		t.Fatalf("moved start: %+v", res)
	}
	// The grant that lets the source agent push to the target never
	// leaves the control plane: not in the answer, not in the list.
	stored, err := e.st.OperationByID(context.Background(), op.ID)
	if err != nil {
		t.Fatal(err)
	}
	list := e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID + "/operations", token: u.token})
	if stored.Token == "" || strings.Contains(w.Body.String(), stored.Token) || strings.Contains(list.Body.String(), stored.Token) ||
		strings.Contains(list.Body.String(), "token") {
		t.Fatalf("the operation's token (%d chars) reached an answer: %s", len(stored.Token), list.Body.String())
	}
}
