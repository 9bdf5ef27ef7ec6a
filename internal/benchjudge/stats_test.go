package benchjudge

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSummarizeRecordedOutput(t *testing.T) {
	sums := Summarize(parseFile(t, "h100-node07-t2.jsonl"))
	if len(sums) != 2 {
		t.Fatalf("got %d summaries, want gemm and nccl: %v", len(sums), sums)
	}
	g := sums[0]
	// Measured: 792.4 789.9 795.0 786.1 790.7 (warm-up 771.8 and the failed run 4 left out).
	if g.Probe != ProbeGEMMBF16 || g.Runs != 5 || g.Warmups != 1 || g.Failed != 1 || g.Insufficient {
		t.Fatalf("gemm summary: %+v", g)
	}
	if g.Median != 790.7 || g.Min != 786.1 || g.Max != 795.0 {
		t.Errorf("median/min/max = %v/%v/%v", g.Median, g.Min, g.Max)
	}
	hi, lo, mid, next := 795.0, 786.1, 790.7, 792.4 // variables: float64 arithmetic, not exact constants
	if want := (hi - lo) / mid; g.Spread != want {
		t.Errorf("spread %v, want %v", g.Spread, want)
	}
	// Deviations 4.6 0.8 0 1.7 4.3: the MAD is 1.7.
	if want := next - mid; g.MAD != want {
		t.Errorf("MAD %v, want %v", g.MAD, want)
	}
	if g.MaxTempC != 69 || g.MinSMClockMHz != 1710 ||
		!reflect.DeepEqual(g.ThrottleReasons, []string{"sw_power_cap", "sw_thermal_slowdown"}) {
		t.Errorf("telemetry: %v %v %v", g.MaxTempC, g.MinSMClockMHz, g.ThrottleReasons)
	}
	if g.Setup != "shape=8192x8192x8192 dtype=bf16 harness=gpurent-gemm" || g.GPUs != 1 {
		t.Errorf("setup %q gpus %d", g.Setup, g.GPUs)
	}
	n := sums[1]
	if !n.Insufficient || n.Runs != 1 || n.Median != 0 || !strings.Contains(n.Note, "1 measured runs, at least 5") {
		t.Errorf("nccl summary with one run: %+v", n)
	}
	if n.GPUs != 2 || !strings.Contains(n.GPUKey, ",") {
		t.Errorf("nccl key: %+v", n)
	}
}

func TestSummarizeKnownAnswers(t *testing.T) {
	mk := func(gpu string, vals ...float64) []Record {
		var rs []Record
		for i, v := range vals {
			rs = append(rs, Record{Schema: 1, Probe: ProbeD2DBW, GPUType: "h100-80g-sxm", GPUUUIDs: []string{gpu},
				Value: v, Unit: UnitGBs, Run: i + 1, Start: time.Unix(0, 0).UTC(), End: time.Unix(1, 0).UTC()})
		}
		return rs
	}
	cases := []struct {
		vals                 []float64
		median, min, max, md float64
	}{
		{[]float64{5, 1, 3, 2, 4}, 3, 1, 5, 1},
		{[]float64{10, 10, 10, 10, 10}, 10, 10, 10, 0},
		{[]float64{1, 2, 3, 4, 100, 6}, 3.5, 1, 100, 2}, // even count: mean of the middle two; MAD robust to the outlier
		{[]float64{8, 8, 8, 8, 8, 0.5}, 8, 0.5, 8, 0},
	}
	for _, c := range cases {
		s := Summarize(mk("GPU-x", c.vals...))
		if len(s) != 1 {
			t.Fatalf("%v: %d summaries", c.vals, len(s))
		}
		got := s[0]
		if got.Median != c.median || got.Min != c.min || got.Max != c.max || got.MAD != c.md ||
			got.Spread != (c.max-c.min)/c.median || got.Runs != len(c.vals) {
			t.Errorf("%v: got %+v", c.vals, got)
		}
	}
	if s := Summarize(mk("GPU-y", 1, 2, 3, 4)); !s[0].Insufficient || s[0].Runs != 4 {
		t.Errorf("four runs must be insufficient: %+v", s[0])
	}
	if s := Summarize(nil); len(s) != 0 {
		t.Errorf("no records: %v", s)
	}
}

func TestSummarizeIsOrderIndependent(t *testing.T) {
	recs := parseFile(t, "h100-node07-t2.jsonl")
	recs = append(recs, parseFile(t, "a100-lambda-resnet.jsonl")...)
	recs = append(recs, Synthesize("a100-80g-sxm", "GPU-s1", ProbeGEMMBF16, 1, 7, 3)...)
	want := Summarize(recs)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := append([]Record(nil), recs...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := Summarize(shuffled); !reflect.DeepEqual(got, want) {
			t.Fatalf("order changed the summaries:\n%v\n%v", got, want)
		}
	}
}

func BenchmarkSummarize(b *testing.B) {
	var recs []Record
	for i := range 512 {
		recs = append(recs, Synthesize("h100-80g-sxm", SyntheticUUID("h100-80g-sxm", i), ProbeGEMMBF16, 1, 5, int64(i))...)
	}
	b.ResetTimer()
	for b.Loop() {
		Summarize(recs)
	}
}
