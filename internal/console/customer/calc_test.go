package customer

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rating"
)

// calcSeedInput is the seed's H100 server: 8 GPUs around the clock for a
// year, at the catalog's default H100 prices (monthly ¥20,000; hourly
// ⌈20,000 / 720 × 1.25⌉ = ¥34.73; off-peak ⌈34.73 × 70%⌉ = ¥24.32), all
// peak, and the calculator's defaults on the buy side.
func calcSeedInput() rentOrBuyInput {
	return rentOrBuyInput{Count: 8, HoursTenths: 240, Months: 12,
		PeakFen: 3473, OffPeakFen: 2432, MonthlyFen: 2_000_000, OffPeakPercent: 0,
		GPUPriceFen: 300_000_00, ServerPriceFen: 2_600_000_00, Watts: 700, KWhFen: 80,
		HostingFen: 3000_00, DepreciationYears: 3, ResalePercent: 20}
}

// TestRentOrBuySeedServer checks every line of the seed's example by hand.
func TestRentOrBuySeedServer(t *testing.T) {
	r := rentOrBuy(calcSeedInput())
	want := rentOrBuyResult{
		GPUHoursTenths: 8 * 240 * 360, // 69,120 GPU-hours
		Servers:        1,
		RentHourlyFen:  69_120 * 3473,             // ¥2,400,537.60
		RentPackageFen: 8 * 12 * 2_000_000,        // ¥1,920,000.00
		RentFen:        8 * 12 * 2_000_000,        // the package is cheaper
		RentPackage:    true,                      //
		CapexFen:       8*300_000_00 + 200_000_00, // 8 GPUs and the rest of one server
		ResaleFen:      52_000_000,                // 20%
		// (260,000,000 − 52,000,000) × 12 / 36 = 69,333,333.33…
		DepreciationFen: 69_333_333,
		PowerFen:        69_120 * 700 * 80 / 1000, // 69,120 h × 0.7 kW × ¥0.80
		HostingFen:      12 * 3000_00,
	}
	want.BuyFen = want.DepreciationFen + want.PowerFen + want.HostingFen
	want.BuyCheaper = true
	// Buying wins from where its cost meets the hourly plan's, up to 24 h
	// (the package caps renting at ¥1.92 million; buying stays below).
	want.BreakEvenFrom, want.BreakEvenTo = r.BreakEvenFrom, calcMaxHoursTenths
	if r != want {
		t.Fatalf("got  %+v\nwant %+v", r, want)
	}
	// Break-even by hand: buying costs D + H + p·x and renting hourly r·x
	// for x GPU-hours; x = (D + H) / (r − p) with p = 0.7 kW × 80 fen =
	// 56 fen: (69,333,333 + 3,600,000) / (3473 − 56) = 21,344.7 GPU-hours
	// = 7.4 h a day over 8 GPUs × 360 days; the first tenth at or above is
	// 7.5 (7.4 falls just short).
	if r.BreakEvenFrom != 75 {
		t.Fatalf("break-even from %s h/day, want 7.5", calcFormatTenths(r.BreakEvenFrom))
	}
}

func TestRentOrBuyServersAndCapex(t *testing.T) {
	in := calcSeedInput()
	for _, c := range []struct {
		count   int
		servers int64
	}{{1, 1}, {8, 1}, {9, 2}, {16, 2}, {17, 3}} {
		in.Count = c.count
		r := rentOrBuy(in)
		if r.Servers != c.servers {
			t.Errorf("%d GPUs: %d servers, want %d", c.count, r.Servers, c.servers)
		}
		if want := int64(c.count)*in.GPUPriceFen + c.servers*200_000_00; r.CapexFen != want {
			t.Errorf("%d GPUs: capex %d, want %d", c.count, r.CapexFen, want)
		}
	}
	// A server cheaper than its GPUs adds nothing (never a negative rest).
	in.Count, in.ServerPriceFen = 8, 1
	if r := rentOrBuy(in); r.CapexFen != 8*in.GPUPriceFen {
		t.Fatalf("capex %d with a server price below its GPUs", r.CapexFen)
	}
}

// calcRandomInput draws an input inside the calculator's bounds, with
// off-peak never dearer than peak (the price book's rule).
func calcRandomInput(rng *rand.Rand) rentOrBuyInput {
	peak := 1 + rng.Int64N(20_000)
	return rentOrBuyInput{
		Count: 1 + rng.IntN(64), HoursTenths: 1 + rng.IntN(calcMaxHoursTenths), Months: 1 + rng.IntN(calcMaxMonths),
		PeakFen: peak, OffPeakFen: rng.Int64N(peak + 1), MonthlyFen: rng.Int64N(5_000_000), OffPeakPercent: rng.IntN(101),
		GPUPriceFen: rng.Int64N(50_000_000), ServerPriceFen: rng.Int64N(500_000_000), Watts: 1 + rng.IntN(calcMaxWatts),
		KWhFen: rng.Int64N(300), HostingFen: rng.Int64N(2_000_000), DepreciationYears: 2 + rng.IntN(2),
		ResalePercent: rng.IntN(calcMaxResalePct + 1),
	}
}

// TestRentOrBuyProperties holds the calculator to what must be true for
// any figures.
func TestRentOrBuyProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 2026))
	for i := 0; i < 400; i++ {
		in := calcRandomInput(rng)
		r := rentOrBuy(in)
		if r.BuyFen != r.DepreciationFen+r.PowerFen+r.HostingFen || r.RentFen != min(r.RentHourlyFen, r.RentPackageFen) {
			t.Fatalf("%+v: totals are not the sums of their lines: %+v", in, r)
		}
		if r.BuyCheaper != (r.BuyFen < r.RentFen) {
			t.Fatalf("%+v: verdict disagrees with the totals", in)
		}
		// Every line is its exact value rounded once: within half a fen.
		exactPower := new(big.Rat).SetFrac(calcMul(r.GPUHoursTenths, int64(in.Watts), in.KWhFen), big.NewInt(10_000))
		if d := new(big.Rat).Sub(exactPower, new(big.Rat).SetInt64(r.PowerFen)); d.Abs(d).Cmp(big.NewRat(1, 2)) > 0 {
			t.Fatalf("%+v: power %d fen is not the exact %s rounded", in, r.PowerFen, exactPower.FloatString(3))
		}

		// A longer project never costs less, on either side, and never
		// makes buying dearer per hour worked (its fixed cost spreads
		// over more hours; depreciation stops after the period). Each
		// total carries at most 1.5 fen of rounding.
		longer := in
		longer.Months = in.Months + 1 + rng.IntN(12)
		l := rentOrBuy(longer)
		if l.BuyFen < r.BuyFen || l.RentHourlyFen < r.RentHourlyFen || l.RentPackageFen < r.RentPackageFen {
			t.Fatalf("%+v: a longer project (%d months) costs less: %+v vs %+v", in, longer.Months, l, r)
		}
		m1, m2 := int64(in.Months), int64(longer.Months)
		if l.BuyFen*m1 > r.BuyFen*m2+2*(m1+m2) {
			t.Fatalf("%+v: buying per hour grows with the project: %d over %d months vs %d over %d", in, l.BuyFen, m2, r.BuyFen, m1)
		}

		// More hours a day never make either side cheaper; more of them
		// off-peak never make renting dearer.
		busier := in
		busier.HoursTenths = min(calcMaxHoursTenths, in.HoursTenths+1+rng.IntN(40))
		b := rentOrBuy(busier)
		if b.BuyFen < r.BuyFen || b.RentHourlyFen < r.RentHourlyFen || b.RentPackageFen != r.RentPackageFen {
			t.Fatalf("%+v: more hours cost less: %+v vs %+v", in, b, r)
		}
		offer := in
		offer.OffPeakPercent = min(100, in.OffPeakPercent+1+rng.IntN(30))
		if o := rentOrBuy(offer); o.RentHourlyFen > r.RentHourlyFen {
			t.Fatalf("%+v: more off-peak hours cost more: %d vs %d", in, o.RentHourlyFen, r.RentHourlyFen)
		}

		// The break-even range is where buying costs no more than renting,
		// and just outside it renting is cheaper.
		at := func(h int) rentOrBuyResult { x := in; x.HoursTenths = h; return rentOrBuy(x) }
		if r.BreakEvenFrom < 0 {
			if r.BreakEvenTo != -1 {
				t.Fatalf("%+v: a range with no start", in)
			}
			for _, h := range []int{1, 60, 120, 240} {
				if x := at(h); x.BuyFen <= x.RentFen {
					t.Fatalf("%+v: no break-even, yet buying is not dearer at %d tenths", in, h)
				}
			}
			continue
		}
		for _, h := range []int{r.BreakEvenFrom, r.BreakEvenTo, (r.BreakEvenFrom + r.BreakEvenTo) / 2} {
			if x := at(h); x.BuyFen > x.RentFen {
				t.Fatalf("%+v: buying dearer at %d tenths inside the range [%d, %d]", in, h, r.BreakEvenFrom, r.BreakEvenTo)
			}
		}
		if h := r.BreakEvenFrom - 1; h >= 1 {
			if x := at(h); x.BuyFen <= x.RentFen {
				t.Fatalf("%+v: buying not dearer just below the range at %d", in, h)
			}
		}
		if h := r.BreakEvenTo + 1; h <= calcMaxHoursTenths {
			if x := at(h); x.BuyFen <= x.RentFen {
				t.Fatalf("%+v: buying not dearer just above the range at %d", in, h)
			}
		}
	}
}

// TestRentOrBuySeries: the chart's lines start at nothing, never fall,
// and end at the project's totals.
func TestRentOrBuySeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 100; i++ {
		in := calcRandomInput(rng)
		s := rentOrBuySeries(in)
		if len(s.Months) != in.Months+1 || s.Months[0] != 0 || s.Buy[0] != 0 || s.RentHourly[0] != 0 || s.RentPkg[0] != 0 {
			t.Fatalf("%+v: series does not start at month 0 with nothing spent: %+v", in, s)
		}
		for m := 1; m <= in.Months; m++ {
			if s.Buy[m] < s.Buy[m-1] || s.RentHourly[m] < s.RentHourly[m-1] || s.RentPkg[m] < s.RentPkg[m-1] {
				t.Fatalf("%+v: a line falls at month %d", in, m)
			}
		}
		r := rentOrBuy(in)
		if s.Buy[in.Months] != r.BuyFen || s.RentHourly[in.Months] != r.RentHourlyFen || s.RentPkg[in.Months] != r.RentPackageFen {
			t.Fatalf("%+v: series ends elsewhere than the totals", in)
		}
	}
}

func TestCalcOffPeakAllDay(t *testing.T) {
	for _, c := range []struct {
		rule rating.Rule
		want int
	}{
		{rating.DefaultRule(), 58}, // (5 × 10 h + 2 × 24 h) / 168 h = 58.3%
		{rating.Rule{Start: rating.Clock(22, 0, 0), End: rating.Clock(8, 0, 0)}, 42},
		{rating.Rule{Start: rating.Clock(1, 0, 0), End: rating.Clock(7, 0, 0)}, 25},
		{rating.Rule{Weekends: true}, 29},
		{rating.Rule{}, 0},
	} {
		if got := calcOffPeakAllDay(c.rule); got != c.want {
			t.Errorf("%s: %d%%, want %d%%", c.rule, got, c.want)
		}
	}
}

func TestCalcParseYuan(t *testing.T) {
	for _, c := range []struct {
		in  string
		fen int64
		ok  bool
	}{
		{"300000", 300_000_00, true}, {"2,600,000", 2_600_000_00, true}, {"0.8", 80, true}, {".5", 50, true},
		{"¥1,234.56", 123_456, true}, {"￥12", 1200, true}, {" 7. ", 700, true}, {"0", 0, true},
		{"", 0, false}, {".", 0, false}, {"-5", 0, false}, {"1.234", 0, false}, {"1e5", 0, false},
		{"abc", 0, false}, {"1.2.3", 0, false}, {"9999999999999", 0, false},
	} {
		fen, ok := calcParseYuan(c.in)
		if ok != c.ok || fen != c.fen {
			t.Errorf("calcParseYuan(%q) = %d, %v; want %d, %v", c.in, fen, ok, c.fen, c.ok)
		}
	}
	// What the form writes, it reads back.
	for _, fen := range []int64{0, 1, 5, 10, 80, 99, 100, 123_456, 300_000_00, 2_600_000_05} {
		if got, ok := calcParseYuan(money.Short(fen)); !ok || got != fen {
			t.Errorf("%d fen → %q → %d, %v", fen, money.Short(fen), got, ok)
		}
	}
}

func TestCalcParseTenths(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{{"8", 80, true}, {"8.5", 85, true}, {"0.1", 1, true}, {"24", 240, true}, {"", 0, false},
		{"8.", 0, false}, {".5", 0, false}, {"8.25", 0, false}, {"-1", 0, false}, {"x", 0, false}} {
		got, ok := calcParseTenths(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("calcParseTenths(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, n := range []int{1, 10, 75, 240} {
		if got, _ := calcParseTenths(calcFormatTenths(n)); got != n {
			t.Errorf("%d tenths round trip gave %d", n, got)
		}
	}
}

func TestCalcGroup(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "69120": "69,120",
		"1234567.5": "1,234,567.5", "100000": "100,000"} {
		if got := calcGroup(in); got != want {
			t.Errorf("calcGroup(%q) = %q, want %q", in, got, want)
		}
	}
}
