package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent"
	agentruntime "github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/process"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/gpu/fake"
	"github.com/gpurent/gpurent/internal/incident"
)

// Demo logins, printed at start. The demo listens on loopback by default.
const (
	DemoOperatorEmail    = "operator@gpurent.local"
	DemoOperatorPassword = "operator-demo"
	DemoCustomerEmail    = "customer@gpurent.local"
	DemoCustomerPassword = "customer-demo"
	// DemoCustomerBalanceFen is the demo customer's starting balance: ¥10,000.
	DemoCustomerBalanceFen = 1_000_000
	// DemoBankPayee is where the demo tells customers to transfer top-ups.
	DemoBankPayee = "gpurent demo bank, Chengdu branch, account 6222 0000 0000 0000 (demo: nothing is real)"
)

// DemoHost is one fake GPU host of the demo fleet.
type DemoHost struct {
	Name      string
	Zone      string
	TypeID    string
	GPUs      int
	GroupSize int // GPUs per NVLink domain / PCIe switch
}

// DemoFleet is the default demo fleet: for each catalog GPU type, hostsPerType
// hosts of 8 GPUs, spread over the zones. SXM boards form one NVSwitch domain;
// GeForce cards sit under PCIe switches of four.
func DemoFleet(c catalog.Catalog, hostsPerType int) []DemoHost {
	var out []DemoHost
	for _, t := range c.GPUTypes {
		group := 8
		if !t.PeerToPeer {
			group = 4
		}
		for i := 0; i < hostsPerType; i++ {
			out = append(out, DemoHost{
				Name:   fmt.Sprintf("demo-%s-%02d", t.ID, i+1),
				Zone:   c.Zones[i*len(c.Zones)/hostsPerType].ID,
				TypeID: t.ID, GPUs: 8, GroupSize: group,
			})
		}
	}
	return out
}

// seedDemoAccounts makes the demo operator and customer unless they exist,
// and gives the customer DemoCustomerBalanceFen as an operator credit
// through the wallet (once: the credit's key makes a restart answer the
// first one).
func seedDemoAccounts(ctx context.Context, s *Server) error {
	accs := make(map[gpurent.Role]*gpurent.Account, 2)
	for _, a := range []struct {
		email, name, password string
		role                  gpurent.Role
	}{
		{DemoOperatorEmail, "Demo Operator", DemoOperatorPassword, gpurent.RoleOperator},
		{DemoCustomerEmail, "Demo Customer", DemoCustomerPassword, gpurent.RoleCustomer},
	} {
		acc, err := s.Store.AccountByEmail(ctx, a.email)
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			acc, err = s.Auth.CreateAccount(ctx, a.email, a.name, a.password, a.role, 0)
		}
		if err != nil {
			return err
		}
		// The demo's logins are the operator's own: their addresses count
		// as verified.
		if err := s.Auth.MarkEmailVerified(ctx, acc); err != nil {
			return err
		}
		accs[a.role] = acc
	}
	_, _, err := s.Wallet.Credit(ctx, accs[gpurent.RoleOperator], accs[gpurent.RoleCustomer].ID,
		DemoCustomerBalanceFen, "demo starting balance", "demo-seed")
	return err
}

// RuntimeChoice picks the instance runtime for in-process agents.
type RuntimeChoice string

// Runtime choices.
const (
	RuntimeAuto    RuntimeChoice = "auto" // Docker when reachable, else process
	RuntimeDocker  RuntimeChoice = "docker"
	RuntimeProcess RuntimeChoice = "process"
)

// AgentsConfig configures in-process agents with fake GPUs.
type AgentsConfig struct {
	ServerURL string
	// Join mints each agent's one-time join token in-process when it
	// registers (a *Server does): no token is printed or shared.
	Join    JoinMinter
	DataDir string // each agent keeps <DataDir>/<host name>
	Hosts   []DemoHost
	Catalog catalog.Catalog
	Runtime RuntimeChoice
	Logger  *slog.Logger
	// HeartbeatInterval, RetryMax and HealthInterval (GPU telemetry
	// polls) (0: the agent's defaults).
	HeartbeatInterval time.Duration
	RetryMax          time.Duration
	HealthInterval    time.Duration
	// NoAccess runs no SSH access servers (with Docker, each agent runs one
	// on a free loopback port, for the control plane's gateway).
	NoAccess bool
	// BenchPace is the pause before each synthetic benchmark record, so
	// that a demo job takes a while as a real one does (0: none).
	BenchPace time.Duration
	// InitBinary is the static gpurent executable Docker instances run as
	// their init and sftp helper ("": GPURENT_INIT, else this executable
	// when static, else one built into InitBuildDir from the source).
	InitBinary string
	// InitBuildDir is where a static gpurent is built when needed
	// (default <DataDir>/bin).
	InitBuildDir string
}

// Agents are running in-process agents.
type Agents struct {
	// Runtime is the runtime they use: "docker" or "process".
	Runtime string
	// InitBinary is the static gpurent their Docker instances run as PID 1
	// ("" with the process runtime).
	InitBinary string
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	fakes      []*fake.Provider
}

// Inject puts a fault into the fake GPU with the fault's UUID (the demo's
// and the tests' fault injection; incident.Injector).
func (a *Agents) Inject(ctx context.Context, f incident.Fault) error {
	for _, p := range a.fakes {
		devs, err := p.Devices(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(devs, func(d gpu.Device) bool { return d.UUID == f.UUID }) {
			continue
		}
		switch f.Kind {
		case "", gpu.EventXid:
			if f.Xid <= 0 {
				return gpurent.Errorf(gpurent.CodeInvalid, "an Xid fault needs an Xid number")
			}
			p.InjectXid(f.UUID, f.Xid, f.Detail)
		case gpu.EventECCDoubleBit:
			p.InjectECC(f.UUID, true)
		case gpu.EventECCSingleBit:
			p.InjectECC(f.UUID, false)
		case gpu.EventGPULost:
			p.Lose(f.UUID)
		case gpu.EventRecoveryAction:
			p.InjectRecoveryAction(f.UUID, f.Detail)
		case gpu.EventRemapFailure:
			p.InjectRemapFailure(f.UUID)
		case "slow":
			// The card measures at this share of the healthy figures in
			// its benchmark runs: "0.85" is 15% slow, "1" healthy again.
			factor, err := strconv.ParseFloat(strings.TrimSpace(f.Detail), 64)
			if err != nil {
				return gpurent.Errorf(gpurent.CodeInvalid, "a slow fault needs the card's speed as a share, like 0.85, not %q", f.Detail)
			}
			if err := p.SetPerformance(f.UUID, factor); err != nil {
				return err
			}
		case "throttle":
			p.SetSample(f.UUID, func(s *gpu.Sample) {
				s.ThrottleMask |= gpu.ThrottleHWSlowdown
				s.UtilPercent = 95
			})
		default:
			return gpurent.Errorf(gpurent.CodeInvalid, "unknown fault kind %q (xid, ecc_dbe, ecc_sbe, gpu_lost, recovery_action, remap_failure, throttle, slow)", f.Kind)
		}
		return nil
	}
	return gpurent.Errorf(gpurent.CodeNotFound, "no demo host has GPU %q", f.UUID)
}

// DemoSlowCardFactor is how fast the demo's slow card measures, as a share
// of a healthy one: below the FAIL band (0.90 of the fleet median).
const DemoSlowCardFactor = 0.86

// SlowDemoCard makes one card of the fleet (the last GPU of the second
// host, or of the first when there is one) measure at factor of its
// peers in benchmark runs, and returns its UUID: the demo's card that the
// transparency report delists.
func (a *Agents) SlowDemoCard(ctx context.Context, factor float64) (string, error) {
	if len(a.fakes) == 0 {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "no demo hosts")
	}
	p := a.fakes[min(1, len(a.fakes)-1)]
	devs, err := p.Devices(ctx)
	if err != nil {
		return "", err
	}
	if len(devs) == 0 {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "the demo host has no GPUs")
	}
	uuid := devs[len(devs)-1].UUID
	return uuid, p.SetPerformance(uuid, factor)
}

// Stop ends the agents. Their instances keep running, as with real agents.
func (a *Agents) Stop() {
	a.cancel()
	a.wg.Wait()
}

// JoinMinter makes one-time join tokens for in-process agents.
type JoinMinter interface {
	MintJoinToken(ctx context.Context, zone, name string) (string, error)
}

// joinFunc gives host h's agent a join token minted for it when it
// registers.
func joinFunc(m JoinMinter, h DemoHost) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if m == nil {
			return "", gpurent.Errorf(gpurent.CodeInvalid, "in-process agents need AgentsConfig.Join to mint their join tokens")
		}
		return m.MintJoinToken(ctx, h.Zone, h.Name)
	}
}

// StartAgents runs one agent per host, each with its own fake GPUs, state
// directory and runtime, talking to the control plane over HTTP like a
// remote agent would.
func StartAgents(ctx context.Context, cfg AgentsConfig) (*Agents, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	types := map[string]gpurent.GPUType{}
	for _, t := range cfg.Catalog.GPUTypes {
		types[t.ID] = t
	}
	ctx, cancel := context.WithCancel(ctx)
	as := &Agents{cancel: cancel}
	useDocker := cfg.Runtime == RuntimeDocker
	if cfg.Runtime == RuntimeAuto || cfg.Runtime == "" {
		probe, cancelProbe := context.WithTimeout(ctx, 3*time.Second)
		err := docker.Reachable(probe, "")
		cancelProbe()
		useDocker = err == nil
		if err != nil {
			log.Warn("Docker Engine not reachable; demo instances use the process runtime (no isolation)", "err", err)
		}
	}
	var initBin string
	if useDocker {
		var err error
		dir := cfg.InitBuildDir
		if dir == "" {
			dir = filepath.Join(cfg.DataDir, "bin")
		}
		if initBin, err = initBinary(ctx, cfg.InitBinary, dir, log); err != nil {
			cancel()
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
	}
	as.InitBinary = initBin
	for _, h := range cfg.Hosts {
		t, ok := types[h.TypeID]
		if !ok {
			cancel()
			return nil, fmt.Errorf("demo host %s: unknown GPU type %s", h.Name, h.TypeID)
		}
		dir := filepath.Join(cfg.DataDir, h.Name)
		var rt agentruntime.Runtime
		regs := &agentruntime.Registries{}
		if useDocker {
			d, err := docker.New(ctx, docker.Config{Logger: log, Scope: h.Name, SeparateNames: true, CarryLayer: carryLayer, InitBinary: initBin, Registries: regs})
			if err != nil {
				cancel()
				return nil, fmt.Errorf("docker runtime: %w", err)
			}
			rt = d
		} else {
			p, err := process.New(process.Config{Dir: filepath.Join(dir, "runtime"), Logger: log})
			if err != nil {
				cancel()
				return nil, err
			}
			rt = p
		}
		as.Runtime = rt.Name()
		var ep *agent.AccessEndpoint
		var moves agent.Transfers
		if useDocker && !cfg.NoAccess {
			var err error
			if ep, moves, err = startAccess(ctx, dir, "127.0.0.1:0", "", rt, initBin, log.With("host", h.Name)); err != nil {
				cancel()
				return nil, err
			}
		}
		fp := fake.New(fake.Config{Host: h.Name, TypeID: t.ID, Name: t.Name, Count: h.GPUs,
			MemoryMiB: int64(t.MemoryGB) * 1024, GroupSize: h.GroupSize, NUMANodes: 2})
		as.fakes = append(as.fakes, fp)
		a, err := agent.New(agent.Config{
			Access:    ep,
			Transfers: moves,
			ServerURL: cfg.ServerURL, JoinTokenFunc: joinFunc(cfg.Join, h), Name: h.Name, Zone: h.Zone,
			StateDir: dir, Runtime: rt, Registries: regs,
			GPUs:              fp,
			CPUMilli:          t.CPUMilliPerGPU*int64(h.GPUs) + 16000,
			MemoryMiB:         t.MemoryMiBPerGPU*int64(h.GPUs) + 64*1024,
			DiskGiB:           7680,
			Logger:            log.With("host", h.Name),
			HeartbeatInterval: cfg.HeartbeatInterval,
			HealthInterval:    cfg.HealthInterval,
			RetryMax:          cfg.RetryMax,
			Version:           Version,
			Bench:             agent.SyntheticRunner{Performance: fp.Performance, Pace: cfg.BenchPace},
		})
		if err != nil {
			cancel()
			return nil, err
		}
		as.wg.Add(1)
		go func() {
			defer as.wg.Done()
			if err := a.Run(ctx); err != nil && ctx.Err() == nil {
				log.Error("agent stopped", "host", h.Name, "err", err)
			}
		}()
	}
	return as, nil
}
