package rental

import (
	"context"

	"github.com/gpurent/gpurent"
)

// UpgradeRequest asks for other GPUs under an instance: another type, more
// or fewer of them, or none (no-GPU mode) and back.
type UpgradeRequest struct {
	TypeID string // "" keeps the instance's type
	Count  *int   // nil keeps the count; 0 is no-GPU mode
	// ZoneID limits where the target may be when it does not fit on the
	// instance's host ("" any zone).
	ZoneID         string
	IdempotencyKey string // optional; same key + same request → same operation
}

// MigrateRequest asks to move an instance, same GPU type and count, to
// another host: in ZoneID ("" any), or (operators only) to HostID.
type MigrateRequest struct {
	ZoneID         string
	HostID         string
	IdempotencyKey string
}

// StartOptions say what Start does when the instance's host has no free
// GPU for it: Move starts it on another host (its data is copied there);
// Queue waits until GPUs free up (on its host or, if Move is also set,
// anywhere) and starts it then, with an event and an account notice.
// Neither: a clear conflict, as before.
type StartOptions struct {
	Move  bool
	Queue bool
}

// Shape is a GPU type and count with what it costs at list price.
type Shape struct {
	TypeID    string
	Count     int
	CPUMilli  int64
	MemoryMiB int64
	// BF16TFLOPS is the spec's dense BF16 throughput of Count GPUs (0 in
	// no-GPU mode): the basis of the expected speed until the fleet has
	// measurements.
	BF16TFLOPS float64
}

// UpgradePlan is what an upgrade would do, shown before it is confirmed.
type UpgradePlan struct {
	InstanceID string
	From, To   Shape
	// SameHost: the target fits on the instance's host now (a carry of the
	// file system, no copy over the network); else HostID names the host it
	// would move to.
	SameHost bool
	HostID   string
	HostName string
	// Available is false when no host has the target free now; Reason says
	// what is missing.
	Available bool
	Reason    string
}

// OperationDetail is an operation with the instance it moves.
type OperationDetail struct {
	Operation gpurent.Operation
	Instance  gpurent.Instance
}

// PlanUpgrade says what Upgrade would do now, without claiming anything.
func (s *Service) PlanUpgrade(ctx context.Context, acc *gpurent.Account, id string, r UpgradeRequest) (*UpgradePlan, error) {
	return s.planUpgrade(ctx, acc, id, r)
}

// Upgrade moves the instance to other GPUs: the target is claimed first,
// then the instance switches (same host: its file system carried; another
// host: copied while it runs, then a short stop and a final delta) and is
// billed at the new price from the instant the new container starts. A
// stopped hourly instance just changes what it will start with. created is
// false when an earlier request with the same key made the operation.
func (s *Service) Upgrade(ctx context.Context, acc *gpurent.Account, id string, r UpgradeRequest) (d *OperationDetail, created bool, err error) {
	return s.upgrade(ctx, acc, id, r)
}

// Migrate moves the instance, same GPU type and count, to another host.
func (s *Service) Migrate(ctx context.Context, acc *gpurent.Account, id string, r MigrateRequest) (d *OperationDetail, created bool, err error) {
	return s.migrate(ctx, acc, id, r)
}

// StartWith starts a stopped instance as Start does and, when its host has
// no free GPU, moves or queues it as o says. op is the operation made, if
// any (moved or queued start).
func (s *Service) StartWith(ctx context.Context, acc *gpurent.Account, id string, o StartOptions) (d *Detail, op *gpurent.Operation, err error) {
	return s.startWith(ctx, acc, id, o)
}

// Operations lists the instance's operations, newest first.
func (s *Service) Operations(ctx context.Context, acc *gpurent.Account, id string) ([]gpurent.Operation, error) {
	return s.operations(ctx, acc, id)
}

// CancelQueued cancels the instance's queued start; nothing was claimed.
func (s *Service) CancelQueued(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Operation, error) {
	return s.cancelQueued(ctx, acc, id)
}
