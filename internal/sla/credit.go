package sla

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// IncidentCredit returns the credit for a GPU or host failure at faultAt on
// an instance last powered on at lastPowerOn: min(faultAt − lastPowerOn,
// IncidentCreditMaxHours) × hourlyFen, where hourlyFen is the hourly price
// of the affected GPUs (all of them together). The product is exact to the
// nanosecond and rounded half-up once. A fault not after the power-on, or a
// price not above zero, earns 0. The result saturates at math.MaxInt64
// instead of overflowing; CapCredit bounds what is posted.
func IncidentCredit(t Terms, lastPowerOn, faultAt time.Time, hourlyFen int64) int64 {
	if hourlyFen <= 0 || !faultAt.After(lastPowerOn) {
		return 0
	}
	maxHours := min(max(t.IncidentCreditMaxHours, 0), MaxIncidentCreditHours)
	d := min(faultAt.Sub(lastPowerOn), time.Duration(maxHours)*time.Hour)
	if d <= 0 {
		return 0
	}
	// d × price / 1 h = whole hours × price + round(rest × price / 1 h):
	// the whole hours contribute an integer, so rounding the rest rounds
	// the exact product, once.
	whole, rest := int64(d/time.Hour), uint64(d%time.Hour)
	hi, lo := bits.Mul64(rest, uint64(hourlyFen))
	q, r := bits.Div64(hi, lo, uint64(time.Hour)) // hi < 1 h because rest < 1 h
	if 2*r >= uint64(time.Hour) {
		q++
	}
	if whole > 0 && hourlyFen > math.MaxInt64/whole {
		return math.MaxInt64
	}
	return addSatInt(whole*hourlyFen, int64(q))
}

// HourRuleHours returns the starts (UTC) of the clock hours in loc in which
// the down intervals total more than HourRuleMinutes, in order. Overlapping
// down intervals count once. Such an hour is not charged at all. loc must
// not be nil.
func HourRuleHours(t Terms, down []Interval, loc *time.Location) []time.Time {
	mustZone(loc)
	threshold := time.Duration(max(t.HourRuleMinutes, 0)) * time.Minute
	byHour := map[time.Time]time.Duration{}
	for _, iv := range Merge(down) {
		for cur := iv.From; cur.Before(iv.To); {
			hs := hourStart(cur, loc)
			end := hourEnd(hs, cur, loc)
			if end.After(iv.To) {
				end = iv.To
			}
			byHour[hs] += end.Sub(cur)
			cur = end
		}
	}
	var hours []time.Time
	for hs, d := range byHour {
		if d > threshold {
			hours = append(hours, hs)
		}
	}
	slices.SortFunc(hours, time.Time.Compare)
	return hours
}

// AvailabilityBP returns the availability of the in-service time, in basis
// points (10,000 = 100%): the share of the union of inService not covered by
// down, which is clipped to inService first. It is floored, so an
// availability below a tier's threshold never rounds up to it. With nothing
// in service it is 10,000.
func AvailabilityBP(inService, down []Interval) int {
	svc := Merge(inService)
	total := Total(svc)
	if total <= 0 {
		return fullBP
	}
	lost := Total(Intersect(down, svc))
	up := total - lost
	hi, lo := bits.Mul64(uint64(up), fullBP)
	q, _ := bits.Div64(hi, lo, uint64(total)) // hi < total because up ≤ total
	return int(q)
}

// TierCredit returns the monthly availability credit: the largest
// CreditPercent among the tiers whose BelowBasisPoints is above
// availabilityBP, of monthChargeFen, rounded half-up. It is 0 when no tier
// applies or the charge is not above zero.
func TierCredit(t Terms, availabilityBP int, monthChargeFen int64) int64 {
	best := 0
	for _, tier := range t.Tiers {
		if availabilityBP < tier.BelowBasisPoints && tier.CreditPercent > best {
			best = tier.CreditPercent
		}
	}
	return percentOf(monthChargeFen, best)
}

// CapCredit returns how much of a wanted credit may still be posted in the
// month: want, limited to CapPercent of monthChargeFen (rounded half-up)
// less alreadyCreditedFen. It is never negative; a want, credit so far or
// charge below zero counts as zero.
func CapCredit(t Terms, want, alreadyCreditedFen, monthChargeFen int64) int64 {
	if want <= 0 {
		return 0
	}
	room := percentOf(monthChargeFen, t.CapPercent) - max(alreadyCreditedFen, 0)
	if room <= 0 {
		return 0
	}
	return min(want, room)
}

// percentOf returns pct% of fen rounded half-up; pct is clamped to
// [0, 100] and a negative fen is 0, so the result lies in [0, fen].
func percentOf(fen int64, pct int) int64 {
	if fen <= 0 {
		return 0
	}
	p := int64(min(max(pct, 0), 100))
	// fen = 100q + r: fen × p / 100 = q × p + r × p / 100, and q × p is an
	// integer, so rounding the second term rounds the whole, once.
	q, r := fen/100, fen%100
	return q*p + (r*p+50)/100
}

// addSatInt adds two non-negative int64s, saturating at math.MaxInt64.
func addSatInt(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
