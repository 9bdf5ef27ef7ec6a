package move_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/gpu/fake"
	"github.com/gpurent/gpurent/internal/move"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

const (
	h100  = "h100-80g-sxm"
	a100  = "a100-80g-sxm"
	zoneA = "cd-tianfu-a"
	zoneB = "cd-gaoxin-b"
)

func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
}

// env is the move workflow, the rental service it is built on and a fleet
// service over one real store, wired as the composition root wires them,
// with a fake clock.
type env struct {
	t     testing.TB
	ctx   context.Context
	st    gpurent.Store
	clock *clocktest.Clock
	rent  *rental.Service
	moves *move.Service
	fleet *fleet.Service
	alice *gpurent.Account
	bob   *gpurent.Account
	op    *gpurent.Account
}

// options tweak the rental config of an env.
type options struct {
	pollWait time.Duration
}

func newEnv(t testing.TB, st gpurent.Store) *env {
	return newEnvWith(t, st, options{})
}

func newEnvWith(t testing.TB, st gpurent.Store, o options) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	storetest.SeedCatalog(t, st)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &env{t: t, ctx: ctx, st: st, clock: newClock()}
	e.rent = rental.NewWithMoves(rental.Config{Store: st, Now: e.clock.Now, Logger: log,
		PollWait: o.pollWait, HostTimeout: 30 * time.Second},
		func(r *rental.Service) rental.Moves {
			e.moves = move.New(move.Config{Store: st, Lifecycle: r, Now: e.clock.Now, Logger: log})
			return e.moves
		})
	e.fleet = fleet.New(fleet.Config{Store: st, Now: e.clock.Now, Logger: log,
		OnChange: e.rent.Invalidate, HostTimeout: 30 * time.Second})
	e.alice = e.account("alice@example.com", gpurent.RoleCustomer)
	e.bob = e.account("bob@example.com", gpurent.RoleCustomer)
	e.op = e.account("ops@example.com", gpurent.RoleOperator)
	return e
}

func (e *env) account(email string, role gpurent.Role) *gpurent.Account {
	e.t.Helper()
	a := &gpurent.Account{Email: email, Name: email, Role: role, PasswordHash: "x"}
	if err := e.st.CreateAccount(e.ctx, a); err != nil {
		e.t.Fatalf("create account %s: %v", email, err)
	}
	return a
}

// gpuInfos is the inventory an agent with n fake GPUs of typ reports.
func gpuInfos(host, typ string, n int) []agentproto.GPUInfo {
	var out []agentproto.GPUInfo
	for _, d := range fake.Devices(fake.Config{Host: host, TypeID: typ, Count: n, MemoryMiB: 81920, GroupSize: 4, NUMANodes: 2}) {
		out = append(out, agentproto.GPUInfo{UUID: d.UUID, Index: d.Index, Type: d.TypeID, Name: d.Name,
			MemoryMiB: d.MemoryMiB, TopoGroup: d.TopoGroup, NUMANode: d.NUMANode, Health: string(gpurent.GPUHealthy)})
	}
	return out
}

// joinToken mints a one-time join token for host name in zone.
func (e *env) joinToken(zone, name string) string {
	e.t.Helper()
	tok, _, err := e.fleet.MintJoinToken(e.ctx, zone, name, 0, "")
	if err != nil {
		e.t.Fatalf("mint a join token: %v", err)
	}
	return tok
}

// register registers a host of n GPUs of typ through the fleet service, as
// its agent would, and returns it.
func (e *env) register(name, zone, typ string, n int) *gpurent.Host {
	e.t.Helper()
	req := agentproto.RegisterRequest{JoinToken: e.joinToken(zone, name), Name: name, Zone: zone,
		CPUMilli: 256_000, MemoryMiB: 4 << 20, DiskGiB: 7680, Runtime: "docker", AgentVersion: "test",
		GPUs: gpuInfos(name, typ, n)}
	resp, err := e.fleet.Register(e.ctx, req)
	if err != nil {
		e.t.Fatalf("register %s: %v", name, err)
	}
	return e.host(resp.HostID)
}

// host reads a host with its GPUs.
func (e *env) host(id string) *gpurent.Host {
	e.t.Helper()
	h, err := e.st.HostByID(e.ctx, id)
	if err != nil {
		e.t.Fatalf("read host %s: %v", id, err)
	}
	return h
}

// instance reads an instance.
func (e *env) instance(id string) *gpurent.Instance {
	e.t.Helper()
	in, err := e.st.InstanceByID(e.ctx, id)
	if err != nil {
		e.t.Fatalf("read instance %s: %v", id, err)
	}
	return in
}

// mustRent rents or fails the test.
func (e *env) mustRent(acc *gpurent.Account, r rental.RentRequest) *rental.Detail {
	e.t.Helper()
	d, created, err := e.rent.Rent(e.ctx, acc, r)
	if err != nil {
		e.t.Fatalf("rent %+v: %v", r, err)
	}
	if !created {
		e.t.Fatalf("rent %+v: created = false for a new request", r)
	}
	return d
}

// report applies an agent report listing instances for host.
func (e *env) report(hostID string, actual ...agentproto.ActualInstance) agentproto.ReportResponse {
	e.t.Helper()
	h := e.host(hostID)
	resp, err := e.rent.ApplyReport(e.ctx, h, agentproto.Report{ReportID: gpurent.NewID("rep"), At: e.clock.Now(),
		Runtime: h.Runtime, Instances: actual})
	if err != nil {
		e.t.Fatalf("apply report: %v", err)
	}
	if now := e.host(hostID).Generation; resp.Generation != now {
		e.t.Errorf("report answered generation %d, host is at %d", resp.Generation, now)
	}
	return resp
}

// running is the report entry of a running container for in.
func running(in *gpurent.Instance) agentproto.ActualInstance {
	return agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateRunning}
}

// heldBy returns the host's GPUs held by instanceID, sorted.
func heldBy(h *gpurent.Host, instanceID string) []string {
	var out []string
	for _, g := range h.GPUs {
		if g.InstanceID == instanceID && g.AllocationID != "" {
			out = append(out, g.ID)
		}
	}
	slices.Sort(out)
	return out
}

// held counts the host's held GPUs.
func held(h *gpurent.Host) int {
	n := 0
	for _, g := range h.GPUs {
		if g.AllocationID != "" {
			n++
		}
	}
	return n
}

// wantCode fails unless err carries code.
func wantCode(t testing.TB, err error, code gpurent.Code, what string) {
	t.Helper()
	if got := gpurent.ErrorCode(err); got != code {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, got, code)
	}
}

// wantMessage fails unless err's safe message contains every part.
func wantMessage(t testing.TB, err error, parts ...string) {
	t.Helper()
	msg := gpurent.ErrorMessage(err)
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
}

// lastEvent returns the newest event of the instance.
func (e *env) lastEvent(id string) gpurent.Event {
	e.t.Helper()
	ev, err := e.st.ListEvents(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(ev) == 0 {
		e.t.Fatalf("instance %s has no events", id)
	}
	return ev[len(ev)-1]
}

// desiredNow returns the host's desired state at once.
func (e *env) desiredNow(hostID string) *agentproto.Desired {
	e.t.Helper()
	d, err := e.rent.Desired(e.ctx, hostID, -1)
	if err != nil {
		e.t.Fatalf("desired for %s: %v", hostID, err)
	}
	return d
}

// desiredOf returns the desired entry of instanceID, failing if absent.
func desiredOf(t testing.TB, d *agentproto.Desired, instanceID string) agentproto.DesiredInstance {
	t.Helper()
	for _, di := range d.Instances {
		if di.InstanceID == instanceID {
			return di
		}
	}
	t.Fatalf("desired state of host %s (generation %d) lacks instance %s: %+v", d.HostID, d.Generation, instanceID, d.Instances)
	return agentproto.DesiredInstance{}
}

// backends runs fn against each real store.
func backends(t *testing.T, fn func(t *testing.T, st gpurent.Store)) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

func req(typ string, n int) rental.RentRequest {
	return rental.RentRequest{TypeID: typ, Count: n, Image: "busybox:1.36"}
}

// heartbeat records an agent's periodic report (no inventory) with the
// fleet service, as the agent endpoint does.
func (e *env) heartbeat(hostID string) {
	e.t.Helper()
	if err := e.fleet.Report(e.ctx, e.host(hostID), agentproto.Report{At: e.clock.Now(), Runtime: "docker"}); err != nil {
		e.t.Fatalf("heartbeat of %s: %v", hostID, err)
	}
}
