package rating_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// TestWorkedExample is the reference's worked example: on a weekday, peak
// 521 fen/h and off-peak 365 fen/h, 21:30:00–22:30:30 is 1,800 s at peak
// (1800 × 521 / 3600 = 260.5 fen exactly) and 1,830 s off-peak
// (1830 × 365 / 3600 = 667950/3600 = 185.541666… fen exactly).
func TestWorkedExample(t *testing.T) {
	loc := shanghai(t)
	b := oneTypeBook(t, flatPrices(521, 365))
	start := at(loc, 2025, time.March, 5, 21, 30, 0) // a Wednesday
	end := at(loc, 2025, time.March, 5, 22, 30, 30)
	if start.Weekday() != time.Wednesday {
		t.Fatalf("%s is not a weekday", start)
	}
	segs := mustSplit(t, b, start, end)
	if len(segs) != 2 {
		t.Fatalf("got %d segments, want 2: %+v", len(segs), segs)
	}
	cut := at(loc, 2025, time.March, 5, 22, 0, 0)
	if !segs[0].Start.Equal(start) || !segs[0].End.Equal(cut) || segs[0].OffPeak || segs[0].ListFen != 521 {
		t.Errorf("first segment %+v, want peak [21:30, 22:00) at 521", segs[0])
	}
	if !segs[1].Start.Equal(cut) || !segs[1].End.Equal(end) || !segs[1].OffPeak || segs[1].ListFen != 365 {
		t.Errorf("second segment %+v, want off-peak [22:00, 22:30:30) at 365", segs[1])
	}
	lines := mustRate(t, segs, hourly(1))
	want := []struct {
		secs  int64
		exact *big.Rat
		fen   int64
	}{
		{1800, big.NewRat(521, 2), 261},       // 260.5 → 261 (half up)
		{1830, big.NewRat(667950, 3600), 186}, // 185.541666… → 186
	}
	for i, w := range want {
		l := lines[i]
		if l.Seconds != w.secs || !ratEq(l.Exact.Rat(), w.exact) || l.Fen() != w.fen {
			t.Errorf("line %d: %d s, %s fen exact, %d fen; want %d s, %s, %d",
				i, l.Seconds, l.Exact, l.Fen(), w.secs, w.exact.RatString(), w.fen)
		}
	}
	total := mustTotal(t, lines)
	// 260.5 + 185.541666… = 446.041666… = 1605750/3600.
	if !ratEq(total.Rat(), big.NewRat(1605750, 3600)) {
		t.Errorf("exact total %s, want 1605750/3600", total)
	}
	if got := total.RoundHalfUp(); got != 446 {
		t.Errorf("total rounded once %d, want 446", got)
	}
	if got, _ := rating.SumRounded(lines); got != 447 {
		t.Errorf("sum of rounded lines %d, want 261 + 186 = 447", got)
	}
}

// TestQuoteSeedExample quotes the seed's example: 4 × h100-80g-sxm for 5
// days (120 h) from Monday 2025-03-03 09:00 Asia/Shanghai, with the seed's
// prices: hourly peak 3,473 fen/GPU/h (20,000 CNY / 720 × 1.25, rounded up),
// daily 76,667, weekly 504,000, monthly 2,000,000 fen per GPU.
//
// By hand, with DefaultBook's rules:
//
//	off-peak rate = ⌈3473 × 0.7⌉ = ⌈2431.1⌉ = 2,432 fen/GPU/h
//	the 120 h run to Saturday 2025-03-08 09:00:
//	  peak:     Mon 09–22 (13 h) + Tue, Wed, Thu, Fri 08–22 (4 × 14 h) = 69 h
//	  off-peak: four nights 22–08 (4 × 10 h) + Fri 22:00 – Sat 09:00 (11 h) = 51 h
//	  peak     69 h × 3,473 × 4 = 69 × 13,892 = 958,548 fen
//	  off-peak 51 h × 2,432 × 4 = 51 ×  9,728 = 496,128 fen
//	  total                                   1,454,676 fen (14,546.76 CNY)
//	packages: daily 5 days × 4 × 76,667 = 1,533,340; weekly 1 × 4 × 504,000 =
//	  2,016,000; monthly 1 × 4 × 2,000,000 = 8,000,000 → hourly is cheapest.
//
// Academic (DefaultBook: ⌈list × 80%⌉): peak ⌈2778.4⌉ = 2,779, off-peak
// ⌈2432 × 0.8⌉ = ⌈1945.6⌉ = 1,946: 69 × 2,779 × 4 = 767,004 and
// 51 × 1,946 × 4 = 396,984, total 1,163,988 fen.
func TestQuoteSeedExample(t *testing.T) {
	loc := shanghai(t)
	h100 := gpurent.GPUType{ID: "h100-80g-sxm", PriceHourlyFen: 3473, PriceDailyFen: 76667,
		PriceWeeklyFen: 504000, PriceMonthlyFen: 2000000}
	b, err := rating.DefaultBook([]gpurent.GPUType{h100}, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	start := at(loc, 2025, time.March, 3, 9, 0, 0)
	if start.Weekday() != time.Monday {
		t.Fatalf("%s is not a Monday", start)
	}
	q, err := rating.Quote(b, "h100-80g-sxm", 4, start, 120*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Lines) != 2 {
		t.Fatalf("quote lines %+v, want a peak and an off-peak line", q.Lines)
	}
	peak, off := q.Lines[0], q.Lines[1]
	if peak.OffPeak || peak.Hours() != "69" || peak.RateFen != 3473 || peak.Units != 4 || peak.Fen != 958548 {
		t.Errorf("peak line %+v (%s h), want 69 h × 3473 × 4 = 958548", peak, peak.Hours())
	}
	if !off.OffPeak || off.Hours() != "51" || off.RateFen != 2432 || off.Fen != 496128 {
		t.Errorf("off-peak line %+v (%s h), want 51 h × 2432 × 4 = 496128", off, off.Hours())
	}
	if q.HourlyFen != 1454676 {
		t.Errorf("hourly total %d, want 1454676", q.HourlyFen)
	}
	wantPk := []rating.PackageOption{
		{Plan: gpurent.PlanDaily, Periods: 5, UnitFen: 76667, TotalFen: 1533340},
		{Plan: gpurent.PlanWeekly, Periods: 1, UnitFen: 504000, TotalFen: 2016000},
		{Plan: gpurent.PlanMonthly, Periods: 1, UnitFen: 2000000, TotalFen: 8000000},
	}
	if len(q.Packages) != len(wantPk) {
		t.Fatalf("packages %+v, want %+v", q.Packages, wantPk)
	}
	for i := range wantPk {
		if q.Packages[i] != wantPk[i] {
			t.Errorf("package %d: %+v, want %+v", i, q.Packages[i], wantPk[i])
		}
	}
	if q.Cheapest != gpurent.PlanHourly || q.CheapestFen != 1454676 {
		t.Errorf("cheapest %s at %d, want hourly at 1454676", q.Cheapest, q.CheapestFen)
	}

	qa, err := rating.Quote(b, "h100-80g-sxm", 4, start, 120*time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	if qa.Lines[0].RateFen != 2779 || qa.Lines[0].Fen != 767004 || qa.Lines[1].RateFen != 1946 ||
		qa.Lines[1].Fen != 396984 || qa.HourlyFen != 1163988 {
		t.Errorf("academic quote %+v, want 767004 + 396984 = 1163988", qa.Lines)
	}
	if qa.Packages[0].UnitFen != 61334 { // ⌈76667 × 0.8⌉ = ⌈61333.6⌉
		t.Errorf("academic daily unit %d, want 61334", qa.Packages[0].UnitFen)
	}
}

// TestQuoteCheapestPackage: 30 days of 8 GPUs are cheaper on the monthly
// package than per hour (even with off-peak nights and weekends), and the
// quote says so.
func TestQuoteCheapestPackage(t *testing.T) {
	loc := shanghai(t)
	h100 := gpurent.GPUType{ID: "h100", PriceHourlyFen: 3473, PriceDailyFen: 76667,
		PriceWeeklyFen: 504000, PriceMonthlyFen: 2000000}
	b, err := rating.DefaultBook([]gpurent.GPUType{h100}, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	q, err := rating.Quote(b, "h100", 8, at(loc, 2025, time.March, 3, 0, 0, 0), 30*24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	// Monthly: 8 × 2,000,000 = 16,000,000; weekly: 5 × 8 × 504,000 =
	// 20,160,000; daily: 30 × 8 × 76,667 = 18,400,080.
	if q.Cheapest != gpurent.PlanMonthly || q.CheapestFen != 16000000 || q.HourlyFen <= 16000000 {
		t.Errorf("cheapest %s at %d (hourly %d), want monthly at 16000000", q.Cheapest, q.CheapestFen, q.HourlyFen)
	}
	if q.Packages[1].Periods != 5 || q.Packages[1].TotalFen != 20160000 || q.Packages[0].TotalFen != 18400080 {
		t.Errorf("packages %+v", q.Packages)
	}
	// No-GPU mode has no package alternatives and bills the token price:
	// 2 h × 10 fen.
	q0, err := rating.Quote(b, "h100", 0, at(loc, 2025, time.March, 3, 12, 0, 0), 2*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(q0.Packages) != 0 || q0.HourlyFen != 20 || !q0.Lines[0].NoGPU {
		t.Errorf("no-GPU quote %+v, want 20 fen and no packages", q0)
	}
}
