package rating_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// shanghai loads the billing zone or fails the test.
func shanghai(t testing.TB) *time.Location {
	t.Helper()
	loc, err := rating.LoadBillingZone()
	if err != nil {
		t.Fatalf("load %s: %v", rating.BillingZone, err)
	}
	return loc
}

// at returns the Asia/Shanghai wall time as an instant.
func at(loc *time.Location, y int, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, loc)
}

// flatPrices returns prices with the given peak and off-peak hourly prices and
// academic prices at 80% (rounded up).
func flatPrices(peak, off int64) rating.Prices {
	return rating.Prices{
		PeakFen: peak, OffPeakFen: off,
		AcademicPeakFen: (peak*80 + 99) / 100, AcademicOffPeakFen: (off*80 + 99) / 100,
		NoGPUFen: 10,
	}
}

// oneTypeBook returns a book with one version, effective long before any test
// instant, for GPU type "t".
func oneTypeBook(t testing.TB, p rating.Prices) *rating.Book {
	t.Helper()
	b, err := rating.NewBook(shanghai(t), rating.Version{
		ID: "v1", Effective: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		Rule: rating.DefaultRule(), Types: map[string]rating.Prices{"t": p},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hourly(count int) rating.Terms {
	return rating.Terms{Plan: gpurent.PlanHourly, GPUCount: count}
}

func mustSplit(t testing.TB, b *rating.Book, start, end time.Time) []rating.Segment {
	t.Helper()
	segs, err := rating.Split(b, "t", start, end)
	if err != nil {
		t.Fatalf("split [%s, %s): %v", start, end, err)
	}
	return segs
}

func mustRate(t testing.TB, segs []rating.Segment, terms rating.Terms) []rating.Line {
	t.Helper()
	lines, err := rating.Rate(segs, terms)
	if err != nil {
		t.Fatalf("rate: %v", err)
	}
	return lines
}

func mustTotal(t testing.TB, lines []rating.Line) rating.Amount {
	t.Helper()
	sum, err := rating.Total(lines)
	if err != nil {
		t.Fatalf("total: %v", err)
	}
	return sum
}

// roundHalfUpRat is the reference rounding: floor(x + 1/2) for x ≥ 0.
func roundHalfUpRat(x *big.Rat) int64 {
	y := new(big.Rat).Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(y.Num(), y.Denom())
	return q.Int64()
}

func ratEq(a, b *big.Rat) bool { return a.Cmp(b) == 0 }
