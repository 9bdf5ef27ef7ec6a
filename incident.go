package gpurent

import "time"

// Prefixes of incident ids.
const (
	PrefixIncident = "inc"
	PrefixGPUEvent = "gev"
)

// FaultClass is what a GPU or host fault means for the fleet, after the
// rules of docs/health.md (NVIDIA's Xid catalogue, grouped in bursts).
type FaultClass string

// Fault classes.
const (
	FaultApp        FaultClass = "app"         // the tenant's program (Xid 13, 31, 43, ...): tell the tenant; no drain
	FaultInfo       FaultClass = "info"        // record and trend; reset when idle
	FaultReset      FaultClass = "reset"       // cordon the GPU, fail over, reset when idle
	FaultDrainReset FaultClass = "drain_reset" // as reset, for the GPU and its peers
	FaultNode       FaultClass = "node"        // the host: fail over every instance, power-cycle
	FaultRMA        FaultClass = "rma"         // delist the GPU for return to the vendor
	FaultDegraded   FaultClass = "degraded"    // throttling, link or power below spec: counts as down
	FaultHost       FaultClass = "host"        // host-level hardware (aux power, GPUs missing): delist the host
	FaultHostDown   FaultClass = "host_down"   // the agent went silent
	FaultUnknown    FaultClass = "unknown"     // an Xid no rule knows: human review, no penalty
)

// Attribution says who a fault is charged to.
type Attribution string

// Attributions.
const (
	AttrHost   Attribution = "host"   // the platform's: not billed, credited
	AttrTenant Attribution = "tenant" // the customer's program: billed, no credit
	AttrNone   Attribution = "none"   // informational
)

// GPUEvent is one health observation an agent reported for a GPU: an Xid,
// an ECC error, a lost GPU, a recovery action, or a telemetry finding
// (throttling, link below spec). The agent's id makes it idempotent.
type GPUEvent struct {
	ID     string
	HostID string
	GPUID  string // UUID; "" for a host-wide event
	At     time.Time
	Kind   string // xid, ecc_dbe, ecc_sbe, gpu_lost, recovery_action, remap_failure, remap_pending, throttle, pcie_degraded, nvlink_down, power_limit, temperature
	Xid    int    // for kind xid
	Detail string // the driver's text, the recovery action, the measured value
}

// GPUEventFilter selects GPU events; empty fields select all.
type GPUEventFilter struct {
	HostID string
	GPUID  string
	Since  time.Time
	Limit  int // 0: no limit; newest first when set
}

// IncidentState is open or resolved.
type IncidentState string

// Incident states.
const (
	IncidentOpen     IncidentState = "open"
	IncidentResolved IncidentState = "resolved"
)

// Incident is one fault as it touched one instance (or, with no instance,
// an idle GPU or host): what happened, when, what was done, and the credit
// it produced.
type Incident struct {
	ID          string
	HostID      string
	GPUID       string // "" for a host-wide incident
	InstanceID  string // "" when no instance was touched
	AccountID   string // the instance's account, "" without one
	Class       FaultClass
	Attribution Attribution
	Cause       string // "Xid 79: GPU has fallen off the bus"
	State       IncidentState
	StartedAt   time.Time
	EndedAt     *time.Time
	// CreditFen is the SLA credit posted for it (0 before, or when none
	// is due); CreditKey the ledger key it was posted under.
	CreditFen int64
	CreditKey string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IncidentEntry is one line of an incident's timeline.
type IncidentEntry struct {
	IncidentID string
	At         time.Time
	Kind       string // detected, action, failover, resolved, credit, note
	Message    string
}

// IncidentFilter selects incidents; empty fields select all.
type IncidentFilter struct {
	InstanceID string
	AccountID  string
	HostID     string
	GPUID      string
	OpenOnly   bool
	Since      time.Time // incidents open at or after Since, or still open
}
