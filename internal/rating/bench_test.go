package rating_test

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// benchSegments splits 31 days of usage of an H100 under the default book,
// with a price change on the 15th: about 66 real segments.
func benchSegments(b *testing.B) []rating.Segment {
	loc := shanghai(b)
	eff := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h100 := gpurent.GPUType{ID: "t", PriceHourlyFen: 3473, PriceDailyFen: 76667, PriceWeeklyFen: 504000, PriceMonthlyFen: 2000000}
	book, err := rating.DefaultBook([]gpurent.GPUType{h100}, eff)
	if err != nil {
		b.Fatal(err)
	}
	book, err = book.Amend(rating.Version{ID: "v2", Effective: at(loc, 2025, time.March, 15, 12, 34, 56),
		Rule: rating.DefaultRule(), Types: map[string]rating.Prices{"t": rating.DefaultPrices(h100)}}, eff)
	if err != nil {
		b.Fatal(err)
	}
	segs, err := rating.Split(book, "t", at(loc, 2025, time.March, 1, 0, 0, 0), at(loc, 2025, time.April, 1, 0, 0, 0))
	if err != nil {
		b.Fatal(err)
	}
	return segs
}

// BenchmarkRate measures the pure rating function (academic, promotion and
// contract discounts, the floor check and the exact 128-bit amount) in
// segments per second on one goroutine. Goal: ≥ 1,000,000 segments/s.
func BenchmarkRate(b *testing.B) {
	segs := benchSegments(b)
	terms := rating.Terms{Plan: gpurent.PlanHourly, GPUCount: 8, Academic: true, PromotionBps: 1500, ContractBps: 500}
	lines := make([]rating.Line, 0, len(segs))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		lines, err = rating.AppendRate(lines[:0], segs, terms)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)*float64(len(segs))/b.Elapsed().Seconds(), "segments/s")
}

// BenchmarkSplit measures cutting a month of usage into segments, in
// segments per second.
func BenchmarkSplit(b *testing.B) {
	loc := shanghai(b)
	book := oneTypeBook(b, flatPrices(3473, 2432))
	start, end := at(loc, 2025, time.March, 1, 0, 0, 0), at(loc, 2025, time.April, 1, 0, 0, 0)
	segs, err := rating.Split(book, "t", start, end)
	if err != nil {
		b.Fatal(err)
	}
	n := len(segs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if segs, err = rating.AppendSplit(segs[:0], book, "t", start, end); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds(), "segments/s")
}

// BenchmarkQuote measures a full quote of the seed example (4 GPUs, 120 h).
func BenchmarkQuote(b *testing.B) {
	loc := shanghai(b)
	h100 := gpurent.GPUType{ID: "t", PriceHourlyFen: 3473, PriceDailyFen: 76667, PriceWeeklyFen: 504000, PriceMonthlyFen: 2000000}
	book, err := rating.DefaultBook([]gpurent.GPUType{h100}, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		b.Fatal(err)
	}
	start := at(loc, 2025, time.March, 3, 9, 0, 0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := rating.Quote(book, "t", 4, start, 120*time.Hour, false); err != nil {
			b.Fatal(err)
		}
	}
}
