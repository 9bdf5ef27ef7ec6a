package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
)

// TestJoinTokenFuncReadAtRegistration: an agent given JoinTokenFunc (a
// token file, an in-process mint) asks for the join token only when it
// registers, and presents its current agent token with a re-registration
// so that the control plane can tell its own host from a takeover.
func TestJoinTokenFuncReadAtRegistration(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	h.heartbeat = 20 * time.Millisecond
	var calls atomic.Int64
	cfg := h.config(h.runtime())
	cfg.JoinToken = ""
	cfg.JoinTokenFunc = func(context.Context) (string, error) {
		calls.Add(1)
		return cp.joinToken, nil
	}
	ag := h.startWith(cfg)
	cp.waitReport("the first report", 0, func(agentproto.Report) bool { return true })
	if n := calls.Load(); n != 1 {
		t.Fatalf("join token read %d times for one registration, want 1", n)
	}
	cp.mu.Lock()
	first := cp.registrations[0]
	cp.mu.Unlock()
	if first.JoinToken != cp.joinToken || first.AgentToken != "" {
		t.Fatalf("first registration carried join %q agent %q", first.JoinToken, first.AgentToken)
	}

	cp.revoke(hostName)
	cp.waitUntil("a second registration", func() bool { return len(cp.registrations) == 2 })
	if n := calls.Load(); n != 2 {
		t.Fatalf("join token read %d times for two registrations, want 2", n)
	}
	cp.mu.Lock()
	second := cp.registrations[1]
	cp.mu.Unlock()
	if second.AgentToken == "" {
		t.Fatal("the re-registration did not present the agent's current token")
	}
	before := cp.reportCount()
	cp.waitReport("a report with the new token", before, func(agentproto.Report) bool { return true })
	ag.stop(t)

	// A restart with stored credentials reads no join token.
	before = cp.reportCount()
	h.startWith(cfg)
	cp.waitReport("a report from the restarted agent", before, func(agentproto.Report) bool { return true })
	if n := calls.Load(); n != 2 {
		t.Fatalf("a restart with stored credentials read the join token (%d reads)", n)
	}
}
