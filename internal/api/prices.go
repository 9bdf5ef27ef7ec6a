package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
)

// maxQuoteHours bounds a quote: one leap year.
const maxQuoteHours = 366 * 24

// handleQuote answers GET /api/v1/price?gpu_type=T&count=N&hours=H[&start=RFC3339][&price_permille=P]
// (P: the share of the list price of GPUs listed as degraded).
// It is public: anyone may see what a rental costs before signing up.
func (s *Server) handleQuote(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := pricing.QuoteRequest{TypeID: q.Get("gpu_type")}
	if req.TypeID == "" {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "gpu_type is required (see GET /api/v1/gpu-types)"))
		return
	}
	count, err := queryInt(q.Get("count"), "count", 1, 0, 8)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	hours, err := queryInt(q.Get("hours"), "hours", 1, 1, maxQuoteHours)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	share, err := queryInt(q.Get("price_permille"), "price_permille", 0, 0, 1000)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	req.Count, req.Duration, req.PricePermille = count, time.Duration(hours)*time.Hour, share
	if v := q.Get("start"); v != "" {
		if req.Start, err = time.Parse(time.RFC3339, v); err != nil {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "start must be an RFC 3339 time, e.g. 2026-12-01T09:00:00+08:00"))
			return
		}
	}
	// Public; a signed-in verified academic account is told its price.
	var acc *gpurent.Account
	if token, ok := bearer(r); ok {
		if acc, err = s.auth.Authenticate(r.Context(), token); err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	quotes, err := s.billing.Quote(r.Context(), acc, req)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, quoteView(quotes))
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(v, name string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, gpurent.Errorf(gpurent.CodeInvalid, "%s must be a whole number from %d to %d, got %q", name, lo, hi, v)
	}
	return n, nil
}

func quoteView(q *pricing.Quotes) apiv1.Quote {
	return apiv1.Quote{
		GPUType: q.List.TypeID, GPUCount: q.List.GPUCount, Start: q.List.Start, End: q.List.End, PricePermille: q.List.PricePermille,
		TimeZone: rating.BillingZone, OffPeak: q.Rule.String(),
		List: quotePlanView(q.List), Academic: quotePlanView(q.Academic), AcademicApplies: q.AcademicApplies,
	}
}

func quotePlanView(q rating.Quotation) apiv1.QuotePlan {
	p := apiv1.QuotePlan{HourlyFen: q.HourlyFen, CheapestPlan: string(q.Cheapest), CheapestFen: q.CheapestFen,
		Lines: []apiv1.QuoteLine{}, Packages: []apiv1.QuotePackage{}}
	for _, l := range q.Lines {
		window := "peak"
		switch {
		case l.NoGPU:
			window = "no-gpu"
		case l.OffPeak:
			window = "off-peak"
		}
		p.Lines = append(p.Lines, apiv1.QuoteLine{Window: window, Hours: l.Hours(), Seconds: l.Seconds,
			RateFen: l.RateFen, Units: l.Units, Exact: l.Exact.String(), Fen: l.Fen})
	}
	for _, o := range q.Packages {
		p.Packages = append(p.Packages, apiv1.QuotePackage{Plan: string(o.Plan), Periods: o.Periods,
			UnitFen: o.UnitFen, TotalFen: o.TotalFen})
	}
	return p
}

// handleListPrices answers GET /api/v1/prices: every version of the price
// list, the one in force now marked current. Public.
func (s *Server) handleListPrices(w http.ResponseWriter, r *http.Request) {
	vs, err := s.billing.Versions(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.PriceVersionList{TimeZone: rating.BillingZone, Versions: []apiv1.PriceVersion{}}
	now := s.now()
	current := -1
	for i, v := range vs {
		if !v.Effective.After(now) {
			current = i
		}
	}
	for i, v := range vs {
		doc, err := pricing.EncodeVersion(v)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		out.Versions = append(out.Versions, apiv1.PriceVersion{ID: v.ID, Effective: v.Effective, Current: i == current, PriceList: doc})
	}
	writeJSON(w, http.StatusOK, out)
}

// handleAddPrices answers POST /api/v1/prices (operators): a new version of
// the price list, effective at its "effective" instant, never in the past.
func (s *Server) handleAddPrices(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.AddPriceVersionRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if len(req.PriceList) == 0 {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "price_list is required"))
		return
	}
	v, err := pricing.DecodeVersion(req.PriceList)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	added, err := s.billing.AddVersion(r.Context(), acc, v, req.Note)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	doc, err := pricing.EncodeVersion(added)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiv1.PriceVersion{ID: added.ID, Effective: added.Effective,
		Current: !added.Effective.After(s.now()), PriceList: doc})
}
