package rental

import "github.com/gpurent/gpurent"

// The move requests and answers: this service's callers make them, and
// internal/move, the workflow that answers them, takes them as they are.

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
