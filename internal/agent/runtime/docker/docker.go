// Package docker runs instances as Docker Engine containers: the production
// runtime of the agent. One container per instance, named gpurent-<instance>,
// labelled with its instance, allocation and volume; GPUs attached by UUID
// through the NVIDIA Container Toolkit; a named volume at runtime.DataPath
// that outlives the container; and a hardened configuration (no privileges,
// no-new-privileges, a reduced capability set, CPU/memory/pids limits).
//
// Every instance's PID 1 is gpurent's own init (internal/agent/pid1, the
// static gpurent executable of Config.InitBinary mounted read-only at
// InitPath): it starts the instance's startup command (the image's
// entrypoint and command, the renter's own shell line, or none), reaps
// orphans, passes a stop's SIGTERM on, and keeps the instance running when
// that command exits. It records the command's state in a small file the
// runtime reads back (startup.go) as Status.Startup. The daemon keeps each
// instance's output in bounded json-file logs (Config.LogMaxBytes), which
// Logs streams.
//
// It talks to the daemon with github.com/moby/moby/client, negotiating the
// API version down to what the daemon speaks (API 1.40 and newer, Docker
// 19.03+).
package docker

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/keymutex"
	"github.com/gpurent/gpurent/internal/staticexe"
)

// Defaults for Config fields left zero.
const (
	DefaultPidsLimit   = 4096
	DefaultStopTimeout = 10 * time.Second
	// DefaultLogMaxBytes and DefaultLogMaxFiles bound what the daemon
	// keeps of an instance's output: two files of 8 MiB.
	DefaultLogMaxBytes = 8 << 20
	DefaultLogMaxFiles = 2
)

// Config configures the Docker runtime.
type Config struct {
	// Host is the daemon address, DOCKER_HOST-style
	// ("unix:///var/run/docker.sock", "tcp://10.0.0.5:2376"). Empty: from
	// the environment (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH,
	// DOCKER_API_VERSION), else the default socket.
	Host string
	// Network is the network instances join. "pasta" (NetworkPasta): each
	// instance in its own namespace with a userspace NAT and egress rules
	// (internet only: no other instance, no host address, no private,
	// link-local or metadata range unless EgressAllow opens it); it needs
	// pasta, nft and nsenter and root. "none": loopback only. Empty: "pasta"
	// where it can run, else "none" (never a shared network by default).
	// "bridge" (Docker's default bridge: instances reach each other and the
	// host), "host" (the host's network namespace) and any other network
	// name the daemon has are taken as asked, with a warning.
	Network string
	// EgressAllow are ranges the pasta mode lets instances reach although
	// they are private or link-local (never the host's own addresses).
	EgressAllow []netip.Prefix
	// NetStateDir is where the pasta mode records each instance's NAT, so
	// that a restarted agent adopts them (default: <tmp>/gpurent-net).
	NetStateDir string
	// DefaultPidsLimit applies when a spec sets none (default 4096).
	DefaultPidsLimit int64
	// StopTimeout is how long a stop waits after SIGTERM before SIGKILL
	// (default 10 s).
	StopTimeout time.Duration
	// NoPull makes Run fail at once when an image is not on the host,
	// instead of first trying to pull it.
	NoPull bool
	// MaxImageBytes, when positive, is the largest image this host pulls
	// for an instance (unpacked, as `docker images` shows it): a pull is
	// cut off as soon as the layers the registry announces add up to more,
	// and an image that unpacks to more is removed again; either way the
	// run fails with a message that names the limit. Images already on
	// the host (pre-pulled by the operator) are not limited.
	MaxImageBytes int64
	// Registries holds pull credentials by registry (the operator's, from
	// the control plane); a pull from a registry it holds one for sends
	// it. Nil: every pull is anonymous.
	Registries *runtime.Registries
	// VolumeDriver creates data volumes ("" = the daemon's "local").
	VolumeDriver string
	// VolumeSizeOption is the volume driver option that takes a size, for
	// drivers that enforce quotas; Run passes it Spec.VolumeGiB as "<n>G".
	// Empty: the size is not enforced (Docker's local driver cannot).
	VolumeSizeOption string
	// VolumeQuotaDir, when set, backs each data volume of a size
	// (Spec.VolumeGiB > 0) with an ext4 image file of that size here,
	// loop-mounted by the agent, so the size is enforced (quota.go). It
	// needs root and loop devices. Empty: Docker's local driver, which
	// enforces no size (unless VolumeSizeOption does with another driver).
	VolumeQuotaDir string
	// LayerQuota says what to do when the storage driver cannot limit an
	// instance's writable layer: "warn" (default), "require" (New fails)
	// or "off". LayerGiB is the limit where it can (default 50).
	LayerQuota string
	LayerGiB   int64
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
	// InitBinary is the static gpurent executable (a CGO_ENABLED=0 build)
	// every instance runs as its PID 1 (`gpurent instance-init`),
	// bind-mounted read-only at InitPath: it starts the startup command
	// and keeps the instance up whatever that command does. Required; New
	// refuses a dynamically linked one, which would not start in an image
	// without the host's libraries.
	InitBinary string
	// LogMaxBytes and LogMaxFiles bound the output the daemon keeps of each
	// instance (json-file rotation: at most LogMaxFiles files of
	// LogMaxBytes; the oldest is dropped). Defaults 8 MiB and 2.
	LogMaxBytes int64
	LogMaxFiles int
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
	locks                keymutex.Mutex
	stops                stopLog
	// pasta manages the instances' networks in the pasta mode (nil in
	// the others).
	pasta *pastaNet
	// layerBytes limits each instance's writable layer (0: no limit).
	layerBytes int64
	// pulls are the pulls in progress (prepull.go).
	pulls pullLog
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
	if cfg.LogMaxBytes == 0 {
		cfg.LogMaxBytes = DefaultLogMaxBytes
	}
	if cfg.LogMaxFiles == 0 {
		cfg.LogMaxFiles = DefaultLogMaxFiles
	}
	if cfg.DefaultPidsLimit < 0 || cfg.StopTimeout < 0 || cfg.MaxImageBytes < 0 || cfg.LogMaxBytes < 0 || cfg.LogMaxFiles < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "docker runtime: pids limit, stop timeout, image size limit and log bounds must not be negative")
	}
	if err := checkInit(cfg.InitBinary); err != nil {
		return nil, err
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

// checkInit makes sure the init binary can run as PID 1 of any image.
func checkInit(path string) error {
	if path == "" {
		return gpurent.Errorf(gpurent.CodeInvalid,
			"docker runtime: no init binary: instances need gpurent's static executable as their PID 1 (%s; pass it with --init-binary or GPURENT_INIT)", staticexe.Hint)
	}
	if !filepath.IsAbs(path) {
		return gpurent.Errorf(gpurent.CodeInvalid, "docker runtime: the init binary %q must be an absolute path", path)
	}
	if err := staticexe.CheckFile(path); err != nil {
		return gpurent.WrapError(gpurent.CodeInvalid, err,
			"docker runtime: the init binary %s cannot run inside instances: %v; it must be a static Linux executable (%s)", path, err, staticexe.Hint)
	}
	return nil
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
	if err := r.settleLayerQuota(info.Info); err != nil {
		return err
	}
	if r.cfg.VolumeQuotaDir != "" {
		if err := os.MkdirAll(r.cfg.VolumeQuotaDir, 0o700); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "docker runtime: cannot make the volume quota directory")
		}
	}
	switch r.cfg.Network {
	case NetworkPasta:
		if err := pastaUsable(); err != nil {
			return err
		}
		r.network = NetworkPasta
	case NetworkNone:
		r.network = NetworkNone
	case "host":
		r.log.Warn("docker: instances share the host's network namespace (--network host): they reach every host address and each other")
		r.network = "host"
	case "":
		r.network = NetworkNone
		if err := pastaUsable(); err == nil {
			r.network = NetworkPasta
		} else {
			r.log.Warn("docker: instances get no network (none): the pasta network cannot run here", "why", err.Error())
		}
	default:
		r.log.Warn("docker: instances join a shared Docker network; on Docker's bridge they reach each other and the host", "network", r.cfg.Network)
		if _, err := r.cli.NetworkInspect(ctx, r.cfg.Network, client.NetworkInspectOptions{}); err != nil {
			return wrap(err, "look up network %q", r.cfg.Network)
		}
		r.network = r.cfg.Network
	}
	if r.network == NetworkPasta {
		dir := r.cfg.NetStateDir
		if dir == "" {
			dir = defaultNetStateDir(r.cfg.Scope)
		}
		if err := mkdirState(dir); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "docker runtime: cannot make the network state directory %s", dir)
		}
		r.pasta = &pastaNet{scope: r.cfg.Scope, dir: dir, allow: r.cfg.EgressAllow, log: r.log}
	}
	return nil
}

// Name is "docker".
func (r *Runtime) Name() string { return "docker" }

// Network is the network instances join: "pasta", "none", "host", "bridge"
// or the configured one.
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

// Reachable reports whether the Docker Engine at host (DOCKER_HOST-style;
// "": from the environment) answers, without making a runtime.
func Reachable(ctx context.Context, host string) error {
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInvalid, err, "docker runtime: bad daemon address %q", host)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "Docker Engine not reachable at %s", cli.DaemonHost())
	}
	return nil
}
