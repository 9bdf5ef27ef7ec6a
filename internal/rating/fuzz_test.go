package rating_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// FuzzSegment splits arbitrary intervals under arbitrary off-peak rules and a
// price change, and checks the segment invariants and the exact amount
// against the candidate-point oracle.
func FuzzSegment(f *testing.F) {
	loc := shanghai(f)
	base := time.Date(2025, 3, 5, 21, 30, 0, 0, loc).Unix()
	f.Add(int64(0), uint32(3630), uint32(22*3600), uint32(8*3600), true, int64(1800), uint8(1))
	f.Add(int64(86400*360), uint32(86400*40), uint32(0), uint32(0), true, int64(-5), uint8(4))
	f.Add(int64(-86400*400), uint32(59), uint32(12*3600), uint32(13*3600), false, int64(30), uint8(0))
	f.Fuzz(func(t *testing.T, off int64, dur uint32, ruleStart, ruleEnd uint32, weekends bool, change int64, count uint8) {
		start := base + off%(86400*365*5)
		d := int64(dur) % (86400 * 62)
		rule := rating.Rule{Start: rating.ClockTime(ruleStart % 86400), End: rating.ClockTime(ruleEnd % 86400), Weekends: weekends}
		ss := session{start: start, end: start + d, count: int(count % 9),
			versions: []refVersion{{eff: start - 1, rule: rating.DefaultRule(), prices: flatPrices(4000, 2800)}}}
		if c := start + change%(d+2); c > start-1 {
			ss.versions = append(ss.versions, refVersion{eff: c, rule: rule, prices: flatPrices(5000, 1000)})
		}
		b := ss.book(t, loc)
		s, e := time.Unix(ss.start, 0).UTC(), time.Unix(ss.end, 0).UTC()
		segs, err := rating.Split(b, "t", s, e)
		if err != nil {
			t.Fatal(err)
		}
		checkSegments(t, b, segs, s, e)
		got := mustTotal(t, mustRate(t, segs, hourly(ss.count)))
		ref := byCandidates(loc, ss)
		// Split applies no minimum: price the reference without it too.
		ssNoMin := ss
		if d < 60 {
			ssNoMin.end = ss.start // refAmount's minimum only triggers on 1–59 s
		}
		want := refAmount(loc, ssNoMin, ref.seconds)
		if !ratEq(got.Rat(), want) {
			t.Fatalf("%+v: engine %s, reference %s", ss, got, want.RatString())
		}
	})
}

// FuzzRate rates arbitrary segments under arbitrary terms: out-of-range input
// must be refused as invalid, anything else must equal the big.Rat formula,
// stay between the (degraded-scaled) 50% floor and the undiscounted
// price, and round half-up.
func FuzzRate(f *testing.F) {
	f.Add(int64(1800), int64(0), int64(521), int64(417), int64(10), 1, false, int64(0), int64(0), false, int64(0))
	f.Add(int64(30), int64(30), int64(3473), int64(2779), int64(10), 8, true, int64(2000), int64(3000), false, int64(0))
	f.Add(int64(86400), int64(0), int64(0), int64(0), int64(10), 0, false, int64(10000), int64(10000), true, int64(0))
	f.Add(int64(-1), int64(0), int64(-1), int64(0), int64(0), -1, false, int64(-1), int64(10001), false, int64(0))
	f.Add(int64(3600), int64(0), int64(521), int64(417), int64(10), 2, false, int64(0), int64(0), false, int64(1500))
	f.Add(int64(7200), int64(0), int64(1000000000), int64(900000000), int64(10), 1024, true, int64(9000), int64(0), false, int64(5500))
	f.Add(int64(60), int64(0), int64(521), int64(0), int64(10), 1, false, int64(0), int64(0), false, int64(10001))
	f.Add(int64(3600), int64(0), int64(521), int64(0), int64(10), 0, false, int64(0), int64(0), false, int64(3000))
	f.Fuzz(func(t *testing.T, secs, topUp, list, academic, noGPU int64, count int, isAcademic bool, promo, contract int64, pkg bool, degraded int64) {
		x := time.Date(2025, 3, 5, 10, 0, 0, 0, time.UTC)
		if secs > 1<<40 || secs < -(1<<40) {
			secs %= 1 << 40
		}
		seg := rating.Segment{Start: x, End: x.Add(time.Duration(secs) * time.Second), ListFen: list, AcademicFen: academic,
			NoGPUFen: noGPU, MinimumTopUp: topUp}
		terms := rating.Terms{Plan: gpurent.PlanHourly, GPUCount: count, Academic: isAcademic, PromotionBps: promo, ContractBps: contract,
			DegradedBps: degraded}
		if pkg {
			terms.Plan = gpurent.PlanDaily
		}
		lines, err := rating.Rate([]rating.Segment{seg}, terms)
		unit := list
		switch {
		case count == 0:
			unit, list = noGPU, noGPU
		case isAcademic:
			unit = academic
		}
		valid := secs >= 0 && topUp >= 0 && topUp < 60 && secs+topUp <= rating.MaxLineSeconds &&
			count >= 0 && count <= rating.MaxGPUCount && promo >= 0 && promo <= rating.MaxBps &&
			contract >= 0 && contract <= rating.MaxBps && degraded >= 0 && degraded <= rating.MaxBps &&
			(pkg || (unit >= 0 && unit <= rating.MaxRateFen && list >= 0 && list <= rating.MaxRateFen))
		if !valid {
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("invalid input %+v %+v accepted: %v", seg, terms, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v %+v: %v", seg, terms, err)
		}
		l := lines[0]
		if pkg {
			if !l.Prepaid || !l.Exact.IsZero() {
				t.Fatalf("package-plan line %+v", l)
			}
			return
		}
		units := int64(max(count, 1))
		n := big.NewRat((secs+topUp)*units, 3600)
		share := big.NewRat(10000-degraded, 10000)
		if count == 0 {
			share = big.NewRat(1, 1) // the no-GPU price is never scaled
		}
		perHour := new(big.Rat).SetInt64(unit)
		perHour.Mul(perHour, share)
		perHour.Mul(perHour, big.NewRat((10000-promo)*(10000-contract), 100_000_000))
		floor := new(big.Rat).Mul(big.NewRat(list, 2), share)
		if perHour.Cmp(floor) < 0 {
			perHour = floor
		}
		want := new(big.Rat).Mul(perHour, n)
		if !ratEq(l.Exact.Rat(), want) {
			t.Fatalf("%+v %+v: %s, want %s", seg, terms, l.Exact, want.RatString())
		}
		if l.Fen() != roundHalfUpRat(want) {
			t.Fatalf("rounded %d, want %d", l.Fen(), roundHalfUpRat(want))
		}
		if lo := new(big.Rat).Mul(floor, n); l.Exact.Rat().Cmp(lo) < 0 {
			t.Fatalf("below the floor: %s < %s", l.Exact, lo.RatString())
		}
		if unit <= list {
			hi := new(big.Rat).Mul(new(big.Rat).Mul(big.NewRat(list, 1), share), n)
			if l.Exact.Rat().Cmp(hi) > 0 {
				t.Fatalf("above the list price: %s > %s", l.Exact, hi.RatString())
			}
		}
	})
}
