package benchjudge

import (
	"math"
	"strings"
	"testing"
)

func summaryAt(median float64) Summary {
	return Summary{TypeProbe: TypeProbe{Type: "h100-80g-sxm", Probe: ProbeGEMMBF16, GPUs: 1, Setup: "dtype=bf16"},
		GPUKey: "GPU-1", Params: Params{DType: "bf16"}, Unit: UnitTFLOPS, Runs: 5, Median: median}
}

func TestJudgeBandEdges(t *testing.T) {
	ref := mustRef(t)
	h100, _ := ref.Type("h100-80g-sxm")
	below := func(x float64) float64 { return math.Nextafter(x, 0) }
	cases := []struct {
		median, fleet float64
		want          Outcome
	}{
		{100, 100, Pass},
		{120, 100, Pass},
		{95, 100, Pass},
		{below(95), 100, Warn},
		{94.99999, 100, Warn},
		{90, 100, Warn},
		{below(90), 100, Fail},
		{89.99999, 100, Fail},
		{10, 100, Fail},
		// 0.95 × 794 = 754.3 and 0.95 × 2048 = 1945.6 in decimal, though
		// the float64 nearest 1945.6 lies below it: the comparison is
		// made on the decimals the records carry.
		{754.3, 794, Pass},
		{754.29999, 794, Warn},
		{714.6, 794, Warn},
		{714.59999, 794, Fail},
		{1945.6, 2048, Pass},
		{760, 800, Pass},
		{below(760), 800, Warn},
		{720, 800, Warn},
		{below(720), 800, Fail},
	}
	for _, c := range cases {
		v := Judge(summaryAt(c.median), c.fleet, h100)
		if v.Outcome != c.want {
			t.Errorf("%.17g of %v: %s, want %s", c.median, c.fleet, v.Outcome, c.want)
		}
		if (v.Outcome == Fail) != v.Provisional {
			t.Errorf("%v: provisional %v", c.median, v.Provisional)
		}
		if v.FleetRatio != c.median/c.fleet {
			t.Errorf("fleet ratio %v", v.FleetRatio)
		}
	}
}

func TestJudgeRatiosReportedNotJudged(t *testing.T) {
	ref := mustRef(t)
	h100, _ := ref.Type("h100-80g-sxm")
	a100, _ := ref.Type("a100-80g-sxm")
	// A card at the healthy 794 on a fleet measuring 900 (a different
	// harness, say) is judged on the fleet only.
	v := Judge(summaryAt(794), 900, h100)
	if v.Outcome != Fail || v.SpecRatio != 794.0/989 || v.RefRatio != 1 || v.Healthy == nil || v.Spec.Value != 989 {
		t.Errorf("verdict %+v", v)
	}
	// A card far below spec on a fleet at the same level passes.
	if v := Judge(summaryAt(500), 505, h100); v.Outcome != Pass || v.SpecRatio >= 0.6 {
		t.Errorf("verdict %+v", v)
	}
	// Reference of another type: ratios left out, noted.
	v = Judge(summaryAt(794), 794, a100)
	if v.Outcome != Pass || v.SpecRatio != 0 || v.Healthy != nil || !strings.Contains(strings.Join(v.Notes, ";"), "a100-80g-sxm") {
		t.Errorf("verdict with another type's reference: %+v", v)
	}
	// ResNet-50 with an unnamed harness: no healthy figure rather than a wrong one.
	s := summaryAt(1600)
	s.Type, s.Probe, s.Params, s.Setup, s.Unit = "a100-80g-sxm", ProbeResNet50Train, Params{}, "", UnitImgs
	if v := Judge(s, 1600, a100); v.Healthy != nil || v.RefRatio != 0 || v.Spec.Has() {
		t.Errorf("resnet without harness: %+v", v)
	}
}

func TestJudgeCannotJudge(t *testing.T) {
	ref := mustRef(t)
	h100, _ := ref.Type("h100-80g-sxm")
	ins := summaryAt(0)
	ins.Insufficient, ins.Note, ins.Runs = true, "insufficient: 3 measured runs", 3
	for name, c := range map[string]struct {
		s     Summary
		fleet float64
	}{
		"insufficient": {ins, 800},
		"no fleet":     {summaryAt(800), 0},
		"NaN fleet":    {summaryAt(800), math.NaN()},
		"inf fleet":    {summaryAt(800), math.Inf(1)},
		"no median":    {summaryAt(0), 800},
	} {
		if v := Judge(c.s, c.fleet, h100); v.Outcome != Insufficient || v.Provisional || len(v.Notes) == 0 {
			t.Errorf("%s: %+v", name, v)
		}
	}
}

func TestConfirm(t *testing.T) {
	ref := mustRef(t)
	h100, _ := ref.Type("h100-80g-sxm")
	first := Judge(summaryAt(80), 100, h100)
	if first.Outcome != Fail || !first.Provisional {
		t.Fatalf("first: %+v", first)
	}
	if v := Confirm(first, Judge(summaryAt(85), 100, h100)); v.Outcome != Fail || v.Provisional || v.Median != 85 {
		t.Errorf("confirmed FAIL: %+v", v)
	} else if strings.Contains(strings.Join(v.Notes, ";"), "provisional") {
		t.Errorf("confirmed FAIL still says provisional: %v", v.Notes)
	}
	if v := Confirm(first, Judge(summaryAt(97), 100, h100)); v.Outcome != Pass || v.Provisional ||
		!strings.Contains(strings.Join(v.Notes, ";"), "not confirmed") {
		t.Errorf("re-run passes: %+v", v)
	}
	if v := Confirm(first, Judge(summaryAt(92), 100, h100)); v.Outcome != Warn {
		t.Errorf("re-run warns: %+v", v)
	}
	ins := summaryAt(0)
	ins.Insufficient = true
	if v := Confirm(first, Judge(ins, 100, h100)); v.Outcome != Fail || !v.Provisional {
		t.Errorf("unjudged re-run: %+v", v)
	}
	other := summaryAt(85)
	other.GPUKey = "GPU-2"
	if v := Confirm(first, Judge(other, 100, h100)); v.Outcome != Fail || !v.Provisional || v.GPUKey != "GPU-1" {
		t.Errorf("re-run of another card: %+v", v)
	}
	pass := Judge(summaryAt(99), 100, h100)
	if v := Confirm(pass, first); v.Outcome != Pass {
		t.Errorf("a PASS needs no confirmation: %+v", v)
	}
	if len(first.Notes) != 1 {
		t.Errorf("Confirm changed its argument: %v", first.Notes)
	}
}

func TestFleetMedians(t *testing.T) {
	k := TypeProbe{Type: "h100-80g-sxm", Probe: ProbeGEMMBF16, GPUs: 1, Setup: "dtype=bf16"}
	other := k
	other.Setup = "dtype=bf16 harness=lambda"
	mk := func(tp TypeProbe, m float64, synthetic, insufficient bool) Summary {
		return Summary{TypeProbe: tp, Median: m, Synthetic: synthetic, Insufficient: insufficient}
	}
	got := FleetMedians([]Summary{
		mk(k, 790, false, false), mk(k, 780, false, false), mk(k, 700, false, false), mk(k, 800, false, false),
		mk(k, 10, false, true),   // insufficient: left out
		mk(k, 5000, true, false), // synthetic beside measured: left out
		mk(other, 600, true, false), mk(other, 500, true, false), mk(other, 550, true, false),
	})
	if len(got) != 2 || got[k] != 785 || got[other] != 550 {
		t.Errorf("fleet medians %v", got)
	}
}
