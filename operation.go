package gpurent

import "time"

// PrefixOperation starts the id of an Operation.
const PrefixOperation = "op"

// OperationKind says why an instance moves to new GPUs.
type OperationKind string

// Operation kinds.
const (
	// OpUpgrade changes the GPU type or count (up, down, to no-GPU mode
	// and back), on the same host where it fits, else on another.
	OpUpgrade OperationKind = "upgrade"
	// OpMigrate keeps the GPU type and count and changes the host.
	OpMigrate OperationKind = "migrate"
	// OpStart starts a stopped instance whose host has no free GPU: on
	// another host (moved), or, queued, wherever GPUs free up first.
	OpStart OperationKind = "start"
	// OpFailover moves an instance off GPUs a platform fault took, to
	// healthy GPUs of the same type (the same host when the fault is the
	// GPU's, another when it is the host's).
	OpFailover OperationKind = "failover"
)

// OperationStep is where an operation stands. Every step is recorded
// before it is acted on; agents converge to what the step asks, so a
// control plane or agent restart continues from the recorded step.
type OperationStep string

// Operation steps, in order. An operation ends done or rolled_back.
const (
	// StepQueued: a queued start waits for GPUs; nothing is claimed.
	StepQueued OperationStep = "queued"
	// StepCopying: the target allocation is claimed; on another host the
	// source agent pre-copies the volume and the writable layer to the
	// target agent while the instance runs.
	StepCopying OperationStep = "copying"
	// StepFinal: the source container is stopped and the final delta sent.
	StepFinal OperationStep = "final"
	// StepStarting: the target container is asked to start.
	StepStarting OperationStep = "starting"
	// StepCleanup: switched; the source host removes the old container
	// (and, when the host changed, the old volume).
	StepCleanup OperationStep = "cleanup"
	// StepRollingBack: the target failed; the target allocation is ended
	// and the instance resumes on its old allocation; the target host
	// removes what it prepared.
	StepRollingBack OperationStep = "rolling_back"
	// StepDone and StepRolledBack end an operation.
	StepDone       OperationStep = "done"
	StepRolledBack OperationStep = "rolled_back"
)

// Finished reports whether the step ends the operation.
func (s OperationStep) Finished() bool { return s == StepDone || s == StepRolledBack }

// Operation is one move of an instance to new GPUs: the target is claimed
// before anything of the source is released, and the switch happens only
// once the target runs.
type Operation struct {
	ID         string
	InstanceID string
	AccountID  string
	Kind       OperationKind
	Step       OperationStep
	// From is what the instance held when the operation began
	// (FromAllocationID "" for a stopped instance holding no GPUs);
	// To is the claimed target ("" while queued).
	FromAllocationID string
	FromHostID       string
	ToAllocationID   string
	ToHostID         string
	ToTypeID         string
	ToCount          int
	ToCPUMilli       int64
	ToMemoryMiB      int64
	ToZoneID         string // requested zone, "" for any
	// WasRunning: the instance ran when the operation began (a rollback
	// starts it again on its old allocation).
	WasRunning bool
	// Token is the secret of the grant that lets the source agent push to
	// the target agent (cross-host only); never shown to customers.
	Token string
	// Progress of the copy as the source agent reported it.
	Passes     int
	BytesMoved int64
	// Message says why the operation rolled back, or what it waits for.
	Message        string
	IdempotencyKey string
	RequestHash    string
	// StepDeadline is when the current step is given up (rolled back).
	StepDeadline time.Time
	Version      int64 // optimistic concurrency: bumped by every UpdateOperation
	CreatedAt    time.Time
	UpdatedAt    time.Time
	FinishedAt   *time.Time
}

// CrossHost reports whether the operation moves the instance to another host.
func (o *Operation) CrossHost() bool {
	return o.ToHostID != "" && o.FromHostID != "" && o.ToHostID != o.FromHostID
}

// OperationFilter selects operations; empty fields select all.
type OperationFilter struct {
	InstanceID string
	// HostID selects operations whose source or target is the host.
	HostID     string
	ActiveOnly bool // not finished
	Step       OperationStep
}

// Allocation end reasons an operation writes.
const (
	AllocEndUpgrade    = "upgrade"     // the old allocation of a finished upgrade
	AllocEndMigrate    = "migrate"     // the old allocation of a finished move
	AllocEndFailover   = "failover"    // the old allocation of a finished failover
	AllocEndRolledBack = "rolled_back" // the target of a failed operation: its runs are not billed
)
