// Package docker runs instances as Docker Engine containers: the production
// runtime of the agent. One container per instance, named gpurent-<instance>,
// labelled with its instance, allocation and volume; GPUs attached by UUID
// through the NVIDIA Container Toolkit; a named volume at runtime.DataPath
// that outlives the container; and a hardened configuration (no privileges,
// no-new-privileges, a reduced capability set, CPU/memory/pids limits).
//
// It talks to the daemon with github.com/moby/moby/client, negotiating the
// API version down to what the daemon speaks (API 1.40 and newer, Docker
// 19.03+).
package docker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// Defaults for Config fields left zero.
const (
	DefaultPidsLimit   = 4096
	DefaultStopTimeout = 10 * time.Second
)

// Config configures the Docker runtime.
type Config struct {
	// Host is the daemon address, DOCKER_HOST-style
	// ("unix:///var/run/docker.sock", "tcp://10.0.0.5:2376"). Empty: from
	// the environment (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH,
	// DOCKER_API_VERSION), else the default socket.
	Host string
	// Network is the network instances join. Empty: "bridge" when the
	// daemon has that network, else "none". "host" shares the host's
	// network namespace; any other name must exist on the daemon.
	Network string
	// DefaultPidsLimit applies when a spec sets none (default 4096).
	DefaultPidsLimit int64
	// StopTimeout is how long a stop waits after SIGTERM before SIGKILL
	// (default 10 s).
	StopTimeout time.Duration
	// NoPull makes Run fail at once when an image is not on the host,
	// instead of first trying to pull it.
	NoPull bool
	// VolumeDriver creates data volumes ("" = the daemon's "local").
	VolumeDriver string
	// VolumeSizeOption is the volume driver option that takes a size, for
	// drivers that enforce quotas; Run passes it Spec.VolumeGiB as "<n>G".
	// Empty: the size is not enforced (Docker's local driver cannot).
	VolumeSizeOption string
	// Scope, when set, makes this runtime one of several sharing a daemon
	// (the demo's in-process agents): its containers carry the scope
	// label, List shows only them, and Stop and Remove leave another
	// scope's container alone. Empty: the runtime owns every managed
	// container of the daemon, as a production agent does.
	Scope string
	// SeparateNames, with Scope, puts the scope in the names of the
	// containers and volumes this runtime makes, so that scoped runtimes
	// sharing a daemon act as separate hosts: an instance moving from one
	// to another is copied as between machines (the demo's fleet, the
	// tests of moves). Without it an instance's names are the same in
	// every scope.
	SeparateNames bool
	// CarryLayer, when set, carries an instance's writable layer (files
	// anywhere in its file system, installed packages) to the container of
	// its new allocation when the allocation changes on this host (an
	// upgrade to other GPUs), instead of starting from the image again.
	// It needs the overlay2 storage driver.
	CarryLayer TreeCopier
	// Logger receives what the runtime does (nil: discarded).
	Logger *slog.Logger
}

// LabelScope holds Config.Scope on the containers of a scoped runtime.
const LabelScope = "io.gpurent.scope"

// Runtime is a runtime.Runtime on Docker Engine. It is safe for concurrent
// use; all state lives in the daemon.
type Runtime struct {
	cfg     Config
	cli     *client.Client
	log     *slog.Logger
	network string
	nvidia  bool
	// hostCPUs and hostMemory (bytes) are what the daemon's machine has.
	hostCPUs, hostMemory int64
	version              string
	locks                keyLock
	stops                stopLog
}

// stopLog remembers when carries stopped old containers, by allocation;
// the agent asks once per run, so it keeps only the latest few.
type stopLog struct {
	mu sync.Mutex
	at map[string]time.Time
}

const stopLogSize = 256

func (l *stopLog) record(allocationID string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil || len(l.at) >= stopLogSize {
		l.at = map[string]time.Time{}
	}
	l.at[allocationID] = t
}

// StoppedAt says when a carry stopped the container of the allocation.
func (r *Runtime) StoppedAt(allocationID string) (time.Time, bool) {
	r.stops.mu.Lock()
	defer r.stops.mu.Unlock()
	t, ok := r.stops.at[allocationID]
	return t, ok
}

var _ runtime.Runtime = (*Runtime)(nil)

// New connects to the daemon, negotiates the API version, detects the
// "nvidia" runtime and settles the network instances join.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.DefaultPidsLimit == 0 {
		cfg.DefaultPidsLimit = DefaultPidsLimit
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.DefaultPidsLimit < 0 || cfg.StopTimeout < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "docker runtime: pids limit and stop timeout must not be negative")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []client.Opt{client.FromEnv}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "docker runtime: bad daemon address %q", cfg.Host)
	}
	r := &Runtime{cfg: cfg, cli: cli, log: log.With("runtime", "docker")}
	if cfg.Scope != "" {
		r.log = r.log.With("scope", cfg.Scope)
	}
	if err := r.probe(ctx); err != nil {
		_ = cli.Close()
		return nil, err
	}
	r.log.Info("docker runtime ready", "daemon", cli.DaemonHost(), "api", r.version,
		"network", r.network, "nvidia", r.nvidia)
	if !r.nvidia {
		r.log.Warn("docker: no \"nvidia\" runtime installed; instances get no GPU devices (fine only with fake GPUs)")
	}
	return r, nil
}

func (r *Runtime) probe(ctx context.Context) error {
	if _, err := r.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "Docker Engine not reachable at %s", r.cli.DaemonHost())
	}
	r.version = r.cli.ClientVersion()
	info, err := r.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return wrap(err, "read Docker Engine info")
	}
	_, r.nvidia = info.Info.Runtimes["nvidia"]
	r.hostCPUs, r.hostMemory = int64(info.Info.NCPU), info.Info.MemTotal
	switch r.cfg.Network {
	case "none", "host":
		r.network = r.cfg.Network
	case "":
		r.network = "none"
		_, err := r.cli.NetworkInspect(ctx, "bridge", client.NetworkInspectOptions{})
		switch {
		case err == nil:
			r.network = "bridge"
		case !cerrdefs.IsNotFound(err):
			return wrap(err, "look up the bridge network")
		}
	default:
		if _, err := r.cli.NetworkInspect(ctx, r.cfg.Network, client.NetworkInspectOptions{}); err != nil {
			return wrap(err, "look up network %q", r.cfg.Network)
		}
		r.network = r.cfg.Network
	}
	return nil
}

// Name is "docker".
func (r *Runtime) Name() string { return "docker" }

// Network is the network instances join: "bridge", "none", "host" or the
// configured one.
func (r *Runtime) Network() string { return r.network }

// NvidiaRuntime reports whether the daemon has the NVIDIA runtime, so
// containers get their GPUs through a device request.
func (r *Runtime) NvidiaRuntime() bool { return r.nvidia }

// APIVersion is the Engine API version negotiated with the daemon.
func (r *Runtime) APIVersion() string { return r.version }

// Close releases the connection to the daemon. Containers keep running.
func (r *Runtime) Close() error { return r.cli.Close() }

// wrap turns a daemon error into one of ours, keeping the daemon's error as
// the cause. The message says what we were doing, never the daemon's text.
func wrap(err error, format string, args ...any) error {
	code := gpurent.CodeInternal
	switch {
	case cerrdefs.IsNotFound(err):
		code = gpurent.CodeNotFound
	case cerrdefs.IsConflict(err), cerrdefs.IsAlreadyExists(err):
		code = gpurent.CodeConflict
	case cerrdefs.IsInvalidArgument(err):
		code = gpurent.CodeInvalid
	case client.IsErrConnectionFailed(err), cerrdefs.IsUnavailable(err),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = gpurent.CodeUnavailable
	}
	return gpurent.WrapError(code, err, format, args...)
}
