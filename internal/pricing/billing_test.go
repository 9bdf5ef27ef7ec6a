package pricing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

var shanghai = func() *time.Location {
	loc, err := rating.LoadBillingZone()
	if err != nil {
		panic(err)
	}
	return loc
}()

func newService(t *testing.T, now time.Time) (*pricing.Service, gpurent.Store) {
	t.Helper()
	st := storetest.SQLite(t)
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, gt := range c.GPUTypes {
		if err := st.UpsertGPUType(context.Background(), gt); err != nil {
			t.Fatal(err)
		}
	}
	return pricing.New(pricing.Config{Store: st, Now: func() time.Time { return now }}), st
}

// The seed's example: 4 x H100 for 5 days, from Tuesday 2026-12-01 09:00 in
// Chengdu. By hand: peak hours are Tue 09–22 (13), Wed, Thu, Fri 08–22 (14
// each) = 55 h; off-peak the nights (3 x 10 h), Fri 22–24 (2), Saturday (24)
// and Sunday 00–09 (9) = 65 h. Peak 3,473 fen/GPU-h (catalog), off-peak
// ⌈3,473 × 70%⌉ = 2,432: 55 × 3,473 × 4 = 764,060 and 65 × 2,432 × 4 =
// 632,320, total 1,396,380 fen = ¥13,963.80. Academic: ⌈3,473 × 80%⌉ =
// 2,779 and ⌈2,432 × 80%⌉ = 1,946: 611,380 + 505,960 = 1,117,340.
// Packages: daily ⌈2,000,000 × 1.15 / 30⌉ = 76,667 x 5 x 4 = 1,533,340;
// weekly 504,000 x 1 x 4 = 2,016,000; monthly 2,000,000 x 4 = 8,000,000.
func TestQuoteSeedExample(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, shanghai)
	s, _ := newService(t, start.Add(-time.Hour))
	q, err := s.Quote(context.Background(), nil, pricing.QuoteRequest{TypeID: "h100-80g-sxm", Count: 4, Start: start, Duration: 120 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var peak, off int64
	for _, l := range q.List.Lines {
		if l.OffPeak {
			off += l.Fen
			if l.RateFen != 2432 || l.Units != 4 {
				t.Errorf("off-peak line %+v", l)
			}
		} else {
			peak += l.Fen
			if l.RateFen != 3473 {
				t.Errorf("peak line %+v", l)
			}
		}
	}
	if peak != 764_060 || off != 632_320 || q.List.HourlyFen != 1_396_380 {
		t.Errorf("hourly: peak %d off-peak %d total %d; want 764060, 632320, 1396380", peak, off, q.List.HourlyFen)
	}
	if q.Academic.HourlyFen != 1_117_340 {
		t.Errorf("academic total %d, want 1117340", q.Academic.HourlyFen)
	}
	want := map[gpurent.Plan]int64{gpurent.PlanDaily: 1_533_340, gpurent.PlanWeekly: 2_016_000, gpurent.PlanMonthly: 8_000_000}
	for _, p := range q.List.Packages {
		if p.TotalFen != want[p.Plan] {
			t.Errorf("%s package: %d, want %d", p.Plan, p.TotalFen, want[p.Plan])
		}
	}
	if q.List.Cheapest != gpurent.PlanHourly || q.List.CheapestFen != 1_396_380 {
		t.Errorf("cheapest: %s %d", q.List.Cheapest, q.List.CheapestFen)
	}
	if q.Rule.String() == "" || q.AcademicApplies {
		t.Errorf("rule %q, academic applies %v", q.Rule, q.AcademicApplies)
	}
}

func TestQuoteRefusals(t *testing.T) {
	s, _ := newService(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for name, r := range map[string]pricing.QuoteRequest{
		"unknown type":  {TypeID: "b200", Count: 1, Duration: time.Hour},
		"count 9":       {TypeID: "h100-80g-sxm", Count: 9, Duration: time.Hour},
		"negative":      {TypeID: "h100-80g-sxm", Count: -1, Duration: time.Hour},
		"no duration":   {TypeID: "h100-80g-sxm", Count: 1},
		"two years":     {TypeID: "h100-80g-sxm", Count: 1, Duration: 2 * 366 * 24 * time.Hour},
		"half a second": {TypeID: "h100-80g-sxm", Count: 1, Duration: 1500 * time.Millisecond},
	} {
		if _, err := s.Quote(context.Background(), nil, r); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func TestPriceVersions(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s, st := newService(t, now)
	ctx := context.Background()
	vs, err := s.Versions(ctx)
	if err != nil || len(vs) != 1 {
		t.Fatalf("seeded versions: %v %v", vs, err)
	}
	next := vs[0]
	next.ID = "2027-h100-cut"
	next.Effective = now.Add(24 * time.Hour)
	next.Types = map[string]rating.Prices{}
	for id, p := range vs[0].Types {
		next.Types[id] = p
	}
	h := next.Types["h100-80g-sxm"]
	h.PeakFen, h.OffPeakFen, h.AcademicPeakFen, h.AcademicOffPeakFen = 3000, 2000, 2400, 1600
	next.Types["h100-80g-sxm"] = h

	customer := &gpurent.Account{ID: "acc-c", Role: gpurent.RoleCustomer}
	operator := &gpurent.Account{ID: "acc-o", Role: gpurent.RoleOperator}
	if _, err := s.AddVersion(ctx, customer, next, "cut"); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("customer sets prices: %v", err)
	}
	past := next
	past.Effective = now.Add(-time.Hour)
	if _, err := s.AddVersion(ctx, operator, past, "backdated"); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("backdated version: %v, want invalid", err)
	}
	missing := next
	missing.Types = map[string]rating.Prices{"h100-80g-sxm": h}
	if _, err := s.AddVersion(ctx, operator, missing, "partial"); !gpurent.IsCode(err, gpurent.CodeInvalid) ||
		!strings.Contains(gpurent.ErrorMessage(err), "missing") {
		t.Errorf("partial list: %v", err)
	}
	if _, err := s.AddVersion(ctx, operator, next, "cut"); err != nil {
		t.Fatal(err)
	}
	stored, err := st.PriceVersions(ctx)
	if err != nil || len(stored) != 2 || stored[1].CreatedBy != operator.ID || stored[1].Note != "cut" {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	// A quote across the change: one peak hour before, one after.
	start := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC) // 07:00 Dec 2 in Chengdu: off-peak, then peak
	q, err := s.Quote(ctx, nil, pricing.QuoteRequest{TypeID: "h100-80g-sxm", Count: 1, Start: start, Duration: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, l := range q.List.Lines {
		got = append(got, l.RateFen)
	}
	if len(got) != 2 || !(got[0] == 3000 || got[1] == 3000) || !(got[0] == 2432 || got[1] == 2432) {
		t.Errorf("rates across the change: %v; want the old off-peak 2432 and the new peak 3000", got)
	}
	// A new service on the same store reads the same book.
	again := pricing.New(pricing.Config{Store: st, Now: func() time.Time { return now }})
	if vs, err := again.Versions(ctx); err != nil || len(vs) != 2 || vs[1].ID != "2027-h100-cut" {
		t.Errorf("reread: %+v %v", vs, err)
	}
}

func TestDecodeVersion(t *testing.T) {
	b, err := rating.DefaultBook([]gpurent.GPUType{{ID: "x", PriceHourlyFen: 100, PriceDailyFen: 2000, PriceWeeklyFen: 12000, PriceMonthlyFen: 40000}},
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := pricing.EncodeVersion(b.Versions()[0])
	if err != nil {
		t.Fatal(err)
	}
	v, err := pricing.DecodeVersion(doc)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := pricing.EncodeVersion(v); string(again) != string(doc) {
		t.Errorf("round trip:\n%s\n%s", doc, again)
	}
	for name, bad := range map[string]string{
		"not json":      `{`,
		"unknown field": strings.Replace(string(doc), `"id"`, `"idx"`, 1),
		"bad clock":     strings.Replace(string(doc), `"22:00"`, `"25:00"`, 1),
		"clock format":  strings.Replace(string(doc), `"22:00"`, `"10pm"`, 1),
		"no types":      `{"id":"a","effective":"2026-01-01T00:00:00Z","off_peak":{"start":"22:00","end":"08:00"},"gpu_types":{}}`,
		"negative":      strings.Replace(string(doc), `"peak_fen":100`, `"peak_fen":-1`, 1),
	} {
		if _, err := pricing.DecodeVersion([]byte(bad)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func FuzzDecodeVersion(f *testing.F) {
	f.Add([]byte(`{"id":"a","effective":"2026-01-01T00:00:00Z","off_peak":{"start":"22:00","end":"08:00","weekends":true},"gpu_types":{"x":{"peak_fen":100,"off_peak_fen":70}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := pricing.DecodeVersion(b)
		if err != nil {
			if gpurent.ErrorCode(err) != gpurent.CodeInvalid {
				t.Fatalf("decoder error of code %s: %v", gpurent.ErrorCode(err), err)
			}
			return
		}
		doc, err := pricing.EncodeVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pricing.DecodeVersion(doc); err != nil {
			t.Fatalf("re-decoding an accepted version: %v", err)
		}
	})
}

// A quote of GPUs listed as degraded: an hour of 2 × H100 at peak (3,473
// fen/GPU-h) at 850‰ is 2 × 3,473 × 0.85 = 5,904.1 → 5,904 fen; hourly
// only, so no package is offered.
func TestQuoteDegradedShare(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, shanghai)
	s, _ := newService(t, start.Add(-time.Hour))
	q, err := s.Quote(context.Background(), nil, pricing.QuoteRequest{TypeID: "h100-80g-sxm", Count: 2, Start: start,
		Duration: time.Hour, PricePermille: 850})
	if err != nil {
		t.Fatal(err)
	}
	if q.List.HourlyFen != 5_904 || q.List.PricePermille != 850 || len(q.List.Packages) != 0 {
		t.Fatalf("degraded quote: %d fen at %d‰ with %d packages; want 5904 at 850 with none",
			q.List.HourlyFen, q.List.PricePermille, len(q.List.Packages))
	}
	full, err := s.Quote(context.Background(), nil, pricing.QuoteRequest{TypeID: "h100-80g-sxm", Count: 2, Start: start, Duration: time.Hour})
	if err != nil || full.List.HourlyFen != 6_946 {
		t.Fatalf("full price: %+v %v", full.List.HourlyFen, err)
	}
	for name, r := range map[string]pricing.QuoteRequest{
		"share above 1000": {TypeID: "h100-80g-sxm", Count: 1, Duration: time.Hour, PricePermille: 1001},
		"negative share":   {TypeID: "h100-80g-sxm", Count: 1, Duration: time.Hour, PricePermille: -1},
		"share of no GPU":  {TypeID: "h100-80g-sxm", Count: 0, Duration: time.Hour, PricePermille: 850},
	} {
		if _, err := s.Quote(context.Background(), nil, r); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}
