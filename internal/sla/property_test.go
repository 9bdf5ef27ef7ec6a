package sla_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sla"
)

// randomIntervals returns up to n intervals on a whole-unit grid within
// [0, span) units after base; some are empty or reversed.
func randomIntervals(r *rand.Rand, base time.Time, unit time.Duration, span, n int) []sla.Interval {
	out := make([]sla.Interval, r.IntN(n+1))
	for i := range out {
		a := r.IntN(span)
		b := min(a+r.IntN(span/4+1)-span/40, span)
		out[i] = sla.Interval{From: base.Add(time.Duration(a) * unit), To: base.Add(time.Duration(b) * unit)}
	}
	return out
}

// covered marks the units of [0, span) that ivs cover (brute force).
func covered(ivs []sla.Interval, base time.Time, unit time.Duration, span int) []bool {
	on := make([]bool, span)
	for _, iv := range ivs {
		for u := range span {
			x := base.Add(time.Duration(u) * unit)
			if !x.Before(iv.From) && x.Before(iv.To) {
				on[u] = true
			}
		}
	}
	return on
}

func TestPropertyIntervalsMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)
	const span = 400
	for range 500 {
		a := randomIntervals(r, base, time.Second, span, 8)
		b := randomIntervals(r, base, time.Second, span, 8)
		ca, cb := covered(a, base, time.Second, span), covered(b, base, time.Second, span)
		merged := sla.Merge(a)
		for i, iv := range merged {
			if iv.Empty() || (i > 0 && !iv.From.After(merged[i-1].To)) {
				t.Fatalf("Merge(%v) = %v is not sorted, disjoint and non-empty", a, merged)
			}
		}
		if !slices.Equal(covered(merged, base, time.Second, span), ca) {
			t.Fatalf("Merge(%v) = %v changes the covered set", a, merged)
		}
		inter := covered(sla.Intersect(a, b), base, time.Second, span)
		var n, nb int
		for u := range span {
			if inter[u] != (ca[u] && cb[u]) {
				t.Fatalf("Intersect(%v, %v) wrong at %d s", a, b, u)
			}
			if ca[u] {
				n++
			}
			if cb[u] {
				nb++
			}
		}
		if got := sla.Total(a); got != time.Duration(n)*time.Second {
			t.Fatalf("Total(%v) = %v, want %d s", a, got, n)
		}
		// Availability: floor(up × 10000 / in service), by counting.
		var up int
		for u := range span {
			if ca[u] && !cb[u] {
				up++
			}
		}
		want := 10000
		if n > 0 {
			want = up * 10000 / n
		}
		if got := sla.AvailabilityBP(a, b); got != want {
			t.Fatalf("AvailabilityBP(%v, %v) = %d, want %d", a, b, got, want)
		}
	}
}

func TestPropertyHourRuleMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sh := shanghai(t)
	terms := sla.DefaultTerms()
	// Minutes from 21:00 local on the last day of January, across midnight
	// and the month end.
	base := at(t, sh, "2025-01-31 21:00:00")
	const span = 6 * 60
	for range 300 {
		terms.HourRuleMinutes = r.IntN(60)
		down := randomIntervals(r, base, time.Minute, span, 6)
		on := covered(down, base, time.Minute, span)
		var want []time.Time
		for h := 0; h < span/60; h++ {
			n := 0
			for m := range 60 {
				if on[h*60+m] {
					n++
				}
			}
			if n > terms.HourRuleMinutes {
				want = append(want, base.Add(time.Duration(h)*time.Hour).UTC())
			}
		}
		if got := sla.HourRuleHours(terms, down, sh); !slices.Equal(got, want) {
			t.Fatalf("HourRuleHours(%d min, %v) = %v, want %v", terms.HourRuleMinutes, down, got, want)
		}
	}
}

func TestPropertyIncidentCredit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	terms := sla.DefaultTerms()
	on := time.Date(2025, 3, 3, 1, 0, 0, 0, time.UTC)
	for range 20000 {
		price := r.Int64N(10_000_000) + 1
		if r.IntN(10) == 0 {
			price = r.Int64()
		}
		d := time.Duration(r.Int64N(int64(30 * time.Hour)))
		got := sla.IncidentCredit(terms, on, on.Add(d), price)
		if want := oracleIncident(24, d, price); want.IsInt64() && got != want.Int64() {
			t.Fatalf("IncidentCredit(%v, %d) = %d, want %v", d, price, got, want)
		}
		if got < 0 {
			t.Fatalf("negative credit %d", got)
		}
		// Monotone in time and in price, and never above the 24 h ceiling.
		later := d + time.Duration(r.Int64N(int64(time.Hour)))
		if g2 := sla.IncidentCredit(terms, on, on.Add(later), price); g2 < got {
			t.Fatalf("credit fell from %d at %v to %d at %v", got, d, g2, later)
		}
		if price < 1<<40 {
			if g3 := sla.IncidentCredit(terms, on, on.Add(d), price+1); g3 < got {
				t.Fatalf("credit fell from %d to %d as the price rose", got, g3)
			}
			if got > 24*price {
				t.Fatalf("credit %d above 24 h × %d", got, price)
			}
		}
	}
}

func TestPropertyCreditsNeverNegativeNorAboveCap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		terms := sla.DefaultTerms()
		terms.CapPercent = 1 + r.IntN(100)
		charge := r.Int64N(10_000_000) - 1000
		capFen := max(charge, 0) * int64(terms.CapPercent) // ×100
		var posted int64
		// A month of incidents and the availability credit, each capped.
		for range 1 + r.IntN(12) {
			var want int64
			if r.IntN(4) == 0 {
				want = sla.TierCredit(terms, r.IntN(10001), charge)
			} else {
				start := time.Unix(r.Int64N(1<<31), 0)
				want = sla.IncidentCredit(terms, start, start.Add(time.Duration(r.Int64N(int64(48*time.Hour)))), r.Int64N(200_000))
			}
			if want < 0 {
				t.Fatalf("credit %d is negative", want)
			}
			got := sla.CapCredit(terms, want, posted, charge)
			if got < 0 || got > want {
				t.Fatalf("CapCredit(%d, %d, %d) = %d", want, posted, charge, got)
			}
			posted += got
			// posted ≤ round-half-up(charge × cap%), i.e. 100 × posted ≤ capFen + 50.
			if 100*posted > capFen+50 {
				t.Fatalf("posted %d above %d%% of %d", posted, terms.CapPercent, charge)
			}
		}
		if tc := sla.TierCredit(terms, r.IntN(20000)-5000, charge); tc < 0 || tc > max(charge, 0) {
			t.Fatalf("TierCredit %d outside [0, %d]", tc, charge)
		}
	}
}

func TestPropertyAvailabilityMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	base := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)
	terms := sla.DefaultTerms()
	for range 2000 {
		svc := randomIntervals(r, base, time.Minute, 10000, 5)
		down := randomIntervals(r, base, time.Minute, 10000, 5)
		more := append(slices.Clone(down), randomIntervals(r, base, time.Minute, 10000, 3)...)
		a, b := sla.AvailabilityBP(svc, down), sla.AvailabilityBP(svc, more)
		if a < 0 || a > 10000 || b > a {
			t.Fatalf("availability %d then %d with more down time", a, b)
		}
		if sla.TierCredit(terms, b, 100000) < sla.TierCredit(terms, a, 100000) {
			t.Fatal("lower availability earned a smaller credit")
		}
	}
}
