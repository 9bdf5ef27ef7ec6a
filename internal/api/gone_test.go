package api

import (
	"context"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/agentproto"
)

// TestClientGoneIsNoServerError: an agent that ends its long poll (its
// request context cancelled) gets no answer written and logs no 500.
func TestClientGoneIsNoServerError(t *testing.T) {
	e := newEnv(t)
	h := e.host("gone", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := e.do(req{method: "GET", path: agentproto.PathDesired + "?after=999", token: h.token, ctx: ctx})
	if w.Body.Len() != 0 {
		t.Errorf("an answer was written to a client that left: %d %s", w.Code, w.Body.String())
	}
	if logs := e.logText(); strings.Contains(logs, "request failed") || strings.Contains(logs, "status=500") {
		t.Errorf("a client leaving was logged as a server error:\n%s", logs)
	}
}
