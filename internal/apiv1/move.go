package apiv1

import "time"

// This file holds the wire types of moving an instance to other GPUs:
// real-time upgrade, migration, and a start that moves or queues.

// UpgradeRequest is the body of POST /instances/{id}/upgrade. Leave a field
// out to keep what the instance has: GPUType keeps the type, GPUCount (nil)
// keeps the count; a GPUCount of 0 is no-GPU mode.
type UpgradeRequest struct {
	GPUType  string `json:"gpu_type,omitempty"`
	GPUCount *int   `json:"gpu_count,omitempty"`
	// Zone limits where the target may be when it does not fit on the
	// instance's host ("" any zone).
	Zone string `json:"zone,omitempty"`
}

// MigrateRequest is the body of POST /instances/{id}/migrate: the same GPU
// type and count on another host, in Zone ("" any) or, for operators, on
// HostID.
type MigrateRequest struct {
	Zone   string `json:"zone,omitempty"`
	HostID string `json:"host_id,omitempty"`
}

// StartRequest is the optional body of POST /instances/{id}/start. Move
// starts the instance on another host (its data copied there) when its
// host has no free GPU; Queue waits for GPUs to free up. Neither (or no
// body): the plain start, a conflict when the host is full.
type StartRequest struct {
	Move  bool `json:"move,omitempty"`
	Queue bool `json:"queue,omitempty"`
}

// StartResult is the answer of POST /instances/{id}/start: the instance,
// and the operation when the start was moved or queued.
type StartResult struct {
	Instance
	Operation *Operation `json:"operation,omitempty"`
}

// OperationSource is what an operation moves the instance from.
type OperationSource struct {
	// AllocationID is "" for a stopped instance holding no GPUs.
	AllocationID string `json:"allocation_id,omitempty"`
	HostID       string `json:"host_id,omitempty"`
}

// OperationTarget is what an operation moves the instance to. Allocation
// and host are "" while a start is queued.
type OperationTarget struct {
	AllocationID string `json:"allocation_id,omitempty"`
	HostID       string `json:"host_id,omitempty"`
	GPUType      string `json:"gpu_type"`
	GPUCount     int    `json:"gpu_count"`      // 0 is no-GPU mode
	Zone         string `json:"zone,omitempty"` // the requested zone, "" for any
}

// Operation is one move of an instance to new GPUs (kind upgrade, migrate
// or start). Step is queued, copying, final, starting, cleanup,
// rolling_back, done or rolled_back; done and rolled_back end it.
type Operation struct {
	ID         string          `json:"id"`
	InstanceID string          `json:"instance_id"`
	Kind       string          `json:"kind"`
	Step       string          `json:"step"`
	From       OperationSource `json:"from"`
	To         OperationTarget `json:"to"`
	// Passes and BytesMoved are the copy's progress as the source agent
	// reported it.
	Passes     int   `json:"passes"`
	BytesMoved int64 `json:"bytes_moved"`
	// Message says why the operation rolled back, or what it waits for.
	Message    string     `json:"message,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// OperationDetail is the answer of upgrade and migrate: the operation and
// the instance it moves.
type OperationDetail struct {
	Operation Operation `json:"operation"`
	Instance  Instance  `json:"instance"`
}

// OperationList is the answer of GET /instances/{id}/operations, newest
// first.
type OperationList struct {
	Operations []Operation `json:"operations"`
}

// HourPrice is what one hour of a shape costs, in fen, from a quote of the
// next hour: at list price, at academic price, and the one of them the
// caller pays.
type HourPrice struct {
	ListFen     int64 `json:"list_fen"`
	AcademicFen int64 `json:"academic_fen"`
	// ApplicableFen is AcademicFen for a verified academic account, else
	// ListFen.
	ApplicableFen int64 `json:"applicable_fen"`
}

// UpgradeShape is a GPU type and count with what it gets and costs.
type UpgradeShape struct {
	GPUType   string `json:"gpu_type"`
	GPUCount  int    `json:"gpu_count"` // 0 is no-GPU mode
	CPUMilli  int64  `json:"cpu_milli"`
	MemoryMiB int64  `json:"memory_mib"`
	// BF16TFLOPS is the spec's dense BF16 throughput of GPUCount GPUs.
	BF16TFLOPS   float64   `json:"bf16_tflops"`
	PricePerHour HourPrice `json:"price_per_hour"`
}

// UpgradePlan is the answer of GET /instances/{id}/upgrade/plan: what an
// upgrade would do now, and what it would cost, before it is confirmed.
type UpgradePlan struct {
	InstanceID string       `json:"instance_id"`
	From       UpgradeShape `json:"from"`
	To         UpgradeShape `json:"to"`
	// SameHost: the target fits on the instance's host now; else HostID
	// names the host it would move to.
	SameHost bool   `json:"same_host"`
	HostID   string `json:"host_id,omitempty"`
	HostName string `json:"host_name,omitempty"`
	// Available is false when no host has the target free now; Reason
	// says what is missing.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// AcademicApplies: the caller is a verified academic account and pays
	// the academic prices.
	AcademicApplies bool `json:"academic_applies"`
	// PricedAt is the start of the hour the prices were quoted for.
	PricedAt time.Time `json:"priced_at"`
	// DifferencePerHour is To's price per hour less From's.
	DifferencePerHour HourPrice `json:"difference_per_hour"`
	// SpeedRatio is the expected speed of To relative to From; null when
	// either has no BF16 throughput (no-GPU mode). SpeedBasis says what it
	// rests on: "spec" (the datasheet figures).
	SpeedRatio *float64 `json:"speed_ratio"`
	SpeedBasis string   `json:"speed_basis"`
}
