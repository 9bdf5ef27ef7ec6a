package api

import (
	"net/http"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestJoinTokenRoutes: operators create (secret shown once), list (no
// secrets) and revoke join tokens and reset hosts; customers and
// anonymous callers cannot; a registration over HTTP that names an
// existing host with a fresh token is refused and changes nothing.
func TestJoinTokenRoutes(t *testing.T) {
	e := newEnv(t)
	op, cust := e.operator(), e.customer()
	h := e.host("gpu-a", 2)

	w := e.do(req{method: "POST", path: "/api/v1/join-tokens", token: op.token,
		body: apiv1.CreateJoinTokenRequest{Zone: testZone, Name: "gpu-b", TTLSeconds: 3600}})
	created := decode[apiv1.CreatedJoinToken](t, w, http.StatusCreated)
	if created.Token == "" || created.State != "active" || created.Name != "gpu-b" || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("created %+v (Cache-Control %q)", created, w.Header().Get("Cache-Control"))
	}
	list := decode[apiv1.JoinTokenList](t, e.do(req{method: "GET", path: "/api/v1/join-tokens", token: op.token}), http.StatusOK)
	if len(list.JoinTokens) == 0 {
		t.Fatal("no join tokens listed")
	}
	for _, tok := range []string{cust.token, ""} {
		code := http.StatusForbidden
		if tok == "" {
			code = http.StatusUnauthorized
		}
		if w := e.do(req{method: "GET", path: "/api/v1/join-tokens", token: tok}); w.Code != code {
			t.Fatalf("list as %q: %d", tok, w.Code)
		}
		if w := e.do(req{method: "POST", path: "/api/v1/join-tokens", token: tok, body: apiv1.CreateJoinTokenRequest{Zone: testZone}}); w.Code != code {
			t.Fatalf("create as %q: %d", tok, w.Code)
		}
		if w := e.do(req{method: "POST", path: "/api/v1/hosts/" + h.id + "/reset", token: tok, body: "{}"}); w.Code != code {
			t.Fatalf("reset as %q: %d", tok, w.Code)
		}
	}

	// A fresh token cannot take gpu-a over.
	fresh := e.joinToken()
	problem(t, e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: fresh, Name: "gpu-a", Zone: testZone, CPUMilli: 1000, MemoryMiB: 1024, Runtime: "docker"}}),
		http.StatusConflict, gpurent.CodeConflict)
	if w := e.do(req{method: "GET", path: agentproto.PathDesired, token: h.token}); w.Code != http.StatusOK {
		t.Fatalf("gpu-a's own agent after the refused takeover: %d %s", w.Code, w.Body.String())
	}

	// Revoke: the token is refused afterwards.
	if w := e.do(req{method: "DELETE", path: "/api/v1/join-tokens/" + created.ID, token: op.token}); w.Code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", w.Code, w.Body.String())
	}
	problem(t, e.do(req{method: "DELETE", path: "/api/v1/join-tokens/" + created.ID, token: op.token}), http.StatusConflict, gpurent.CodeConflict)
	problem(t, e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: created.Token, Name: "gpu-b", Zone: testZone, CPUMilli: 1000, MemoryMiB: 1024, Runtime: "docker"}}),
		http.StatusUnauthorized, gpurent.CodeUnauthorized)

	// Reset (an empty body is fine): the old agent token is refused, the
	// answer's token re-registers gpu-a with its id.
	reset := decode[apiv1.HostReset](t, e.do(req{method: "POST", path: "/api/v1/hosts/" + h.id + "/reset", token: op.token}), http.StatusOK)
	if reset.Host.ID != h.id || reset.JoinToken.Token == "" || reset.JoinToken.HostID != h.id {
		t.Fatalf("reset answered %+v", reset)
	}
	problem(t, e.do(req{method: "GET", path: agentproto.PathDesired, token: h.token}), http.StatusUnauthorized, gpurent.CodeUnauthorized)
	resp := decode[agentproto.RegisterResponse](t, e.do(req{method: "POST", path: agentproto.PathRegister, body: agentproto.RegisterRequest{
		JoinToken: reset.JoinToken.Token, Name: "gpu-a", Zone: testZone, CPUMilli: 1000, MemoryMiB: 1024, Runtime: "docker"}}), http.StatusOK)
	if resp.HostID != h.id {
		t.Fatalf("re-registered as %s, want %s", resp.HostID, h.id)
	}
}
