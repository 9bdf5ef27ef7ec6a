package gpurent

import "time"

// Run event kinds: an agent saw a run of an allocation start, or end.
const (
	RunStarted = "run_started"
	RunEnded   = "run_ended"
)

// RunEvent is one observation an agent reports about a power-on ("run") of
// an allocation's container. The agent gives it an ID and keeps it until the
// control plane acknowledges it, so a retry carries the same ID.
type RunEvent struct {
	ID           string
	HostID       string
	Kind         string // RunStarted or RunEnded
	InstanceID   string
	AllocationID string
	StartedAt    time.Time
	EndedAt      *time.Time // RunEnded only
}

// Run end reasons.
const (
	RunEndReported   = "reported"    // the agent reported the end
	RunEndHostSilent = "host_silent" // closed at the host's last heartbeat
)

// UsageRun is one power-on of an allocation, the unit metering bills: from
// StartedAt to EndedAt, or while open, to LastSeenAt at most.
type UsageRun struct {
	ID           string // AllocationID + "@" + StartedAt in Unix microseconds
	InstanceID   string
	AllocationID string
	HostID       string
	AccountID    string
	TypeID       string
	GPUCount     int
	// PricePermille is the allocation's share of the list price (0:
	// full), copied when the run is created.
	PricePermille int
	StartedAt     time.Time
	EndedAt       *time.Time
	EndReason     string
	LastSeenAt    time.Time
	// DebitedFen is what was posted to the ledger for the run so far;
	// Settled is set once the run ended and its final debit is posted.
	DebitedFen int64
	Settled    bool
}

// UsageRunFilter selects runs; empty fields select all.
type UsageRunFilter struct {
	AccountID  string
	InstanceID string
	HostID     string
	OpenOnly   bool
	// UnsettledOnly leaves out runs ended and fully debited.
	UnsettledOnly bool
	// Since, when set, leaves out runs that ended before it.
	Since time.Time
}

// Debit is one usage debit of the ledger, for revenue reports.
type Debit struct {
	Customer  string
	At        time.Time
	AmountFen int64 // what was charged
	// RevenueFen is what reached the platform's revenue account: the
	// charge less any shortfall the wallet could not cover.
	RevenueFen int64
	Key        string
}

// FinalStatement is a month's statement as it was finalized: it never
// changes; usage reported later is corrected on a later month.
type FinalStatement struct {
	AccountID   string
	Month       string // 2026-11
	TotalFen    int64
	Lines       []byte // JSON of the lines, as shown
	FinalizedAt time.Time
}

// VolumeCharge is a volume and the last day (2026-11-28, Asia/Shanghai) its
// storage was charged for, "" before the first charge.
type VolumeCharge struct {
	Volume         Volume
	ChargedThrough string
}

// PlanChange converts an instance between billing plans. From hourly to a
// package it takes effect when asked; from a package it takes effect when
// the paid period ends (the period is paid for). One change per instance
// may be pending.
type PlanChange struct {
	ID          string
	InstanceID  string
	From, To    Plan
	EffectiveAt time.Time
	State       string // "pending", "applied" or "canceled"
	RequestedBy string // account id
	CreatedAt   time.Time
}

// Plan change states.
const (
	PlanChangePending  = "pending"
	PlanChangeApplied  = "applied"
	PlanChangeCanceled = "canceled"
)
