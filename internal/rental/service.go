// Package rental runs the instance lifecycle: rent (validate, place, claim),
// stop, start, delete, the desired state each host's agent converges to, and
// the transitions that agents' reports drive.
//
// The move workflow (upgrade, migrate, failover, moved and queued starts)
// is internal/move, built on this package's lifecycle primitives (Apply,
// Reserve, Shape...) and known here only as Moves (see moves.go).
//
// The database decides every race: placement plans on an in-memory snapshot
// of the fleet, and the store's atomic claim (one open allocation per GPU,
// enforced by a constraint) accepts or refuses it; a refused plan drops the
// snapshot and plans again.
package rental

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/imageref"
	"github.com/gpurent/gpurent/internal/keymutex"
	"github.com/gpurent/gpurent/internal/rating"
)

// Store is what the rental service reads and writes: instances, their
// volumes, allocations, operations and events, and the hosts whose desired
// state it bumps, in transactions; the catalog it places by; whether other
// processes write too (its long poll rechecks then); and, read only, the
// accounts and the benchmark jobs that hold GPUs.
type Store interface {
	// Its own.
	gpurent.InstanceStore
	gpurent.VolumeStore
	gpurent.AllocationStore
	gpurent.OperationStore
	gpurent.EventStore
	// The hosts whose desired state it bumps, the catalog it places by.
	gpurent.FleetStore
	gpurent.CatalogStore
	// Its transactions, and whether other processes write too.
	gpurent.Transactor
	gpurent.WriterScope
	// Read only.
	AccountByID(ctx context.Context, id string) (*gpurent.Account, error)
	ListBenchJobs(ctx context.Context, f gpurent.BenchJobFilter) ([]gpurent.BenchJob, error)
	// The operator's base image catalog: a rent names an image by it, and
	// agents pre-pull what it marks.
	BaseImage(ctx context.Context, name string) (*gpurent.BaseImage, error)
	ListBaseImages(ctx context.Context) ([]gpurent.BaseImage, error)
	// The hosts that hold an image: a rent prefers them.
	HostsHolding(ctx context.Context, ref string) ([]string, error)
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger
	// MaxGPUsPerInstance bounds a request's count (default 8).
	MaxGPUsPerInstance int
	// NoGPU sizes and gates an instance rented with no GPUs ("无卡模式",
	// for working on data at a token price): its CPU (default 1000m) and
	// memory (default 4096 MiB), and the hour of its price that must be
	// spendable to start it (default 10 fen, the price book's default).
	NoGPUCPUMilli, NoGPUMemoryMiB, NoGPUHourFen int64
	// DefaultVolumeGiB is the volume size when a request names none (default 50).
	DefaultVolumeGiB int
	// MaxVolumeGiB bounds a volume (default 4096).
	MaxVolumeGiB int
	// PollWait is how long Desired waits for a change (default 25 s).
	PollWait time.Duration
	// BenchOptions are handed to agents with every benchmark job (zero:
	// the suite's tier defaults; tests and the demo shorten runs).
	BenchOptions agentproto.BenchOptions
	// HostTimeout is how long a host may be silent and still get new
	// placements (default 30 s).
	HostTimeout time.Duration
	// Images is the operator's allow-list of image registries, checked at
	// rent (nil: any registry, still never the host's own).
	Images *imageref.Policy
	// Registry, when set, is the operator's registry and its pull
	// credential, handed to every agent in its desired state.
	Registry *agentproto.Registry
	// Funds, when set, gates rent and start: the account must have at
	// least one hour of the instance's list price to spend.
	Funds Funds
	// Packages, with Prices, takes the due periods of a package instance
	// inside the transaction that claims its GPUs (a rent, a start): in
	// full, or refused with CodePaymentRequired, which rolls the claim back
	// (metering's CollectDue). The price book is read outside any
	// transaction. Without them packages are charged by the billing pass
	// only.
	Packages Packages
	Prices   PriceBook
	// SnapshotMaxAge bounds how stale the placement snapshot may get before
	// it is reloaded, so GPUs freed by another control-plane replica are seen
	// (default 5 s).
	SnapshotMaxAge time.Duration
}

// Packages takes the due periods of a package instance through q, the
// claim's transaction, at the prices of b (internal/metering does).
type Packages interface {
	CollectDue(ctx context.Context, q gpurent.Queries, b *rating.Book, in *gpurent.Instance) (int64, error)
}

// PriceBook answers the price book in force (internal/pricing does).
type PriceBook interface {
	Book(ctx context.Context) (*rating.Book, error)
}

// Collect takes a package instance's due periods through q, the claim's
// transaction (see Config.Packages).
type Collect func(ctx context.Context, q gpurent.Queries, in *gpurent.Instance) error

// Funds is the start gate (the wallet is one): CheckFunds refuses, with
// CodePaymentRequired, an account that cannot pay needFen up front, owes
// arrears, or reached a spend limit.
type Funds interface {
	CheckFunds(ctx context.Context, accountID string, needFen int64) error
}

// FundsExcept is a start gate that keeps back an hour of what the
// account's running instances burn (the wallet's is one): for an instance
// about to change, its own hour is left out.
type FundsExcept interface {
	CheckFundsExcept(ctx context.Context, accountID, instanceID string, needFen int64) error
}

// Service is the rental service. It is safe for concurrent use.
type Service struct {
	cfg   Config
	store Store
	now   func() time.Time
	log   *slog.Logger
	snap  *snapshotCache
	hub   *hub
	keys  keymutex.Mutex
	// watching is set while Watch relays the store's change feed.
	watching atomic.Bool
	// draining is set once the process shuts down (Drain).
	draining atomic.Bool
	// moves is the move workflow (NewWithMoves); nil: no operations.
	moves Moves
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxGPUsPerInstance <= 0 {
		cfg.MaxGPUsPerInstance = 8
	}
	if cfg.NoGPUCPUMilli <= 0 {
		cfg.NoGPUCPUMilli = 1000
	}
	if cfg.NoGPUMemoryMiB <= 0 {
		cfg.NoGPUMemoryMiB = 4096
	}
	if cfg.NoGPUHourFen <= 0 {
		cfg.NoGPUHourFen = 10
	}
	if cfg.DefaultVolumeGiB <= 0 {
		cfg.DefaultVolumeGiB = 50
	}
	if cfg.MaxVolumeGiB <= 0 {
		cfg.MaxVolumeGiB = 4096
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 25 * time.Second
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = 30 * time.Second
	}
	if cfg.SnapshotMaxAge <= 0 {
		cfg.SnapshotMaxAge = 5 * time.Second
	}
	s := &Service{cfg: cfg, store: cfg.Store, now: cfg.Now, log: cfg.Logger, hub: newHub()}
	s.snap = newSnapshotCache(cfg.Store, cfg.Now, cfg.HostTimeout, cfg.SnapshotMaxAge)
	return s
}

// RentRequest is a customer's request for an instance.
type RentRequest struct {
	Name           string
	Image          string
	TypeID         string
	Count          int // 0: no-GPU mode (hourly plan only)
	ZoneID         string
	Plan           gpurent.Plan // "" is hourly
	VolumeGiB      int          // 0 is the default size
	IdempotencyKey string       // optional; same key + same request → same instance
	// Degraded asks for GPUs listed as degraded (slower, at a price
	// scaled by their measured speed), and only those; without it the
	// instance gets only GPUs that are not. Hourly plan, one GPU or more.
	Degraded bool
	// StartupCommand is what the instance's init starts: nil the image's
	// own entrypoint and command, "" none, else a shell line.
	StartupCommand *string
}

// hash identifies the request for idempotency: the same key with another
// request is refused.
func (r RentRequest) hash() string {
	// Degraded is left out when false, so the hashes of requests made
	// before the option existed stay as they were.
	b, _ := json.Marshal(struct {
		Name, Image, TypeID, ZoneID string
		Count, VolumeGiB            int
		Plan                        gpurent.Plan
		Degraded                    bool    `json:",omitempty"`
		StartupCommand              *string `json:",omitempty"`
	}{r.Name, r.Image, r.TypeID, r.ZoneID, r.Count, r.VolumeGiB, r.Plan, r.Degraded, r.StartupCommand})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Detail is one instance with what a customer sees of it.
type Detail struct {
	Instance gpurent.Instance
	Host     *gpurent.Host // without GPUs; nil before placement
	Volume   *gpurent.Volume
	Events   []gpurent.Event
}

// MaxVolumeGiB is the largest volume a rent may ask for.
func (s *Service) MaxVolumeGiB() int { return s.cfg.MaxVolumeGiB }

// Invalidate drops the cached fleet snapshot; the fleet service calls it when
// hosts or GPUs change.
func (s *Service) Invalidate() { s.snap.invalidate() }

// NewEvent makes an event for an instance at t; its message is kind, or
// format with args when format is not empty.
func NewEvent(instanceID string, t time.Time, kind, format string, args ...any) *gpurent.Event {
	e := &gpurent.Event{ID: gpurent.NewID(gpurent.PrefixEvent), InstanceID: instanceID, At: t.UTC(), Kind: kind}
	e.Message = kind
	if format != "" {
		e.Message = fmt.Sprintf(format, args...)
	}
	return e
}
