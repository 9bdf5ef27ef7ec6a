package rating

import (
	"math/big"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// Quotation explains the cost of a planned rental before it starts.
type Quotation struct {
	TypeID   string
	GPUCount int
	Academic bool
	// PricePermille is the price share of a degraded listing quoted by
	// QuoteShare (0: the full price).
	PricePermille int
	Start         time.Time // UTC
	End           time.Time // UTC, Start + duration

	// Lines of the hourly plan: one per distinct (window, rate), peak lines
	// first, each rounded once. HourlyFen is the sum of the rounded lines.
	Lines     []QuoteLine
	HourlyFen int64

	// Packages are the package alternatives (none in no-GPU mode): for each
	// package plan, the periods needed to cover the duration and their cost
	// at the prices in force at Start.
	Packages []PackageOption

	// Cheapest is the cheapest way to pay (PlanHourly or a package plan) and
	// CheapestFen its cost; ties go to the plan listed first (hourly, daily,
	// weekly, monthly).
	Cheapest    gpurent.Plan
	CheapestFen int64
}

// QuoteLine is the part of a quote at one rate.
type QuoteLine struct {
	OffPeak bool
	NoGPU   bool
	Seconds int64 // billed seconds at this rate
	// RateFen is the rate per unit-hour (per GPU, or per instance in
	// no-GPU mode) the customer pays: for a degraded listing the list
	// rate scaled by its share, rounded half-up to the fen for display
	// (Exact is exact); ListRateFen is the rate before the share.
	RateFen     int64
	ListRateFen int64
	Units       int64  // GPUs, or 1 in no-GPU mode
	Exact       Amount // exact, before rounding
	Fen         int64  // Exact rounded half-up
}

// Hours returns Seconds as hours, exact up to four decimals (e.g. "69",
// "0.5083").
func (l QuoteLine) Hours() string {
	s := new(big.Rat).SetFrac64(l.Seconds, 3600).FloatString(4)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// PackageOption is one package alternative in a quote.
type PackageOption struct {
	Plan     gpurent.Plan
	Periods  int64 // periods needed to cover the duration, rounded up
	UnitFen  int64 // per GPU per period
	TotalFen int64 // Periods × GPUs × UnitFen
}

// Quote quotes count GPUs of a type for duration from start, on the
// hourly plan (split and rated exactly as usage would be, as one power-on,
// so the 60-second minimum applies) and on each package plan. start and
// duration must be whole seconds.
func Quote(b *Book, typeID string, count int, start time.Time, duration time.Duration, academic bool) (Quotation, error) {
	return QuoteShare(b, typeID, count, start, duration, academic, 0)
}

// QuoteShare is Quote for GPUs listed as degraded at a price share in
// permille (0 or 1000: the full price, as Quote). A degraded listing is
// rented on the hourly plan only, so a quote at a share lists no package;
// its lines show the scaled rate. A share needs at least one GPU.
func QuoteShare(b *Book, typeID string, count int, start time.Time, duration time.Duration, academic bool, pricePermille int) (Quotation, error) {
	degraded := DegradedBpsOf(pricePermille)
	if degraded > 0 && count == 0 {
		return Quotation{}, gpurent.Errorf(gpurent.CodeInvalid, "a degraded listing is of GPUs: quote at least one")
	}
	if degraded == 0 {
		pricePermille = 0
	}
	if duration < 0 || duration%time.Second != 0 {
		return Quotation{}, gpurent.Errorf(gpurent.CodeInvalid, "quote duration must be a non-negative whole number of seconds")
	}
	end := start.Add(duration)
	segs, err := SplitRun(b, typeID, start, end)
	if err != nil {
		return Quotation{}, err
	}
	lines, err := Rate(segs, Terms{Plan: gpurent.PlanHourly, GPUCount: count, Academic: academic, DegradedBps: degraded})
	if err != nil {
		return Quotation{}, err
	}
	q := Quotation{TypeID: typeID, GPUCount: count, Academic: academic, PricePermille: pricePermille,
		Start: start.UTC(), End: end.UTC()}
	for _, l := range lines {
		i := 0
		for i < len(q.Lines) && (q.Lines[i].OffPeak != l.Segment.OffPeak || q.Lines[i].ListRateFen != l.RateFen) {
			i++
		}
		if i == len(q.Lines) {
			q.Lines = append(q.Lines, QuoteLine{OffPeak: l.Segment.OffPeak, NoGPU: l.NoGPU,
				RateFen: ScaledRateFen(l.RateFen, degraded), ListRateFen: l.RateFen, Units: l.Units})
		}
		q.Lines[i].Seconds += l.Seconds
		if q.Lines[i].Exact, err = q.Lines[i].Exact.Add(l.Exact); err != nil {
			return Quotation{}, err
		}
	}
	// Peak lines first, otherwise in order of first use.
	peak := make([]QuoteLine, 0, len(q.Lines))
	var off []QuoteLine
	for _, l := range q.Lines {
		l.Fen = l.Exact.RoundHalfUp()
		q.HourlyFen += l.Fen
		if l.OffPeak {
			off = append(off, l)
		} else {
			peak = append(peak, l)
		}
	}
	q.Lines = append(peak, off...)
	q.Cheapest, q.CheapestFen = gpurent.PlanHourly, q.HourlyFen
	if count == 0 || duration == 0 || degraded > 0 {
		return q, nil
	}
	secs := int64(duration / time.Second)
	for _, plan := range []gpurent.Plan{gpurent.PlanDaily, gpurent.PlanWeekly, gpurent.PlanMonthly} {
		per, _ := PackageSeconds(plan)
		n := (secs + per - 1) / per
		pl, err := RatePackage(b, typeID, start, n, Terms{Plan: plan, GPUCount: count, Academic: academic})
		if err != nil {
			return Quotation{}, err
		}
		o := PackageOption{Plan: plan, Periods: n, UnitFen: pl.UnitFen, TotalFen: pl.Fen()}
		q.Packages = append(q.Packages, o)
		if o.TotalFen < q.CheapestFen {
			q.Cheapest, q.CheapestFen = plan, o.TotalFen
		}
	}
	return q, nil
}
