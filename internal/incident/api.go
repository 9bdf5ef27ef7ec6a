// Package incident is the control plane's side of GPU health: it stores the
// agents' health events, classifies them with internal/faultrules's rules,
// acts (tells the tenant, cordons a GPU, fails instances over, delists a
// host), keeps incidents with their timelines, marks silent hosts down, and
// posts the SLA credits internal/sla computes, automatically and once per
// incident.
package incident

import (
	"context"
	"time"

	"github.com/gpurent/gpurent"
)

// Detail is an incident with its timeline.
type Detail struct {
	Incident gpurent.Incident
	Entries  []gpurent.IncidentEntry
}

// InstanceReport is what a customer sees of an instance's reliability this
// month: availability, every incident that touched it, and the credits.
type InstanceReport struct {
	InstanceID string
	MonthStart time.Time
	// AvailabilityBP is the month's availability so far in basis points
	// (10000 = 100%); degraded time counts as down.
	AvailabilityBP int
	CreditsFen     int64
	Incidents      []Detail
}

// GPUHealth is one GPU as an operator sees it.
type GPUHealth struct {
	HostID, HostName string
	GPU              gpurent.GPU
	// Recent are its latest health events (Xids, ECC, findings), newest first.
	Recent        []gpurent.GPUEvent
	OpenIncidents []gpurent.Incident
	// RMACandidate says the rules want the card returned to the vendor
	// (a reset-class fault twice in 7 days, a node fault twice in 30, or
	// an RMA-class fault).
	RMACandidate bool
	Reason       string
	// Sample is its latest telemetry, nil before any.
	Sample *Sample
}

// Sample is a GPU's latest telemetry as its agent reported it.
type Sample struct {
	At           time.Time
	UtilPercent  int
	MemUsedMiB   int64
	TemperatureC int
	PowerW       float64
	ThrottleMask uint64
	ECCSingleBit int64
	ECCDoubleBit int64
	XidLast      int
}

// Fault is a fault an operator injects on a demo host's fake GPU.
type Fault struct {
	HostID string
	UUID   string
	Kind   string // xid, ecc_dbe, gpu_lost, recovery_action, remap_failure, throttle
	Xid    int
	Detail string
}

// Injector puts faults into fake GPUs (the demo's in-process agents); nil
// on a real fleet.
type Injector interface {
	Inject(ctx context.Context, f Fault) error
}

// The methods the API calls. Authorization is the service's: customers see
// their own instances' incidents (another's: not found), operators all.
type API interface {
	InstanceReport(ctx context.Context, acc *gpurent.Account, instanceID string) (*InstanceReport, error)
	AccountIncidents(ctx context.Context, acc *gpurent.Account) ([]Detail, error)
	FleetHealth(ctx context.Context, acc *gpurent.Account) ([]GPUHealth, error)
	CordonGPU(ctx context.Context, acc *gpurent.Account, uuid, reason string) (*GPUHealth, error)
	RepairGPU(ctx context.Context, acc *gpurent.Account, uuid, note string) (*GPUHealth, error)
	RMAList(ctx context.Context, acc *gpurent.Account) ([]GPUHealth, error)
	InjectFault(ctx context.Context, acc *gpurent.Account, f Fault) error
	DrainHost(ctx context.Context, acc *gpurent.Account, hostID string) (*gpurent.Host, []string, error)
}

var _ API = (*Service)(nil)
