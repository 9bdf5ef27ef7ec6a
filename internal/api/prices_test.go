package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func TestQuoteRoute(t *testing.T) {
	e := newEnv(t)
	// Public: no token. The seed's example, 4 x H100 for 5 days from
	// Tuesday 2026-12-01 09:00 in Chengdu (worked by hand in
	// internal/pricing's TestQuoteSeedExample).
	w := e.do(req{method: "GET", path: "/api/v1/price?gpu_type=h100-80g-sxm&count=4&hours=120&start=2026-12-01T09:00:00%2B08:00"})
	q := decode[apiv1.Quote](t, w, http.StatusOK)
	if q.List.HourlyFen != 1_396_380 || q.Academic.HourlyFen != 1_117_340 || q.List.CheapestPlan != "hourly" ||
		q.TimeZone != "Asia/Shanghai" || !strings.Contains(q.OffPeak, "22:00") || len(q.List.Packages) != 3 {
		t.Fatalf("quote: %+v", q)
	}
	var peakHours, offHours string
	for _, l := range q.List.Lines {
		if l.Window == "peak" {
			peakHours = l.Hours
		} else {
			offHours = l.Hours
		}
	}
	if peakHours != "55" || offHours != "65" {
		t.Errorf("hours: peak %s, off-peak %s; want 55 and 65", peakHours, offHours)
	}
	for _, bad := range []string{
		"/api/v1/price",
		"/api/v1/price?gpu_type=b200",
		"/api/v1/price?gpu_type=h100-80g-sxm&count=9",
		"/api/v1/price?gpu_type=h100-80g-sxm&hours=0",
		"/api/v1/price?gpu_type=h100-80g-sxm&hours=1.5",
		"/api/v1/price?gpu_type=h100-80g-sxm&start=tomorrow",
	} {
		problem(t, e.do(req{method: "GET", path: bad}), http.StatusBadRequest, gpurent.CodeInvalid)
	}
}

func TestPricesRoutes(t *testing.T) {
	e := newEnv(t)
	list := decode[apiv1.PriceVersionList](t, e.do(req{method: "GET", path: "/api/v1/prices"}), http.StatusOK)
	if len(list.Versions) != 1 || !list.Versions[0].Current {
		t.Fatalf("seeded list: %+v", list)
	}
	// The operator lowers the H100's peak price from tomorrow.
	var doc map[string]any
	if err := json.Unmarshal(list.Versions[0].PriceList, &doc); err != nil {
		t.Fatal(err)
	}
	doc["id"] = "cut"
	doc["effective"] = time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	doc["gpu_types"].(map[string]any)["h100-80g-sxm"].(map[string]any)["peak_fen"] = 3000
	body := map[string]any{"note": "December promotion", "price_list": doc}

	customer, operator := e.customer(), e.operator()
	problem(t, e.do(req{method: "POST", path: "/api/v1/prices", body: body}), http.StatusUnauthorized, gpurent.CodeUnauthorized)
	problem(t, e.do(req{method: "POST", path: "/api/v1/prices", token: customer.token, body: body}), http.StatusForbidden, gpurent.CodeForbidden)
	added := decode[apiv1.PriceVersion](t, e.do(req{method: "POST", path: "/api/v1/prices", token: operator.token, body: body}), http.StatusCreated)
	if added.ID != "cut" || added.Current {
		t.Errorf("added: %+v", added)
	}
	// Versions are added in effective order: the same time again, and the
	// past, are refused.
	problem(t, e.do(req{method: "POST", path: "/api/v1/prices", token: operator.token, body: body}), http.StatusBadRequest, gpurent.CodeInvalid)
	doc["effective"] = "2020-01-01T00:00:00Z"
	problem(t, e.do(req{method: "POST", path: "/api/v1/prices", token: operator.token, body: body}), http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: "/api/v1/prices", token: operator.token, body: `{"price_list":{"bogus":1}}`}),
		http.StatusBadRequest, gpurent.CodeInvalid)
	list = decode[apiv1.PriceVersionList](t, e.do(req{method: "GET", path: "/api/v1/prices"}), http.StatusOK)
	if len(list.Versions) != 2 || !list.Versions[0].Current || list.Versions[1].Current {
		t.Errorf("after the change: %+v", list)
	}
}

func TestQuoteDegradedShareParameter(t *testing.T) {
	e := newEnv(t)
	full := decode[apiv1.Quote](t, e.do(req{method: "GET", path: "/api/v1/price?gpu_type=h100-80g-sxm&count=2&hours=1&start=2026-12-01T09:00:00%2B08:00"}), http.StatusOK)
	share := decode[apiv1.Quote](t, e.do(req{method: "GET", path: "/api/v1/price?gpu_type=h100-80g-sxm&count=2&hours=1&start=2026-12-01T09:00:00%2B08:00&price_permille=850"}), http.StatusOK)
	if share.PricePermille != 850 || full.PricePermille != 0 || share.List.HourlyFen >= full.List.HourlyFen || len(share.List.Packages) != 0 {
		t.Fatalf("full %d fen, at 850‰ %d fen (%d‰, %d packages)", full.List.HourlyFen, share.List.HourlyFen, share.PricePermille, len(share.List.Packages))
	}
	for _, bad := range []string{"1001", "-1", "x"} {
		problem(t, e.do(req{method: "GET", path: "/api/v1/price?gpu_type=h100-80g-sxm&count=1&hours=1&price_permille=" + bad}), http.StatusBadRequest, gpurent.CodeInvalid)
	}
}
