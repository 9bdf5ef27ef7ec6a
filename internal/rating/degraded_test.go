package rating_test

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

func TestDegradedBpsOf(t *testing.T) {
	for permille, want := range map[int]int64{-1: 0, 0: 0, 1: 9990, 500: 5000, 850: 1500, 999: 10, 1000: 0, 1200: 0} {
		if got := rating.DegradedBpsOf(permille); got != want {
			t.Errorf("DegradedBpsOf(%d) = %d, want %d", permille, got, want)
		}
	}
}

func TestScaledRateFen(t *testing.T) {
	cases := []struct{ rate, bps, want int64 }{
		{521, 0, 521},
		{521, 1500, 443}, // 442.85
		{100, 5, 100},    // 99.95
		{1, 5000, 1},     // 0.5 rounds half up
		{3, 5000, 2},     // 1.5
		{1000, 10000, 0},
		{rating.MaxRateFen, 10, rating.MaxRateFen - rating.MaxRateFen/1000},
	}
	for _, c := range cases {
		if got := rating.ScaledRateFen(c.rate, c.bps); got != c.want {
			t.Errorf("ScaledRateFen(%d, %d) = %d, want %d", c.rate, c.bps, got, c.want)
		}
	}
}

// TestDegradedWorked: the rates of a degraded listing, worked by hand.
func TestDegradedWorked(t *testing.T) {
	loc := shanghai(t)
	x := at(loc, 2025, time.March, 5, 10, 0, 0)
	seg := rating.Segment{Start: x, End: x.Add(3600 * time.Second), ListFen: 1000, AcademicFen: 800, NoGPUFen: 10}
	cases := []struct {
		name                     string
		academic                 bool
		count                    int
		permille                 int
		promo, contract, wantFen int64
		floored                  bool
	}{
		{"85% share", false, 1, 850, 0, 0, 850, false},
		{"85% share, 2 GPUs", false, 2, 850, 0, 0, 1700, false},
		// A share below half is the price: the floor scales with it.
		{"45% share", false, 1, 450, 0, 0, 450, false},
		// 1000 × 0.45 × 0.5 = 225 is exactly the scaled floor.
		{"45% share, half off", false, 1, 450, 5000, 0, 225, false},
		// 1000 × 0.45 × 0.4 = 180 < 225: floored at 50% of the scaled list.
		{"45% share, 60% off", false, 1, 450, 6000, 0, 225, true},
		// academic: 800 × 0.85 × 0.9 = 612 ≥ 425.
		{"academic, 85% share, contract", true, 1, 850, 0, 1000, 612, false},
		// no-GPU price is never scaled
		{"no GPU", false, 0, 850, 0, 0, 10, false},
		{"full share", false, 1, 1000, 0, 0, 1000, false},
	}
	for _, c := range cases {
		l, err := rating.Rate([]rating.Segment{seg}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: c.count,
			Academic: c.academic, PromotionBps: c.promo, ContractBps: c.contract, DegradedBps: rating.DegradedBpsOf(c.permille)})
		if err != nil {
			t.Fatal(err)
		}
		if l[0].Fen() != c.wantFen || l[0].Floored != c.floored {
			t.Errorf("%s: %d fen (floored %v), want %d (floored %v)", c.name, l[0].Fen(), l[0].Floored, c.wantFen, c.floored)
		}
	}
	// 521 fen/h at 85% for 1,800 s: 221.425 fen exactly, 221 rounded.
	seg = rating.Segment{Start: x, End: x.Add(1800 * time.Second), ListFen: 521, AcademicFen: 417}
	l := mustRate(t, []rating.Segment{seg}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: 1, DegradedBps: 1500})
	if got := l[0].Exact.String(); got != "8857/40" || l[0].Fen() != 221 {
		t.Errorf("521 fen/h at 85%% for 30 min: %s (%d fen), want 8857/40 (221 fen)", got, l[0].Fen())
	}
}

func TestDegradedValidate(t *testing.T) {
	for _, bps := range []int64{-1, rating.MaxBps + 1} {
		_, err := rating.NewRater(rating.Terms{Plan: gpurent.PlanHourly, GPUCount: 1, DegradedBps: bps})
		if !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("DegradedBps %d: %v, want invalid", bps, err)
		}
	}
}

// TestDegradedProportional: without other discounts, a degraded line costs
// exactly its share of the full-price line, at any length, count, window
// and price (the largest included: the arithmetic never overflows), and a
// lower share never costs more.
func TestDegradedProportional(t *testing.T) {
	loc := shanghai(t)
	r := rand.New(rand.NewPCG(70, 7))
	x := at(loc, 2025, time.March, 5, 10, 0, 0)
	for i := 0; i < 20000; i++ {
		list := r.Int64N(rating.MaxRateFen + 1)
		if i%10 == 0 {
			list = rating.MaxRateFen
		}
		secs := r.Int64N(rating.MaxLineSeconds + 1)
		if i%2 == 0 {
			secs = r.Int64N(3 * 86400)
		}
		s := rating.Segment{Start: x, End: x.Add(time.Duration(secs) * time.Second), ListFen: list, AcademicFen: list}
		count := 1 + r.IntN(rating.MaxGPUCount)
		p1, p2 := 1+r.IntN(999), 1+r.IntN(999)
		if p1 > p2 {
			p1, p2 = p2, p1
		}
		full := mustRate(t, []rating.Segment{s}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: count})
		low := mustRate(t, []rating.Segment{s}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: count, DegradedBps: rating.DegradedBpsOf(p1)})
		high := mustRate(t, []rating.Segment{s}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: count, DegradedBps: rating.DegradedBpsOf(p2)})
		want := new(big.Rat).Mul(full[0].Exact.Rat(), big.NewRat(int64(p1), 1000))
		if !ratEq(low[0].Exact.Rat(), want) {
			t.Fatalf("%d fen/h × %d GPUs × %d s at %d‰: %s, want %s", list, count, secs, p1, low[0].Exact, want.RatString())
		}
		if low[0].Exact.Cmp(high[0].Exact) > 0 || high[0].Exact.Cmp(full[0].Exact) > 0 {
			t.Fatalf("share %d‰ costs %s, more than %d‰ (%s) or full (%s)", p1, low[0].Exact, p2, high[0].Exact, full[0].Exact)
		}
	}
}

// book is a default book of one type "t" at hourly list price fen.
func book(t *testing.T, fen int64) *rating.Book {
	t.Helper()
	b, err := rating.DefaultBook([]gpurent.GPUType{{ID: "t", PriceHourlyFen: fen, PriceDailyFen: 20 * fen,
		PriceWeeklyFen: 130 * fen, PriceMonthlyFen: 500 * fen}}, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDegradedPackage(t *testing.T) {
	loc := shanghai(t)
	b := book(t, 1000)
	at := time.Date(2025, 3, 5, 10, 0, 0, 0, loc)
	full, err := rating.RatePackage(b, "t", at, 2, rating.Terms{Plan: gpurent.PlanDaily, GPUCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	deg, err := rating.RatePackage(b, "t", at, 2, rating.Terms{Plan: gpurent.PlanDaily, GPUCount: 3, DegradedBps: 1500})
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Rat).Mul(full.Exact.Rat(), big.NewRat(85, 100))
	if !ratEq(deg.Exact.Rat(), want) {
		t.Fatalf("package at 85%%: %s, want %s", deg.Exact, want.RatString())
	}
}

func TestQuoteShare(t *testing.T) {
	loc := shanghai(t)
	b := book(t, 521)
	// A weekday 10:00: two hours at peak.
	start := time.Date(2025, 3, 5, 10, 0, 0, 0, loc)
	full, err := rating.Quote(b, "t", 2, start, 2*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	q, err := rating.QuoteShare(b, "t", 2, start, 2*time.Hour, false, 850)
	if err != nil {
		t.Fatal(err)
	}
	if q.PricePermille != 850 || len(q.Lines) != 1 || len(q.Packages) != 0 || q.Cheapest != gpurent.PlanHourly {
		t.Fatalf("quote at 85%%: %+v", q)
	}
	l := q.Lines[0]
	// 521 × 0.85 = 442.85 fen/h shown as 443; 2 GPUs × 2 h = 1771.4 → 1771.
	if l.RateFen != 443 || l.ListRateFen != 521 || l.Fen != 1771 || q.HourlyFen != 1771 {
		t.Fatalf("line %+v, hourly %d", l, q.HourlyFen)
	}
	if full.Lines[0].RateFen != 521 || full.Lines[0].ListRateFen != 521 || full.PricePermille != 0 || len(full.Packages) != 3 {
		t.Fatalf("full quote %+v", full)
	}
	same, err := rating.QuoteShare(b, "t", 2, start, 2*time.Hour, false, 1000)
	if err != nil || same.HourlyFen != full.HourlyFen || same.PricePermille != 0 || len(same.Packages) != 3 {
		t.Fatalf("share 1000 is not the full quote: %+v %v", same, err)
	}
	if _, err := rating.QuoteShare(b, "t", 0, start, time.Hour, false, 850); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("no-GPU quote at a share: %v", err)
	}
}
