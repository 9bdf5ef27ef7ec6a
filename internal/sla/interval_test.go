package sla_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sla"
)

func TestIntervalOperations(t *testing.T) {
	sh := shanghai(t)
	base := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)
	m := func(a, b int) sla.Interval { // minutes after base
		return sla.Interval{From: base.Add(time.Duration(a) * time.Minute), To: base.Add(time.Duration(b) * time.Minute)}
	}
	in := []sla.Interval{m(50, 60), m(0, 10), m(10, 20), m(5, 8), m(30, 30), m(45, 40), m(55, 70), m(80, 90)}
	orig := slices.Clone(in)
	merged := sla.Merge(in)
	if want := []sla.Interval{m(0, 20), m(50, 70), m(80, 90)}; !slices.Equal(merged, want) {
		t.Errorf("Merge = %v, want %v", merged, want)
	}
	if !slices.Equal(in, orig) {
		t.Error("Merge modified its input")
	}
	if got := sla.Total(in); got != 50*time.Minute {
		t.Errorf("Total = %v, want 50m", got)
	}
	if got := sla.Clip(in, m(15, 85)); !slices.Equal(got, []sla.Interval{m(15, 20), m(50, 70), m(80, 85)}) {
		t.Errorf("Clip = %v", got)
	}
	if got := sla.Clip(in, m(20, 50)); len(got) != 0 {
		t.Errorf("Clip to a gap (touching ends are not shared) = %v, want none", got)
	}
	if got := sla.Intersect(in, []sla.Interval{m(0, 5), m(60, 100)}); !slices.Equal(got, []sla.Interval{m(0, 5), m(60, 70), m(80, 90)}) {
		t.Errorf("Intersect = %v", got)
	}
	if got := sla.Intersect(nil, in); len(got) != 0 {
		t.Errorf("Intersect with nothing = %v", got)
	}
	// Zones and monotonic readings are normalised away: the result is UTC.
	now := time.Now()
	local := []sla.Interval{{From: now.In(sh), To: now.Add(time.Minute).In(sh)}, {From: now, To: now.Add(2 * time.Minute)}}
	got := sla.Merge(local)
	if len(got) != 1 || got[0].From.Location() != time.UTC || !got[0].From.Equal(now) || !got[0].To.Equal(now.Add(2*time.Minute)) || got[0].From != got[0].From.Round(0) {
		t.Errorf("Merge of zoned intervals = %v", got)
	}
	if iv := m(0, 10); !iv.Contains(iv.From) || iv.Contains(iv.To) || iv.Duration() != 10*time.Minute || iv.Empty() {
		t.Error("an interval is half-open [From, To)")
	}
	if iv := m(10, 0); !iv.Empty() || iv.Duration() != 0 || iv.Contains(base.Add(5*time.Minute)) {
		t.Error("a reversed interval is empty")
	}
	// Total saturates instead of overflowing.
	far := sla.Interval{From: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	far2 := sla.Interval{From: far.To.Add(time.Hour), To: far.To.Add(2 * time.Hour)}
	if got := sla.Total([]sla.Interval{far, far2}); got != time.Duration(1<<63-1) {
		t.Errorf("Total of ten millennia = %v, want saturation", got)
	}
}
