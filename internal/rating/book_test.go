package rating_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// TestDefaultBook: the documented defaults from the seed's H100 prices.
func TestDefaultBook(t *testing.T) {
	h100 := gpurent.GPUType{ID: "h100-80g-sxm", PriceHourlyFen: 3473, PriceDailyFen: 76667,
		PriceWeeklyFen: 504000, PriceMonthlyFen: 2000000}
	eff := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := rating.DefaultBook([]gpurent.GPUType{h100}, eff)
	if err != nil {
		t.Fatal(err)
	}
	p, vid, err := b.PricesAt("h100-80g-sxm", eff)
	if err != nil {
		t.Fatal(err)
	}
	want := rating.Prices{
		PeakFen: 3473, OffPeakFen: 2432, // ⌈2431.1⌉
		AcademicPeakFen: 2779, AcademicOffPeakFen: 1946, // ⌈2778.4⌉, ⌈1945.6⌉
		DailyFen: 76667, WeeklyFen: 504000, MonthlyFen: 2000000,
		AcademicDailyFen: 61334, AcademicWeeklyFen: 403200, AcademicMonthlyFen: 1600000,
		NoGPUFen: 10,
	}
	if p != want || vid != "default" {
		t.Fatalf("default prices %+v (%s), want %+v", p, vid, want)
	}
	if b.Location().String() != "Asia/Shanghai" {
		t.Fatalf("zone %s", b.Location())
	}
	if _, _, err := b.PricesAt("h100-80g-sxm", eff.Add(-time.Second)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("prices before the first version: %v, want invalid", err)
	}
	if _, _, err := b.PricesAt("nope", eff); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("unknown type: %v, want not_found", err)
	}
	if _, err := rating.DefaultBook([]gpurent.GPUType{h100, h100}, eff); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("repeated type: %v, want invalid", err)
	}
}

// TestBookValidation: bad books, intervals and terms are refused as invalid,
// never rated.
func TestBookValidation(t *testing.T) {
	loc := shanghai(t)
	eff := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	good := flatPrices(1000, 700)
	ver := func(p rating.Prices, mut func(*rating.Version)) rating.Version {
		v := rating.Version{ID: "v", Effective: eff, Rule: rating.DefaultRule(), Types: map[string]rating.Prices{"t": p}}
		if mut != nil {
			mut(&v)
		}
		return v
	}
	bad := map[string][]rating.Version{
		"no versions":          nil,
		"off-peak above peak":  {ver(flatPrices(700, 1000), nil)},
		"negative price":       {ver(rating.Prices{PeakFen: -1}, nil)},
		"price too large":      {ver(rating.Prices{PeakFen: rating.MaxRateFen + 1}, nil)},
		"academic above list":  {ver(rating.Prices{PeakFen: 10, AcademicPeakFen: 11}, nil)},
		"academic package":     {ver(rating.Prices{MonthlyFen: 10, AcademicMonthlyFen: 11}, nil)},
		"sub-second effective": {ver(good, func(v *rating.Version) { v.Effective = eff.Add(time.Millisecond) })},
		"zero effective":       {ver(good, func(v *rating.Version) { v.Effective = time.Time{} })},
		"bad clock":            {ver(good, func(v *rating.Version) { v.Rule.Start = rating.Clock(24, 0, 0) })},
		"empty type id":        {ver(good, func(v *rating.Version) { v.Types[""] = good })},
		"same effective":       {ver(good, nil), ver(good, func(v *rating.Version) { v.ID = "w" })},
		"same id":              {ver(good, nil), ver(good, func(v *rating.Version) { v.Effective = eff.Add(time.Hour) })},
	}
	for name, vs := range bad {
		if _, err := rating.NewBook(loc, vs...); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := rating.NewBook(nil, ver(good, nil)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("no zone: %v, want invalid", err)
	}
	b, err := rating.NewBook(loc, ver(good, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The book keeps its own copy: changing the caller's map changes nothing.
	vs := b.Versions()
	vs[0].Types["t"] = flatPrices(1, 1)
	if p, _, _ := b.PricesAt("t", eff); p != good {
		t.Fatalf("book changed through Versions(): %+v", p)
	}
	x := eff.Add(time.Hour)
	if _, err := rating.Split(b, "t", x, x.Add(-time.Second)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("reversed interval: %v", err)
	}
	if _, err := rating.Split(b, "t", x.Add(time.Nanosecond), x.Add(time.Hour)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("sub-second interval: %v", err)
	}
	if _, err := rating.Split(b, "t", eff.Add(-time.Hour), x); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("interval before any price: %v", err)
	}
	if _, err := rating.Split(b, "nope", x, x.Add(time.Hour)); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("unknown type: %v", err)
	}
	badTerms := []rating.Terms{
		{Plan: "yearly", GPUCount: 1},
		{Plan: gpurent.PlanHourly, GPUCount: -1},
		{Plan: gpurent.PlanHourly, GPUCount: rating.MaxGPUCount + 1},
		{Plan: gpurent.PlanHourly, GPUCount: 1, PromotionBps: -1},
		{Plan: gpurent.PlanHourly, GPUCount: 1, ContractBps: rating.MaxBps + 1},
	}
	seg := rating.Segment{Start: x, End: x.Add(time.Hour), ListFen: 1000}
	for _, tm := range badTerms {
		if _, err := rating.Rate([]rating.Segment{seg}, tm); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("terms %+v: %v, want invalid", tm, err)
		}
	}
	badSegs := []rating.Segment{
		{Start: x, End: x.Add(-time.Second)},
		{Start: x, End: x.Add(time.Second), MinimumTopUp: 60},
		{Start: x, End: x.Add(time.Second), MinimumTopUp: -1},
		{Start: x, End: x.Add(time.Duration(rating.MaxLineSeconds+1) * time.Second)},
		{Start: x, End: x.Add(time.Second), ListFen: rating.MaxRateFen + 1},
		{Start: x, End: x.Add(time.Second), ListFen: -5},
		{Start: x, End: x.Add(1500 * time.Millisecond)},
	}
	for _, s := range badSegs {
		if _, err := rating.Rate([]rating.Segment{s}, hourly(1)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("segment %+v: %v, want invalid", s, err)
		}
	}
}

// TestPackages: package plans rate running time as prepaid, and packages
// themselves with academic prices, discounts and the floor.
func TestPackages(t *testing.T) {
	h100 := gpurent.GPUType{ID: "h100", PriceHourlyFen: 3473, PriceDailyFen: 76667,
		PriceWeeklyFen: 504000, PriceMonthlyFen: 2000000}
	eff := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := rating.DefaultBook([]gpurent.GPUType{h100}, eff)
	if err != nil {
		t.Fatal(err)
	}
	segs, err := rating.Split(b, "h100", eff, eff.Add(50*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	lines := mustRate(t, segs, rating.Terms{Plan: gpurent.PlanMonthly, GPUCount: 4})
	for _, l := range lines {
		if !l.Prepaid || !l.Exact.IsZero() {
			t.Fatalf("package-plan usage line %+v, want prepaid and 0", l)
		}
	}
	cases := []struct {
		terms   rating.Terms
		periods int64
		want    int64
	}{
		{rating.Terms{Plan: gpurent.PlanMonthly, GPUCount: 4}, 2, 16000000},
		{rating.Terms{Plan: gpurent.PlanMonthly, GPUCount: 4, Academic: true}, 1, 6400000},
		// 76,667 × 0.9 = 69,000.3 per GPU-day × 3 = 207,000.9 → 207,001.
		{rating.Terms{Plan: gpurent.PlanDaily, GPUCount: 3, PromotionBps: 1000}, 1, 207001},
		// Academic 403,200 × 0.5 × 0.8 < 504,000 / 2: floored at 252,000.
		{rating.Terms{Plan: gpurent.PlanWeekly, GPUCount: 1, Academic: true, PromotionBps: 5000, ContractBps: 2000}, 1, 252000},
		{rating.Terms{Plan: gpurent.PlanWeekly, GPUCount: 1}, 0, 0},
	}
	for _, c := range cases {
		l, err := rating.RatePackage(b, "h100", eff, c.periods, c.terms)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fen() != c.want {
			t.Errorf("%+v × %d: %d fen (exact %s), want %d", c.terms, c.periods, l.Fen(), l.Exact, c.want)
		}
	}
	for _, tm := range []rating.Terms{{Plan: gpurent.PlanHourly, GPUCount: 1}, {Plan: gpurent.PlanDaily, GPUCount: 0}} {
		if _, err := rating.RatePackage(b, "h100", eff, 1, tm); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("package %+v: %v, want invalid", tm, err)
		}
	}
	if _, err := rating.RatePackage(b, "h100", eff, rating.MaxPackagePeriods+1, rating.Terms{Plan: gpurent.PlanDaily, GPUCount: 1}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("too many periods: %v", err)
	}
}

// TestAmount covers the exact type at its edges.
func TestAmount(t *testing.T) {
	for _, n := range []int64{0, 1, 12345, rating.MaxAmountFen} {
		a, err := rating.AmountOf(n)
		if err != nil {
			t.Fatal(err)
		}
		if a.Floor() != n || a.RoundHalfUp() != n || a.String() != big.NewInt(n).String() {
			t.Errorf("AmountOf(%d): floor %d, round %d, %s", n, a.Floor(), a.RoundHalfUp(), a)
		}
	}
	for _, n := range []int64{-1, rating.MaxAmountFen + 1} {
		if _, err := rating.AmountOf(n); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("AmountOf(%d): %v, want invalid", n, err)
		}
	}
	top, _ := rating.AmountOf(rating.MaxAmountFen)
	one, _ := rating.AmountOf(1)
	if _, err := top.Add(one); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("overflowing sum: %v, want invalid", err)
	}
	two, _ := one.Add(one)
	if two.Cmp(one) != 1 || one.Cmp(two) != -1 || one.Cmp(one) != 0 || two.Floor() != 2 {
		t.Errorf("compare/add broken: %s %s", one, two)
	}
	var zero rating.Amount
	if !zero.IsZero() || zero.String() != "0" {
		t.Errorf("zero value %s", zero)
	}
	// 1 fen/h for 1 s with a 1 bp promotion: 9999/(3600 × 10^4) fen — the
	// smallest step the type must represent exactly.
	x := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := mustRate(t, []rating.Segment{{Start: x, End: x.Add(time.Second), ListFen: 1, AcademicFen: 1}},
		rating.Terms{Plan: gpurent.PlanHourly, GPUCount: 1, PromotionBps: 1})
	if !ratEq(l[0].Exact.Rat(), big.NewRat(9999, 36000000)) {
		t.Errorf("tiny amount %s", l[0].Exact)
	}
	// The largest line the bounds allow stays exact and in range.
	big1 := rating.Segment{Start: x, End: x.Add(time.Duration(rating.MaxLineSeconds) * time.Second),
		ListFen: rating.MaxRateFen, AcademicFen: rating.MaxRateFen}
	l = mustRate(t, []rating.Segment{big1}, hourly(rating.MaxGPUCount))
	want := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(rating.MaxLineSeconds*rating.MaxGPUCount), big.NewInt(rating.MaxRateFen)), big.NewInt(3600))
	if !ratEq(l[0].Exact.Rat(), want) {
		t.Errorf("largest line %s, want %s", l[0].Exact, want.RatString())
	}
}

// TestRuleAndClock covers the rule's edge cases: half-open boundaries, a
// window that does not wrap, weekends off, and no window at all.
func TestRuleAndClock(t *testing.T) {
	loc := shanghai(t)
	r := rating.DefaultRule()
	wed := func(h, m, s int) time.Time { return at(loc, 2025, time.March, 5, h, m, s) }
	for _, c := range []struct {
		t    time.Time
		want bool
	}{
		{wed(21, 59, 59), false}, {wed(22, 0, 0), true}, {wed(7, 59, 59), true}, {wed(8, 0, 0), false},
		{at(loc, 2025, time.March, 7, 23, 59, 59), true}, // Friday night
		{at(loc, 2025, time.March, 8, 12, 0, 0), true},   // Saturday noon
		{at(loc, 2025, time.March, 9, 23, 59, 59), true}, // Sunday
		{at(loc, 2025, time.March, 10, 7, 59, 59), true}, // Monday before 08:00
		{at(loc, 2025, time.March, 10, 8, 0, 0), false},  // Monday 08:00
		// 22:00 Shanghai is 14:00 UTC: the rule is in Shanghai, not UTC.
		{time.Date(2025, 3, 5, 14, 0, 0, 0, time.UTC), true},
		{time.Date(2025, 3, 5, 13, 59, 59, 0, time.UTC), false},
	} {
		if got := r.OffPeakAt(c.t, loc); got != c.want {
			t.Errorf("%s: off-peak %v, want %v", c.t, got, c.want)
		}
	}
	day := rating.Rule{Start: rating.Clock(12, 0, 0), End: rating.Clock(14, 0, 0)}
	if !day.OffPeakAt(wed(12, 0, 0), loc) || day.OffPeakAt(wed(14, 0, 0), loc) || day.OffPeakAt(at(loc, 2025, time.March, 8, 10, 0, 0), loc) {
		t.Error("non-wrapping window without weekends misclassified")
	}
	none := rating.Rule{Start: rating.Clock(8, 0, 0), End: rating.Clock(8, 0, 0)}
	if none.OffPeakAt(wed(8, 0, 0), loc) || none.OffPeakAt(at(loc, 2025, time.March, 8, 10, 0, 0), loc) {
		t.Error("empty window misclassified")
	}
	b, err := rating.NewBook(loc, rating.Version{ID: "v", Effective: wed(0, 0, 0), Rule: none,
		Types: map[string]rating.Prices{"t": flatPrices(100, 50)}})
	if err != nil {
		t.Fatal(err)
	}
	// With no window, only month ends cut: March 5 to April 10 is two segments.
	if segs := mustSplit(t, b, wed(0, 0, 0), at(loc, 2025, time.April, 10, 0, 0, 0)); len(segs) != 2 {
		t.Errorf("segments with no window: %+v", segs)
	}
	if rating.DefaultRule().String() != "22:00–08:00 daily, weekends" || rating.Clock(1, 2, 3).String() != "01:02:03" || rating.Clock(25, 0, 0).String() != "invalid(-1)" {
		t.Errorf("strings: %s %s %s", rating.DefaultRule(), rating.Clock(1, 2, 3), rating.Clock(25, 0, 0))
	}
}
