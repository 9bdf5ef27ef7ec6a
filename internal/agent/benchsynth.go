package agent

import (
	"context"
	"hash/fnv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
)

// defaultSyntheticRuns is the timed runs a synthetic job makes per probe
// when the job does not say.
const defaultSyntheticRuns = 5

// SyntheticRunner is the BenchRunner of hosts with fake GPUs (the demo,
// tests): it measures nothing, and prints for each GPU and each probe of
// the tier that the reference has a healthy figure for the records
// benchjudge.Synthesize makes (one warm-up run, then Options.Runs or 5 timed
// runs), marked synthetic so that they are never taken for measurements.
// Tier t1 is gemm_bf16, copy_h2d, copy_d2h and copy_d2d; t2 adds gemm_fp8,
// resnet50_amp and, with 2 GPUs or more, nccl_allreduce over all of them.
type SyntheticRunner struct {
	// Performance is a card's factor of the healthy figures (1 healthy,
	// 0.85 a card that measures 15% low), as the fake provider's
	// Performance scripts it; nil: every card is healthy. The all_reduce
	// over several cards runs at the pace of the slowest.
	Performance func(uuid string) float64
	// Pace is a pause before each record, so that a job takes some time
	// as a real one does (and can be canceled meanwhile); 0: none.
	Pace time.Duration
}

var _ BenchRunner = SyntheticRunner{}

// syntheticProbes are the probes of a tier, per GPU, in the suite's order.
func syntheticProbes(tier string) ([]string, bool) {
	switch tier {
	case "t1":
		return []string{benchjudge.ProbeGEMMBF16, benchjudge.ProbeH2DBW, benchjudge.ProbeD2HBW, benchjudge.ProbeD2DBW}, true
	case "t2":
		return []string{benchjudge.ProbeGEMMBF16, benchjudge.ProbeGEMMFP8, benchjudge.ProbeH2DBW, benchjudge.ProbeD2HBW,
			benchjudge.ProbeD2DBW, benchjudge.ProbeResNet50Train}, true
	}
	return nil, false
}

// Run prints the job's synthetic records. It fails when the tier is not t1
// or t2, when Options.Runs is above 1000, when a card's factor is not in
// (0, 2], and when the reference has no figure for any probe of the tier
// on the job's GPU type (nothing is made up).
func (s SyntheticRunner) Run(ctx context.Context, job agentproto.BenchJob, emit func(line []byte)) error {
	probes, ok := syntheticProbes(job.Tier)
	if !ok {
		return gpurent.Errorf(gpurent.CodeInvalid, "the synthetic benchmark runs tiers t1 and t2, not %q", job.Tier)
	}
	runs := job.Options.Runs
	if runs == 0 {
		runs = defaultSyntheticRuns
	}
	if runs < 1 || runs > 1000 {
		return gpurent.Errorf(gpurent.CodeInvalid, "the synthetic benchmark makes 1 to 1000 runs, not %d", runs)
	}
	factors := make(map[string]float64, len(job.GPUUUIDs))
	slowest := 2.0
	for _, u := range job.GPUUUIDs {
		f := 1.0
		if s.Performance != nil {
			f = s.Performance(u)
		}
		if !(f > 0 && f <= 2) {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU %s: performance factor %v is not in (0, 2]", u, f)
		}
		factors[u] = f
		slowest = min(slowest, f)
	}
	type series struct {
		key, probe string
		factor     float64
	}
	var all []series
	for _, p := range probes {
		for _, u := range job.GPUUUIDs {
			all = append(all, series{u, p, factors[u]})
		}
	}
	if job.Tier == "t2" && len(job.GPUUUIDs) >= 2 {
		all = append(all, series{strings.Join(job.GPUUUIDs, ","), benchjudge.ProbeNCCLAllReduce, slowest})
	}
	printed := 0
	for _, sr := range all {
		for _, rec := range benchjudge.Synthesize(job.GPUType, sr.key, sr.probe, sr.factor, runs, syntheticSeed(job.JobID, sr.key, sr.probe)) {
			if s.Pace > 0 && !sleepCtx(ctx, s.Pace) || ctx.Err() != nil {
				return gpurent.WrapError(gpurent.CodeUnavailable, context.Cause(ctx), "synthetic benchmark canceled")
			}
			line, err := benchjudge.EncodeRecord(rec)
			if err != nil {
				return err
			}
			emit(line)
			printed++
		}
	}
	if printed == 0 {
		return gpurent.Errorf(gpurent.CodeNotFound,
			"the reference has no healthy figure of GPU type %q for any probe of tier %s: nothing to synthesize", job.GPUType, job.Tier)
	}
	return nil
}

// syntheticSeed makes a job's figures for one series stable: the same job
// prints the same values.
func syntheticSeed(jobID, key, probe string) int64 {
	h := fnv.New64a()
	for _, s := range []string{jobID, key, probe} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return int64(h.Sum64() >> 1)
}
