package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/gpu/fake"
)

// synthesize runs the synthetic runner and parses what it printed.
func synthesize(t *testing.T, s SyntheticRunner, job agentproto.BenchJob) ([]benchjudge.Record, error) {
	t.Helper()
	var c recordCollector
	err := s.Run(t.Context(), job, c.add)
	if note := c.note(); note != "" {
		t.Errorf("the synthetic runner printed lines that are not records: %s", note)
	}
	return parseRecords(t, c.records()), err
}

func TestSyntheticRunnerTiers(t *testing.T) {
	gpus := fake.New(fake.Config{Host: "h", TypeID: "h100-80g-sxm", Count: 8})
	slow := fake.UUID("h", 3)
	if err := gpus.SetPerformance(slow, 0.5); err != nil {
		t.Fatal(err)
	}
	all := make([]string, 8)
	for i := range all {
		all[i] = fake.UUID("h", i)
	}
	s := SyntheticRunner{Performance: gpus.Performance}
	// The reference has H100 figures for gemm_bf16, gemm_fp8,
	// resnet50_amp and an 8-GPU all_reduce; none for the copies.
	for _, c := range []struct {
		tier  string
		gpus  []string
		want  map[string]int // series per probe
		runs  int
		nccl  bool
		multi bool
	}{
		{"t1", all[:2], map[string]int{benchjudge.ProbeGEMMBF16: 2}, 5, false, false},
		{"t2", all[:2], map[string]int{benchjudge.ProbeGEMMBF16: 2, benchjudge.ProbeGEMMFP8: 2, benchjudge.ProbeResNet50Train: 2}, 5, false, false},
		{"t2", all, map[string]int{benchjudge.ProbeGEMMBF16: 8, benchjudge.ProbeGEMMFP8: 8, benchjudge.ProbeResNet50Train: 8, benchjudge.ProbeNCCLAllReduce: 1}, 2, true, true},
	} {
		job := agentproto.BenchJob{JobID: "bench-x", Tier: c.tier, GPUType: "h100-80g-sxm", GPUUUIDs: c.gpus}
		if c.runs != 5 {
			job.Options.Runs = c.runs
		}
		recs, err := synthesize(t, s, job)
		if err != nil {
			t.Fatalf("%s on %d GPUs: %v", c.tier, len(c.gpus), err)
		}
		series := map[string]map[string]int{}
		byCard := map[string]float64{}
		for _, r := range recs {
			if series[r.Probe] == nil {
				series[r.Probe] = map[string]int{}
			}
			series[r.Probe][r.GPUKey()]++
			if r.Probe == benchjudge.ProbeGEMMBF16 && !r.Warmup {
				byCard[r.GPUKey()] = r.Value
			}
			if r.Probe == benchjudge.ProbeNCCLAllReduce && r.GPUKey() != strings.Join(all, ",") {
				t.Errorf("all_reduce over %s, want every GPU of the job", r.GPUKey())
			}
		}
		for probe, n := range c.want {
			if len(series[probe]) != n {
				t.Errorf("%s on %d GPUs: %d series of %s, want %d", c.tier, len(c.gpus), len(series[probe]), probe, n)
			}
			for key, runs := range series[probe] {
				if runs != c.runs+1 {
					t.Errorf("%s %s: %d records, want %d runs and a warm-up", probe, key, runs, c.runs)
				}
			}
		}
		if len(series) != len(c.want) {
			t.Errorf("%s on %d GPUs: probes %v, want %v", c.tier, len(c.gpus), series, c.want)
		}
		if c.multi {
			if r := byCard[slow] / byCard[all[0]]; r < 0.45 || r > 0.55 {
				t.Errorf("the card at 0.5 measures %.3f of a healthy one", r)
			}
		}
	}

	// The same job prints the same figures.
	job := agentproto.BenchJob{JobID: "bench-y", Tier: "t1", GPUType: "h100-80g-sxm", GPUUUIDs: all[:1]}
	a, _ := synthesize(t, s, job)
	b, _ := synthesize(t, s, job)
	for i := range a {
		if a[i].Value != b[i].Value {
			t.Fatalf("run %d: %v then %v", i, a[i].Value, b[i].Value)
		}
	}
}

func TestSyntheticRunnerRefuses(t *testing.T) {
	u := fake.UUID("h", 0)
	ok := agentproto.BenchJob{JobID: "bench-x", Tier: "t1", GPUType: "h100-80g-sxm", GPUUUIDs: []string{u}}
	for name, c := range map[string]struct {
		s    SyntheticRunner
		job  func(j agentproto.BenchJob) agentproto.BenchJob
		code gpurent.Code
	}{
		"tier t0":       {SyntheticRunner{}, func(j agentproto.BenchJob) agentproto.BenchJob { j.Tier = "t0"; return j }, gpurent.CodeInvalid},
		"too many runs": {SyntheticRunner{}, func(j agentproto.BenchJob) agentproto.BenchJob { j.Options.Runs = 1001; return j }, gpurent.CodeInvalid},
		"unknown type":  {SyntheticRunner{}, func(j agentproto.BenchJob) agentproto.BenchJob { j.GPUType = "gtx1080-8g"; return j }, gpurent.CodeNotFound},
		"bad factor": {SyntheticRunner{Performance: func(string) float64 { return 0 }},
			func(j agentproto.BenchJob) agentproto.BenchJob { return j }, gpurent.CodeInvalid},
	} {
		var lines int
		err := c.s.Run(t.Context(), c.job(ok), func([]byte) { lines++ })
		if !gpurent.IsCode(err, c.code) || lines != 0 {
			t.Errorf("%s: %v after %d lines, want %s and nothing printed", name, err, lines, c.code)
		}
	}
}

func TestSyntheticRunnerCanceled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	job := agentproto.BenchJob{JobID: "bench-x", Tier: "t2", GPUType: "h100-80g-sxm", GPUUUIDs: []string{fake.UUID("h", 0)}}
	stop := errors.New("stop")
	lines := 0
	err := SyntheticRunner{Pace: time.Millisecond}.Run(ctx, job, func([]byte) {
		lines++
		if lines == 2 {
			cancel(stop)
		}
	})
	if !errors.Is(err, stop) || lines != 2 {
		t.Errorf("Run = %v after %d lines, want the cancel cause after 2", err, lines)
	}
}
