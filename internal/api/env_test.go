package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/graph"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

const (
	testGPUType = "rtx4090-24g"
	testZone    = "cd-tianfu-a"
)

// env is a whole API over a real SQLite store and the real services.
type env struct {
	t       testing.TB
	st      gpurent.Store
	auth    *auth.Service
	rental  *rental.Service
	fleet   *fleet.Service
	billing *pricing.Service
	wallet  *wallet.Service
	fakePay *wallet.FakeProvider
	srv     *Server
	h       http.Handler
	reg     *prometheus.Registry
	logs    *bytes.Buffer
	logMu   *sync.Mutex
	seq     atomic.Int64

	// incidents is the real health service over st.
	incidents *incident.Service
	cert      *certification.Service
}

type envOpts struct {
	pollWait time.Duration
	// logs serves GET /instances/{id}/logs (nil: unavailable).
	logs InstanceLogs
}

func newEnv(t testing.TB) *env { return newEnvWith(t, envOpts{}) }

func newEnvWith(t testing.TB, o envOpts) *env {
	t.Helper()
	st := storetest.SQLite(t)
	storetest.SeedCatalog(t, st)
	if o.pollWait == 0 {
		o.pollWait = 50 * time.Millisecond
	}
	logs := &bytes.Buffer{}
	lw := &lockedWriter{w: logs}
	log := slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &env{t: t, st: st, logs: logs, logMu: &lw.mu, reg: prometheus.NewRegistry()}
	e.fakePay = wallet.NewFakeProvider("fake", "test-callback-secret", "http://127.0.0.1:1")
	g, err := graph.New(graph.Config{Store: st, Logger: log, BcryptCost: bcrypt.MinCost, PollWait: o.pollWait,
		PaymentProviders: []wallet.PaymentProvider{e.fakePay}, AcceptSynthetic: true})
	if err != nil {
		t.Fatal(err)
	}
	e.auth, e.rental, e.fleet, e.billing, e.wallet = g.Auth, g.Rental, g.Fleet, g.Billing, g.Wallet
	e.incidents, e.cert = g.Incidents, g.Certification
	e.srv = New(Config{Wallet: e.wallet, Auth: e.auth, Rental: e.rental, Fleet: e.fleet, Billing: e.billing, Incidents: e.incidents,
		Certification: e.cert, Academic: g.Academic, Metering: g.Metering, Reports: g.Reports,
		Store: st, Logger: log, Registry: e.reg, Version: "v-test", Logs: o.logs})
	e.h = e.srv.Handler()
	return e
}

// lockedWriter lets handlers on several goroutines share the log buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// logText returns what was logged so far.
func (e *env) logText() string {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	return e.logs.String()
}

// req describes one request.
type req struct {
	method, path string
	token        string
	body         any // string: raw; nil: none; else JSON-encoded
	contentType  string
	headers      map[string]string
	ctx          context.Context
}

func (e *env) do(r req) *httptest.ResponseRecorder {
	e.t.Helper()
	var body io.Reader
	ct := r.contentType
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
		if ct == "" {
			ct = "application/json"
		}
	case []byte:
		body = bytes.NewReader(b)
		if ct == "" {
			ct = "application/json"
		}
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(raw)
		if ct == "" {
			ct = "application/json"
		}
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if r.ctx != nil {
		hr = hr.WithContext(r.ctx)
	}
	if ct != "" && ct != "-" {
		hr.Header.Set("Content-Type", ct)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, hr)
	return w
}

// decode reads a JSON answer, failing unless the status is want.
func decode[T any](t testing.TB, w *httptest.ResponseRecorder, want int) T {
	t.Helper()
	var v T
	if w.Code != want {
		t.Fatalf("status %d, want %d; body %s", w.Code, want, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != contentJSON {
		t.Fatalf("Content-Type %q, want %s", ct, contentJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T from %s: %v", v, w.Body.String(), err)
	}
	return v
}

// problem checks w is a problem with status and code.
func problem(t testing.TB, w *httptest.ResponseRecorder, status int, code gpurent.Code) apiv1.Problem {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != contentProblem {
		t.Fatalf("Content-Type %q, want %s", ct, contentProblem)
	}
	var p apiv1.Problem
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %s: %v", w.Body.String(), err)
	}
	if p.Status != status || p.Code != string(code) || p.Title == "" || p.Type != problemTypePrefix+string(code) {
		t.Fatalf("problem %+v, want status %d code %s", p, status, code)
	}
	return p
}

// user is an account with a bearer token.
type user struct {
	acc   *gpurent.Account
	token string
}

func (e *env) account(role gpurent.Role, balanceFen int64) user {
	e.t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("%s%d@example.com", role, e.seq.Add(1))
	acc, err := e.auth.CreateAccount(ctx, email, string(role), "password1", role, balanceFen)
	if err != nil {
		e.t.Fatal(err)
	}
	if balanceFen > 0 {
		// The ledger is the balance: a top-up, as an operator's credit.
		tx := &gpurent.LedgerTx{Op: "topup", Key: "test-seed:" + acc.ID, Customer: acc.ID,
			At: time.Now(), AmountFen: balanceFen, Note: "test balance"}
		if _, err := e.st.PostLedger(ctx, tx); err != nil {
			e.t.Fatal(err)
		}
	}
	secret, _, _, err := e.auth.Login(ctx, email, "password1")
	if err != nil {
		e.t.Fatal(err)
	}
	return user{acc: acc, token: secret}
}

func (e *env) customer() user { return e.account(gpurent.RoleCustomer, 1_000_000_00) }
func (e *env) operator() user { return e.account(gpurent.RoleOperator, 0) }

// agentHost registers a host with n GPUs through the API.
type agentHost struct {
	id, token string
}

func (e *env) host(name string, n int) agentHost {
	e.t.Helper()
	gpus := make([]agentproto.GPUInfo, n)
	for i := range gpus {
		gpus[i] = agentproto.GPUInfo{
			UUID: fmt.Sprintf("GPU-%s-%02d", name, i), Index: i, Type: testGPUType,
			Name: "NVIDIA GeForce RTX 4090", MemoryMiB: 24564, TopoGroup: "pcie0", Health: "healthy",
		}
	}
	w := e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: e.joinToken(), Name: name, Zone: testZone, CPUMilli: 64000, MemoryMiB: 256 * 1024,
		DiskGiB: 2000, Runtime: "docker", AgentVersion: "v-test", GPUs: gpus,
	}})
	resp := decode[agentproto.RegisterResponse](e.t, w, http.StatusOK)
	if resp.HostID == "" || resp.AgentToken == "" {
		e.t.Fatalf("register answer %+v", resp)
	}
	return agentHost{id: resp.HostID, token: resp.AgentToken}
}

// rent creates an instance for u and returns it.
func (e *env) rent(u user, count int) apiv1.Instance {
	e.t.Helper()
	w := e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		Name: "train", GPUType: testGPUType, GPUCount: count, Image: "pytorch/pytorch:2.4",
	}})
	return decode[apiv1.Instance](e.t, w, http.StatusCreated)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// httptestDo sends a bodiless request to h.
func httptestDo(h http.Handler, method, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

// joinToken mints a one-time join token for a host in testZone.
func (e *env) joinToken() string {
	e.t.Helper()
	tok, _, err := e.fleet.MintJoinToken(context.Background(), testZone, "", 0, "")
	if err != nil {
		e.t.Fatalf("mint a join token: %v", err)
	}
	return tok
}
