package agentproto

import (
	"encoding/json"
	"time"
)

// PathBench is where an agent posts the progress and the results of a
// benchmark job (BenchResult). The control plane answers 204 when it took
// the result, and 404 when it does not know the job or the job is already
// finished: the agent then drops the job.
const PathBench = "/agent/v1/bench"

// Benchmark job states an agent reports.
const (
	BenchRunning = "running" // the agent started the job
	BenchDone    = "done"    // the suite ran; Records hold what it measured
	BenchFailed  = "failed"  // the job could not run or its runner failed; Error says why
)

// BenchJob is one run of the benchmark suite (bench/) the desired state asks
// a host for: tier t1 or t2 on exactly GPUUUIDs, all of type GPUType.
// InstanceID is set for a customer's "verify" job on the GPUs of their own
// instance, else "".
type BenchJob struct {
	JobID      string       `json:"job_id"`
	Tier       string       `json:"tier"`
	GPUType    string       `json:"gpu_type"`
	GPUUUIDs   []string     `json:"gpu_uuids"`
	InstanceID string       `json:"instance_id,omitempty"`
	Options    BenchOptions `json:"options,omitzero"`
}

// BenchOptions tune the suite; a zero field leaves the tier's default (see
// bench/README.md).
type BenchOptions struct {
	Runs           int     `json:"runs,omitempty"`            // timed runs per probe
	Warmup         int     `json:"warmup,omitempty"`          // warm-up runs per probe
	GEMMSeconds    float64 `json:"gemm_seconds,omitempty"`    // GPU time of one GEMM run
	PreheatSeconds float64 `json:"preheat_seconds,omitempty"` // BF16 pre-heat before T2
}

// BenchResult is an agent's account of one job, posted to PathBench: first
// State running (StartedAt set), then done or failed (EndedAt set). A done
// result carries the suite's records, one JSON object each, as the suite
// printed them (internal/benchjudge parses them); its Error, if any, notes
// what the agent dropped from the output. A failed result says why in
// Error and carries whatever records were printed before the failure.
type BenchResult struct {
	JobID     string            `json:"job_id"`
	State     string            `json:"state"`
	Error     string            `json:"error,omitempty"`
	StartedAt time.Time         `json:"started_at,omitzero"`
	EndedAt   time.Time         `json:"ended_at,omitzero"`
	Records   []json.RawMessage `json:"records,omitempty"`
}
