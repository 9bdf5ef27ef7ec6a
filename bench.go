package gpurent

import "time"

// Compute transparency (issue #7): benchmark jobs run the suite of bench/
// on idle GPUs (or, for "verify", on a customer's own instance); their
// records are kept, summarised per GPU and probe, judged against the
// fleet median of the type, and each GPU carries a certification.

// PrefixBenchJob starts the id of a BenchJob.
const PrefixBenchJob = "bench"

// BenchReason says why a benchmark job was started.
type BenchReason string

// Benchmark job reasons.
const (
	BenchOnboarding BenchReason = "onboarding"  // a GPU never certified
	BenchWeekly     BenchReason = "weekly"      // the schedule: last run too old
	BenchAfterFault BenchReason = "after_fault" // after a reset-class fault
	BenchRelist     BenchReason = "relist"      // before a repaired GPU is listed again
	BenchRerun      BenchReason = "rerun"       // confirming a provisional FAIL
	BenchManual     BenchReason = "manual"      // an operator asked
	BenchVerify     BenchReason = "verify"      // a customer's "verify my GPUs"
)

// Holds reports whether a job of this reason takes its GPUs out of
// placement while it runs: every reason but verify (whose GPUs are the
// customer's own rental).
func (r BenchReason) Holds() bool { return r != BenchVerify }

// BenchJobState is where a benchmark job stands.
type BenchJobState string

// Benchmark job states. queued → running → done | failed; queued or
// running → canceled.
const (
	BenchQueued   BenchJobState = "queued"
	BenchRunning  BenchJobState = "running"
	BenchDone     BenchJobState = "done"
	BenchFailed   BenchJobState = "failed"
	BenchCanceled BenchJobState = "canceled"
)

// Finished reports whether the state ends the job.
func (s BenchJobState) Finished() bool {
	return s == BenchDone || s == BenchFailed || s == BenchCanceled
}

// BenchJob is one run of the benchmark suite on one host's GPUs.
type BenchJob struct {
	ID      string
	HostID  string
	GPUIDs  []string // the GPUs under test, sorted; the container gets exactly these
	GPUType string
	Reason  BenchReason
	// Tier is the suite's tier: "t1" (readiness) or "t2" (certification).
	Tier string
	// InstanceID and AccountID are set for verify jobs (the customer's
	// instance and account), else "".
	InstanceID string
	AccountID  string
	// RequestedBy is the account that asked (operator or customer); ""
	// when the schedule started it.
	RequestedBy string
	State       BenchJobState
	Error       string // why it failed or was canceled
	CreatedAt   time.Time
	StartedAt   *time.Time
	EndedAt     *time.Time
}

// BenchJobFilter selects jobs; empty fields select all. Newest first.
type BenchJobFilter struct {
	HostID     string
	GPUID      string // jobs that tested this GPU
	InstanceID string
	AccountID  string
	OpenOnly   bool // queued or running
	Limit      int  // 0: 100
}

// BenchSummary is the statistics of one GPU (or GPU set, for multi-GPU
// probes) on one probe in one job, with its verdict then: what the report
// shows and its history keeps. Figures are the probe's unit.
type BenchSummary struct {
	JobID   string
	GPUKey  string // the UUIDs joined by commas
	HostID  string
	GPUType string
	Probe   string
	GPUs    int
	Setup   string // certify.Params.Setup(): runs of other setups are never compared
	Unit    string
	Runs    int // measured runs the figures are over
	Failed  int
	Median  float64
	Min     float64
	Max     float64
	Spread  float64
	MAD     float64
	// Telemetry over the runs: highest temperature, lowest SM clock, mean
	// power and the throttle reasons seen (comma-separated).
	MaxTempC        float64
	MinSMClockMHz   float64
	MeanPowerW      float64
	ThrottleReasons string
	// The verdict: PASS, WARN, FAIL or INSUFFICIENT (certify.Outcome),
	// against FleetMedian; SpecRatio against the dense spec (0: none).
	Outcome     string
	Provisional bool
	FleetMedian float64
	FleetRatio  float64
	SpecRatio   float64
	Note        string
	Synthetic   bool // from fake GPUs: never a measurement
	At          time.Time
}

// BenchSummaryFilter selects summaries; empty fields select all. Oldest
// first.
type BenchSummaryFilter struct {
	JobID   string
	GPUKey  string
	GPUType string
	Since   time.Time
	// LatestOnly keeps, per GPU key and probe, the newest summary of a
	// done job that was not a verify job (then the other fields filter).
	LatestOnly bool
	// NoVerify leaves out the summaries of verify jobs (customers' own
	// runs, which never certify a card).
	NoVerify bool
}

// CertState is a GPU's certification.
type CertState string

// Certification states.
const (
	CertNone     CertState = "uncertified" // never benchmarked
	CertPassed   CertState = "certified"   // PASS on every probe
	CertWarn     CertState = "warn"        // a WARN somewhere, none FAIL: listed, badged
	CertPending  CertState = "rerun"       // a provisional FAIL: held for a re-run
	CertDelisted CertState = "delisted"    // a confirmed FAIL, policy delist: not rented
	CertDegraded CertState = "degraded"    // a confirmed FAIL, policy degrade: listed at PricePermille
)

// CertPolicy is what a confirmed FAIL does to a GPU (the operator's
// choice).
type CertPolicy string

// Certification policies.
const (
	PolicyDelist  CertPolicy = "delist"
	PolicyDegrade CertPolicy = "degrade"
)

// GPUCert is one GPU's certification: its state, why, the worst ratio to
// the fleet median it measured, and the price it is listed at.
type GPUCert struct {
	GPUID  string
	HostID string
	TypeID string
	State  CertState
	// Ratio is the worst fleet ratio of the last judged job, in permille
	// (850 = 0.85 of the fleet median); 0 before any.
	RatioPermille int
	// PricePermille is the listing price as a share of the list price:
	// 1000, or the measured ratio for a degraded GPU.
	PricePermille int
	Reason        string
	LastJobID     string
	LastRunAt     *time.Time
	UpdatedAt     time.Time
}

// CertSettings is the operator's certification schedule and policy.
type CertSettings struct {
	Policy CertPolicy
	// Every is how often an idle GPU is re-run (weekly by default); 0
	// turns the schedule off (onboarding, after-fault and relist runs go
	// on).
	Every time.Duration
	// Tier is the tier the schedule runs: "t2" (default) or "t1".
	Tier      string
	UpdatedAt time.Time
}

// BenchFinish ends an open benchmark job in one transaction: the job takes
// State (done, failed or canceled), Error and EndedAt = At; its raw record
// lines and summaries are stored; its GPU holds are released; each of
// Certs is written (as SetGPUCert); Next, when set, is created as
// CreateBenchJob would (a re-run that takes over the holds before anything
// else can claim the GPUs); the host's generation is bumped.
type BenchFinish struct {
	JobID     string
	State     BenchJobState
	Error     string
	At        time.Time
	Records   [][]byte
	Summaries []BenchSummary
	Certs     []GPUCert
	Next      *BenchJob
}

// IdleRunFlag marks a GPU for a benchmark run on the idle card: a
// customer's verify found it failing under their rental, and a verify
// never delists, degrades or attributes by itself (the customer controls
// the load, and could earn a credit or a cheaper card by faking a slow
// one). The schedule runs the flagged card as soon as it is idle; that
// run alone decides.
type IdleRunFlag struct {
	GPUID     string
	HostID    string
	JobID     string // the verify job that flagged the card
	Reason    string
	FlaggedAt time.Time
}
