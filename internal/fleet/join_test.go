package fleet_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// snapshot is what a takeover would change about a host.
type snapshot struct {
	ID, Zone, TokenHash string
	Generation          int64
	State               gpurent.HostState
	GPUs                []string
}

func (e *env) snap(id string) snapshot {
	e.t.Helper()
	h := e.host(id)
	s := snapshot{ID: h.ID, Zone: h.ZoneID, TokenHash: h.AgentTokenHash, Generation: h.Generation, State: h.State}
	for _, g := range h.GPUs {
		s.GPUs = append(s.GPUs, g.ID+"/"+g.HostID+"/"+string(g.Health))
	}
	return s
}

func (e *env) hostCount() int {
	e.t.Helper()
	hs, err := e.st.ListHosts(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(hs)
}

// TestRegisterCannotTakeOverAHost: a second registration of an existing
// host's name with a fresh, a used, a named or another host's credential is
// refused and leaves the host as it was: id, zone, credential, desired
// state generation, GPUs.
func TestRegisterCannotTakeOverAHost(t *testing.T) {
	e := newEnv(t)
	firstJoin := e.mint(zoneA, "node-1")
	r := regReq("node-1", zoneA, h100, 4)
	r.JoinToken = firstJoin
	first, err := e.fleet.Register(e.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	other := e.register(regReq("node-2", zoneA, h100, 2))
	if _, err := e.fleet.SetHostState(e.ctx, e.op, first.HostID, gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	before := e.snap(first.HostID)
	fresh := e.mint(zoneA, "")
	named := e.mint(zoneA, "node-1")
	attacks := []struct {
		name    string
		join    string
		agent   string
		zone    string
		code    gpurent.Code
		gpuHost string // whose GPUs the request claims
	}{
		{"fresh token", fresh, "", zoneA, gpurent.CodeConflict, "evil"},
		{"fresh token, the host's own GPUs", fresh, "", zoneA, gpurent.CodeConflict, "node-1"},
		{"token named for the host", named, "", zoneA, gpurent.CodeConflict, "evil"},
		{"the token the host joined with", firstJoin, "", zoneA, gpurent.CodeUnauthorized, "evil"},
		{"another host's agent token", "", other.AgentToken, zoneA, gpurent.CodeUnauthorized, "evil"},
		{"a made-up agent token", "", "gpa_guess", zoneA, gpurent.CodeUnauthorized, "evil"},
		{"the agent token's hash", "", before.TokenHash, zoneA, gpurent.CodeUnauthorized, "evil"},
		{"fresh token, other zone", fresh, "", zoneB, gpurent.CodeForbidden, "evil"},
	}
	for _, a := range attacks {
		req := regReq("node-1", a.zone, h100, 4)
		req.GPUs = rentaltest.GPUInfos(a.gpuHost, h100, 4)
		req.JoinToken, req.AgentToken = a.join, a.agent
		resp, err := e.fleet.Register(e.ctx, req)
		wantCode(t, err, a.code, a.name)
		if resp.HostID != "" || resp.AgentToken != "" {
			t.Fatalf("%s: refused registration answered %+v", a.name, resp)
		}
		if got := e.snap(first.HostID); !snapEqual(got, before) {
			t.Fatalf("%s changed the host:\n got  %+v\n want %+v", a.name, got, before)
		}
	}
	if h, err := e.fleet.AuthenticateAgent(e.ctx, first.AgentToken); err != nil || h.ID != first.HostID {
		t.Fatalf("the host's own agent token after the attacks: %v, %v", h, err)
	}
	if n := e.hostCount(); n != 2 {
		t.Fatalf("%d hosts after refused registrations, want 2", n)
	}
	// The refused uses of the fresh token were rolled back: it still
	// registers one new host.
	req := regReq("node-3", zoneA, h100, 1)
	req.JoinToken = fresh
	if _, err := e.fleet.Register(e.ctx, req); err != nil {
		t.Fatalf("the fresh token after its refused uses: %v", err)
	}
}

func snapEqual(a, b snapshot) bool {
	return a.ID == b.ID && a.Zone == b.Zone && a.TokenHash == b.TokenHash && a.Generation == b.Generation &&
		a.State == b.State && slices.Equal(a.GPUs, b.GPUs)
}

// TestJoinTokenOnce: a token registers one host once; an expired, revoked
// or misdirected one registers nothing.
func TestJoinTokenOnce(t *testing.T) {
	e := newEnv(t)
	tok := e.mint(zoneA, "")
	r := regReq("node-a", zoneA, h100, 1)
	r.JoinToken = tok
	if _, err := e.fleet.Register(e.ctx, r); err != nil {
		t.Fatal(err)
	}
	r = regReq("node-b", zoneA, h100, 1)
	r.JoinToken = tok
	_, err := e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "a used token")

	// Expired.
	exp := e.mint(zoneA, "")
	e.clock.Advance(time.Hour)
	r.JoinToken = exp
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "an expired token")

	// Revoked.
	secret, jt, err := e.fleet.CreateJoinToken(e.ctx, e.op, zoneA, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fleet.RevokeJoinToken(e.ctx, e.op, jt.ID); err != nil {
		t.Fatal(err)
	}
	r.JoinToken = secret
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "a revoked token")

	// For another name.
	r.JoinToken = e.mint(zoneA, "node-c")
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeForbidden, "a token named for another host")
	if n := e.hostCount(); n != 1 {
		t.Fatalf("%d hosts, want 1", n)
	}

	// Listing shows states, never secrets; only operators list, create,
	// revoke.
	list, err := e.fleet.JoinTokens(e.ctx, e.op)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, l := range list {
		states[l.State(e.clock.Now())]++
		if l.Hash == "" || l.Hash == secret || l.Hash == tok {
			t.Fatalf("listed token %+v keeps no hash or its secret", l)
		}
	}
	if states["used"] != 1 || states["expired"] != 1 || states["revoked"] != 1 || states["active"] != 1 {
		t.Fatalf("token states %v", states)
	}
	_, err = e.fleet.JoinTokens(e.ctx, e.cust)
	wantCode(t, err, gpurent.CodeForbidden, "a customer lists join tokens")
	_, _, err = e.fleet.CreateJoinToken(e.ctx, e.cust, zoneA, "", time.Hour)
	wantCode(t, err, gpurent.CodeForbidden, "a customer creates a join token")
	_, _, err = e.fleet.CreateJoinToken(e.ctx, nil, zoneA, "", time.Hour)
	wantCode(t, err, gpurent.CodeUnauthorized, "anonymous creates a join token")
	wantCode(t, e.fleet.RevokeJoinToken(e.ctx, e.cust, list[0].ID), gpurent.CodeForbidden, "a customer revokes")
	_, _, err = e.fleet.CreateJoinToken(e.ctx, e.op, "mars-1", "", time.Hour)
	wantCode(t, err, gpurent.CodeInvalid, "unknown zone")
	_, _, err = e.fleet.CreateJoinToken(e.ctx, e.op, zoneA, "", 365*24*time.Hour)
	wantCode(t, err, gpurent.CodeInvalid, "a year-long token")
}

// TestGPUCannotMoveFromLiveHost: neither a registration nor a report moves
// a GPU UUID another live host holds; once an operator resets that host,
// it can.
func TestGPUCannotMoveFromLiveHost(t *testing.T) {
	e := newEnv(t)
	a := e.register(regReq("node-a", zoneA, h100, 4))
	beforeA := e.snap(a.HostID)
	stolen := rentaltest.GPUInfos("node-a", h100, 4)[2]

	r := regReq("node-b", zoneA, h100, 2)
	r.GPUs = append(r.GPUs, stolen)
	r.GPUs[2].Index = 2
	tok := e.mint(zoneA, "")
	r.JoinToken = tok
	_, err := e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeConflict, "registering with another host's GPU")
	if n := e.hostCount(); n != 1 {
		t.Fatalf("%d hosts after the refused registration, want 1", n)
	}

	r.GPUs = r.GPUs[:2]
	b, err := e.fleet.Register(e.ctx, r) // the same token: the refused use did not count
	if err != nil {
		t.Fatal(err)
	}
	beforeB := e.snap(b.HostID)
	e.clock.Advance(10 * time.Second)
	claim := append(rentaltest.GPUInfos("node-b", h100, 2), stolen)
	claim[2].Index = 2
	if err := e.report(b.HostID, claim); err != nil {
		t.Fatalf("a report with a refused inventory: %v (the heartbeat goes on)", err)
	}
	if got := e.snap(a.HostID); !snapEqual(got, beforeA) {
		t.Fatalf("node-b's report moved node-a's GPU:\n got  %+v\n want %+v", got, beforeA)
	}
	if got := e.snap(b.HostID); !snapEqual(got, beforeB) {
		t.Fatalf("node-b's refused inventory changed it:\n got  %+v\n want %+v", got, beforeB)
	}
	if h := e.host(b.HostID); !h.LastSeenAt.Equal(e.clock.Now()) {
		t.Fatalf("node-b's heartbeat was lost with its refused inventory")
	}

	// After an operator resets node-a its GPUs are free to move.
	if _, _, err := e.fleet.ResetHost(e.ctx, e.op, a.HostID, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.report(b.HostID, claim); err != nil {
		t.Fatal(err)
	}
	if h := e.host(b.HostID); len(h.GPUs) != 3 {
		t.Fatalf("node-b has %d GPUs after node-a's reset, want 3", len(h.GPUs))
	}
}

// TestResetHost: a reset invalidates the agent's credential, takes the
// host offline at once, and issues a join token that re-registers that
// host (same id, state and desired state) and nothing else.
func TestResetHost(t *testing.T) {
	e := newEnv(t)
	first := e.register(regReq("node-1", zoneA, h100, 2))
	if _, err := e.fleet.SetHostState(e.ctx, e.op, first.HostID, gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	gen := e.host(first.HostID).Generation
	_, _, err := e.fleet.ResetHost(e.ctx, e.cust, first.HostID, 0)
	wantCode(t, err, gpurent.CodeForbidden, "a customer resets a host")
	_, _, err = e.fleet.ResetHost(e.ctx, e.op, "host-nope", 0)
	wantCode(t, err, gpurent.CodeNotFound, "reset an unknown host")

	earlier, _, err := e.fleet.ResetHost(e.ctx, e.op, first.HostID, 0)
	if err != nil {
		t.Fatal(err)
	}
	secret, jt, err := e.fleet.ResetHost(e.ctx, e.op, first.HostID, 0) // a second reset revokes the first one's token
	if err != nil {
		t.Fatal(err)
	}
	if jt.HostID != first.HostID || jt.Name != "node-1" || jt.ZoneID != zoneA {
		t.Fatalf("reset token %+v", jt)
	}
	_, err = e.fleet.AuthenticateAgent(e.ctx, first.AgentToken)
	wantCode(t, err, gpurent.CodeUnauthorized, "the agent token after a reset")
	if e.fleet.Online(e.host(first.HostID)) {
		t.Fatal("a reset host is still online")
	}
	// The old credential cannot re-register either.
	r := regReq("node-1", zoneA, h100, 2)
	r.AgentToken = first.AgentToken
	r.JoinToken = ""
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "re-register with the reset credential")
	// The reset token is for node-1 only.
	r = regReq("node-2", zoneA, h100, 2)
	r.JoinToken = secret
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeForbidden, "the reset token for another name")
	r = regReq("node-1", zoneA, h100, 2)
	r.JoinToken = earlier
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "the earlier reset's token")

	r.JoinToken = secret
	again, err := e.fleet.Register(e.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	h := e.host(again.HostID)
	if again.HostID != first.HostID || h.State != gpurent.HostCordoned || h.Generation <= gen || len(h.GPUs) != 2 {
		t.Fatalf("re-registered after reset: %+v (generation was %d)", h, gen)
	}
	if got, err := e.fleet.AuthenticateAgent(e.ctx, again.AgentToken); err != nil || got.ID != first.HostID {
		t.Fatalf("the new agent token: %v, %v", got, err)
	}
	_, err = e.fleet.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "the reset token twice")
}

// TestConcurrentRegistrationsOneToken: registrations racing with one join
// token: the database lets exactly one through, on SQLite and PostgreSQL.
func TestConcurrentRegistrationsOneToken(t *testing.T) {
	for name, open := range map[string]func(testing.TB) gpurent.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			e := newEnvOn(t, open(t))
			tok := e.mint(zoneA, "")
			const n = 12
			resps := make([]agentproto.RegisterResponse, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					r := regReq("node-"+string(rune('a'+i)), zoneA, h100, 1)
					r.JoinToken = tok
					<-start
					resps[i], errs[i] = e.fleet.Register(e.ctx, r)
				})
			}
			close(start)
			wg.Wait()
			wins := 0
			for i, err := range errs {
				switch {
				case err == nil:
					wins++
				case !gpurent.IsCode(err, gpurent.CodeUnauthorized):
					t.Fatalf("registration %d: %v, want a win or unauthorized", i, err)
				}
			}
			if wins != 1 || e.hostCount() != 1 {
				t.Fatalf("%d registrations won and %d hosts exist with one token, want exactly 1", wins, e.hostCount())
			}
		})
	}
}
