package rating

import (
	"math"
	"math/bits"
	"time"

	"github.com/gpurent/gpurent"
)

// Discount constants, in basis points (1/10,000).
const (
	// MaxBps is 100%.
	MaxBps = 10_000
	// FloorBps is the floor of the percentage discounts: a line never costs
	// less than 50% of its list price.
	FloorBps = 5_000
	// MaxLineSeconds bounds the billed seconds of one segment: ten years.
	MaxLineSeconds = 10 * 365 * 86400
	// MaxPackagePeriods bounds the periods of one package line.
	MaxPackagePeriods = 10_000
)

// Terms are what, besides the segments, decides a line's price.
type Terms struct {
	Plan     gpurent.Plan
	GPUCount int  // 0 is the no-GPU mode, billed at the no-GPU price
	Academic bool // a verified academic account: academic prices apply
	// Percentage discounts in basis points, 0–10,000, applied after the
	// academic price in this order: promotion, then contract.
	PromotionBps int64
	ContractBps  int64
	// DegradedBps scales the price of GPUs listed as degraded, in basis
	// points, 0–10,000 (DegradedBpsOf makes it from the allocation's
	// price share). It multiplies like the discounts, but it scales the
	// list price itself: the 50% floor is of the scaled list price, so a
	// card listed at 45% of the price costs 45%, never the unscaled floor.
	// The no-GPU price (GPUCount 0) is never scaled.
	DegradedBps int64
}

// DegradedBpsOf is the DegradedBps of a price share in permille (an
// allocation's or usage run's PricePermille): 10,000 − 10 × permille when
// 0 < permille < 1000, else 0 (0 and 1000 are the full price).
func DegradedBpsOf(pricePermille int) int64 {
	if pricePermille <= 0 || pricePermille >= 1000 {
		return 0
	}
	return MaxBps - 10*int64(pricePermille)
}

// ScaledRateFen is a per-hour (or per-period) rate under DegradedBps,
// rounded half-up to the fen: what a statement or quote shows as the rate
// of a degraded listing. Amounts never use it; they scale exactly.
func ScaledRateFen(rateFen, degradedBps int64) int64 {
	if degradedBps <= 0 {
		return rateFen
	}
	num := rateFen * (MaxBps - degradedBps) // ≤ MaxRateFen × 10^4, fits
	return (2*num + MaxBps) / (2 * MaxBps)
}

// Validate checks the terms.
func (t Terms) Validate() error {
	switch t.Plan {
	case gpurent.PlanHourly, gpurent.PlanDaily, gpurent.PlanWeekly, gpurent.PlanMonthly:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "unknown plan %q", t.Plan)
	}
	if t.GPUCount < 0 || t.GPUCount > MaxGPUCount {
		return gpurent.Errorf(gpurent.CodeInvalid, "GPU count %d is out of range [0, %d]", t.GPUCount, MaxGPUCount)
	}
	if t.PromotionBps < 0 || t.PromotionBps > MaxBps || t.ContractBps < 0 || t.ContractBps > MaxBps ||
		t.DegradedBps < 0 || t.DegradedBps > MaxBps {
		return gpurent.Errorf(gpurent.CodeInvalid, "discounts must lie in [0, %d] basis points", MaxBps)
	}
	return nil
}

// factor is (1 − degraded) × (1 − promotion) × (1 − contract) scaled by
// 10^12 (at most 10^12: fits an int64).
func (t Terms) factor() uint64 {
	return uint64((MaxBps - t.DegradedBps) * (MaxBps - t.PromotionBps) * (MaxBps - t.ContractBps))
}

// floorFactor is (1 − degraded) × 50% scaled by 10^12: the floor's share
// of the list price.
func (t Terms) floorFactor() uint64 { return uint64((MaxBps - t.DegradedBps) * FloorBps * MaxBps) }

// perHour is max(price × factor, list × floor) at 10^12 scale (factor and
// floor from Terms.factor and Terms.floorFactor), in 128 bits (10^9 fen ×
// 10^12 exceeds 64), and whether the floor won.
func perHour(price, list int64, factor, floor uint64) (hi, lo uint64, floored bool) {
	hi, lo = bits.Mul64(uint64(price), factor)
	fhi, flo := bits.Mul64(uint64(list), floor)
	if wideLess(hi, lo, fhi, flo) {
		return fhi, flo, true
	}
	return hi, lo, false
}

// Line is one rated segment.
type Line struct {
	Segment Segment
	Seconds int64 // billed seconds: wall-clock plus minimum top-up
	Units   int64 // GPUs billed; 1 (the instance) in no-GPU mode; 0 if prepaid
	NoGPU   bool  // rated at the no-GPU price
	// Prepaid: a package plan's running time, covered by its package (see
	// RatePackage); the line costs 0.
	Prepaid bool
	RateFen int64 // per unit-hour, after the academic price, before discounts
	ListFen int64 // per unit-hour, the list price the 50% floor refers to
	Floored bool  // the 50% floor raised the amount
	Exact   Amount
}

// Fen returns the line's amount rounded half-up to the fen: the one rounding
// a line gets.
func (l Line) Fen() int64 { return l.Exact.RoundHalfUp() }

// Rater rates segments under fixed, validated terms. It is a value; use one
// per goroutine or share it, it holds no state.
type Rater struct {
	terms         Terms
	units         int64
	factor, floor uint64
}

// NewRater validates the terms and returns their rater.
func NewRater(t Terms) (Rater, error) {
	if err := t.Validate(); err != nil {
		return Rater{}, err
	}
	u := int64(t.GPUCount)
	if u == 0 {
		u = 1
		t.DegradedBps = 0 // no GPU, no degraded listing: the no-GPU price stands
	}
	return Rater{terms: t, units: u, factor: t.factor(), floor: t.floorFactor()}, nil
}

// Rate prices one segment:
//
//	rate  = academic price of the window if Academic, else its list price
//	        (the no-GPU price, with no academic variant, when GPUCount is 0)
//	exact = seconds × units × max(rate × (1−degraded) × (1−promotion) × (1−contract),
//	                              list × (1−degraded) × 50%) / 3600
//
// exactly, with no rounding. Package plans give a Prepaid line of zero.
func (r Rater) Rate(s Segment) (Line, error) {
	if s.Start.Nanosecond() != 0 || s.End.Nanosecond() != 0 {
		return Line{}, gpurent.Errorf(gpurent.CodeInvalid, "segment must be given in whole seconds")
	}
	wall := s.Seconds()
	if wall < 0 || s.MinimumTopUp < 0 || s.MinimumTopUp >= MinimumRunSeconds || wall+s.MinimumTopUp > MaxLineSeconds {
		return Line{}, gpurent.Errorf(gpurent.CodeInvalid, "segment of %d s (+%d s minimum) is out of range", wall, s.MinimumTopUp)
	}
	l := Line{Segment: s, Seconds: wall + s.MinimumTopUp, NoGPU: r.terms.GPUCount == 0}
	if r.terms.Plan != gpurent.PlanHourly {
		l.Prepaid = true
		return l, nil
	}
	l.Units = r.units
	switch {
	case l.NoGPU:
		l.RateFen, l.ListFen = s.NoGPUFen, s.NoGPUFen
	case r.terms.Academic:
		l.RateFen, l.ListFen = s.AcademicFen, s.ListFen
	default:
		l.RateFen, l.ListFen = s.ListFen, s.ListFen
	}
	if l.RateFen < 0 || l.RateFen > MaxRateFen || l.ListFen < 0 || l.ListFen > MaxRateFen {
		return Line{}, gpurent.Errorf(gpurent.CodeInvalid, "segment rate is out of range [0, %d] fen", MaxRateFen)
	}
	// Per-hour amount at 10^12 scale; the Denominator supplies the / 3600.
	hi, lo, floored := perHour(l.RateFen, l.ListFen, r.factor, r.floor)
	l.Floored = floored
	x, err := amountFromWide(uint64(l.Seconds*l.Units), hi, lo)
	if err != nil {
		return Line{}, err
	}
	l.Exact = x
	return l, nil
}

// Rate prices segments under terms, one line per segment.
func Rate(segs []Segment, t Terms) ([]Line, error) {
	return AppendRate(make([]Line, 0, len(segs)), segs, t)
}

// AppendRate is Rate appending to dst, for callers that reuse a buffer. On
// error it returns dst as it was.
func AppendRate(dst []Line, segs []Segment, t Terms) ([]Line, error) {
	n0 := len(dst)
	r, err := NewRater(t)
	if err != nil {
		return dst, err
	}
	for _, s := range segs {
		l, err := r.Rate(s)
		if err != nil {
			return dst[:n0], err
		}
		dst = append(dst, l)
	}
	return dst, nil
}

// Total returns the exact sum of the lines. To make one invoice line of
// several segments (say, an instance's off-peak hours of a month), sum their
// exact amounts and round the sum once.
func Total(lines []Line) (Amount, error) {
	var sum Amount
	for _, l := range lines {
		var err error
		if sum, err = sum.Add(l.Exact); err != nil {
			return Amount{}, err
		}
	}
	return sum, nil
}

// SumRounded returns the sum of each line rounded on its own: an invoice's
// total when every segment is its own line.
func SumRounded(lines []Line) (int64, error) {
	var sum int64
	for _, l := range lines {
		f := l.Fen()
		if sum > math.MaxInt64-f {
			return 0, errTooLarge()
		}
		sum += f
	}
	return sum, nil
}

// DebitSoFar returns what a live debit takes now from a line whose exact
// amount so far is exactSoFar and of which debited ≥ 0 fen were already taken:
// floor(exactSoFar) − debited, never negative. Between debits the customer
// owes exactSoFar − debited, which stays in [0, 1) fen right after a debit.
func DebitSoFar(exactSoFar Amount, debited int64) int64 {
	if d := exactSoFar.Floor() - debited; d > 0 {
		return d
	}
	return 0
}

// FinalDebit returns the remainder to debit when the line closes with its
// exact amount: RoundHalfUp(exact) − debited, so that the debits of a line
// sum to its rounded amount. It is 0 or 1 after a DebitSoFar at the close,
// and negative only if more than DebitSoFar allowed was debited.
func FinalDebit(exact Amount, debited int64) int64 { return exact.RoundHalfUp() - debited }

// PackageSeconds returns the length of one period of a package plan: a day,
// 7 days, and 30 days (720 hours, the month the hourly list price is derived
// from).
func PackageSeconds(plan gpurent.Plan) (int64, error) {
	switch plan {
	case gpurent.PlanDaily:
		return 86400, nil
	case gpurent.PlanWeekly:
		return 7 * 86400, nil
	case gpurent.PlanMonthly:
		return 30 * 86400, nil
	}
	return 0, gpurent.Errorf(gpurent.CodeInvalid, "plan %q is not a package plan", plan)
}

// PackageLine is the charge for buying periods of a package plan.
type PackageLine struct {
	Plan      gpurent.Plan
	VersionID string
	Periods   int64
	Units     int64 // GPUs
	UnitFen   int64 // per GPU per period, academic price if Academic
	ListFen   int64 // per GPU per period, the list price
	Floored   bool
	Exact     Amount
}

// Fen returns the line rounded half-up to the fen.
func (l PackageLine) Fen() int64 { return l.Exact.RoundHalfUp() }

// RatePackage prices periods of the package plan t.Plan for t.GPUCount GPUs
// of a type, at the prices in force at the purchase instant at: periods ×
// GPUs × max(price × (1−degraded) × (1−promotion) × (1−contract),
// list × (1−degraded) × 50%), exactly.
func RatePackage(b *Book, typeID string, at time.Time, periods int64, t Terms) (PackageLine, error) {
	if err := t.Validate(); err != nil {
		return PackageLine{}, err
	}
	if t.GPUCount == 0 {
		return PackageLine{}, gpurent.Errorf(gpurent.CodeInvalid, "a package needs at least one GPU")
	}
	if periods < 0 || periods > MaxPackagePeriods {
		return PackageLine{}, gpurent.Errorf(gpurent.CodeInvalid, "package periods %d out of range [0, %d]", periods, MaxPackagePeriods)
	}
	p, vid, err := b.PricesAt(typeID, at)
	if err != nil {
		return PackageLine{}, err
	}
	list, err := p.Package(t.Plan, false)
	if err != nil {
		return PackageLine{}, err
	}
	unit, _ := p.Package(t.Plan, t.Academic)
	l := PackageLine{Plan: t.Plan, VersionID: vid, Periods: periods, Units: int64(t.GPUCount), UnitFen: unit, ListFen: list}
	hi, lo, floored := perHour(unit, list, t.factor(), t.floorFactor())
	l.Floored = floored
	// × 3600 because the Denominator carries a / 3600 that a period price
	// does not have.
	l.Exact, err = amountFromWide(uint64(periods*l.Units*3600), hi, lo)
	return l, err
}
