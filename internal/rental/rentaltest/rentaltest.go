// Package rentaltest is the test wiring the rental and move packages'
// tests share: a rental service with its move workflow and a fleet
// service over one real store, wired as the composition root (graph) wires
// them, with a fake clock, accounts, and helpers that register hosts, rent
// and report as agents do.
package rentaltest

import (
	"context"
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
	"github.com/gpurent/gpurent/internal/graph"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/move"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

// GPU types and zones of the seeded catalog.
const (
	H100  = "h100-80g-sxm"
	A100  = "a100-80g-sxm"
	ZoneA = "cd-tianfu-a"
	ZoneB = "cd-gaoxin-b"
)

// newClock is the fake clock an Env starts with.
func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
}

// Env is the services under test and the accounts they serve.
type Env struct {
	T      testing.TB
	Ctx    context.Context
	St     gpurent.Store
	Clock  *clocktest.Clock
	Rent   *rental.Service
	Moves  *move.Service
	Fleet  *fleet.Service
	Wallet *wallet.Service
	// Prices and Meter are the price book and the metering the rental
	// service charges packages through.
	Prices *pricing.Service
	Meter  *metering.Service
	Alice  *gpurent.Account
	Bob    *gpurent.Account
	Op     *gpurent.Account
}

// Options tweak the rental config of an Env.
type Options struct {
	// PollWait bounds agents' long polls (0: the service's default).
	PollWait time.Duration
	// Unfunded leaves alice and bob with empty wallets (else each starts
	// with Funds).
	Unfunded bool
}

// Funds is what alice and bob start with, unless Options.Unfunded: rents
// are paid from the wallet, and only the tests about money should meet it.
const Funds = 100_000_000 // ¥1,000,000

// New wires an Env over st (with the catalog seeded) through graph.New,
// the constructor serve and the demo use, and creates alice and bob
// (customers, funded unless o.Unfunded) and an operator.
func New(t testing.TB, st gpurent.Store, o Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	storetest.SeedCatalog(t, st)
	e := &Env{T: t, Ctx: ctx, St: st, Clock: newClock()}
	// The graph serve and the demo run, so the tests see the services as
	// they are wired there.
	g, err := graph.New(graph.Config{Store: st, Now: e.Clock.Now, Logger: slog.New(slog.DiscardHandler),
		PollWait: o.PollWait, HostTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("build the service graph: %v", err)
	}
	e.Rent, e.Moves, e.Fleet, e.Wallet, e.Prices, e.Meter = g.Rental, g.Moves, g.Fleet, g.Wallet, g.Billing, g.Metering
	e.Alice = e.Account("alice@example.com", gpurent.RoleCustomer)
	e.Bob = e.Account("bob@example.com", gpurent.RoleCustomer)
	e.Op = e.Account("ops@example.com", gpurent.RoleOperator)
	if !o.Unfunded {
		e.fund(e.Alice, Funds)
		e.fund(e.Bob, Funds)
	}
	return e
}

// fund credits acc with fen, as an operator would.
func (e *Env) fund(acc *gpurent.Account, fen int64) {
	e.T.Helper()
	if _, _, err := e.Wallet.Credit(e.Ctx, e.Op, acc.ID, fen, "test funds", gpurent.NewID("fund")); err != nil {
		e.T.Fatalf("credit %s: %v", acc.Email, err)
	}
}

// Account creates an account.
func (e *Env) Account(email string, role gpurent.Role) *gpurent.Account {
	e.T.Helper()
	a := &gpurent.Account{Email: email, Name: email, Role: role, PasswordHash: "x"}
	if err := e.St.CreateAccount(e.Ctx, a); err != nil {
		e.T.Fatalf("create account %s: %v", email, err)
	}
	return a
}

// GPUInfos is the inventory an agent with n fake GPUs of typ reports.
func GPUInfos(host, typ string, n int) []agentproto.GPUInfo {
	var out []agentproto.GPUInfo
	for _, d := range fake.Devices(fake.Config{Host: host, TypeID: typ, Count: n, MemoryMiB: 81920, GroupSize: 4, NUMANodes: 2}) {
		out = append(out, agentproto.GPUInfo{UUID: d.UUID, Index: d.Index, Type: d.TypeID, Name: d.Name,
			MemoryMiB: d.MemoryMiB, TopoGroup: d.TopoGroup, NUMANode: d.NUMANode, Health: string(gpurent.GPUHealthy)})
	}
	return out
}

// JoinToken mints a one-time join token for host name in zone.
func (e *Env) JoinToken(zone, name string) string {
	e.T.Helper()
	tok, _, err := e.Fleet.MintJoinToken(e.Ctx, zone, name, 0, "")
	if err != nil {
		e.T.Fatalf("mint a join token: %v", err)
	}
	return tok
}

// Register registers a host of n GPUs of typ through the fleet service,
// as its agent would, and returns it.
func (e *Env) Register(name, zone, typ string, n int) *gpurent.Host {
	e.T.Helper()
	req := agentproto.RegisterRequest{JoinToken: e.JoinToken(zone, name), Name: name, Zone: zone,
		CPUMilli: 256_000, MemoryMiB: 4 << 20, DiskGiB: 7680, Runtime: "docker", AgentVersion: "test",
		GPUs: GPUInfos(name, typ, n)}
	resp, err := e.Fleet.Register(e.Ctx, req)
	if err != nil {
		e.T.Fatalf("register %s: %v", name, err)
	}
	return e.Host(resp.HostID)
}

// Host reads a host with its GPUs.
func (e *Env) Host(id string) *gpurent.Host {
	e.T.Helper()
	h, err := e.St.HostByID(e.Ctx, id)
	if err != nil {
		e.T.Fatalf("read host %s: %v", id, err)
	}
	return h
}

// Instance reads an instance.
func (e *Env) Instance(id string) *gpurent.Instance {
	e.T.Helper()
	in, err := e.St.InstanceByID(e.Ctx, id)
	if err != nil {
		e.T.Fatalf("read instance %s: %v", id, err)
	}
	return in
}

// Allocation reads an allocation.
func (e *Env) Allocation(id string) *gpurent.Allocation {
	e.T.Helper()
	a, err := e.St.AllocationByID(e.Ctx, id)
	if err != nil {
		e.T.Fatalf("read allocation %s: %v", id, err)
	}
	return a
}

// MustRent rents or fails the test.
func (e *Env) MustRent(acc *gpurent.Account, r rental.RentRequest) *rental.Detail {
	e.T.Helper()
	d, created, err := e.Rent.Rent(e.Ctx, acc, r)
	if err != nil {
		e.T.Fatalf("rent %+v: %v", r, err)
	}
	if !created {
		e.T.Fatalf("rent %+v: created = false for a new request", r)
	}
	return d
}

// Report applies an agent report listing instances for host, and checks
// the answer names the host's generation.
func (e *Env) Report(hostID string, actual ...agentproto.ActualInstance) agentproto.ReportResponse {
	e.T.Helper()
	h := e.Host(hostID)
	resp, err := e.Rent.ApplyReport(e.Ctx, h, agentproto.Report{ReportID: gpurent.NewID("rep"), At: e.Clock.Now(),
		Runtime: h.Runtime, Instances: actual})
	if err != nil {
		e.T.Fatalf("apply report: %v", err)
	}
	if now := e.Host(hostID).Generation; resp.Generation != now {
		e.T.Errorf("report answered generation %d, host is at %d", resp.Generation, now)
	}
	return resp
}

// Heartbeat records an agent's periodic report (no inventory) with the
// fleet service, as the agent endpoint does.
func (e *Env) Heartbeat(hostID string) {
	e.T.Helper()
	if err := e.Fleet.Report(e.Ctx, e.Host(hostID), agentproto.Report{At: e.Clock.Now(), Runtime: "docker"}); err != nil {
		e.T.Fatalf("heartbeat of %s: %v", hostID, err)
	}
}

// LastEvent returns the newest event of the instance.
func (e *Env) LastEvent(id string) gpurent.Event {
	e.T.Helper()
	ev, err := e.St.ListEvents(e.Ctx, id)
	if err != nil {
		e.T.Fatal(err)
	}
	if len(ev) == 0 {
		e.T.Fatalf("instance %s has no events", id)
	}
	return ev[len(ev)-1]
}

// DesiredNow returns the host's desired state at once.
func (e *Env) DesiredNow(hostID string) *agentproto.Desired {
	e.T.Helper()
	d, err := e.Rent.Desired(e.Ctx, hostID, -1)
	if err != nil {
		e.T.Fatalf("desired for %s: %v", hostID, err)
	}
	return d
}

// Running is the report entry of a running container for in.
func Running(in *gpurent.Instance) agentproto.ActualInstance {
	return agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateRunning}
}

// HeldBy returns the host's GPUs held by instanceID, sorted.
func HeldBy(h *gpurent.Host, instanceID string) []string {
	var out []string
	for _, g := range h.GPUs {
		if g.InstanceID == instanceID && g.AllocationID != "" {
			out = append(out, g.ID)
		}
	}
	slices.Sort(out)
	return out
}

// Held counts the host's held GPUs.
func Held(h *gpurent.Host) int {
	n := 0
	for _, g := range h.GPUs {
		if g.AllocationID != "" {
			n++
		}
	}
	return n
}

// WantCode fails unless err carries code.
func WantCode(t testing.TB, err error, code gpurent.Code, what string) {
	t.Helper()
	if got := gpurent.ErrorCode(err); got != code {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, got, code)
	}
}

// WantMessage fails unless err's safe message contains every part.
func WantMessage(t testing.TB, err error, parts ...string) {
	t.Helper()
	msg := gpurent.ErrorMessage(err)
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
}

// DesiredOf returns the desired entry of instanceID, failing if absent.
func DesiredOf(t testing.TB, d *agentproto.Desired, instanceID string) agentproto.DesiredInstance {
	t.Helper()
	for _, di := range d.Instances {
		if di.InstanceID == instanceID {
			return di
		}
	}
	t.Fatalf("desired state of host %s (generation %d) lacks instance %s: %+v", d.HostID, d.Generation, instanceID, d.Instances)
	return agentproto.DesiredInstance{}
}

// Kinds lists the events' kinds.
func Kinds(ev []gpurent.Event) []string {
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = e.Kind
	}
	return out
}

// Backends runs fn against each real store: SQLite and PostgreSQL.
func Backends(t *testing.T, fn func(t *testing.T, st gpurent.Store)) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// Req is a rent of n GPUs of typ on busybox.
func Req(typ string, n int) rental.RentRequest {
	return rental.RentRequest{TypeID: typ, Count: n, Image: "busybox:1.36"}
}
