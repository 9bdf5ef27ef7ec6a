package benchjudge

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
)

// Outcome is the judgement of one card on one probe.
type Outcome string

// The outcomes. Insufficient means the card could not be judged (too few
// runs, no fleet median); it is neither good nor bad.
const (
	Pass         Outcome = "PASS"
	Warn         Outcome = "WARN"
	Fail         Outcome = "FAIL"
	Insufficient Outcome = "INSUFFICIENT"
)

// The bands, as fractions of the fleet median: PASS at PassRatio or more,
// WARN at WarnRatio or more, FAIL below.
const (
	PassRatio = 0.95
	WarnRatio = 0.90
)

// Verdict is the judgement of one Summary against its peers, with the ratios
// to the dense spec and to the healthy reference beside it (reported, not
// judged).
type Verdict struct {
	TypeProbe
	GPUKey  string
	Outcome Outcome
	// Provisional is set on a FAIL that no re-run has confirmed yet
	// (see Confirm); such a card is re-run before it is delisted.
	Provisional bool
	Median      float64
	Unit        string
	FleetMedian float64
	FleetRatio  float64 // Median / FleetMedian; 0 when not judged
	// Spec is the dense spec figure the probe is set against (absent for
	// probes without one); SpecRatio = Median / Spec.Value, 0 when absent.
	Spec      Figure
	SpecRatio float64
	// Healthy is the reference measurement of a healthy card for this
	// probe and setup; RefRatio = Median / Healthy.Typical(), 0 when absent.
	Healthy   *Healthy
	RefRatio  float64
	Synthetic bool
	Notes     []string
}

// Judge judges a card's summary against the fleet median of its type, probe
// and setup. The band edges are exact: the median is compared with
// PassRatio×fleetMedian and WarnRatio×fleetMedian in exact decimal
// arithmetic, so 95 of 100 (or 754.3 of 794) is PASS, 94.99999 of 100 WARN,
// 90 of 100 WARN and 89.99999 of 100 FAIL. A FAIL is provisional until Confirm sees a re-run. spec is the
// reference of the card's type; it supplies the ratios that are reported
// but never judged. A spec of another type is noted and its ratios left out.
func Judge(s Summary, fleetMedian float64, spec TypeRef) Verdict {
	v := Verdict{TypeProbe: s.TypeProbe, GPUKey: s.GPUKey, Median: s.Median, Unit: s.Unit,
		FleetMedian: fleetMedian, Synthetic: s.Synthetic, Outcome: Insufficient}
	if s.Synthetic {
		v.Notes = append(v.Notes, "synthetic results: not a measurement")
	}
	if s.Insufficient {
		v.Notes = append(v.Notes, s.Note)
		return v
	}
	if s.Note != "" {
		v.Notes = append(v.Notes, s.Note)
	}
	if !(s.Median > 0) || math.IsInf(s.Median, 0) {
		v.Notes = append(v.Notes, "no measured median")
		return v
	}
	if spec.ID == s.Type {
		if f := spec.SpecFor(s.Probe); f.Has() && f.Value > 0 {
			v.Spec, v.SpecRatio = f, s.Median/f.Value
		}
		if h, ok := spec.HealthyFor(s.Probe, s.GPUs, s.Params); ok {
			v.Healthy, v.RefRatio = &h, s.Median/h.Typical()
			if h.ThirdParty {
				v.Notes = append(v.Notes, "healthy reference is a third-party figure")
			}
		}
	} else {
		v.Notes = append(v.Notes, fmt.Sprintf("reference of type %q given for a %q card: spec ratios left out", spec.ID, s.Type))
	}
	if !(fleetMedian > 0) || math.IsInf(fleetMedian, 0) {
		v.Notes = append(v.Notes, "no fleet median for this type, probe and setup")
		return v
	}
	v.FleetRatio = s.Median / fleetMedian
	switch {
	case atLeast(s.Median, PassRatio, fleetMedian):
		v.Outcome = Pass
	case atLeast(s.Median, WarnRatio, fleetMedian):
		v.Outcome = Warn
	default:
		v.Outcome, v.Provisional = Fail, true
		v.Notes = append(v.Notes, "FAIL is provisional until a re-run confirms it")
	}
	return v
}

// atLeast reports x >= ratio*m exactly. x and m are taken as the decimals
// they print as (the shortest text that reads back to the same float64, as
// the records carry them), and ratio as its decimal constant, so 754.3 of
// 794 is exactly 0.95 even though no float64 product says so.
func atLeast(x, ratio, m float64) bool {
	lhs := decimalRat(x)
	rhs := new(big.Rat).Mul(decimalRat(ratio), decimalRat(m))
	return lhs.Cmp(rhs) >= 0
}

func decimalRat(x float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok { // unreachable for finite x; callers exclude NaN and Inf
		return new(big.Rat).SetFloat64(x)
	}
	return r
}

// Confirm settles a provisional FAIL with the verdict of its re-run. A first
// verdict that is not a provisional FAIL is returned unchanged. A re-run that
// fails again confirms the FAIL; a re-run that passes or warns replaces it; a
// re-run that could not be judged, or one of another card, probe or setup,
// leaves the FAIL provisional.
func Confirm(first, rerun Verdict) Verdict {
	if first.Outcome != Fail || !first.Provisional {
		return first
	}
	out := first
	out.Notes = slices.Clone(first.Notes)
	switch {
	case rerun.GPUKey != first.GPUKey || rerun.TypeProbe != first.TypeProbe:
		out.Notes = append(out.Notes, "re-run is of another card, probe or setup: FAIL still provisional")
	case rerun.Outcome == Insufficient:
		out.Notes = append(out.Notes, "re-run could not be judged: FAIL still provisional")
	case rerun.Outcome == Fail:
		out = rerun
		out.Notes = append(slices.DeleteFunc(slices.Clone(rerun.Notes), isProvisionalNote),
			fmt.Sprintf("FAIL confirmed by a re-run (first run at %.3f of the fleet median)", first.FleetRatio))
		out.Provisional = false
	default:
		out = rerun
		out.Notes = append(slices.Clone(rerun.Notes),
			fmt.Sprintf("first run FAIL (%.3f of the fleet median) not confirmed by the re-run", first.FleetRatio))
	}
	return out
}

func isProvisionalNote(s string) bool { return s == "FAIL is provisional until a re-run confirms it" }

// FleetMedians is, per type, probe, GPU count and setup, the median of the
// medians of the summaries that can be judged. Insufficient summaries do not
// count. Synthetic and measured summaries are never mixed: a group that holds
// both uses the measured ones only.
func FleetMedians(sums []Summary) map[TypeProbe]float64 {
	real := map[TypeProbe][]float64{}
	synth := map[TypeProbe][]float64{}
	for _, s := range sums {
		if s.Insufficient || !(s.Median > 0) {
			continue
		}
		if s.Synthetic {
			synth[s.TypeProbe] = append(synth[s.TypeProbe], s.Median)
		} else {
			real[s.TypeProbe] = append(real[s.TypeProbe], s.Median)
		}
	}
	out := map[TypeProbe]float64{}
	for k, vs := range synth {
		if _, ok := real[k]; !ok {
			slices.Sort(vs)
			out[k] = median(vs)
		}
	}
	for k, vs := range real {
		slices.Sort(vs)
		out[k] = median(vs)
	}
	return out
}
