// Package move runs the operations that move an instance onto other GPUs:
// upgrades, migrations, failovers, and starts that move or queue. Each is
// one operation record with a step (claimed → copying → final → starting →
// cleanup, or rolling back) and a deadline: the target is claimed first,
// the agents converge to what the step asks of them and report, and the
// switch (or the rollback) is a transaction.
//
// It is built on the instance lifecycle (internal/rental), whose
// instance transactions, placement snapshot and agents' long polls it uses
// through Lifecycle; the lifecycle asks it, through rental.Moves, what its
// operations add to a host's desired state and to apply a host's report to
// them.
package move

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/keymutex"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sched"
)

// Store is what the workflow reads and writes outside a transaction: its
// operations, the transactions that move them, and, read only, the
// instances, allocations, volumes, hosts and accounts they concern.
type Store interface {
	// Its own.
	gpurent.OperationStore
	gpurent.Transactor
	// Read only.
	InstanceByID(ctx context.Context, id string) (*gpurent.Instance, error)
	AllocationByID(ctx context.Context, id string) (*gpurent.Allocation, error)
	VolumeByID(ctx context.Context, id string) (*gpurent.Volume, error)
	HostByID(ctx context.Context, id string) (*gpurent.Host, error)
	AccountByID(ctx context.Context, id string) (*gpurent.Account, error)
}

// Lifecycle is what the workflow uses of the instance lifecycle (the
// rental service).
type Lifecycle interface {
	// Owned reads the instance acc may act on.
	Owned(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Instance, error)
	// Apply runs a change of the instance in a transaction and wakes its
	// host's agent.
	Apply(ctx context.Context, acc *gpurent.Account, id string, ch rental.Change) (*gpurent.Instance, error)
	// Detail is what a customer sees of an instance.
	Detail(ctx context.Context, in *gpurent.Instance) (*rental.Detail, error)
	// Start starts a stopped instance on its host.
	Start(ctx context.Context, acc *gpurent.Account, id string) (*rental.Detail, error)
	// Shape sizes count GPUs of a type as an instance gets them.
	Shape(ctx context.Context, typeID string, count int) (rental.Shape, *gpurent.GPUType, error)
	// CheckHourFunds is the start gate for an hour of count GPUs of gt.
	CheckHourFunds(ctx context.Context, acc *gpurent.Account, instanceID string, gt *gpurent.GPUType, count int) error
	// Reserve and Peek plan on the placement snapshot; Invalidate drops it.
	Reserve(ctx context.Context, req sched.Request) (sched.Placement, *rental.Reservation, error)
	Peek(ctx context.Context, req sched.Request) (sched.Placement, error)
	Invalidate()
	// HostName names a host for messages.
	HostName(id string) string
	// Wake wakes the long polls of a host's agent.
	Wake(hostID string)
}

// Notifier tells an account about something (the wallet's webhook does).
type Notifier interface {
	Notice(ctx context.Context, accountID, kind, message string)
}

// Config configures the workflow.
type Config struct {
	Store     Store
	Lifecycle Lifecycle
	Now       func() time.Time // nil: time.Now
	Logger    *slog.Logger     // nil: slog.Default
	// A copy that makes no progress for StallTimeout (default 2 min), or
	// a target that does not run within StartTimeout of being asked to
	// (default 5 min), is rolled back; a host that does not confirm
	// removing a moved instance's old copy within CleanupTimeout (default
	// 30 min) no longer holds up the instance's next operation.
	StallTimeout, StartTimeout, CleanupTimeout time.Duration
	// Notify, when set, tells an account about something it did not ask
	// for at that moment (a queued start that began); the wallet's webhook
	// is one. The account event is written either way.
	Notify Notifier
}

// Service is the move workflow. It is safe for concurrent use.
type Service struct {
	cfg   Config
	store Store
	lc    Lifecycle
	now   func() time.Time
	log   *slog.Logger
	keys  keymutex.Mutex
}

// New makes the workflow.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = 2 * time.Minute
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 5 * time.Minute
	}
	if cfg.CleanupTimeout <= 0 {
		cfg.CleanupTimeout = 30 * time.Minute
	}
	return &Service{cfg: cfg, store: cfg.Store, lc: cfg.Lifecycle, now: cfg.Now, log: cfg.Logger}
}

// Invalidate drops the lifecycle's placement snapshot (the incident
// service does when GPUs' health changes).
func (s *Service) Invalidate() { s.lc.Invalidate() }

var _ rental.Moves = (*Service)(nil)
