package benchjudge

import (
	"os"
	"slices"
	"testing"
)

// The suite's own output on a real GPU: t2 on one NVIDIA H200 (driver
// 580.159.04, torch 2.11.0+cu130, 10 s GEMM runs after a 20 s pre-heat),
// and the BF16 GEMM as short bursts (about ten 8192-cube products) from a
// cool card, sustained 10 s runs, and bursts again on the hot card, on
// another H200. Recorded 2026-11-30 with scripts/device-h200*.sh; the
// expected medians were computed from the files with Python's statistics
// module, not with this package.
func TestRecordedH200(t *testing.T) {
	f, err := os.Open("testdata/h200_t2.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ParseRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 36 { // 37 lines, the inventory passed over
		t.Fatalf("%d records, want 36", len(recs))
	}
	want := map[string]float64{
		ProbeGEMMBF16:      669.4129618304776,
		ProbeGEMMFP8:       1216.808535810799,
		ProbeH2DBW:         55.46348237725284,
		ProbeD2HBW:         55.27363149186249,
		ProbeD2DBW:         4091.3550969384837,
		ProbeResNet50Train: 4737.742381101225,
	}
	sums := Summarize(recs)
	if len(sums) != len(want) {
		t.Fatalf("%d summaries, want %d: %v", len(sums), len(want), sums)
	}
	for _, s := range sums {
		if s.Type != "h200-141g-sxm" || s.Runs != 5 || s.Warmups != 1 || s.Insufficient || s.Synthetic {
			t.Errorf("%s: %+v", s.Probe, s)
		}
		if s.Median != want[s.Probe] {
			t.Errorf("%s median %v, want %v", s.Probe, s.Median, want[s.Probe])
		}
		gemm := s.Probe == ProbeGEMMBF16 || s.Probe == ProbeGEMMFP8
		if gemm != slices.Contains(s.ThrottleReasons, "sw_power_cap") {
			t.Errorf("%s throttle reasons %v: the sustained GEMM ran at the power cap, nothing else did", s.Probe, s.ThrottleReasons)
		}
		if gemm && (s.MaxTempC < 40 || s.MinSMClockMHz > 1500) {
			t.Errorf("%s telemetry: %v °C, %v MHz", s.Probe, s.MaxTempC, s.MinSMClockMHz)
		}
	}
	// One card judged against itself passes, and the spec ratio is left
	// out for a type the reference does not hold.
	for _, v := range judgeAll(sums) {
		if v.Outcome != Pass || v.SpecRatio != 0 {
			t.Errorf("%s: %+v", v.Probe, v)
		}
	}

	g, err := os.Open("testdata/h200_gemm_burst_vs_sustained.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	recs, err = ParseRecords(g)
	if err != nil {
		t.Fatal(err)
	}
	sums = Summarize(recs)
	// Bursts and sustained runs are different setups, never one series.
	if len(sums) != 2 {
		t.Fatalf("%d summaries, want a burst and a sustained one: %v", len(sums), sums)
	}
	for _, s := range sums {
		switch s.Params.Seconds {
		case 0.01:
			if s.Runs != 10 || s.Median != 729.0196082018401 {
				t.Errorf("bursts: %d runs, median %v", s.Runs, s.Median)
			}
		case 10:
			if s.Runs != 5 || s.Median != 665.1358093529122 || !slices.Contains(s.ThrottleReasons, "sw_power_cap") {
				t.Errorf("sustained: %+v", s)
			}
		default:
			t.Errorf("unexpected setup %q", s.Setup)
		}
	}
}

func judgeAll(sums []Summary) []Verdict {
	med := FleetMedians(sums)
	ref, _ := Reference()
	out := make([]Verdict, 0, len(sums))
	for _, s := range sums {
		spec, _ := ref.Type(s.Type)
		out = append(out, Judge(s, med[s.TypeProbe], spec))
	}
	return out
}
