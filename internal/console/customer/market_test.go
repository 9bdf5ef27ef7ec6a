package customer

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/benchjudge"
	gpucatalog "github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
)

// marketTestBook is the default price book of the default catalog.
func marketTestBook(t *testing.T) (*rating.Book, *time.Location) {
	t.Helper()
	c, err := gpucatalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := rating.DefaultBook(c.GPUTypes, time.Unix(0, 0).UTC())
	if err != nil {
		t.Fatal(err)
	}
	loc, err := rating.LoadBillingZone()
	if err != nil {
		t.Fatal(err)
	}
	return b, loc
}

// marketTestQuotes is what the billing service's Quote answers, made from
// the same pure rating functions.
func marketTestQuotes(t *testing.T, b *rating.Book, typeID string, count int, start time.Time, d time.Duration, academic bool) *pricing.Quotes {
	t.Helper()
	list, err := rating.Quote(b, typeID, count, start, d, false)
	if err != nil {
		t.Fatal(err)
	}
	acad, err := rating.Quote(b, typeID, count, start, d, true)
	if err != nil {
		t.Fatal(err)
	}
	return &pricing.Quotes{List: list, Academic: acad, AcademicApplies: academic, Rule: rating.DefaultRule()}
}

// TestMarketPriceNowBadge: the price now and the off-peak badge follow
// the window the instant is in (22:00–08:00 and weekends, Beijing time),
// also when the next hour crosses a boundary.
func TestMarketPriceNowBadge(t *testing.T) {
	b, loc := marketTestBook(t)
	const h100Peak, h100Off, h100AcadPeak, h100AcadOff = 3473, 2432, 2779, 1946
	for _, c := range []struct {
		name    string
		at      time.Time
		offPeak bool
	}{
		{"tuesday morning", time.Date(2026, 12, 1, 10, 0, 0, 0, loc), false},
		{"tuesday late", time.Date(2026, 12, 1, 23, 0, 0, 0, loc), true},
		{"half an hour before the window", time.Date(2026, 12, 1, 21, 30, 0, 0, loc), false},
		{"at the window's start", time.Date(2026, 12, 1, 22, 0, 0, 0, loc), true},
		{"half an hour before it ends", time.Date(2026, 12, 2, 7, 30, 0, 0, loc), true},
		{"at its end", time.Date(2026, 12, 2, 8, 0, 0, 0, loc), false},
		{"saturday noon", time.Date(2026, 12, 5, 12, 0, 0, 0, loc), true},
	} {
		q := marketTestQuotes(t, b, "h100-80g-sxm", 1, c.at, time.Hour, false)
		mq := marketPriceNow(q, c.at, loc)
		wantNow, wantAcad := int64(h100Peak), int64(h100AcadPeak)
		if c.offPeak {
			wantNow, wantAcad = h100Off, h100AcadOff
		}
		if mq.OffPeak != c.offPeak || mq.NowFen != wantNow || mq.AcademicNowFen != wantAcad {
			t.Errorf("%s: off-peak %v, now %d, academic %d; want %v, %d, %d", c.name, mq.OffPeak, mq.NowFen,
				mq.AcademicNowFen, c.offPeak, wantNow, wantAcad)
		}
		if len(mq.Packages) != 3 || mq.Packages[2].Plan != gpurent.PlanMonthly || mq.Packages[2].UnitFen != 2_000_000 ||
			mq.Packages[2].AcademicFen != 1_600_000 {
			t.Errorf("%s: packages %+v", c.name, mq.Packages)
		}
	}
}

func TestMarketVersionAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vs := []rating.Version{{ID: "a", Effective: t0}, {ID: "b", Effective: t0.Add(time.Hour)}}
	for _, c := range []struct {
		at   time.Time
		want string
	}{{t0.Add(-time.Second), ""}, {t0, "a"}, {t0.Add(time.Hour - time.Second), "a"}, {t0.Add(time.Hour), "b"}} {
		v, ok := marketVersionAt(vs, c.at)
		if ok != (c.want != "") || v.ID != c.want {
			t.Errorf("at %s: %q, %v; want %q", c.at, v.ID, ok, c.want)
		}
	}
}

func TestMarketMeasures(t *testing.T) {
	tt := &apiv1.TransparencyType{Probes: []apiv1.TransparencyProbe{
		{Probe: benchjudge.ProbeResNet50Train, GPUs: 1, Unit: "img/s", FleetMedian: 3000, Cards: 4},
		{Probe: benchjudge.ProbeGEMMBF16, GPUs: 1, Unit: "TFLOPS", FleetMedian: 700, SpecRatio: 0.71, Cards: 4},
		{Probe: benchjudge.ProbeNCCLAllReduce, GPUs: 4, Unit: "GB/s", FleetMedian: 300, Cards: 1},
		{Probe: benchjudge.ProbeD2DBW, GPUs: 2, Unit: "GB/s", FleetMedian: 5000, Cards: 2}, // not one GPU
		{Probe: benchjudge.ProbeD2DBW, GPUs: 1, Unit: "GB/s", FleetMedian: 0, Cards: 0},    // nothing measured
	}}
	got := marketMeasures(tt)
	if len(got) != 2 || got[0].Probe != benchjudge.ProbeGEMMBF16 || got[0].Ratio != 0.71 || got[1].Probe != benchjudge.ProbeResNet50Train {
		t.Fatalf("measures %+v", got)
	}
	if got := marketMeasures(&apiv1.TransparencyType{}); len(got) != 0 {
		t.Fatalf("an unmeasured type shows %+v", got)
	}
}

// TestRentEstimateSeedExample: the seed's 4 × H100 for 5 days from
// Tuesday 2026-12-01 09:00, as docs/billing.md works it out.
func TestRentEstimateSeedExample(t *testing.T) {
	b, loc := marketTestBook(t)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, loc)
	q := marketTestQuotes(t, b, "h100-80g-sxm", 4, start, 120*time.Hour, false)
	e := rentEstimateOf(q, rentEstimateIn{TypeID: "h100-80g-sxm", Count: 4, Plan: gpurent.PlanDaily, Hours: 120})
	l := e.List
	if l.Peak == nil || l.Peak.Hours != "55" || l.Peak.RateFen != 3473 || l.Peak.Units != 4 || l.Peak.Fen != 764_060 {
		t.Fatalf("peak %+v", l.Peak)
	}
	if l.OffPeak == nil || l.OffPeak.Hours != "65" || l.OffPeak.RateFen != 2432 || l.OffPeak.Fen != 632_320 {
		t.Fatalf("off-peak %+v", l.OffPeak)
	}
	if l.HourlyFen != 1_396_380 || l.PlanFen != 1_533_340 || l.PlanPeriods != 5 || l.Cheapest != gpurent.PlanHourly {
		t.Fatalf("list %+v", l)
	}
	if e.Academic.HourlyFen != 1_117_340 || e.Pays().HourlyFen != l.HourlyFen {
		t.Fatalf("academic %d; pays %d", e.Academic.HourlyFen, e.Pays().HourlyFen)
	}
	q.AcademicApplies = true
	if e := rentEstimateOf(q, rentEstimateIn{TypeID: "h100-80g-sxm", Count: 4, Plan: gpurent.PlanHourly, Hours: 120}); e.Pays().PlanFen != 1_117_340 {
		t.Fatalf("a verified academic pays %d", e.Pays().PlanFen)
	}

	site := testSite(t)
	en := site.Page(nil, web.LangEN)
	texts := rentTexts(en, &e)
	for id, want := range map[string]string{
		"est-peak":    "55 h × ¥34.73 × 4 GPUs = ¥7,640.60",
		"est-offpeak": "65 h × ¥24.32 × 4 GPUs = ¥6,323.20",
		"est-hourly":  "¥13,963.80",
		"est-daily":   "5 × ¥766.67 × 4 GPUs = ¥15,333.40",
		"est-weekly":  "1 × ¥5,040.00 × 4 GPUs = ¥20,160.00",
		"est-monthly": "1 × ¥20,000.00 × 4 GPUs = ¥80,000.00",
		"est-total":   "¥15,333.40",
	} {
		if texts[id] != want {
			t.Errorf("%s: %q, want %q", id, texts[id], want)
		}
	}
	for _, id := range rentTextIDs() {
		if texts[id] == "" || strings.Contains(texts[id], "«") {
			t.Errorf("%s: %q", id, texts[id])
		}
	}
	zh := rentTexts(site.Page(nil, web.LangZH), &e)
	if zh["est-peak"] != "55 小时 × ¥34.73 × 4 卡 = ¥7,640.60" {
		t.Errorf("zh peak: %q", zh["est-peak"])
	}
}

// TestMarketMessages: every message key the market, rent and calculator
// pages use exists in both languages, and each message takes the same
// arguments in both.
func TestMarketMessages(t *testing.T) {
	site := testSite(t)
	used := map[string]bool{}
	key := regexp.MustCompile(`"((?:market|rent|calc)\.[a-z0-9_.]+[a-z0-9_])"`)
	for _, f := range []string{"market.go", "rent.go", "calc_page.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range key.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
	}
	for _, f := range []string{"market.html", "rent.html", "calculator.html"} {
		b, err := fs.ReadFile(templateFS, "templates/"+f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range key.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
	}
	// Keys made at run time.
	for _, pl := range rentPlans() {
		used["market.plan."+string(pl)] = true
	}
	for _, pr := range marketMeasuredProbes() {
		used["market.probe."+pr] = true
	}
	for k := range used {
		if strings.HasSuffix(k, ".js") {
			continue
		}
		if !site.HasMessage(k) {
			t.Errorf("message %q is used but not defined", k)
		}
	}
	verb := regexp.MustCompile(`%(\[\d\])?[a-z]`)
	for k, p := range marketMessages() {
		zh, en := verb.FindAllString(p[0], -1), verb.FindAllString(p[1], -1)
		if strings.Join(zh, ",") != strings.Join(en, ",") && !sameVerbs(zh, en) {
			t.Errorf("%s: Chinese takes %v, English %v", k, zh, en)
		}
	}
}

// sameVerbs compares verbs as a multiset (explicit indexes may reorder).
func sameVerbs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, v := range a {
		n[v]++
	}
	for _, v := range b {
		n[v]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return true
}

func TestRentDegradedShare(t *testing.T) {
	types := []marketType{
		{Type: gpurent.GPUType{ID: "h100-80g-sxm"}, Zones: []marketZone{
			{ID: "a", Degraded: 2, DegradedMinPermil: 850, DegradedMaxPermil: 880},
			{ID: "b", Degraded: 0, DegradedMaxPermil: 990}, // none free there: not counted
			{ID: "c", Degraded: 1, DegradedMinPermil: 860, DegradedMaxPermil: 860},
		}},
		{Type: gpurent.GPUType{ID: "a100-80g-sxm"}},
	}
	if got := rentDegradedShare(types, "h100-80g-sxm"); got != 880 {
		t.Errorf("H100: %d, want the highest free share 880", got)
	}
	if got := rentDegradedShare(types, "a100-80g-sxm"); got != 0 {
		t.Errorf("A100 with no degraded GPU: %d, want 0 (full price)", got)
	}
	if got := rentDegradedShare(types, "rtx4090-24g"); got != 0 {
		t.Errorf("unknown type: %d", got)
	}
}
