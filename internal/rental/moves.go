package rental

import (
	"context"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/sched"
)

// The move workflow (upgrade, migrate, failover, moved and queued starts)
// lives in internal/move, built on this service's lifecycle primitives
// below. The lifecycle asks it, through Moves, what the operations add to
// a host's desired state, to apply a host's report to them first, and to
// end an instance's operation when the instance is deleted.

// MoveViews is what the lifecycle needs of the move workflow.
type MoveViews interface {
	// HostOps lists the unfinished operations touching a host.
	HostOps(ctx context.Context, hostID string) ([]gpurent.Operation, error)
	// SourceView adjusts the desired entry di of instance in on a host
	// it is moving from (or, same host, growing on).
	SourceView(ctx context.Context, op *gpurent.Operation, in *gpurent.Instance, di *agentproto.DesiredInstance) error
	// AddMoves adds to d what ops ask of host h beyond its own
	// instances: targets it prepares or starts, old copies it removes.
	AddMoves(ctx context.Context, h *gpurent.Host, ops []gpurent.Operation, d *agentproto.Desired) error
	// ApplyMoves moves the host's operations on from its report and
	// answers the instances whose reports the operations consumed.
	ApplyMoves(ctx context.Context, host *gpurent.Host, actual map[string]agentproto.ActualInstance) (map[string]bool, error)
	// Abandon ends the instance's unfinished operation, in q, because the
	// instance is being deleted. A version conflict is wrapped in ErrStale.
	Abandon(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, now time.Time) error
}

// MoveRequests are the customers' move requests, which this service
// answers for the callers that hold only it (see the methods of the same
// names).
type MoveRequests interface {
	PlanUpgrade(ctx context.Context, acc *gpurent.Account, id string, r UpgradeRequest) (*UpgradePlan, error)
	Upgrade(ctx context.Context, acc *gpurent.Account, id string, r UpgradeRequest) (*OperationDetail, bool, error)
	Migrate(ctx context.Context, acc *gpurent.Account, id string, r MigrateRequest) (*OperationDetail, bool, error)
	StartWith(ctx context.Context, acc *gpurent.Account, id string, o StartOptions) (*Detail, *gpurent.Operation, error)
	Operations(ctx context.Context, acc *gpurent.Account, id string) ([]gpurent.Operation, error)
	CancelQueued(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Operation, error)
}

// Moves is the move workflow (internal/move's Service).
type Moves interface {
	MoveViews
	MoveRequests
}

// NewWithMoves makes the service and, through moves, the move workflow
// built on it (the workflow needs the lifecycle, and the lifecycle the
// workflow's views of the hosts).
func NewWithMoves(cfg Config, moves func(*Service) Moves) *Service {
	s := New(cfg)
	s.moves = moves(s)
	return s
}

// errNoMoves answers a move request to a service made without moves.
func errNoMoves() error {
	return gpurent.Errorf(gpurent.CodeUnavailable, "this control plane runs no move workflow")
}

// ErrStale marks a version conflict worth retrying: a Change that returns
// it (wrapped) has Apply run its transaction again.
var ErrStale = errStale

// Change is one state change of an instance inside Apply's transaction:
// it edits in and returns the event to record, or nil when nothing changes.
type Change = change

// Apply runs ch on the current instance (owned by acc; nil: the system
// acting) in a transaction, retrying on ErrStale, then wakes the host's
// agent and, when GPUs were released, drops the placement snapshot.
func (s *Service) Apply(ctx context.Context, acc *gpurent.Account, id string, ch Change) (*gpurent.Instance, error) {
	return s.apply(ctx, acc, id, ch)
}

// Owned reads the instance acc may act on (an operator any), or answers
// not found.
func (s *Service) Owned(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Instance, error) {
	return s.owned(ctx, s.store, acc, id)
}

// Detail is what a customer sees of in.
func (s *Service) Detail(ctx context.Context, in *gpurent.Instance) (*Detail, error) {
	return s.detail(ctx, in)
}

// Shape sizes count GPUs of typeID as an instance gets them (in no-GPU
// mode for count 0): invalid beyond the per-instance bound or for an
// unknown type.
func (s *Service) Shape(ctx context.Context, typeID string, count int) (Shape, *gpurent.GPUType, error) {
	if count < 0 || count > s.cfg.MaxGPUsPerInstance {
		return Shape{}, nil, gpurent.Errorf(gpurent.CodeInvalid, "gpu_count must be 0 (no-GPU mode) to %d, got %d", s.cfg.MaxGPUsPerInstance, count)
	}
	gt, err := s.snap.gpuType(ctx, typeID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return Shape{}, nil, gpurent.Errorf(gpurent.CodeInvalid, "unknown GPU type %q (see `gpurent gpus`)", typeID)
	} else if err != nil {
		return Shape{}, nil, err
	}
	sh := Shape{TypeID: gt.ID, Count: count,
		CPUMilli: gt.CPUMilliPerGPU * int64(count), MemoryMiB: gt.MemoryMiBPerGPU * int64(count),
		BF16TFLOPS: gt.BF16TFLOPS * float64(count)}
	if count == 0 {
		sh.CPUMilli, sh.MemoryMiB, sh.BF16TFLOPS = s.cfg.NoGPUCPUMilli, s.cfg.NoGPUMemoryMiB, 0
	}
	return sh, gt, nil
}

// CheckHourFunds is the start gate for count GPUs of gt on the hourly
// plan: an hour of their price must be spendable by acc. For a change of
// a running instance (instanceID set) its own hour is not kept back.
func (s *Service) CheckHourFunds(ctx context.Context, acc *gpurent.Account, instanceID string, gt *gpurent.GPUType, count int) error {
	return s.checkFundsFor(ctx, acc, instanceID, s.firstCharge(gt, gpurent.PlanHourly, count))
}

// Reserve plans req on the placement snapshot and holds the placement
// there until the caller's claim ends (Reservation.Done).
func (s *Service) Reserve(ctx context.Context, req sched.Request) (sched.Placement, *Reservation, error) {
	return s.snap.plan(ctx, req)
}

// Peek plans req on the snapshot without holding anything.
func (s *Service) Peek(ctx context.Context, req sched.Request) (sched.Placement, error) {
	return s.snap.peek(ctx, req)
}

// HostName is a host's name for messages (its id if unknown).
func (s *Service) HostName(id string) string {
	if h := s.snap.host(id); h != nil {
		return h.Name
	}
	return id
}

// Wake wakes the long polls of the host's agent in this process.
func (s *Service) Wake(hostID string) { s.hub.notify(hostID) }

// The move requests, answered by the move workflow.

// PlanUpgrade says what Upgrade would do now, without claiming anything.
func (s *Service) PlanUpgrade(ctx context.Context, acc *gpurent.Account, id string, r UpgradeRequest) (*UpgradePlan, error) {
	if s.moves == nil {
		return nil, errNoMoves()
	}
	return s.moves.PlanUpgrade(ctx, acc, id, r)
}

// Upgrade moves the instance to other GPUs (see internal/move). created is
// false when an earlier request with the same key made the operation.
func (s *Service) Upgrade(ctx context.Context, acc *gpurent.Account, id string, r UpgradeRequest) (d *OperationDetail, created bool, err error) {
	if s.moves == nil {
		return nil, false, errNoMoves()
	}
	return s.moves.Upgrade(ctx, acc, id, r)
}

// Migrate moves the instance, same GPU type and count, to another host.
func (s *Service) Migrate(ctx context.Context, acc *gpurent.Account, id string, r MigrateRequest) (d *OperationDetail, created bool, err error) {
	if s.moves == nil {
		return nil, false, errNoMoves()
	}
	return s.moves.Migrate(ctx, acc, id, r)
}

// StartWith starts a stopped instance as Start does and, when its host has
// no free GPU, moves or queues it as o says. op is the operation made, if
// any (moved or queued start).
func (s *Service) StartWith(ctx context.Context, acc *gpurent.Account, id string, o StartOptions) (d *Detail, op *gpurent.Operation, err error) {
	if s.moves == nil {
		if o.Move || o.Queue {
			return nil, nil, errNoMoves()
		}
		d, err := s.Start(ctx, acc, id)
		return d, nil, err
	}
	return s.moves.StartWith(ctx, acc, id, o)
}

// Operations lists the instance's operations, newest first.
func (s *Service) Operations(ctx context.Context, acc *gpurent.Account, id string) ([]gpurent.Operation, error) {
	if s.moves == nil {
		in, err := s.owned(ctx, s.store, acc, id)
		if err != nil {
			return nil, err
		}
		return s.store.ListOperations(ctx, gpurent.OperationFilter{InstanceID: in.ID})
	}
	return s.moves.Operations(ctx, acc, id)
}

// CancelQueued cancels the instance's queued start; nothing was claimed.
func (s *Service) CancelQueued(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Operation, error) {
	if s.moves == nil {
		return nil, errNoMoves()
	}
	return s.moves.CancelQueued(ctx, acc, id)
}

// hostOps lists the unfinished operations touching a host (none without
// moves).
func (s *Service) hostOps(ctx context.Context, hostID string) ([]gpurent.Operation, error) {
	if s.moves == nil {
		return nil, nil
	}
	return s.moves.HostOps(ctx, hostID)
}

// abandon ends the instance's operation as it is deleted (see
// MoveViews.Abandon).
func (s *Service) abandon(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, now time.Time) error {
	if s.moves == nil {
		return nil
	}
	return s.moves.Abandon(ctx, q, in, now)
}
