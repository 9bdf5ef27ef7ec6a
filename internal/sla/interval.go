package sla

import (
	"math"
	"slices"
	"time"
)

// Interval is the half-open span of time [From, To). An interval whose To is
// not after its From is empty and is ignored by every function here.
type Interval struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Empty reports whether iv contains no instant.
func (iv Interval) Empty() bool { return !iv.To.After(iv.From) }

// Duration returns the length of iv, 0 when empty. Like time.Time.Sub it
// saturates at the largest time.Duration (about 292 years).
func (iv Interval) Duration() time.Duration {
	if iv.Empty() {
		return 0
	}
	return iv.To.Sub(iv.From)
}

// Contains reports whether the instant at lies in iv.
func (iv Interval) Contains(at time.Time) bool {
	return !at.Before(iv.From) && at.Before(iv.To)
}

// utc returns iv with both ends in UTC and without monotonic clock readings.
func (iv Interval) utc() Interval { return Interval{From: iv.From.UTC(), To: iv.To.UTC()} }

// Merge returns the union of ivs as sorted, disjoint, non-empty intervals in
// UTC; overlapping and touching intervals are joined. ivs is not modified.
func Merge(ivs []Interval) []Interval {
	out := make([]Interval, 0, len(ivs))
	for _, iv := range ivs {
		if !iv.Empty() {
			out = append(out, iv.utc())
		}
	}
	slices.SortFunc(out, func(a, b Interval) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return a.To.Compare(b.To)
	})
	n := 0
	for _, iv := range out {
		if n > 0 && !iv.From.After(out[n-1].To) {
			if iv.To.After(out[n-1].To) {
				out[n-1].To = iv.To
			}
			continue
		}
		out[n] = iv
		n++
	}
	return out[:n]
}

// Clip returns the parts of ivs inside window, merged as Merge does.
func Clip(ivs []Interval, window Interval) []Interval {
	return Intersect(ivs, []Interval{window})
}

// Intersect returns the instants that lie in both a and b, as sorted,
// disjoint, non-empty intervals in UTC.
func Intersect(a, b []Interval) []Interval {
	a, b = Merge(a), Merge(b)
	var out []Interval
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := a[i].From, a[i].To
		if b[j].From.After(from) {
			from = b[j].From
		}
		if b[j].To.Before(to) {
			to = b[j].To
		}
		if to.After(from) {
			out = append(out, Interval{From: from, To: to})
		}
		if a[i].To.Before(b[j].To) {
			i++
		} else {
			j++
		}
	}
	return out
}

// Total returns the length of the union of ivs. It saturates at the largest
// time.Duration rather than overflow.
func Total(ivs []Interval) time.Duration {
	var sum time.Duration
	for _, iv := range Merge(ivs) {
		sum = addSat(sum, iv.Duration())
	}
	return sum
}

// addSat adds two non-negative durations, saturating at math.MaxInt64.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
