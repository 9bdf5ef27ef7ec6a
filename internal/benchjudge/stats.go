package benchjudge

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MinRuns is the number of measured (non-warm-up, successful) runs a summary
// needs before it can be judged.
const MinRuns = 5

// TypeProbe names a group of peers: cards of one GPU type measured by one
// probe on the same number of GPUs with the same setup.
type TypeProbe struct {
	Type  string
	Probe string
	GPUs  int
	Setup string // Params.Setup()
}

// Summary is the statistics of one GPU (or GPU set) on one probe and setup.
type Summary struct {
	TypeProbe
	GPUKey string // UUIDs joined by commas, as in Record.GPUKey
	Params Params
	Unit   string
	// Runs is the number of measured runs the statistics are over; Warmups
	// and Failed count the runs left out.
	Runs    int
	Warmups int
	Failed  int
	// Insufficient is set when fewer than MinRuns runs were measured; the
	// figures below are then zero and Note says why.
	Insufficient bool
	Note         string
	Median       float64
	Min          float64
	Max          float64
	Spread       float64 // (Max-Min)/Median
	MAD          float64 // median absolute deviation from the median
	// Telemetry over the measured runs: the highest temperature, the lowest
	// SM clock and every throttle reason seen (sorted).
	MaxTempC        float64
	MinSMClockMHz   float64
	ThrottleReasons []string
	// Synthetic is set when any record was synthetic: never publish it as a
	// measurement.
	Synthetic bool
}

type sumKey struct {
	TypeProbe
	gpu string
}

// Summarize groups records per GPU (or GPU set), type, probe and setup, drops
// warm-up and failed runs, and computes the median, min, max, spread and MAD
// of the rest. Fewer than MinRuns measured runs give an insufficient summary.
// The result is sorted by type, probe, setup and GPU, and depends only on the
// multiset of records, not their order.
func Summarize(recs []Record) []Summary {
	groups := map[sumKey][]Record{}
	for _, r := range recs {
		k := sumKey{TypeProbe{r.GPUType, r.Probe, len(r.GPUUUIDs), r.Params.Setup()}, r.GPUKey()}
		groups[k] = append(groups[k], r)
	}
	out := make([]Summary, 0, len(groups))
	for k, rs := range groups {
		out = append(out, summarizeGroup(k, rs))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Probe != b.Probe {
			return a.Probe < b.Probe
		}
		if a.GPUs != b.GPUs {
			return a.GPUs < b.GPUs
		}
		if a.Setup != b.Setup {
			return a.Setup < b.Setup
		}
		return a.GPUKey < b.GPUKey
	})
	return out
}

func summarizeGroup(k sumKey, rs []Record) Summary {
	s := Summary{TypeProbe: k.TypeProbe, GPUKey: k.gpu, Params: rs[0].Params, Unit: rs[0].Unit}
	var vals []float64
	throttle := map[string]bool{}
	for _, r := range rs {
		if r.Software.Synthetic {
			s.Synthetic = true
		}
		switch {
		case r.Warmup:
			s.Warmups++
			continue
		case r.Error != "":
			s.Failed++
			continue
		}
		vals = append(vals, r.Value)
		t := r.Telemetry
		s.MaxTempC = max(s.MaxTempC, t.MaxTempC)
		if t.MinSMClockMHz > 0 && (s.MinSMClockMHz == 0 || t.MinSMClockMHz < s.MinSMClockMHz) {
			s.MinSMClockMHz = t.MinSMClockMHz
		}
		for _, tr := range t.ThrottleReasons {
			throttle[tr] = true
		}
	}
	for tr := range throttle {
		s.ThrottleReasons = append(s.ThrottleReasons, tr)
	}
	sort.Strings(s.ThrottleReasons)
	s.Runs = len(vals)
	if s.Runs < MinRuns {
		s.Insufficient = true
		s.Note = fmt.Sprintf("insufficient: %d measured runs, at least %d needed (%d warm-up, %d failed left out)",
			s.Runs, MinRuns, s.Warmups, s.Failed)
		s.MaxTempC, s.MinSMClockMHz, s.ThrottleReasons = 0, 0, nil
		return s
	}
	slices.Sort(vals)
	s.Min, s.Max = vals[0], vals[len(vals)-1]
	s.Median = median(vals)
	s.Spread = (s.Max - s.Min) / s.Median
	dev := make([]float64, len(vals))
	for i, v := range vals {
		dev[i] = abs(v - s.Median)
	}
	slices.Sort(dev)
	s.MAD = median(dev)
	if s.Failed > 0 {
		s.Note = fmt.Sprintf("%d failed runs left out", s.Failed)
	}
	return s
}

// median of sorted, non-empty values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return sorted[n/2-1]/2 + sorted[n/2]/2
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// String is a one-line rendering for logs and the CLI.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", s.Type, s.GPUKey, s.Probe)
	if s.Setup != "" {
		fmt.Fprintf(&b, " [%s]", s.Setup)
	}
	if s.Insufficient {
		fmt.Fprintf(&b, ": %s", s.Note)
		return b.String()
	}
	fmt.Fprintf(&b, ": median %.4g %s over %d runs (min %.4g, max %.4g, spread %.2f%%, MAD %.4g)",
		s.Median, s.Unit, s.Runs, s.Min, s.Max, s.Spread*100, s.MAD)
	if s.Synthetic {
		b.WriteString(" SYNTHETIC")
	}
	return b.String()
}
