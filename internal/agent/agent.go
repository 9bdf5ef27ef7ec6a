// Package agent is the host agent role (`gpurent agent`): it registers the
// host with the control plane, long-polls the desired state of the host,
// converges the container runtime to it, and reports the actual state and
// GPU inventory back.
//
// The agent holds no truth and is level-triggered: every desired answer is
// the whole list, and converging to it twice does nothing the second time.
// It never stops or removes an instance on its own account: not when the
// control plane is unreachable, not when the agent exits, not when an
// instance is missing from the desired list (only an explicit "absent"
// removes one). Instances keep running while the agent restarts; the new
// agent adopts them through the runtime.
//
// Benchmark jobs (compute transparency) run inside the agent's process,
// through its BenchRunner: one at a time, in the order the desired state
// lists them, each at most once per process, canceled as soon as the
// desired state drops them (benchjob.go). Unlike instances, a job in
// progress ends when the agent stops; the next agent runs it again if the
// control plane still asks for it.
//
// Protocol: internal/agentproto. Credentials (host id and agent token) are
// kept in the state directory, mode 0600, and reused after a restart; when
// the control plane rejects them the agent registers again with the join
// token.
package agent

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/gpu/kmsg"
	"github.com/gpurent/gpurent/internal/imageref"
)

// Request timeouts. The control plane answers a long poll after about 25 s
// at the latest; the client waits well beyond that.
const (
	longPollTimeout = 60 * time.Second
	requestTimeout  = 30 * time.Second
	clientTimeout   = 90 * time.Second
)

// Config configures an agent.
type Config struct {
	ServerURL string // control plane base URL, "https://cp.example.com"
	JoinToken string // needed for the first registration and after a rejected token
	// JoinTokenFunc, when set, gives the join token when a registration
	// needs one, instead of JoinToken: a file read again each time (an
	// operator's reset puts a new token there), or a token minted for an
	// in-process agent.
	JoinTokenFunc func(ctx context.Context) (string, error)
	Name          string // the host's stable name; default os.Hostname()
	Zone          string // zone id the host sits in
	StateDir      string // credentials live here; created 0700
	Runtime       runtime.Runtime
	GPUs          gpu.Provider
	// Resources offered; 0 reads them from the host (CPUs, /proc/meminfo,
	// statfs of StateDir).
	CPUMilli  int64
	MemoryMiB int64
	DiskGiB   int64
	// HTTPClient talks to the control plane; default one with a 90 s
	// timeout. Its Timeout, if set, must exceed the 60 s long poll.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// HeartbeatInterval is the period of reports (default 5 s).
	HeartbeatInterval time.Duration
	Version           string // agent version; default "dev"
	// RetryMin and RetryMax bound the jittered, doubling delay between
	// attempts while the control plane is unreachable (defaults 1 s, 30 s).
	RetryMin, RetryMax time.Duration
	// RunRetryMin and RunRetryMax bound the delay before a failed Run of an
	// unchanged desired instance is tried again (defaults 10 s, 5 min). A
	// change of the desired instance is tried at once.
	RunRetryMin, RunRetryMax time.Duration
	Now                      func() time.Time // default time.Now
	// Access, when set, is the agent's SSH access server, reported to the
	// control plane with every report.
	Access *AccessEndpoint
	// Transfers, when set, moves instances to and from other hosts (the
	// runtime must be a runtime.Mover too).
	Transfers Transfers
	// HealthInterval is the period of GPU telemetry polls when GPUs is a
	// gpu.Watcher (default 10 s).
	HealthInterval time.Duration
	// KernelLog is where Xids are read from besides the provider's
	// events: default /dev/kmsg with the NVML provider, none with others;
	// KernelLogOff turns it off.
	KernelLog string
	// Images is the operator's allow-list of image registries, checked
	// again before every run and prepare (the control plane checked it at
	// rent): nil accepts any registry but never the host's own addresses.
	Images *imageref.Policy
	// Registries receives the pull credential of the operator's registry
	// from each desired state (agentproto.Registry), for the runtime that
	// pulls (docker.Config.Registries is the same holder). Nil: the
	// credential is not kept (the registry must take anonymous pulls).
	Registries *runtime.Registries
	// Bench runs the benchmark jobs of the desired state (the Docker
	// runner, or a SyntheticRunner with fake GPUs). Nil: the agent
	// refuses every job, reporting it failed.
	Bench BenchRunner
}

// AccessEndpoint is the agent's SSH access server as the control plane
// sees it.
type AccessEndpoint struct {
	Addr    string // host:port the gateway dials
	HostKey string // authorized_keys form; the gateway pins it
	// SetGatewayKeys receives the gateway's keys from each report answer
	// (authorized_keys form): the server lets only them in.
	SetGatewayKeys func(keys []string)
}

// Agent is one host agent. Make it with New and start it with Run.
type Agent struct {
	cfg Config
	log *slog.Logger
	// api is the agent's client of the control plane's agent API.
	api     *client.Client
	baseURL string
	credsAt string
	started atomic.Bool

	credMu sync.Mutex
	creds  credentials

	// generation is that of the last desired state received.
	generation atomic.Int64
	kick       chan struct{} // a new desired state awaits convergence
	wake       chan struct{} // the control plane is ahead: fetch now

	pollMu         sync.Mutex
	pollCancel     context.CancelFunc
	refetchPending bool

	reportMu sync.Mutex // reports go out one at a time, in order
	runs     *runJournal
	health   *healthState

	mu       sync.Mutex
	desired  *agentproto.Desired
	failures map[string]*runFailure // instance → its last failed Run
	removed  map[string]bool        // instances removed since they were desired absent
	ignored  map[string]bool        // unmanaged instances already logged
	lastGPUs []agentproto.GPUInfo
	moves    map[string]*moveWorker // instance → its push to another host
	expects  map[string]bool        // operations this host takes a push for
	// life ends the move workers when Run returns.
	life context.Context

	// bench holds the benchmark jobs (benchjob.go), under its own lock.
	bench *benchState

	// operatorRegistry is the operator's registry the last desired state
	// named (host[:port]; "" for none): allowed besides Config.Images.
	operatorRegistry atomic.Pointer[string]
	// prepull holds the images to pre-pull and those held (prepull.go).
	prepull *prepullState
}

// New checks cfg, fills its defaults and makes an agent.
func New(cfg Config) (*Agent, error) {
	u, err := url.Parse(cfg.ServerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "agent: server URL %q must be http(s)://host[:port]", cfg.ServerURL)
	}
	if cfg.StateDir == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "agent: no state directory")
	}
	if cfg.Runtime == nil || cfg.GPUs == nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "agent: a runtime and a GPU provider are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		if cfg.Name, err = os.Hostname(); err != nil || cfg.Name == "" {
			return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "agent: no host name given and none found")
		}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	cfg.RetryMin, cfg.RetryMax = durations(cfg.RetryMin, cfg.RetryMax, time.Second, 30*time.Second)
	cfg.RunRetryMin, cfg.RunRetryMax = durations(cfg.RunRetryMin, cfg.RunRetryMax, 10*time.Second, 5*time.Minute)
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = defaultHealthInterval
	}
	if cfg.KernelLog == "" && cfg.GPUs != nil && cfg.GPUs.Name() == "nvml" {
		cfg.KernelLog = kmsg.DefaultPath
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "agent: create state directory %s", cfg.StateDir)
	}
	if cfg.CPUMilli == 0 {
		cfg.CPUMilli = int64(goruntime.NumCPU()) * 1000
	}
	if cfg.MemoryMiB == 0 {
		if cfg.MemoryMiB, err = hostMemoryMiB(); err != nil {
			return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "agent: cannot read the host's memory; set it")
		}
	}
	if cfg.DiskGiB == 0 {
		if cfg.DiskGiB, err = diskGiB(cfg.StateDir); err != nil {
			return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "agent: cannot read the disk size; set it")
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultClient()
	} else if hc.Timeout > 0 && hc.Timeout <= longPollTimeout {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "agent: HTTP client timeout %s is shorter than the %s long poll", hc.Timeout, longPollTimeout)
	}
	a := &Agent{
		cfg:      cfg,
		log:      cfg.Logger.With("host", cfg.Name),
		api:      client.NewWith(cfg.ServerURL, "", hc, client.Options{UserAgent: "gpurent-agent/" + cfg.Version}),
		baseURL:  strings.TrimRight(cfg.ServerURL, "/"),
		credsAt:  credentialsPath(cfg.StateDir),
		kick:     make(chan struct{}, 1),
		wake:     make(chan struct{}, 1),
		failures: map[string]*runFailure{},
		removed:  map[string]bool{},
		ignored:  map[string]bool{},
		moves:    map[string]*moveWorker{},
		expects:  map[string]bool{},
		bench:    newBenchState(),
		prepull:  newPrepullState(),
		life:     context.Background(),
	}
	if a.runs, err = openJournal(cfg.StateDir); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "agent: %v", err)
	}
	if a.health, err = openHealth(cfg.StateDir); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "agent: %v", err)
	}
	if sc, ok := cfg.Runtime.(runtime.StopClock); ok {
		a.runs.stoppedAt = sc.StoppedAt
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		a.log.Warn("agent: control plane URL is plain http; the agent token crosses the network in clear", "url", cfg.ServerURL)
	}
	if cfg.JoinToken == "" && cfg.JoinTokenFunc == nil {
		if _, err := os.Stat(a.credsAt); err != nil {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "agent: no join token and no stored credentials in %s", cfg.StateDir)
		}
	}
	return a, nil
}

func durations(lo, hi, defLo, defHi time.Duration) (time.Duration, time.Duration) {
	if lo <= 0 {
		lo = defLo
	}
	if hi <= 0 {
		hi = defHi
	}
	return lo, max(lo, hi)
}

func defaultClient() *http.Client {
	return &http.Client{
		Timeout: clientTimeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: longPollTimeout + 10*time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   4,
			ForceAttemptHTTP2:     true,
		},
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Run registers (or reuses stored credentials), then long-polls, converges
// and reports until ctx is cancelled, when it returns nil and leaves every
// instance as it is. It returns an error only when it cannot go on: the
// control plane refused the join token or the agent's request outright.
// An unreachable control plane is retried, never fatal. Run may be called
// once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return gpurent.Errorf(gpurent.CodeConflict, "agent: Run called twice")
	}
	if err := a.connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.log.Info("agent: running", "host_id", a.hostID(), "runtime", a.cfg.Runtime.Name(), "gpus", a.cfg.GPUs.Name())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.life = ctx
	a.mu.Unlock()
	defer a.stopMoves()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for _, loop := range []func(context.Context) error{a.pollLoop, a.convergeLoop, a.heartbeatLoop, a.healthLoop, a.benchLoop, a.prepullLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx); err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		a.log.Error("agent: stopped; instances are left running", "err", first)
	} else {
		a.log.Info("agent: stopped; instances are left running")
	}
	return first
}

// sleep waits d, or until ctx ends (false) or the control plane is known
// to be ahead (true, early).
func (a *Agent) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-a.wake:
		return true
	}
}

// permanent reports whether err is a refusal that retrying cannot fix.
func permanent(err error) bool {
	status := client.StatusOf(err)
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

func (a *Agent) now() time.Time { return a.cfg.Now().UTC() }
