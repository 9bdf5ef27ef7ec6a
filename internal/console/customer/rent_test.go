package customer_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/app"
)

// consoleAt is a control plane (SQLite, no agents) whose clock stands at
// now: the console's pages are served in process.
func consoleAt(t *testing.T, now time.Time) http.Handler {
	t.Helper()
	dir := t.TempDir()
	s, err := app.StartServer(context.Background(), app.ServerConfig{DSN: filepath.Join(dir, "gpurent.db"),
		Listen: "127.0.0.1:0", BcryptCost: 4, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Console.Handler()
}

// seedStart is the seed example's start: Tuesday 2026-12-01 09:00 in
// Beijing.
func seedStart(t *testing.T) time.Time {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(2026, 12, 1, 9, 0, 0, 0, loc)
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

// estimateJSON is the part of GET /rent/estimate's answer the test reads.
type estimateJSON struct {
	PeakFen         int64             `json:"peak_fen"`
	OffPeakFen      int64             `json:"off_peak_fen"`
	HourlyFen       int64             `json:"hourly_fen"`
	PlanFen         int64             `json:"plan_fen"`
	CheapestPlan    string            `json:"cheapest_plan"`
	CheapestFen     int64             `json:"cheapest_fen"`
	AcademicPlanFen int64             `json:"academic_plan_fen"`
	AcademicApplies bool              `json:"academic_applies"`
	Packages        map[string]int64  `json:"packages"`
	Set             map[string]string `json:"set"`
	Error           string            `json:"error"`
}

// TestRentEstimateEndpoint: /rent/estimate is the billing service's
// quote, the same figures as `gpurent price` (docs/billing.md's worked
// example), and refuses bad input in the page's language.
func TestRentEstimateEndpoint(t *testing.T) {
	h := consoleAt(t, seedStart(t))
	read := func(path string, status int) estimateJSON {
		t.Helper()
		w := get(t, h, path)
		if w.Code != status {
			t.Fatalf("%s: %d, want %d: %s", path, w.Code, status, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || w.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: Content-Type %q, Cache-Control %q", path, ct, w.Header().Get("Cache-Control"))
		}
		var v estimateJSON
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, w.Body)
		}
		return v
	}
	v := read("/rent/estimate?gpu=h100-80g-sxm&count=4&plan=hourly&hours=120&lang=en", 200)
	if v.PeakFen != 764_060 || v.OffPeakFen != 632_320 || v.HourlyFen != 1_396_380 || v.PlanFen != v.HourlyFen ||
		v.CheapestPlan != "hourly" || v.CheapestFen != 1_396_380 || v.AcademicPlanFen != 1_117_340 || v.AcademicApplies {
		t.Fatalf("seed example: %+v", v)
	}
	if v.Packages["daily"] != 1_533_340 || v.Packages["weekly"] != 2_016_000 || v.Packages["monthly"] != 8_000_000 {
		t.Fatalf("packages %v", v.Packages)
	}
	if v.Set["est-peak"] != "55 h × ¥34.73 × 4 GPUs = ¥7,640.60" || v.Set["est-total"] != "¥13,963.80" {
		t.Fatalf("texts %v", v.Set)
	}
	if d := read("/rent/estimate?gpu=h100-80g-sxm&count=4&plan=daily&hours=120&lang=en", 200); d.PlanFen != 1_533_340 || d.Set["est-total"] != "¥15,333.40" {
		t.Fatalf("daily plan: %+v", d)
	}
	for _, c := range []struct{ query, want string }{
		{"gpu=h100-80g-sxm&count=0&plan=hourly&hours=120&lang=en", "GPU count must be from 1 to 8"},
		{"gpu=h100-80g-sxm&count=0&plan=hourly&hours=120&lang=zh", "GPU 数量 必须在 1 到 8 之间"},
		{"gpu=h100-80g-sxm&count=2&plan=hourly&hours=x&lang=en", "Duration to estimate (hours) must be a number"},
		{"gpu=h100-80g-sxm&count=2&plan=yearly&hours=1&lang=en", "Choose a plan: hourly, daily, weekly or monthly"},
		{"gpu=h100-80g-sxm&count=2&plan=hourly&hours=9000&lang=en", "Duration to estimate (hours) must be from 1 to 8784"},
		{"gpu=&count=2&plan=hourly&hours=1&lang=en", "Choose a GPU type"},
		// The billing service refuses what it does not know.
		{"gpu=b200&count=2&plan=hourly&hours=1&lang=en", "Please check your input: unknown GPU type \"b200\""},
	} {
		if e := read("/rent/estimate?"+c.query, 400); !strings.HasPrefix(e.Error, c.want) {
			t.Errorf("%s: error %q, want %q", c.query, e.Error, c.want)
		}
	}
}

// TestProbe: the latency test's target answers nothing, uncached.
func TestProbe(t *testing.T) {
	h := consoleAt(t, seedStart(t))
	w := get(t, h, "/probe?zone=cd-tianfu-a&t=1")
	if w.Code != http.StatusNoContent || w.Header().Get("Cache-Control") != "no-store" || w.Body.Len() != 0 {
		t.Fatalf("probe: %d, Cache-Control %q, %d bytes", w.Code, w.Header().Get("Cache-Control"), w.Body.Len())
	}
}

// TestMarketOffPeakBadge: the market marks the price now as off-peak
// exactly when the server's clock is in the off-peak window, and shows
// that window's price.
func TestMarketOffPeakBadge(t *testing.T) {
	start := seedStart(t) // Tuesday 09:00: peak
	for _, c := range []struct {
		at      time.Time
		offPeak bool
		price   string
	}{
		{start, false, "¥34.73"},
		{start.Add(14 * time.Hour), true, "¥24.32"},               // 23:00
		{start.Add(4*24*time.Hour + 3*time.Hour), true, "¥24.32"}, // Saturday noon
	} {
		h := consoleAt(t, c.at)
		w := get(t, h, "/market?lang=en")
		if w.Code != 200 {
			t.Fatalf("market at %s: %d", c.at, w.Code)
		}
		body := w.Body.String()
		if got := strings.Contains(body, `id="offpeak-h100-80g-sxm"`); got != c.offPeak {
			t.Errorf("at %s: badge shown %v, want %v", c.at, got, c.offPeak)
		}
		if !strings.Contains(body, `id="price-h100-80g-sxm">`+c.price+`<`) {
			t.Errorf("at %s: the H100's price now is not %s", c.at, c.price)
		}
		for _, name := range []string{"NVIDIA H100 80GB SXM", "NVIDIA A100 80GB SXM", "NVIDIA GeForce RTX 4090 24GB"} {
			if !strings.Contains(body, name) {
				t.Errorf("the market lacks %s", name)
			}
		}
	}
}

// calcAnswer is the part of /calculator.json's answer the test reads.
type calcAnswer struct {
	Inputs map[string]string `json:"inputs"`
	Result *struct {
		RentPackageFen, CapexFen, BuyFen, RentFen int64
		BreakEvenFrom, BreakEvenTo                int
	} `json:"result"`
	Set   map[string]string `json:"set"`
	Chart *struct {
		Labels []string `json:"labels"`
		Series []struct {
			Values []int64 `json:"values"`
		} `json:"series"`
	} `json:"chart"`
	Error string `json:"error"`
}

// TestCalculatorEndpoints: the calculator with the seed's defaults, a
// change of GPU type that brings the new type's purchase figures, and
// bad input refused in the page's language.
func TestCalculatorEndpoints(t *testing.T) {
	h := consoleAt(t, seedStart(t))
	read := func(q url.Values, status int) calcAnswer {
		t.Helper()
		w := get(t, h, "/calculator.json?"+q.Encode())
		if w.Code != status {
			t.Fatalf("%s: %d, want %d: %s", q.Encode(), w.Code, status, w.Body)
		}
		var v calcAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := read(url.Values{"lang": {"en"}}, 200)
	if v.Inputs["gpu"] != "h100-80g-sxm" || v.Inputs["gpu_price"] != "300000" || v.Inputs["server_price"] != "2600000" ||
		v.Inputs["watts"] != "700" || v.Inputs["kwh"] != "0.8" || v.Inputs["offpeak"] != "58" {
		t.Fatalf("defaults %v", v.Inputs)
	}
	if v.Result == nil || v.Result.RentPackageFen != 8*12*2_000_000 || v.Result.CapexFen != 260_000_000 || v.Result.BreakEvenFrom < 1 {
		t.Fatalf("result %+v", v.Result)
	}
	if v.Chart == nil || len(v.Chart.Labels) != 13 || len(v.Chart.Series) != 3 || v.Chart.Series[2].Values[12] != (v.Result.BuyFen+50)/100 {
		t.Fatalf("chart %+v", v.Chart)
	}
	if !strings.HasPrefix(v.Set["calc-verdict"], "Buying is cheaper, by ¥") {
		t.Fatalf("verdict %q", v.Set["calc-verdict"])
	}
	// Another type: its own purchase figures and power, not the H100's.
	q := url.Values{"gpu": {"a100-80g-sxm"}, "for": {"h100-80g-sxm"}, "gpu_price": {"300000"}, "watts": {"700"}}
	if a := read(q, 200); a.Inputs["gpu_price"] != "120000" || a.Inputs["watts"] != "400" || a.Inputs["for"] != "a100-80g-sxm" {
		t.Fatalf("after a change of type: %v", a.Inputs)
	}
	// The same type keeps what was typed.
	q = url.Values{"gpu": {"h100-80g-sxm"}, "for": {"h100-80g-sxm"}, "gpu_price": {"280,000"}, "months": {"36"}}
	if a := read(q, 200); a.Inputs["gpu_price"] != "280,000" || a.Result.CapexFen != 8*280_000_00+(2_600_000_00-8*280_000_00) {
		t.Fatalf("typed figures: %v %+v", a.Inputs, a.Result)
	}
	for _, c := range []struct {
		q    url.Values
		want string
	}{
		{url.Values{"lang": {"en"}, "count": {"0"}}, "GPU count must be from 1 to 4096"},
		{url.Values{"lang": {"zh"}, "count": {"0"}}, "GPU 数量 必须在 1 到 4096 之间"},
		{url.Values{"lang": {"en"}, "hours": {"25"}}, "Hours a day must be from 0.1 to 24"},
		{url.Values{"lang": {"en"}, "kwh": {"cheap"}}, "Electricity (CNY per kWh) must be an amount"},
		{url.Values{"lang": {"en"}, "years": {"5"}}, "Depreciation must be over 2 or 3 years"},
		{url.Values{"lang": {"zh"}, "months": {""}}, "项目时长（月，每月 30 天） 为必填项"},
	} {
		if e := read(c.q, 400); !strings.HasPrefix(e.Error, c.want) || e.Result != nil {
			t.Errorf("%s: %q, want %q", c.q.Encode(), e.Error, c.want)
		}
	}
	// The page: the chart and the break-even figure, without JavaScript.
	w := get(t, h, "/calculator?lang=en")
	body := html.UnescapeString(w.Body.String())
	if w.Code != 200 || !strings.Contains(body, `class="chart" id="calc-chart"`) || !strings.Contains(body, `"labels":["month 0"`) ||
		!strings.Contains(body, `id="calc-breakeven-hours">`+v.Set["calc-breakeven-hours"]+`<`) {
		t.Fatalf("calculator page: %d\n%s", w.Code, body)
	}
	if w := get(t, h, "/calculator?lang=en&count=x"); w.Code != 400 || !strings.Contains(w.Body.String(), "GPU count must be a number") {
		t.Fatalf("bad calculator input: %d", w.Code)
	}
}
