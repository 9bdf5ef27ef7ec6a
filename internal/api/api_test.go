package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/rental"
)

func TestStatusTableCoversEveryCode(t *testing.T) {
	want := map[gpurent.Code]int{
		gpurent.CodeInvalid:         400,
		gpurent.CodeUnauthorized:    401,
		gpurent.CodePaymentRequired: 402,
		gpurent.CodeForbidden:       403,
		gpurent.CodeNotFound:        404,
		gpurent.CodeConflict:        409,
		gpurent.CodeUnavailable:     503,
		gpurent.CodeInternal:        500,
		gpurent.CodeTooManyRequests: 429,
	}
	for _, c := range gpurent.Codes() {
		w, ok := want[c]
		if !ok {
			t.Fatalf("code %q has no expected status in this test: add it", c)
		}
		if got := gpurent.HTTPStatus(c); got != w {
			t.Errorf("HTTPStatus(%s) = %d, want %d", c, got, w)
		}
		p := problemFor(gpurent.Errorf(c, "safe words"), "/x")
		if p.Status != w || p.Code != string(c) || p.Title == "" || p.Instance != "/x" {
			t.Errorf("problem for %s: %+v", c, p)
		}
	}
	// Internal causes never reach the body.
	p := problemFor(gpurent.WrapError(gpurent.CodeInternal, errors.New("db password is hunter2"), "secret detail"), "/x")
	if strings.Contains(p.Detail, "hunter2") || strings.Contains(p.Detail, "secret") || p.Detail != "internal error" {
		t.Fatalf("internal detail leaked: %+v", p)
	}
	p = problemFor(errors.New("plain error"), "/x")
	if p.Status != 500 || p.Code != "internal" {
		t.Fatalf("plain error: %+v", p)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t)
	h := decode[statusResponse](t, e.do(req{method: "GET", path: "/healthz"}), 200)
	if h.Status != "ok" || h.Version != "v-test" {
		t.Fatalf("healthz %+v", h)
	}
	r := decode[statusResponse](t, e.do(req{method: "GET", path: "/readyz"}), 200)
	if r.Status != "ok" || r.Store != "sqlite" {
		t.Fatalf("readyz %+v", r)
	}
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	p := problem(t, e.do(req{method: "GET", path: "/readyz"}), 503, gpurent.CodeUnavailable)
	if !strings.Contains(p.Detail, "database") {
		t.Fatalf("detail %q", p.Detail)
	}
	// Liveness does not depend on the database.
	decode[statusResponse](t, e.do(req{method: "GET", path: "/healthz"}), 200)
}

func TestRegisterLoginMeLogout(t *testing.T) {
	e := newEnv(t)
	w := e.do(req{method: "POST", path: "/api/v1/auth/register",
		body: apiv1.RegisterRequest{Email: "Grace@Example.com", Name: "Grace", Password: "password1"}})
	acc := decode[apiv1.Account](t, w, 201)
	if acc.Email != "grace@example.com" || acc.Role != "customer" || acc.BalanceFen != 0 || acc.ID == "" {
		t.Fatalf("account %+v", acc)
	}
	// The same e-mail again is a conflict.
	problem(t, e.do(req{method: "POST", path: "/api/v1/auth/register",
		body: apiv1.RegisterRequest{Email: "grace@example.com", Name: "G2", Password: "password2"}}), 409, gpurent.CodeConflict)

	// Invalid input is a 400 with a clear detail.
	p := problem(t, e.do(req{method: "POST", path: "/api/v1/auth/register",
		body: apiv1.RegisterRequest{Email: "h@example.com", Name: "H", Password: strings.Repeat("x", 73)}}), 400, gpurent.CodeInvalid)
	if !strings.Contains(p.Detail, "72 bytes") {
		t.Fatalf("detail %q", p.Detail)
	}

	lr := decode[apiv1.LoginResponse](t, e.do(req{method: "POST", path: "/api/v1/auth/login",
		body: apiv1.LoginRequest{Email: "GRACE@example.com", Password: "password1"}}), 200)
	if !strings.HasPrefix(lr.Token, "gpr_") || lr.ExpiresAt == nil || lr.Account.ID != acc.ID {
		t.Fatalf("login %+v", lr)
	}

	me := decode[apiv1.Account](t, e.do(req{method: "GET", path: "/api/v1/me", token: lr.Token}), 200)
	if me.ID != acc.ID || me.Email != "grace@example.com" {
		t.Fatalf("me %+v", me)
	}

	w = e.do(req{method: "POST", path: "/api/v1/auth/logout", token: lr.Token})
	if w.Code != 204 || w.Body.Len() != 0 {
		t.Fatalf("logout: %d %s", w.Code, w.Body.String())
	}
	w = e.do(req{method: "GET", path: "/api/v1/me", token: lr.Token})
	problem(t, w, 401, gpurent.CodeUnauthorized)
	if !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
	}
	// The access log never holds the secret.
	if strings.Contains(e.logText(), lr.Token) || strings.Contains(e.logText(), "password1") {
		t.Fatal("a secret reached the log")
	}
	if !strings.Contains(e.logText(), "route=/api/v1/me") {
		t.Fatalf("access log lacks the route:\n%s", e.logText())
	}
}

func TestLoginFailuresAreOneAnswer(t *testing.T) {
	e := newEnv(t)
	e.customer()
	if _, err := e.auth.Register(context.Background(), "ivy@example.com", "Ivy", "password1"); err != nil {
		t.Fatal(err)
	}
	wrong := problem(t, e.do(req{method: "POST", path: "/api/v1/auth/login",
		body: apiv1.LoginRequest{Email: "ivy@example.com", Password: "password2"}}), 401, gpurent.CodeUnauthorized)
	unknown := problem(t, e.do(req{method: "POST", path: "/api/v1/auth/login",
		body: apiv1.LoginRequest{Email: "nobody@example.com", Password: "password1"}}), 401, gpurent.CodeUnauthorized)
	if wrong.Detail != unknown.Detail || wrong.Detail == "" {
		t.Fatalf("details differ: %q vs %q", wrong.Detail, unknown.Detail)
	}
}

func TestMissingOrBadBearer(t *testing.T) {
	e := newEnv(t)
	paths := []struct{ method, path string }{
		{"GET", "/api/v1/me"}, {"POST", "/api/v1/tokens"}, {"GET", "/api/v1/instances"},
		{"POST", "/api/v1/instances"}, {"GET", "/api/v1/instances/i-x"}, {"DELETE", "/api/v1/instances/i-x"},
		{"POST", "/api/v1/instances/i-x/stop"}, {"POST", "/api/v1/instances/i-x/start"},
		{"GET", "/api/v1/hosts"}, {"POST", "/api/v1/hosts/h/cordon"}, {"POST", "/api/v1/auth/logout"},
		{"GET", agentproto.PathDesired}, {"POST", agentproto.PathReport},
	}
	for _, p := range paths {
		for _, auth := range []string{"", "Bearer", "Bearer gpr_nope", "Basic dXNlcjpwYXNz", "Bearer gpa_nope"} {
			hdr := map[string]string{}
			if auth != "" {
				hdr["Authorization"] = auth
			}
			w := e.do(req{method: p.method, path: p.path, headers: hdr, body: "{}"})
			problem(t, w, 401, gpurent.CodeUnauthorized)
			if w.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("%s %s (%q): no WWW-Authenticate", p.method, p.path, auth)
			}
		}
	}
}

func TestAPITokens(t *testing.T) {
	e := newEnv(t)
	u := e.customer()
	w := e.do(req{method: "POST", path: "/api/v1/tokens", token: u.token, body: `{"name":"ci"}`,
		headers: map[string]string{"Idempotency-Key": "tok-1"}})
	tok := decode[apiv1.Token](t, w, 201)
	if !strings.HasPrefix(tok.Token, "gpr_") || tok.Kind != "api" || tok.Name != "ci" || tok.ExpiresAt != nil {
		t.Fatalf("token %+v", tok)
	}
	me := decode[apiv1.Account](t, e.do(req{method: "GET", path: "/api/v1/me", token: tok.Token}), 200)
	if me.ID != u.acc.ID {
		t.Fatalf("API token authenticates %s", me.ID)
	}
	// A replay confirms the token but never shows the secret again: only
	// its hash is stored anywhere.
	w = e.do(req{method: "POST", path: "/api/v1/tokens", token: u.token, body: `{"name":"ci"}`,
		headers: map[string]string{"Idempotency-Key": "tok-1"}})
	again := decode[apiv1.Token](t, w, 201)
	if w.Header().Get("Idempotent-Replayed") != "true" || again.ID != tok.ID || again.Token != "" {
		t.Fatalf("replay %+v (replayed=%q)", again, w.Header().Get("Idempotent-Replayed"))
	}
	rec, err := e.st.IdempotencyByKey(context.Background(), u.acc.ID, "tok-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Body), tok.Token) {
		t.Fatal("the token secret is stored in the idempotency record")
	}
	problem(t, e.do(req{method: "POST", path: "/api/v1/tokens", token: u.token, body: `{"name":""}`}), 400, gpurent.CodeInvalid)
}

func TestStrictDecoding(t *testing.T) {
	e := newEnv(t)
	u := e.customer()
	cases := []struct {
		name, body, contentType, want string
	}{
		{"malformed", `{"gpu_type": "x",`, "", "malformed JSON"},
		{"syntax", `{"gpu_type" "x"}`, "", "malformed JSON at byte"},
		{"unknown field", `{"gpu_type":"x","gpu_count":1,"image":"i","gpus":2}`, "", `unknown field "gpus"`},
		{"trailing data", `{"gpu_type":"x","gpu_count":1,"image":"i"} {}`, "", "single JSON value"},
		{"trailing garbage", `{"gpu_type":"x","gpu_count":1,"image":"i"}x`, "", "single JSON value"},
		{"wrong type", `{"gpu_type":"x","gpu_count":"two","image":"i"}`, "", `"gpu_count" must be an integer`},
		{"array body", `[1,2]`, "", "must be a JSON object"},
		{"empty body", ``, "", "empty"},
		{"text/plain", `{}`, "text/plain", "not supported"},
		{"form", `a=b`, "application/x-www-form-urlencoded", "not supported"},
		{"no content type", `{}`, "-", "Content-Type header is required"},
		{"latin1", `{}`, "application/json; charset=iso-8859-1", "charset"},
		{"oversized", `{"name":"` + strings.Repeat("a", maxBodyBytes) + `"}`, "", "larger than 1048576 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: tc.body, contentType: tc.contentType})
			p := problem(t, w, 400, gpurent.CodeInvalid)
			if !strings.Contains(p.Detail, tc.want) {
				t.Fatalf("detail %q lacks %q", p.Detail, tc.want)
			}
		})
	}
	// A charset of UTF-8 is fine.
	w := e.do(req{method: "POST", path: "/api/v1/auth/login", contentType: "application/json; charset=UTF-8",
		body: `{"email":"a@example.com","password":"password1"}`})
	problem(t, w, 401, gpurent.CodeUnauthorized)
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	e := newEnv(t)
	u := e.customer()
	p := problem(t, e.do(req{method: "GET", path: "/api/v1/nope", token: u.token}), 404, gpurent.CodeNotFound)
	if !strings.Contains(p.Detail, "/api/v1/nope") {
		t.Fatalf("detail %q", p.Detail)
	}
	problem(t, e.do(req{method: "GET", path: "/"}), 404, gpurent.CodeNotFound)

	w := e.do(req{method: "PUT", path: "/api/v1/instances", token: u.token, body: "{}"})
	if w.Code != 405 || w.Header().Get("Content-Type") != contentProblem {
		t.Fatalf("PUT /instances: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	allow := w.Header().Get("Allow")
	if !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow %q", allow)
	}
	w = e.do(req{method: "DELETE", path: "/api/v1/me", token: u.token})
	if w.Code != 405 || !strings.Contains(w.Body.String(), `"status":405`) {
		t.Fatalf("DELETE /me: %d %s", w.Code, w.Body.String())
	}
}

func TestPanicIsA500Problem(t *testing.T) {
	e := newEnv(t)
	e.srv.mux.HandleFunc("GET /test-panic", func(http.ResponseWriter, *http.Request) { panic("boom: secret internals") })
	w := e.do(req{method: "GET", path: "/test-panic"})
	p := problem(t, w, 500, gpurent.CodeInternal)
	if strings.Contains(p.Detail, "boom") {
		t.Fatalf("panic text leaked: %q", p.Detail)
	}
	if !strings.Contains(e.logText(), "boom: secret internals") {
		t.Fatal("the panic was not logged")
	}
}

func TestIdempotentRegister(t *testing.T) {
	e := newEnv(t)
	body := `{"email":"kim@example.com","name":"Kim","password":"password1"}`
	key := map[string]string{"Idempotency-Key": "reg-1"}
	first := decode[apiv1.Account](t, e.do(req{method: "POST", path: "/api/v1/auth/register", body: body, headers: key}), 201)
	w := e.do(req{method: "POST", path: "/api/v1/auth/register", body: body, headers: key})
	again := decode[apiv1.Account](t, w, 201)
	if again.ID != first.ID || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %+v, replayed %q", again, w.Header().Get("Idempotent-Replayed"))
	}
	// Same key, same e-mail, another body: conflict about the key.
	p := problem(t, e.do(req{method: "POST", path: "/api/v1/auth/register", headers: key,
		body: `{"email":"kim@example.com","name":"Kim K","password":"password1"}`}), 409, gpurent.CodeConflict)
	if !strings.Contains(p.Detail, "Idempotency-Key") {
		t.Fatalf("detail %q", p.Detail)
	}
	// The key is scoped to the e-mail: another e-mail may use it.
	decode[apiv1.Account](t, e.do(req{method: "POST", path: "/api/v1/auth/register", headers: key,
		body: `{"email":"lee@example.com","name":"Lee","password":"password1"}`}), 201)
}

func TestIdempotencyKeyValidation(t *testing.T) {
	e := newEnv(t)
	u := e.customer()
	for _, k := range []string{strings.Repeat("k", 256), "naïve", "tab\tkey"} {
		w := e.do(req{method: "POST", path: "/api/v1/tokens", token: u.token, body: `{"name":"x"}`,
			headers: map[string]string{"Idempotency-Key": k}})
		p := problem(t, w, 400, gpurent.CodeInvalid)
		if !strings.Contains(p.Detail, "Idempotency-Key") {
			t.Fatalf("detail %q", p.Detail)
		}
	}
	w := e.do(req{method: "POST", path: "/api/v1/tokens", token: u.token, body: `{"name":"x"}`,
		headers: map[string]string{"Idempotency-Key": strings.Repeat("k", 255)}})
	decode[apiv1.Token](t, w, 201)
}

func TestInstanceLifecycleAndView(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	u := e.customer()
	w := e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		Name: "train", GPUType: testGPUType, GPUCount: 1, Image: "pytorch/pytorch:2.4",
	}})
	in := decode[apiv1.Instance](t, w, 201)
	if w.Header().Get("Location") != "/api/v1/instances/"+in.ID {
		t.Fatalf("Location %q", w.Header().Get("Location"))
	}
	if in.AccountID != u.acc.ID || in.GPUType != testGPUType || in.GPUCount != 1 || in.HostName != "gpu-a" ||
		in.Runtime != "docker" || len(in.GPUs) != 1 || in.Volume == nil || in.Volume.MountPath != runtime.DataPath {
		t.Fatalf("instance %+v", in)
	}
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID, token: u.token}), 200)
	if got.ID != in.ID || len(got.Events) == 0 {
		t.Fatalf("GET instance %+v", got)
	}
	list := decode[apiv1.InstanceList](t, e.do(req{method: "GET", path: "/api/v1/instances", token: u.token}), 200)
	if len(list.Instances) != 1 || list.Instances[0].ID != in.ID || list.Instances[0].Events != nil {
		t.Fatalf("list %+v", list)
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/instances?all=maybe", token: u.token}), 400, gpurent.CodeInvalid)

	stopped := decode[apiv1.Instance](t, e.do(req{method: "POST", path: "/api/v1/instances/" + in.ID + "/stop", token: u.token}), 200)
	if stopped.State != string(gpurent.StateStopping) && stopped.State != string(gpurent.StateStopped) {
		t.Fatalf("after stop: %s", stopped.State)
	}
	del := decode[apiv1.Instance](t, e.do(req{method: "DELETE", path: "/api/v1/instances/" + in.ID, token: u.token}), 202)
	if del.State != string(gpurent.StateDeleting) {
		t.Fatalf("after delete: %s", del.State)
	}
	// Validation errors from the service come through as problems.
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		GPUType: testGPUType, GPUCount: 0, Image: "x",
	}}), 400, gpurent.CodeInvalid)
}

func TestProcessRuntimeIsVisible(t *testing.T) {
	e := newEnv(t)
	w := e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: e.joinToken(), Name: "laptop", Zone: testZone, CPUMilli: 32000, MemoryMiB: 256 * 1024, DiskGiB: 500,
		Runtime: "process", AgentVersion: "v-test",
		GPUs: []agentproto.GPUInfo{{UUID: "GPU-fake-0", Type: testGPUType, Name: "fake", MemoryMiB: 24564, Health: "healthy"}},
	}})
	decode[agentproto.RegisterResponse](t, w, 200)
	in := e.rent(e.customer(), 1)
	if in.Runtime != "process" {
		t.Fatalf("runtime %q, want process", in.Runtime)
	}
}

func TestIdempotentCreateInstance(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 4)
	alice, bob := e.customer(), e.customer()
	body := `{"gpu_type":"` + testGPUType + `","gpu_count":1,"image":"ubuntu:24.04"}`
	key := map[string]string{"Idempotency-Key": "create-1"}

	w := e.do(req{method: "POST", path: "/api/v1/instances", token: alice.token, body: body, headers: key})
	first := decode[apiv1.Instance](t, w, 201)
	w = e.do(req{method: "POST", path: "/api/v1/instances", token: alice.token, body: body, headers: key})
	again := decode[apiv1.Instance](t, w, 201)
	if again.ID != first.ID || w.Header().Get("Idempotent-Replayed") != "true" ||
		w.Header().Get("Location") != "/api/v1/instances/"+first.ID {
		t.Fatalf("replay %s (replayed %q, Location %q)", again.ID, w.Header().Get("Idempotent-Replayed"), w.Header().Get("Location"))
	}
	// Same key, another body: conflict.
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances", token: alice.token, headers: key,
		body: `{"gpu_type":"` + testGPUType + `","gpu_count":2,"image":"ubuntu:24.04"}`}), 409, gpurent.CodeConflict)
	// Same key, another path (start) is another request too.
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances/" + first.ID + "/start", token: alice.token, headers: key}),
		409, gpurent.CodeConflict)
	// Keys are per account: Bob's create-1 is his own.
	bobs := decode[apiv1.Instance](t, e.do(req{method: "POST", path: "/api/v1/instances", token: bob.token, body: body, headers: key}), 201)
	if bobs.ID == first.ID || bobs.AccountID != bob.acc.ID {
		t.Fatalf("Bob got %+v", bobs)
	}
	// The key reaches the service: an instance the service made with a key
	// (no API record of it) is found again, 200 and not a second one.
	d, created, err := e.rental.Rent(context.Background(), alice.acc, rental.RentRequest{
		Image: "ubuntu:24.04", TypeID: testGPUType, Count: 1, IdempotencyKey: "made-by-service"})
	if err != nil || !created {
		t.Fatalf("direct rent: %v (created %v)", err, created)
	}
	w = e.do(req{method: "POST", path: "/api/v1/instances", token: alice.token, body: body,
		headers: map[string]string{"Idempotency-Key": "made-by-service"}})
	found := decode[apiv1.Instance](t, w, 200)
	if found.ID != d.Instance.ID || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("got %s, want %s", found.ID, d.Instance.ID)
	}
	list := decode[apiv1.InstanceList](t, e.do(req{method: "GET", path: "/api/v1/instances", token: alice.token}), 200)
	if len(list.Instances) != 2 {
		t.Fatalf("alice has %d instances, want 2", len(list.Instances))
	}
}

func TestConcurrentSameKeyMakesOneInstance(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 8)
	u := e.customer()
	body := `{"gpu_type":"` + testGPUType + `","gpu_count":1,"image":"ubuntu:24.04"}`
	const n = 8
	ids := make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: body,
				headers: map[string]string{"Idempotency-Key": "race"}})
			codes[i] = w.Code
			if w.Code == 200 || w.Code == 201 {
				var in apiv1.Instance
				if err := jsonUnmarshal(w.Body.Bytes(), &in); err == nil {
					ids[i] = in.ID
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 201 && codes[i] != 200 {
			t.Fatalf("request %d: status %d", i, codes[i])
		}
		if ids[i] == "" || ids[i] != ids[0] {
			t.Fatalf("ids differ: %v", ids)
		}
	}
	list := decode[apiv1.InstanceList](t, e.do(req{method: "GET", path: "/api/v1/instances", token: u.token}), 200)
	if len(list.Instances) != 1 {
		t.Fatalf("%d instances, want 1", len(list.Instances))
	}
}

func TestCrossTenantIsNotFound(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	alice, mallory := e.customer(), e.customer()
	in := e.rent(alice, 1)
	base := "/api/v1/instances/" + in.ID
	for _, c := range []struct{ method, path string }{
		{"GET", base}, {"POST", base + "/stop"}, {"POST", base + "/start"}, {"DELETE", base},
	} {
		w := e.do(req{method: c.method, path: c.path, token: mallory.token})
		problem(t, w, 404, gpurent.CodeNotFound)
	}
	list := decode[apiv1.InstanceList](t, e.do(req{method: "GET", path: "/api/v1/instances", token: mallory.token}), 200)
	if len(list.Instances) != 0 {
		t.Fatalf("mallory sees %d instances", len(list.Instances))
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/instances?all=true", token: mallory.token}), 403, gpurent.CodeForbidden)
	// Alice's instance is untouched.
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: base, token: alice.token}), 200)
	if !strings.EqualFold(got.ID, in.ID) || got.State == string(gpurent.StateDeleting) {
		t.Fatalf("alice's instance %+v", got)
	}
	// Operators see everyone's with all=true.
	op := e.operator()
	all := decode[apiv1.InstanceList](t, e.do(req{method: "GET", path: "/api/v1/instances?all=true", token: op.token}), 200)
	if len(all.Instances) != 1 || all.Instances[0].ID != in.ID {
		t.Fatalf("operator sees %+v", all)
	}
}

func TestHostRoutes(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 2)
	cust, op := e.customer(), e.operator()
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/hosts"}, {"POST", "/api/v1/hosts/" + h.id + "/cordon"}, {"POST", "/api/v1/hosts/" + h.id + "/uncordon"},
	} {
		problem(t, e.do(req{method: c.method, path: c.path, token: cust.token}), 403, gpurent.CodeForbidden)
	}
	hosts := decode[apiv1.HostList](t, e.do(req{method: "GET", path: "/api/v1/hosts", token: op.token}), 200)
	if len(hosts.Hosts) != 1 || hosts.Hosts[0].ID != h.id || hosts.Hosts[0].GPUsTotal != 2 || hosts.Hosts[0].GPUsFree != 2 ||
		len(hosts.Hosts[0].GPUs) != 2 || hosts.Hosts[0].State != "ready" {
		t.Fatalf("hosts %+v", hosts)
	}
	c := decode[apiv1.Host](t, e.do(req{method: "POST", path: "/api/v1/hosts/" + h.id + "/cordon", token: op.token}), 200)
	if c.State != "cordoned" {
		t.Fatalf("after cordon: %s", c.State)
	}
	r := decode[apiv1.Host](t, e.do(req{method: "POST", path: "/api/v1/hosts/" + h.id + "/uncordon", token: op.token}), 200)
	if r.State != "ready" {
		t.Fatalf("after uncordon: %s", r.State)
	}
	problem(t, e.do(req{method: "POST", path: "/api/v1/hosts/host-nope/cordon", token: op.token}), 404, gpurent.CodeNotFound)
}

func TestCatalogRoutes(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 2)
	types := decode[apiv1.GPUTypeList](t, e.do(req{method: "GET", path: "/api/v1/gpu-types"}), 200)
	var found bool
	for _, gt := range types.GPUTypes {
		if gt.ID == testGPUType {
			found = true
			if gt.Total != 2 || gt.Prices.HourlyFen <= 0 || gt.Prices.MonthlyFen <= 0 || gt.MemoryGB != 24 {
				t.Fatalf("gpu type %+v", gt)
			}
		}
	}
	if !found {
		t.Fatalf("no %s in %+v", testGPUType, types)
	}
	zones := decode[apiv1.ZoneList](t, e.do(req{method: "GET", path: "/api/v1/zones"}), 200)
	if len(zones.Zones) == 0 || zones.Zones[0].ID == "" {
		t.Fatalf("zones %+v", zones)
	}
}

func TestAgentRoutes(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 2)
	u := e.customer()
	in := e.rent(u, 1)

	// A user token is no agent token.
	problem(t, e.do(req{method: "GET", path: agentproto.PathDesired, token: u.token}), 401, gpurent.CodeUnauthorized)
	problem(t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=-1", token: h.token}), 400, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=x", token: h.token}), 400, gpurent.CodeInvalid)

	d := decode[agentproto.Desired](t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), 200)
	if d.HostID != h.id || d.Generation <= 0 || len(d.Instances) != 1 || d.Instances[0].InstanceID != in.ID {
		t.Fatalf("desired %+v", d)
	}
	di := d.Instances[0]
	rep := agentproto.Report{ReportID: "r-1", At: time.Now().UTC(), Runtime: "docker",
		GPUs: []agentproto.GPUInfo{
			{UUID: "GPU-gpu-a-00", Index: 0, Type: testGPUType, Name: "NVIDIA GeForce RTX 4090", MemoryMiB: 24564, TopoGroup: "pcie0", Health: "healthy"},
			{UUID: "GPU-gpu-a-01", Index: 1, Type: testGPUType, Name: "NVIDIA GeForce RTX 4090", MemoryMiB: 24564, TopoGroup: "pcie0", Health: "healthy"},
		},
		Instances: []agentproto.ActualInstance{{InstanceID: di.InstanceID, AllocationID: di.AllocationID,
			State: agentproto.StateRunning, StartedAt: time.Now().UTC()}},
	}
	rr := decode[agentproto.ReportResponse](t, e.do(req{method: "POST", path: agentproto.PathReport, token: h.token, body: rep}), 200)
	if rr.Generation < d.Generation {
		t.Fatalf("report answer %+v", rr)
	}
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID, token: u.token}), 200)
	if got.State != string(gpurent.StateRunning) {
		t.Fatalf("after the running report: %s", got.State)
	}
	// Strict decoding holds for agents too.
	problem(t, e.do(req{method: "POST", path: agentproto.PathReport, token: h.token, body: `{"report_id":"x","bogus":1}`}), 400, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: "wrong", Name: "x", Zone: testZone, CPUMilli: 1, MemoryMiB: 1, Runtime: "docker"}}), 401, gpurent.CodeUnauthorized)
}

func TestLongPollEndsWhenTheAgentLeaves(t *testing.T) {
	e := newEnvWith(t, envOpts{pollWait: time.Hour})
	h := e.host("gpu-a", 1)
	d := decode[agentproto.Desired](t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), 200)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		w := e.do(req{method: "GET", path: fmt.Sprintf("%s?after=%d", agentproto.PathDesired, d.Generation), token: h.token, ctx: ctx})
		done <- w.Code
	}()
	time.Sleep(50 * time.Millisecond) // let it start waiting; the test holds without it
	cancel()
	// With a one-hour poll wait, only the client's departure ends this.
	<-done
}

func TestMetricsExposeHTTPMetrics(t *testing.T) {
	e := newEnv(t)
	op := e.operator()
	e.do(req{method: "GET", path: "/healthz"})
	e.do(req{method: "GET", path: "/api/v1/nope"})
	w := e.do(req{method: "GET", path: "/metrics", token: op.token})
	if w.Code != 200 {
		t.Fatalf("metrics: %d", w.Code)
	}
	text := w.Body.String()
	for _, want := range []string{
		`gpurent_http_requests_total{code="200",method="GET",route="/healthz"} 1`,
		`gpurent_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`gpurent_http_request_duration_seconds_bucket{route="/healthz",le=`,
		`gpurent_http_request_duration_seconds_count{route="/healthz"} 1`,
		`gpurent_build_info{version="v-test"} 1`,
		`go_goroutines`,
		`process_start_time_seconds`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestMetricsOperatorOnly: /metrics names every host, GPU UUID and
// per-GPU use; anonymous visitors and customers are refused, operators
// read it, and the handler for a separate listener serves it as is.
func TestMetricsOperatorOnly(t *testing.T) {
	e := newEnv(t)
	if w := e.do(req{method: "GET", path: "/metrics"}); w.Code != 401 || strings.Contains(w.Body.String(), "go_goroutines") {
		t.Errorf("anonymous /metrics: %d", w.Code)
	}
	if w := e.do(req{method: "GET", path: "/metrics", token: e.customer().token}); w.Code != 403 || strings.Contains(w.Body.String(), "go_goroutines") {
		t.Errorf("a customer's /metrics: %d", w.Code)
	}
	if w := e.do(req{method: "GET", path: "/metrics", token: e.operator().token}); w.Code != 200 || !strings.Contains(w.Body.String(), "go_goroutines") {
		t.Errorf("an operator's /metrics: %d", w.Code)
	}
	srv := New(Config{Auth: e.auth, Rental: e.rental, Fleet: e.fleet, Store: e.st, Registry: e.reg, Version: "v-test"})
	if w := httptestDo(srv.MetricsHandler(), "GET", "/metrics"); w.Code != 200 || !strings.Contains(w.Body.String(), "go_goroutines") {
		t.Errorf("the metrics listener's handler: %d", w.Code)
	}
}

func TestSharedRegistryIsReused(t *testing.T) {
	e := newEnv(t)
	// A second server on the same registry (a restart in-process, a test)
	// reuses the collectors instead of failing.
	s2 := New(Config{Auth: e.auth, Rental: e.rental, Fleet: e.fleet, Store: e.st, Registry: e.reg, Version: "v-test"})
	w := httptestDo(s2.Handler(), "GET", "/healthz")
	if w.Code != 200 {
		t.Fatalf("healthz on the second server: %d", w.Code)
	}
	text := e.do(req{method: "GET", path: "/metrics", token: e.operator().token}).Body.String()
	if !strings.Contains(text, `gpurent_http_requests_total{code="200",method="GET",route="/healthz"} 1`) {
		t.Fatalf("the second server's request is not counted on the shared registry:\n%s", text)
	}
}

// TestZoneProbe: operators set and clear the endpoint the console's
// latency test times for a zone; anyone reads it with the zones; a bad
// URL, an unknown zone or field, and a customer are refused.
func TestZoneProbe(t *testing.T) {
	e := newEnv(t)
	op, u := e.operator(), e.customer()
	path := "/api/v1/zones/" + testZone + "/probe"
	z := decode[apiv1.Zone](t, e.do(req{method: "PUT", path: path, token: op.token, body: `{"probe_url":"https://probe.cd-a.example/probe"}`}), 200)
	if z.ID != testZone || z.ProbeURL != "https://probe.cd-a.example/probe" {
		t.Fatalf("zone %+v", z)
	}
	probeOf := func() string {
		for _, z := range decode[apiv1.ZoneList](t, e.do(req{method: "GET", path: "/api/v1/zones"}), 200).Zones {
			if z.ID == testZone {
				return z.ProbeURL
			}
		}
		t.Fatalf("no zone %s", testZone)
		return ""
	}
	if got := probeOf(); got != "https://probe.cd-a.example/probe" {
		t.Fatalf("zones list probe %q", got)
	}
	for _, body := range []string{
		`{"probe_url":"ftp://probe.example/"}`,
		`{"probe_url":"https://user:pw@probe.example/"}`,
		`{"probe_url":"/probe"}`,
		`{"probe_url":"https://probe.example/#x"}`,
		`{"probe_url":"https://probe.example/\"onload=x"}`,
		`{"probe_url":"https://a;script-src.example/"}`,
		`{"probe_url":"https://probe.example:99999/"}`,
		`{"probe_url":"https://probe.example/","ttl":5}`,
		`{"probe_url":"https://` + strings.Repeat("a", 520) + `.example/"}`,
	} {
		problem(t, e.do(req{method: "PUT", path: path, token: op.token, body: body}), 400, gpurent.CodeInvalid)
	}
	problem(t, e.do(req{method: "PUT", path: path, token: u.token, body: `{"probe_url":""}`}), 403, gpurent.CodeForbidden)
	problem(t, e.do(req{method: "PUT", path: "/api/v1/zones/nowhere/probe", token: op.token, body: `{"probe_url":""}`}), 404, gpurent.CodeNotFound)
	if got := probeOf(); got != "https://probe.cd-a.example/probe" {
		t.Fatalf("a refused change moved the probe to %q", got)
	}
	decode[apiv1.Zone](t, e.do(req{method: "PUT", path: path, token: op.token, body: `{"probe_url":""}`}), 200)
	if got := probeOf(); got != "" {
		t.Fatalf("cleared probe reads %q", got)
	}
}
