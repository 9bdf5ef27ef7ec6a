package apiv1

import "time"

// This file holds the wire types of compute transparency (issue #7): the
// public report, benchmark jobs, verify, GPU certifications and the
// operator's settings.

// Transparency is the public report: every GPU type with its spec, its
// fleet statistics, every host and every GPU (UUID hashed).
type Transparency struct {
	GeneratedAt time.Time `json:"generated_at"`
	// PassRatio and WarnRatio are the bands of the verdicts, as shares of
	// the fleet median (0.95 and 0.90).
	PassRatio float64 `json:"pass_ratio"`
	WarnRatio float64 `json:"warn_ratio"`
	// Synthetic is set when any figure came from fake GPUs (the demo): the
	// page says so on top.
	Synthetic bool                   `json:"synthetic"`
	Types     []TransparencyType     `json:"types"`
	Notes     []string               `json:"notes,omitempty"`
	Delisted  []TransparencyGPUBrief `json:"delisted"`
}

// TransparencyType is one GPU type on the report.
type TransparencyType struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// GPUs counts the type's GPUs; Certified, Warn, Degraded, Delisted,
	// Pending and Uncertified count them by certification.
	GPUs        int `json:"gpus"`
	Certified   int `json:"certified"`
	Warn        int `json:"warn"`
	Degraded    int `json:"degraded"`
	Delisted    int `json:"delisted"`
	Pending     int `json:"pending"`
	Uncertified int `json:"uncertified"`
	// Probes: one per probe and setup measured on the type.
	Probes []TransparencyProbe `json:"probes"`
	Hosts  []TransparencyHost  `json:"hosts"`
}

// TransparencyFigure is one reference figure with its source.
type TransparencyFigure struct {
	Value  float64 `json:"value"`
	Low    float64 `json:"low,omitempty"`
	High   float64 `json:"high,omitempty"`
	Unit   string  `json:"unit"`
	Source string  `json:"source"`
}

// TransparencyProbe is the fleet's statistics of one probe on one type.
type TransparencyProbe struct {
	Probe string `json:"probe"`
	Setup string `json:"setup"`
	Unit  string `json:"unit"`
	GPUs  int    `json:"gpus"` // GPUs per measurement (2+ for NCCL)
	// Spec is the official dense figure the probe is set against (nil for
	// probes without one); Healthy the reference measurement of a healthy
	// card, where one is known.
	Spec    *TransparencyFigure `json:"spec,omitempty"`
	Healthy *TransparencyFigure `json:"healthy,omitempty"`
	// The fleet: the median of the card medians, the lowest and highest
	// card median, and how many cards it is over.
	FleetMedian float64 `json:"fleet_median"`
	FleetMin    float64 `json:"fleet_min"`
	FleetMax    float64 `json:"fleet_max"`
	Cards       int     `json:"cards"`
	// The healthy band: a card at or above BandPass (PassRatio × the
	// fleet median) passes; below BandWarn it fails.
	BandPass float64 `json:"band_pass"`
	BandWarn float64 `json:"band_warn"`
	// SpecRatio is FleetMedian / Spec (0 without a spec).
	SpecRatio float64 `json:"spec_ratio"`
}

// TransparencyHost is one host of a type on the report.
type TransparencyHost struct {
	ID   string            `json:"id"`
	Name string            `json:"name"`
	Zone string            `json:"zone"`
	GPUs []TransparencyGPU `json:"gpus"`
}

// TransparencyGPU is one card on the report.
type TransparencyGPU struct {
	// Hash is the first 16 hex digits of the SHA-256 of the GPU's UUID: a
	// stable name that does not publish the UUID.
	Hash  string `json:"hash"`
	Index int    `json:"index"`
	// State is the certification (uncertified, certified, warn, rerun,
	// delisted, degraded); Reason says why.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// PricePermille is the listing price as a share of the list price
	// (1000 = full; less when listed as degraded).
	PricePermille int        `json:"price_permille"`
	LastRunAt     *time.Time `json:"last_run_at"`
	// Results are the latest of each probe; History the earlier jobs,
	// newest first (at most 12).
	Results []TransparencyResult  `json:"results"`
	History []TransparencyHistory `json:"history,omitempty"`
}

// TransparencyResult is one card's latest figures on one probe.
type TransparencyResult struct {
	Probe       string   `json:"probe"`
	Setup       string   `json:"setup"`
	Unit        string   `json:"unit"`
	Median      float64  `json:"median"`
	Min         float64  `json:"min"`
	Max         float64  `json:"max"`
	Spread      float64  `json:"spread"`
	Runs        int      `json:"runs"`
	FleetRatio  float64  `json:"fleet_ratio"`
	SpecRatio   float64  `json:"spec_ratio"`
	Outcome     string   `json:"outcome"`
	Provisional bool     `json:"provisional,omitempty"`
	MaxTempC    float64  `json:"max_temp_c,omitempty"`
	MinSMClock  float64  `json:"min_sm_clock_mhz,omitempty"`
	MeanPowerW  float64  `json:"mean_power_w,omitempty"`
	Throttle    []string `json:"throttle_reasons,omitempty"`
	Synthetic   bool     `json:"synthetic,omitempty"`
}

// TransparencyHistory is one earlier job of a card: its date, why it ran
// and its medians by probe.
type TransparencyHistory struct {
	JobID   string             `json:"job_id"`
	At      time.Time          `json:"at"`
	Reason  string             `json:"reason"`
	Outcome string             `json:"outcome"` // the worst outcome of its probes
	Medians map[string]float64 `json:"medians"`
}

// TransparencyGPUBrief names a delisted or degraded card and why.
type TransparencyGPUBrief struct {
	Hash          string    `json:"hash"`
	Type          string    `json:"type"`
	Host          string    `json:"host"`
	State         string    `json:"state"`
	Reason        string    `json:"reason"`
	PricePermille int       `json:"price_permille"`
	Since         time.Time `json:"since"`
}

// BenchJob is one run of the benchmark suite.
type BenchJob struct {
	ID          string     `json:"id"`
	HostID      string     `json:"host_id,omitempty"` // operators only
	GPUs        []string   `json:"gpus,omitempty"`    // UUIDs; operators and the instance's owner
	GPUType     string     `json:"gpu_type"`
	Reason      string     `json:"reason"`
	Tier        string     `json:"tier"`
	InstanceID  string     `json:"instance_id,omitempty"`
	State       string     `json:"state"`
	Error       string     `json:"error,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at"`
	RequestedBy string     `json:"requested_by,omitempty"`
	// Results, once done: each GPU's figures per probe against the fleet
	// median of its type.
	Results []BenchJobResult `json:"results,omitempty"`
}

// BenchJobResult is one GPU's (or GPU set's) figures on one probe in a job.
type BenchJobResult struct {
	GPU string `json:"gpu"` // UUIDs joined by commas
	TransparencyResult
	FleetMedian float64 `json:"fleet_median"`
	Note        string  `json:"note,omitempty"`
}

// VerifyRequest asks for a run of the suite on the caller's own running
// instance. Tier is t1 (about 5 min) or t2 (the full certification tier,
// default t1).
type VerifyRequest struct {
	Tier string `json:"tier,omitempty"`
}

// BenchRunRequest is an operator's request for benchmark runs: on the
// listed GPUs, or on every idle GPU of the listed hosts.
type BenchRunRequest struct {
	GPUs  []string `json:"gpus,omitempty"`
	Hosts []string `json:"hosts,omitempty"`
	Tier  string   `json:"tier,omitempty"`
}

// BenchRunResponse lists the jobs started and the GPUs that could not be
// (busy with a rental or another job, not healthy).
type BenchRunResponse struct {
	Jobs    []BenchJob `json:"jobs"`
	Skipped []string   `json:"skipped,omitempty"`
}

// GPUCert is one GPU's certification, for operators.
type GPUCert struct {
	GPU           string     `json:"gpu"`
	Host          string     `json:"host"`
	Type          string     `json:"type"`
	Index         int        `json:"index"`
	State         string     `json:"state"`
	RatioPermille int        `json:"ratio_permille"`
	PricePermille int        `json:"price_permille"`
	Reason        string     `json:"reason,omitempty"`
	LastJobID     string     `json:"last_job_id,omitempty"`
	LastRunAt     *time.Time `json:"last_run_at"`
	// Next says when the schedule runs it again ("" when not planned).
	Next string `json:"next,omitempty"`
}

// CertSettings is the operator's certification schedule and policy.
type CertSettings struct {
	// Policy is what a confirmed FAIL does: delist (take the card out of
	// rental) or degrade (list it as degraded at a price scaled by its
	// measured ratio).
	Policy string `json:"policy"`
	// EveryHours is how often an idle card is benchmarked again (168 =
	// weekly); 0 turns the schedule off.
	EveryHours int    `json:"every_hours"`
	Tier       string `json:"tier"`
}
