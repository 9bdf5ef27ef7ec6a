package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

// seen is one request as the test server got it.
type seen struct {
	Method, Path, Query, Auth, Key, ContentType string
	Body                                        []byte
}

// recorder is an httptest server that answers every request with the
// status and JSON body the test sets, and records what it got.
type recorder struct {
	mu     sync.Mutex
	got    []seen
	status int
	body   any
	srv    *httptest.Server
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{status: http.StatusOK}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, seen{req.Method, req.URL.Path, req.URL.RawQuery,
			req.Header.Get("Authorization"), req.Header.Get("Idempotency-Key"),
			req.Header.Get("Content-Type"), b})
		status, body := r.status, r.body
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) answer(status int, body any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.body, r.got = status, body, nil
}

func (r *recorder) last(t *testing.T) seen {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 1 {
		t.Fatalf("server got %d requests, want 1", len(r.got))
	}
	return r.got[0]
}

func TestRoutes(t *testing.T) {
	rec := newRecorder(t)
	c := client.New(rec.srv.URL+"/", "tok-1", rec.srv.Client())
	ctx := context.Background()
	created := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	acct := apiv1.Account{ID: "acc-1", Email: "a@example.com", Name: "A", Role: "customer", BalanceFen: 1234, CreatedAt: created}
	inst := apiv1.Instance{ID: "ins/1", Name: "train", State: "running", GPUCount: 2, GPUs: []string{"GPU-a", "GPU-b"}, CreatedAt: created, UpdatedAt: created}
	host := apiv1.Host{ID: "h1", Name: "gpu-01", State: "cordoned"}

	cases := []struct {
		name       string
		status     int
		answer     any
		call       func() (any, error)
		method     string
		path       string
		query      string
		wantBody   string
		wantResult any
	}{
		{"register", 201, acct, func() (any, error) {
			return c.Register(ctx, apiv1.RegisterRequest{Email: "a@example.com", Name: "A", Password: "pw"})
		}, "POST", "/api/v1/auth/register", "", `{"email":"a@example.com","name":"A","password":"pw"}`, acct},
		{"login", 200, apiv1.LoginResponse{Token: "t", Account: acct}, func() (any, error) {
			return c.Login(ctx, apiv1.LoginRequest{Email: "a@example.com", Password: "pw"})
		}, "POST", "/api/v1/auth/login", "", `{"email":"a@example.com","password":"pw"}`, apiv1.LoginResponse{Token: "t", Account: acct}},
		{"logout", 204, nil, func() (any, error) { return nil, c.Logout(ctx) },
			"POST", "/api/v1/auth/logout", "", "", nil},
		{"me", 200, acct, func() (any, error) { return c.Me(ctx) }, "GET", "/api/v1/me", "", "", acct},
		{"token", 201, apiv1.Token{Token: "s", ID: "t1", Name: "ci", Kind: "api", CreatedAt: created}, func() (any, error) { return c.CreateToken(ctx, "ci") },
			"POST", "/api/v1/tokens", "", `{"name":"ci"}`, apiv1.Token{Token: "s", ID: "t1", Name: "ci", Kind: "api", CreatedAt: created}},
		{"gpu-types", 200, apiv1.GPUTypeList{GPUTypes: []apiv1.GPUType{{ID: "h100"}}}, func() (any, error) { return c.GPUTypes(ctx) },
			"GET", "/api/v1/gpu-types", "", "", apiv1.GPUTypeList{GPUTypes: []apiv1.GPUType{{ID: "h100"}}}},
		{"zones", 200, apiv1.ZoneList{Zones: []apiv1.Zone{{ID: "z"}}}, func() (any, error) { return c.Zones(ctx) },
			"GET", "/api/v1/zones", "", "", apiv1.ZoneList{Zones: []apiv1.Zone{{ID: "z"}}}},
		{"list", 200, apiv1.InstanceList{Instances: []apiv1.Instance{inst}}, func() (any, error) { return c.ListInstances(ctx, false) },
			"GET", "/api/v1/instances", "", "", apiv1.InstanceList{Instances: []apiv1.Instance{inst}}},
		{"list-all", 200, apiv1.InstanceList{}, func() (any, error) { return c.ListInstances(ctx, true) },
			"GET", "/api/v1/instances", "all=true", "", apiv1.InstanceList{}},
		{"get", 200, inst, func() (any, error) { return c.GetInstance(ctx, "ins/1") },
			"GET", "/api/v1/instances/ins/1", "", "", inst},
		{"stop", 200, inst, func() (any, error) { return c.StopInstance(ctx, "ins/1") },
			"POST", "/api/v1/instances/ins/1/stop", "", "", inst},
		{"start", 200, inst, func() (any, error) { return c.StartInstance(ctx, "ins/1") },
			"POST", "/api/v1/instances/ins/1/start", "", "", inst},
		{"delete", 202, inst, func() (any, error) { return c.DeleteInstance(ctx, "ins/1") },
			"DELETE", "/api/v1/instances/ins/1", "", "", inst},
		{"hosts", 200, apiv1.HostList{Hosts: []apiv1.Host{host}}, func() (any, error) { return c.Hosts(ctx) },
			"GET", "/api/v1/hosts", "", "", apiv1.HostList{Hosts: []apiv1.Host{host}}},
		{"cordon", 200, host, func() (any, error) { return c.CordonHost(ctx, "h1") },
			"POST", "/api/v1/hosts/h1/cordon", "", "", host},
		{"uncordon", 200, host, func() (any, error) { return c.UncordonHost(ctx, "h1") },
			"POST", "/api/v1/hosts/h1/uncordon", "", "", host},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.answer(tc.status, tc.answer)
			got, err := tc.call()
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			req := rec.last(t)
			if req.Method != tc.method || req.Path != tc.path || req.Query != tc.query {
				t.Errorf("request %s %s?%s, want %s %s?%s", req.Method, req.Path, req.Query, tc.method, tc.path, tc.query)
			}
			if req.Auth != "Bearer tok-1" {
				t.Errorf("Authorization %q, want bearer token", req.Auth)
			}
			if string(req.Body) != tc.wantBody {
				t.Errorf("body %s, want %s", req.Body, tc.wantBody)
			}
			if tc.wantBody != "" && req.ContentType != "application/json" {
				t.Errorf("Content-Type %q", req.ContentType)
			}
			if tc.wantResult != nil {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tc.wantResult)
				if string(gj) != string(wj) {
					t.Errorf("result %s, want %s", gj, wj)
				}
			}
		})
	}
}

func TestNoTokenNoAuthorizationHeader(t *testing.T) {
	rec := newRecorder(t)
	rec.answer(200, apiv1.ZoneList{})
	if _, err := client.New(rec.srv.URL, "", nil).Zones(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := rec.last(t).Auth; a != "" {
		t.Fatalf("Authorization %q sent without a token", a)
	}
}

func TestEmptyIDIsRefusedLocally(t *testing.T) {
	rec := newRecorder(t)
	c := client.New(rec.srv.URL, "t", nil)
	if _, err := c.GetInstance(context.Background(), ""); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("GetInstance(\"\") = %v, want invalid", err)
	}
	if _, err := c.CordonHost(context.Background(), ""); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("CordonHost(\"\") = %v, want invalid", err)
	}
	if n := len(rec.got); n != 0 {
		t.Fatalf("server got %d requests", n)
	}
}

func TestProblemAnswer(t *testing.T) {
	rec := newRecorder(t)
	rec.answer(404, apiv1.Problem{Type: "about:blank", Title: "Not Found", Status: 404,
		Detail: "instance ins-9 not found", Code: "not_found"})
	_, err := client.New(rec.srv.URL, "t", nil).GetInstance(context.Background(), "ins-9")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %T %v, want *client.APIError", err, err)
	}
	if apiErr.Status != 404 || apiErr.Problem.Code != "not_found" {
		t.Fatalf("APIError %+v", apiErr)
	}
	if got, want := err.Error(), "instance ins-9 not found (not_found)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("gpurent.IsCode(err, not_found) is false")
	}
}

func TestNonProblemErrorAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "t", nil).Me(context.Background())
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 {
		t.Fatalf("error %v, want APIError 502", err)
	}
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("code %q, want unavailable", apiErr.Problem.Code)
	}
	if strings.Contains(err.Error(), "<html>") {
		t.Fatalf("error shows the HTML body: %q", err)
	}
}

func TestInvalidJSONAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id": `)
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "t", nil).Me(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("error %v, want a JSON decode error", err)
	}
}

// deadServer returns the URL of a loopback port that nothing listens on.
func deadServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

func TestNetworkErrorNamesServer(t *testing.T) {
	server := deadServer(t)
	_, err := client.New(server, "t", nil).Me(context.Background())
	var netErr *client.NetworkError
	if !errors.As(err, &netErr) {
		t.Fatalf("error %T %v, want *client.NetworkError", err, err)
	}
	if !strings.Contains(err.Error(), server) {
		t.Fatalf("error %q does not name the server %s", err, server)
	}
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("code %q, want unavailable", gpurent.ErrorCode(err))
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the cause is lost: %v", err)
	}
}

func TestCreateInstanceSendsIdempotencyKey(t *testing.T) {
	rec := newRecorder(t)
	c := client.New(rec.srv.URL, "t", nil)
	ctx := context.Background()
	req := apiv1.CreateInstanceRequest{GPUType: "h100-80g-sxm", GPUCount: 1, Image: "ubuntu"}

	rec.answer(201, apiv1.Instance{ID: "i1"})
	if _, err := c.CreateInstance(ctx, req, "my-key"); err != nil {
		t.Fatal(err)
	}
	if k := rec.last(t).Key; k != "my-key" {
		t.Fatalf("Idempotency-Key %q, want my-key", k)
	}

	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	keys := map[string]bool{}
	for range 2 {
		rec.answer(200, apiv1.Instance{ID: "i1"}) // 200: a replay is a success too
		inst, err := c.CreateInstance(ctx, req, "")
		if err != nil {
			t.Fatal(err)
		}
		if inst.ID != "i1" {
			t.Fatalf("instance %+v", inst)
		}
		k := rec.last(t).Key
		if !hex32.MatchString(k) {
			t.Fatalf("generated key %q is not 128 random bits in hex", k)
		}
		keys[k] = true
	}
	if len(keys) != 2 {
		t.Fatalf("two creates without a key used the same generated key")
	}
}

func TestCreateInstanceRetriesOnceWithSameKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			// Drop the connection without an answer: a network error.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(apiv1.Instance{ID: "ins-1", State: "pending"})
	}))
	defer srv.Close()

	c := client.New(srv.URL, "t", &http.Client{Transport: &http.Transport{}})
	inst, err := c.CreateInstance(context.Background(), apiv1.CreateInstanceRequest{GPUType: "a", GPUCount: 1, Image: "i"}, "")
	if err != nil {
		t.Fatalf("create after one dropped connection: %v", err)
	}
	if inst.ID != "ins-1" {
		t.Fatalf("instance %+v", inst)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 {
		t.Fatalf("server got %d attempts, want 2", len(keys))
	}
	if keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("attempts used keys %q: want one non-empty key reused", keys)
	}
}

func TestCreateInstanceGivesUpAfterOneRetry(t *testing.T) {
	server := deadServer(t)
	_, err := client.New(server, "t", nil).CreateInstance(context.Background(),
		apiv1.CreateInstanceRequest{GPUType: "a", GPUCount: 1, Image: "i"}, "k")
	var netErr *client.NetworkError
	if !errors.As(err, &netErr) {
		t.Fatalf("error %v, want a network error", err)
	}
}

func TestCreateInstanceDoesNotRetryProblem(t *testing.T) {
	rec := newRecorder(t)
	rec.answer(402, apiv1.Problem{Status: 402, Detail: "balance too low", Code: "payment_required"})
	_, err := client.New(rec.srv.URL, "t", nil).CreateInstance(context.Background(),
		apiv1.CreateInstanceRequest{GPUType: "a", GPUCount: 1, Image: "i"}, "")
	if !gpurent.IsCode(err, gpurent.CodePaymentRequired) {
		t.Fatalf("error %v, want payment_required", err)
	}
	rec.last(t) // exactly one attempt
}

func TestCanceledContext(t *testing.T) {
	rec := newRecorder(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := client.New(rec.srv.URL, "t", nil).CreateInstance(ctx, apiv1.CreateInstanceRequest{}, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}
