package apiv1

import "time"

// This file holds the wire types of GPU health, incidents, failover and
// fault injection.

// IncidentEntry is one line of an incident's timeline. Kind is detected,
// action, failover, resolved, credit or note.
type IncidentEntry struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
}

// Incident is one fault as it touched one instance (or, for operators, an
// idle GPU or a host).
type Incident struct {
	ID string `json:"id"`
	// InstanceID is the instance it touched, "" for an idle GPU or host.
	InstanceID string `json:"instance_id,omitempty"`
	// HostID, GPU (a UUID) and AccountID are shown to operators only.
	HostID    string `json:"host_id,omitempty"`
	GPU       string `json:"gpu,omitempty"`
	AccountID string `json:"account_id,omitempty"`
	// Class is the fault class (app, info, reset, drain_reset, node, rma,
	// degraded, host, host_down, unknown); Attribution says who it is
	// charged to: host (the platform: not billed, credited), tenant (the
	// customer's program) or none.
	Class       string `json:"class"`
	Attribution string `json:"attribution"`
	// Cause says what happened, e.g. "Xid 79: GPU has fallen off the bus".
	Cause string `json:"cause"`
	// State is open or resolved.
	State     string     `json:"state"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	// DurationSeconds runs to EndedAt, or to the time of the answer while
	// the incident is open.
	DurationSeconds int64 `json:"duration_seconds"`
	// CreditFen is the SLA credit posted for it (0 while none is posted).
	CreditFen int64           `json:"credit_fen"`
	Entries   []IncidentEntry `json:"entries"`
}

// IncidentList is the answer of GET /incidents: the incidents that touched
// the caller's instances, newest first.
type IncidentList struct {
	Incidents []Incident `json:"incidents"`
}

// InstanceIncidents is the answer of GET /instances/{id}/incidents: the
// instance's reliability this month.
type InstanceIncidents struct {
	InstanceID string    `json:"instance_id"`
	MonthStart time.Time `json:"month_start"`
	// AvailabilityBP is the month's availability so far in basis points
	// (10000 is 100%); degraded time counts as down. Availability is the
	// same figure as a percentage with two decimals, e.g. "99.95%".
	AvailabilityBP int    `json:"availability_bp"`
	Availability   string `json:"availability"`
	// CreditsFen is the SLA credit posted for the month's incidents.
	CreditsFen int64      `json:"credits_fen"`
	Incidents  []Incident `json:"incidents"`
}

// FailoverRequest is the body of PUT /instances/{id}/failover. Policy
// auto moves the instance to healthy GPUs of the same type when a platform
// fault takes its GPUs; wait keeps it where it is and tells the customer.
type FailoverRequest struct {
	Policy string `json:"policy"`
}

// FailoverResult is the answer of PUT /instances/{id}/failover: the
// instance, with the failover policy now in force.
type FailoverResult struct {
	Instance
	Failover string `json:"failover"`
}

// GPUEvent is one health observation an agent reported for a GPU.
type GPUEvent struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Kind is xid, ecc_dbe, ecc_sbe, gpu_lost, recovery_action,
	// remap_failure, remap_pending, throttle, pcie_degraded, nvlink_down,
	// power_limit or temperature.
	Kind string `json:"kind"`
	// Xid is the Xid number for kind xid, else 0.
	Xid    int    `json:"xid,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// GPUSample is a GPU's latest telemetry as its agent reported it.
type GPUSample struct {
	At           time.Time `json:"at"`
	UtilPercent  int       `json:"util_percent"`
	MemUsedMiB   int64     `json:"mem_used_mib"`
	TemperatureC int       `json:"temperature_c"`
	PowerW       float64   `json:"power_w"`
	ThrottleMask uint64    `json:"throttle_mask"`
	ECCSingleBit int64     `json:"ecc_sbe"`
	ECCDoubleBit int64     `json:"ecc_dbe"`
	XidLast      int       `json:"xid_last"`
}

// GPUHealth is one GPU as an operator sees it.
type GPUHealth struct {
	HostID   string `json:"host_id"`
	HostName string `json:"host_name"`
	UUID     string `json:"uuid"`
	Index    int    `json:"index"`
	Type     string `json:"type"`
	// Health is the GPU's state: healthy, cordoned, failed, ...
	Health string `json:"health"`
	// Reason says why it is not healthy, or why it is an RMA candidate.
	Reason string `json:"reason,omitempty"`
	// RMACandidate: the rules want the card returned to the vendor.
	RMACandidate bool `json:"rma_candidate"`
	// Recent are its latest health events, newest first.
	Recent        []GPUEvent `json:"recent"`
	OpenIncidents []Incident `json:"open_incidents"`
	// Sample is its latest telemetry, null before any.
	Sample *GPUSample `json:"sample"`
}

// GPUHealthList is the answer of GET /gpus/health and GET /rma.
type GPUHealthList struct {
	GPUs []GPUHealth `json:"gpus"`
}

// CordonGPURequest is the body of POST /gpus/{uuid}/cordon.
type CordonGPURequest struct {
	Reason string `json:"reason"`
}

// RepairGPURequest is the (optional) body of POST /gpus/{uuid}/repair.
type RepairGPURequest struct {
	Note string `json:"note,omitempty"`
}

// Fault is the body and the answer of POST /faults: a fault to inject on a
// demo host's fake GPU. Kind is xid (with Xid), ecc_dbe, gpu_lost,
// recovery_action, remap_failure or throttle; a body with an Xid and no
// Kind is an xid.
type Fault struct {
	HostID string `json:"host_id"`
	UUID   string `json:"uuid"`
	Kind   string `json:"kind,omitempty"`
	Xid    int    `json:"xid,omitempty"`
	Detail string `json:"detail,omitempty"`
}
