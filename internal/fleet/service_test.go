package fleet_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

const (
	h100    = "h100-80g-sxm"
	rtx4090 = "rtx4090-24g"
	a100    = "a100-80g-sxm"
	zoneA   = "cd-tianfu-a"
	zoneB   = "cd-gaoxin-b"
	// joinToken marks a request whose join token env.register mints: it
	// is no token the service accepts.
	joinToken = "join-fleet-test"
)

type env struct {
	t       testing.TB
	ctx     context.Context
	st      gpurent.Store
	clock   *clocktest.Clock
	fleet   *fleet.Service
	changes atomic.Int64 // OnChange calls
	op      *gpurent.Account
	cust    *gpurent.Account
	creds   map[string]string // host name → its agent's current token
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvOn(t, storetest.SQLite(t))
}

// newEnvOn is newEnv on the store st.
func newEnvOn(t testing.TB, st gpurent.Store) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	storetest.SeedCatalog(t, st)
	e := &env{t: t, ctx: ctx, st: st, clock: clocktest.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)), creds: map[string]string{}}
	e.fleet = fleet.New(fleet.Config{Store: st, Now: e.clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnChange: func() { e.changes.Add(1) }, HostTimeout: 30 * time.Second})
	e.op = &gpurent.Account{Email: "ops@example.com", Role: gpurent.RoleOperator, PasswordHash: "x"}
	e.cust = &gpurent.Account{Email: "c@example.com", Role: gpurent.RoleCustomer, PasswordHash: "x"}
	for _, a := range []*gpurent.Account{e.op, e.cust} {
		if err := st.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func regReq(name, zone, typ string, n int) agentproto.RegisterRequest {
	return agentproto.RegisterRequest{JoinToken: joinToken, Name: name, Zone: zone, CPUMilli: 256_000,
		MemoryMiB: 4 << 20, DiskGiB: 7680, Runtime: "docker", AgentVersion: "test", GPUs: rentaltest.GPUInfos(name, typ, n)}
}

// register registers r. A request carrying the joinToken marker gets the
// agent's current token when the host registered before (a restarted
// agent re-registering), else a join token minted for it.
func (e *env) register(r agentproto.RegisterRequest) agentproto.RegisterResponse {
	e.t.Helper()
	if r.JoinToken == joinToken {
		if tok, ok := e.creds[r.Name]; ok {
			r.JoinToken, r.AgentToken = "", tok
		} else {
			r.JoinToken = e.mint(r.Zone, "")
		}
	}
	resp, err := e.fleet.Register(e.ctx, r)
	if err != nil {
		e.t.Fatalf("register %s: %v", r.Name, err)
	}
	e.creds[r.Name] = resp.AgentToken
	return resp
}

// mint makes a join token for zone (and name, when not "") as the operator.
func (e *env) mint(zone, name string) string {
	e.t.Helper()
	secret, _, err := e.fleet.CreateJoinToken(e.ctx, e.op, zone, name, time.Hour)
	if err != nil {
		e.t.Fatalf("create join token: %v", err)
	}
	return secret
}

func (e *env) host(id string) *gpurent.Host {
	e.t.Helper()
	h, err := e.st.HostByID(e.ctx, id)
	if err != nil {
		e.t.Fatalf("read host %s: %v", id, err)
	}
	return h
}

func (e *env) report(hostID string, gpus []agentproto.GPUInfo) error {
	return e.fleet.Report(e.ctx, e.host(hostID), agentproto.Report{At: e.clock.Now(), Runtime: "docker", GPUs: gpus})
}

func health(h *gpurent.Host) map[string]gpurent.GPUHealth {
	out := map[string]gpurent.GPUHealth{}
	for _, g := range h.GPUs {
		out[g.ID] = g.Health
	}
	return out
}

func wantCode(t testing.TB, err error, code gpurent.Code, what string) {
	t.Helper()
	if got := gpurent.ErrorCode(err); got != code {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, got, code)
	}
}

// TestRegisterRefusals: a bad join token or a malformed request registers
// nothing.
func TestRegisterRefusals(t *testing.T) {
	e := newEnv(t)
	with := func(f func(r *agentproto.RegisterRequest)) agentproto.RegisterRequest {
		r := regReq("node-1", zoneA, h100, 8)
		f(&r)
		return r
	}
	cases := []struct {
		name string
		r    agentproto.RegisterRequest
		code gpurent.Code
	}{
		{"wrong join token", with(func(r *agentproto.RegisterRequest) { r.JoinToken = "guess" }), gpurent.CodeUnauthorized},
		{"no join token", with(func(r *agentproto.RegisterRequest) { r.JoinToken = "" }), gpurent.CodeUnauthorized},
		{"join token prefix", with(func(r *agentproto.RegisterRequest) { r.JoinToken = joinToken[:5] }), gpurent.CodeUnauthorized},
		{"unknown zone", with(func(r *agentproto.RegisterRequest) { r.Zone = "mars-1" }), gpurent.CodeInvalid},
		{"no zone", with(func(r *agentproto.RegisterRequest) { r.Zone = "" }), gpurent.CodeInvalid},
		{"unknown GPU type", with(func(r *agentproto.RegisterRequest) { r.GPUs[3].Type = "b200-192g" }), gpurent.CodeInvalid},
		{"repeated GPU UUID", with(func(r *agentproto.RegisterRequest) { r.GPUs[1].UUID = r.GPUs[0].UUID }), gpurent.CodeInvalid},
		{"empty GPU UUID", with(func(r *agentproto.RegisterRequest) { r.GPUs[0].UUID = "" }), gpurent.CodeInvalid},
		{"empty name", with(func(r *agentproto.RegisterRequest) { r.Name = "" }), gpurent.CodeInvalid},
		{"name with space", with(func(r *agentproto.RegisterRequest) { r.Name = "node 1" }), gpurent.CodeInvalid},
		{"name with slash", with(func(r *agentproto.RegisterRequest) { r.Name = "../node" }), gpurent.CodeInvalid},
		{"name too long", with(func(r *agentproto.RegisterRequest) { r.Name = strings.Repeat("n", 64) }), gpurent.CodeInvalid},
		{"bad runtime", with(func(r *agentproto.RegisterRequest) { r.Runtime = "podman" }), gpurent.CodeInvalid},
		{"no runtime", with(func(r *agentproto.RegisterRequest) { r.Runtime = "" }), gpurent.CodeInvalid},
		{"no CPU", with(func(r *agentproto.RegisterRequest) { r.CPUMilli = 0 }), gpurent.CodeInvalid},
		{"negative memory", with(func(r *agentproto.RegisterRequest) { r.MemoryMiB = -1 }), gpurent.CodeInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.fleet.Register(e.ctx, tc.r)
			wantCode(t, err, tc.code, tc.name)
			if resp.AgentToken != "" || resp.HostID != "" {
				t.Errorf("refused registration answered %+v", resp)
			}
		})
	}
	hosts, err := e.st.ListHosts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 0 {
		t.Errorf("refused registrations left %d hosts", len(hosts))
	}
	if n := e.changes.Load(); n != 0 {
		t.Errorf("refused registrations called OnChange %d times", n)
	}

	// With no token minted nobody registers, not even with "".
	closed := fleet.New(fleet.Config{Store: e.st, Now: e.clock.Now})
	r := regReq("node-1", zoneA, h100, 8)
	r.JoinToken = ""
	_, err = closed.Register(e.ctx, r)
	wantCode(t, err, gpurent.CodeUnauthorized, "register with no join token")
}

// TestRegister: a registration records the host and its GPUs and gives the
// agent a token that authenticates it.
func TestRegister(t *testing.T) {
	e := newEnv(t)
	req := regReq("node-1", zoneA, h100, 8)
	resp := e.register(req)
	if resp.HostID == "" || resp.AgentToken == "" || resp.AgentToken == joinToken {
		t.Fatalf("register answered %+v", resp)
	}
	h := e.host(resp.HostID)
	if h.Name != "node-1" || h.ZoneID != zoneA || h.State != gpurent.HostReady || h.Runtime != "docker" ||
		h.CPUMilli != req.CPUMilli || h.MemoryMiB != req.MemoryMiB || h.AgentVersion != "test" {
		t.Errorf("host %+v does not match the request", h)
	}
	if h.LastSeenAt == nil || !h.LastSeenAt.Equal(e.clock.Now()) {
		t.Errorf("last seen %v, want %v", h.LastSeenAt, e.clock.Now())
	}
	if h.AgentTokenHash != fleet.HashToken(resp.AgentToken) {
		t.Error("the stored token hash is not the hash of the token handed out")
	}
	if len(h.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(h.GPUs))
	}
	for i, g := range h.GPUs {
		w := req.GPUs[i]
		if g.ID != w.UUID || g.Index != w.Index || g.TypeID != h100 || g.Health != gpurent.GPUHealthy || g.TopoGroup != w.TopoGroup {
			t.Errorf("GPU %d: %+v, want %+v", i, g, w)
		}
	}
	if h.Generation < 1 {
		t.Errorf("generation %d after registration, want bumped", h.Generation)
	}
	if n := e.changes.Load(); n != 1 {
		t.Errorf("OnChange called %d times, want 1", n)
	}
	got, err := e.fleet.AuthenticateAgent(e.ctx, resp.AgentToken)
	if err != nil || got.ID != resp.HostID {
		t.Fatalf("authenticate with the new token: %v, %v", got, err)
	}
	// A GPU reported without health is healthy.
	req2 := regReq("node-2", zoneB, rtx4090, 2)
	req2.GPUs[0].Health = ""
	if h := e.host(e.register(req2).HostID); h.GPUs[0].Health != gpurent.GPUHealthy {
		t.Errorf("GPU without health registered as %q", h.GPUs[0].Health)
	}
}

// TestReRegister: the same name, re-registered with its agent's current
// token, keeps its host id, gets a new token, and the old token stops
// working; the operator's cordon stays.
func TestReRegister(t *testing.T) {
	e := newEnv(t)
	first := e.register(regReq("node-1", zoneA, h100, 8))
	if _, err := e.fleet.SetHostState(e.ctx, e.op, first.HostID, gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	gen := e.host(first.HostID).Generation
	e.clock.Advance(time.Minute)
	second := e.register(regReq("node-1", zoneA, h100, 8))
	if second.HostID != first.HostID {
		t.Errorf("re-registration made host %s, want %s", second.HostID, first.HostID)
	}
	if second.AgentToken == first.AgentToken {
		t.Error("re-registration handed out the old token again")
	}
	_, err := e.fleet.AuthenticateAgent(e.ctx, first.AgentToken)
	wantCode(t, err, gpurent.CodeUnauthorized, "old token after re-registration")
	if h, err := e.fleet.AuthenticateAgent(e.ctx, second.AgentToken); err != nil || h.ID != first.HostID {
		t.Errorf("new token: %v, %v", h, err)
	}
	h := e.host(first.HostID)
	if h.State != gpurent.HostCordoned {
		t.Errorf("re-registration changed the operator's cordon to %s", h.State)
	}
	if h.Generation <= gen {
		t.Errorf("generation %d → %d: a re-registered agent must fetch its desired state", gen, h.Generation)
	}
	if h.LastSeenAt == nil || !h.LastSeenAt.Equal(e.clock.Now()) {
		t.Errorf("last seen %v, want %v", h.LastSeenAt, e.clock.Now())
	}
	hosts, err := e.st.ListHosts(e.ctx)
	if err != nil || len(hosts) != 1 {
		t.Errorf("%d hosts (%v), want 1", len(hosts), err)
	}

	// Re-registering with a GPU short marks it missing, never deletes it.
	third := e.register(regReq("node-1", zoneA, h100, 7))
	hl := health(e.host(third.HostID))
	lost := rentaltest.GPUInfos("node-1", h100, 8)[7].UUID
	if len(hl) != 8 || hl[lost] != gpurent.GPUMissing {
		t.Errorf("after re-registering with 7 GPUs: %v; want 8 with %s missing", hl, lost)
	}
}

// TestAuthenticateAgent: only a token handed out at registration works.
func TestAuthenticateAgent(t *testing.T) {
	e := newEnv(t)
	resp := e.register(regReq("node-1", zoneA, h100, 2))
	for _, tok := range []string{"", "gpa_nope", joinToken, fleet.HashToken(resp.AgentToken), resp.AgentToken + "x"} {
		_, err := e.fleet.AuthenticateAgent(e.ctx, tok)
		wantCode(t, err, gpurent.CodeUnauthorized, "token "+tok)
	}
	h, err := e.fleet.AuthenticateAgent(e.ctx, resp.AgentToken)
	if err != nil || h.ID != resp.HostID || h.Name != "node-1" {
		t.Errorf("authenticate: %+v, %v", h, err)
	}
}

// TestReportHeartbeat: a report refreshes the host's last-seen time;
// placements hear of it only when the host comes back from silence.
func TestReportHeartbeat(t *testing.T) {
	e := newEnv(t)
	id := e.register(regReq("node-1", zoneA, h100, 8)).HostID
	base := e.changes.Load()

	e.clock.Advance(10 * time.Second)
	if err := e.report(id, nil); err != nil {
		t.Fatal(err)
	}
	h := e.host(id)
	if h.LastSeenAt == nil || !h.LastSeenAt.Equal(e.clock.Now()) {
		t.Errorf("last seen %v after a heartbeat, want %v", h.LastSeenAt, e.clock.Now())
	}
	if !e.fleet.Online(h) {
		t.Error("host offline right after a heartbeat")
	}
	// The same inventory again is no change.
	e.clock.Advance(10 * time.Second)
	if err := e.report(id, rentaltest.GPUInfos("node-1", h100, 8)); err != nil {
		t.Fatal(err)
	}
	if n := e.changes.Load() - base; n != 0 {
		t.Errorf("heartbeats with nothing new called OnChange %d times", n)
	}
	e.clock.Advance(31 * time.Second)
	if e.fleet.Online(e.host(id)) {
		t.Error("host online after 31 s of silence with a 30 s timeout")
	}
	if err := e.report(id, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.changes.Load() - base; n != 1 {
		t.Errorf("a host back from silence called OnChange %d times, want 1", n)
	}
	if !e.fleet.Online(e.host(id)) {
		t.Error("host still offline after its report")
	}
}

// TestReportInventory: a changed inventory is synced (new GPUs added, gone
// ones marked missing and back again), and placements hear of it.
func TestReportInventory(t *testing.T) {
	e := newEnv(t)
	id := e.register(regReq("node-1", zoneA, h100, 8)).HostID
	all := rentaltest.GPUInfos("node-1", h100, 8)
	base := e.changes.Load()

	// GPU 5 falls off the bus.
	less := append(append([]agentproto.GPUInfo{}, all[:5]...), all[6:]...)
	if err := e.report(id, less); err != nil {
		t.Fatal(err)
	}
	hl := health(e.host(id))
	if hl[all[5].UUID] != gpurent.GPUMissing || len(hl) != 8 {
		t.Fatalf("after GPU 5 vanished: %v", hl)
	}
	for i, g := range all {
		if i != 5 && hl[g.UUID] != gpurent.GPUHealthy {
			t.Errorf("GPU %d is %s, want healthy", i, hl[g.UUID])
		}
	}
	if n := e.changes.Load() - base; n != 1 {
		t.Errorf("OnChange called %d times for a lost GPU, want 1", n)
	}
	// The same short inventory again is no change.
	if err := e.report(id, less); err != nil {
		t.Fatal(err)
	}
	if n := e.changes.Load() - base; n != 1 {
		t.Errorf("OnChange called %d times after a repeated report, want 1", n)
	}
	// It comes back.
	if err := e.report(id, all); err != nil {
		t.Fatal(err)
	}
	if hl := health(e.host(id)); hl[all[5].UUID] != gpurent.GPUHealthy {
		t.Errorf("GPU 5 back on the bus is %s, want healthy", hl[all[5].UUID])
	}
	if n := e.changes.Load() - base; n != 2 {
		t.Errorf("OnChange called %d times, want 2", n)
	}
	// A ninth GPU is added.
	nine := rentaltest.GPUInfos("node-1", h100, 9)
	if err := e.report(id, nine); err != nil {
		t.Fatal(err)
	}
	if h := e.host(id); len(h.GPUs) != 9 || health(h)[nine[8].UUID] != gpurent.GPUHealthy {
		t.Errorf("after a GPU was added: %d GPUs, %v", len(h.GPUs), health(h))
	}
	// A GPU moved to another index counts as a change too.
	moved := rentaltest.GPUInfos("node-1", h100, 9)
	moved[0].Index, moved[1].Index = 1, 0
	before := e.changes.Load()
	if err := e.report(id, moved); err != nil {
		t.Fatal(err)
	}
	if e.changes.Load() == before {
		t.Error("a changed GPU index did not count as an inventory change")
	}
	for _, g := range e.host(id).GPUs {
		if g.ID == moved[0].UUID && g.Index != 1 {
			t.Errorf("GPU %s index %d, want 1", g.ID, g.Index)
		}
	}
	// An inventory with a type the catalog lacks is refused, and nothing
	// of it is written.
	bad := rentaltest.GPUInfos("node-1", h100, 9)
	bad[2].Type = "b200-192g"
	bad = bad[:8]
	err := e.report(id, bad)
	wantCode(t, err, gpurent.CodeInvalid, "report with an unknown GPU type")
	if h := e.host(id); health(h)[nine[8].UUID] != gpurent.GPUHealthy || h.GPUs[2].TypeID != h100 {
		t.Errorf("a refused report changed the inventory: %v", health(h))
	}
}

// TestReportKeepsOperatorHealth: a health set by an operator (or by health
// rules) survives the agent calling the GPU healthy, through reports and
// re-registration.
func TestReportKeepsOperatorHealth(t *testing.T) {
	e := newEnv(t)
	id := e.register(regReq("node-1", zoneA, h100, 8)).HostID
	all := rentaltest.GPUInfos("node-1", h100, 8)

	// The operator cordons GPU 1 and retires GPU 2.
	h := e.host(id)
	set := append([]gpurent.GPU(nil), h.GPUs...)
	set[1].Health = gpurent.GPUCordoned
	set[2].Health = gpurent.GPURetired
	for i := range set {
		set[i].AllocationID, set[i].InstanceID = "", ""
	}
	if err := e.st.SyncHostGPUs(e.ctx, id, set); err != nil {
		t.Fatal(err)
	}
	// The agent reports an inventory change (GPU 7 gone), all healthy.
	if err := e.report(id, all[:7]); err != nil {
		t.Fatal(err)
	}
	hl := health(e.host(id))
	if hl[all[1].UUID] != gpurent.GPUCordoned || hl[all[2].UUID] != gpurent.GPURetired {
		t.Errorf("after a report: GPU 1 %s, GPU 2 %s; want cordoned, retired", hl[all[1].UUID], hl[all[2].UUID])
	}
	if hl[all[7].UUID] != gpurent.GPUMissing || hl[all[0].UUID] != gpurent.GPUHealthy {
		t.Errorf("after a report: GPU 7 %s, GPU 0 %s; want missing, healthy", hl[all[7].UUID], hl[all[0].UUID])
	}
	// Re-registration keeps them too.
	e.register(regReq("node-1", zoneA, h100, 8))
	hl = health(e.host(id))
	if hl[all[1].UUID] != gpurent.GPUCordoned || hl[all[2].UUID] != gpurent.GPURetired || hl[all[7].UUID] != gpurent.GPUHealthy {
		t.Errorf("after re-registration: %v", hl)
	}
}

// TestSetHostState: operators cordon, drain and uncordon known hosts.
func TestSetHostState(t *testing.T) {
	e := newEnv(t)
	id := e.register(regReq("node-1", zoneA, h100, 8)).HostID
	base := e.changes.Load()

	_, err := e.fleet.SetHostState(e.ctx, e.cust, id, gpurent.HostCordoned)
	wantCode(t, err, gpurent.CodeForbidden, "customer cordons")
	_, err = e.fleet.SetHostState(e.ctx, nil, id, gpurent.HostCordoned)
	wantCode(t, err, gpurent.CodeUnauthorized, "signed-out cordon")
	for _, s := range []gpurent.HostState{"", "bogus", gpurent.HostDown, "READY"} {
		_, err = e.fleet.SetHostState(e.ctx, e.op, id, s)
		wantCode(t, err, gpurent.CodeInvalid, "state "+string(s))
	}
	_, err = e.fleet.SetHostState(e.ctx, e.op, "host-doesnotexist", gpurent.HostCordoned)
	wantCode(t, err, gpurent.CodeNotFound, "unknown host")
	if h := e.host(id); h.State != gpurent.HostReady {
		t.Fatalf("refused calls changed the state to %s", h.State)
	}
	if n := e.changes.Load() - base; n != 0 {
		t.Errorf("refused calls called OnChange %d times", n)
	}

	for i, s := range []gpurent.HostState{gpurent.HostCordoned, gpurent.HostDraining, gpurent.HostReady} {
		h, err := e.fleet.SetHostState(e.ctx, e.op, id, s)
		if err != nil {
			t.Fatal(err)
		}
		if h.State != s || e.host(id).State != s {
			t.Errorf("set %s: answered %s, stored %s", s, h.State, e.host(id).State)
		}
		if n := e.changes.Load() - base; n != int64(i+1) {
			t.Errorf("after %d state changes OnChange was called %d times", i+1, n)
		}
	}

	_, err = e.fleet.Hosts(e.ctx, e.cust)
	wantCode(t, err, gpurent.CodeForbidden, "customer lists hosts")
	hosts, err := e.fleet.Hosts(e.ctx, e.op)
	if err != nil || len(hosts) != 1 || len(hosts[0].GPUs) != 8 {
		t.Errorf("operator's host list: %+v, %v", hosts, err)
	}
}

// TestGPUTypes: availability per type and zone counts healthy GPUs; free
// ones are unheld GPUs on ready hosts whose agents are online.
func TestGPUTypes(t *testing.T) {
	e := newEnv(t)
	a1 := e.register(regReq("a1", zoneA, h100, 8)).HostID
	a2 := e.register(regReq("a2", zoneA, h100, 4)).HostID
	b1 := e.register(regReq("b1", zoneB, h100, 8)).HostID
	e.register(regReq("b2", zoneB, rtx4090, 2))

	// An instance holds 3 of a1's GPUs.
	acc := storetest.SeedAccount(t, e.st, "holder@example.com")
	in := storetest.SeedInstance(t, e.st, acc.ID, "holder")
	ga1 := e.host(a1).GPUs
	if err := e.st.CreateAllocation(e.ctx, &gpurent.Allocation{InstanceID: in.ID, HostID: a1,
		GPUIDs: []string{ga1[0].ID, ga1[1].ID, ga1[2].ID}, StartedAt: e.clock.Now(), StartReason: "start"}); err != nil {
		t.Fatal(err)
	}
	type zone struct{ total, free, max int }
	check := func(what string, want map[string]map[string]zone) {
		t.Helper()
		av, err := e.fleet.GPUTypes(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(av) != 3 || av[0].Type.ID != a100 || av[1].Type.ID != h100 || av[2].Type.ID != rtx4090 {
			t.Fatalf("%s: types %+v, want the catalog's three sorted by id", what, av)
		}
		for _, a := range av {
			wz := want[a.Type.ID]
			total, free := 0, 0
			if len(a.Zones) != len(wz) {
				t.Errorf("%s: %s in zones %+v, want %v", what, a.Type.ID, a.Zones, wz)
				continue
			}
			for i, z := range a.Zones {
				if i > 0 && a.Zones[i-1].ZoneID >= z.ZoneID {
					t.Errorf("%s: %s zones not sorted: %+v", what, a.Type.ID, a.Zones)
				}
				w, ok := wz[z.ZoneID]
				if !ok || z.Total != w.total || z.Free != w.free || z.MaxPerHost != w.max {
					t.Errorf("%s: %s in %s: total %d, free %d, max per host %d; want %+v",
						what, a.Type.ID, z.ZoneID, z.Total, z.Free, z.MaxPerHost, w)
				}
				total += w.total
				free += w.free
			}
			if a.Total != total || a.Free != free {
				t.Errorf("%s: %s total %d, free %d; want %d, %d", what, a.Type.ID, a.Total, a.Free, total, free)
			}
		}
	}
	check("all online", map[string]map[string]zone{
		a100:    {},
		h100:    {zoneA: {12, 9, 5}, zoneB: {8, 8, 8}},
		rtx4090: {zoneB: {2, 2, 2}},
	})

	// A cordoned host's GPUs exist but are not free.
	if _, err := e.fleet.SetHostState(e.ctx, e.op, a1, gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	check("a1 cordoned", map[string]map[string]zone{
		a100:    {},
		h100:    {zoneA: {12, 4, 4}, zoneB: {8, 8, 8}},
		rtx4090: {zoneB: {2, 2, 2}},
	})

	// b1 goes silent; the others keep reporting.
	e.clock.Advance(31 * time.Second)
	for _, id := range []string{a1, a2} {
		if err := e.report(id, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range e.hostsNamed("b2") {
		if err := e.report(h.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("b1 silent", map[string]map[string]zone{
		a100:    {},
		h100:    {zoneA: {12, 4, 4}, zoneB: {8, 0, 0}},
		rtx4090: {zoneB: {2, 2, 2}},
	})

	// An unhealthy GPU is not counted at all; a missing one neither.
	ga2 := e.host(a2).GPUs
	set := make([]gpurent.GPU, 0, len(ga2))
	for _, g := range ga2[:3] { // GPU 3 of a2 vanishes
		g.AllocationID, g.InstanceID = "", ""
		set = append(set, g)
	}
	set[0].Health = gpurent.GPUFailed
	if err := e.st.SyncHostGPUs(e.ctx, a2, set); err != nil {
		t.Fatal(err)
	}
	check("a2 with a failed and a missing GPU", map[string]map[string]zone{
		a100:    {},
		h100:    {zoneA: {10, 2, 2}, zoneB: {8, 0, 0}},
		rtx4090: {zoneB: {2, 2, 2}},
	})
	_ = b1
}

func (e *env) hostsNamed(name string) []gpurent.Host {
	e.t.Helper()
	hosts, err := e.st.ListHosts(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []gpurent.Host
	for _, h := range hosts {
		if h.Name == name {
			out = append(out, h)
		}
	}
	return out
}
