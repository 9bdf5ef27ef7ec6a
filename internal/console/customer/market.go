package customer

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
)

// The GPU market (/market), the rent form (/rent, rent.go) and the
// rent-or-buy calculator (/calculator, calc_page.go). Every figure comes
// from the services the API uses: the fleet's types and the scheduler's
// availability (GET /api/v1/gpu-types), the billing service's quotes and
// price book (GET /api/v1/price, /prices), the certification service's
// transparency report.

// marketRoutes are the pages of this family.
func (s *Pages) marketRoutes() []web.Route {
	rs := []web.Route{{Pattern: "GET /probe", Who: web.Public, Handle: s.probe}}
	if s.cfg.Fleet == nil || s.cfg.Billing == nil {
		return rs
	}
	// One reading of the fleet serves the market and the rent form for a
	// moment (market_cache.go).
	fleet := newMarketCache(marketCacheTTL)
	cached := func(h func(http.ResponseWriter, *http.Request, *web.Page, *marketCache)) func(http.ResponseWriter, *http.Request, *web.Page) {
		return func(w http.ResponseWriter, r *http.Request, p *web.Page) { h(w, r, p, fleet) }
	}
	return append(rs,
		web.Route{Pattern: "GET /market", Who: web.Public, Handle: cached(s.market)},
		web.Route{Pattern: "GET /rent", Who: web.Customer, Handle: cached(s.rentPage)},
		web.Route{Pattern: "POST /rent", Who: web.Customer, Handle: cached(s.rentSubmit)},
		web.Route{Pattern: "GET /rent/estimate", Who: web.Public, Handle: cached(s.rentEstimate)},
		web.Route{Pattern: "GET /calculator", Who: web.Public, Handle: s.calculator},
		web.Route{Pattern: "GET /calculator.json", Who: web.Public, Handle: s.calculatorJSON},
	)
}

// probe is the zone latency test's target: the smallest answer, never
// cached. Each zone's probe is the control plane here (one site answers
// for all zones); a zone's own probe endpoint would be timed the same way.
func (s *Pages) probe(w http.ResponseWriter, r *http.Request, p *web.Page) {
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// marketZone is one zone's share of a GPU type.
type marketZone struct {
	ID, Name          string
	Total, Free, Max  int
	Degraded          int // GPUs listed as degraded, free
	DegradedMax       int
	DegradedMinPermil int // price share range of the degraded GPUs
	DegradedMaxPermil int
}

// marketMeasure is one measured figure of the transparency report.
type marketMeasure struct {
	Probe  string // certify probe name
	Median float64
	Unit   string
	Ratio  float64 // median / spec; 0 without a spec
	Cards  int
}

// marketPackage is a package's price per GPU per period, at list and at
// academic prices.
type marketPackage struct {
	Plan        gpurent.Plan
	UnitFen     int64
	AcademicFen int64
}

// marketType is one GPU type on the market.
type marketType struct {
	Type        gpurent.GPUType
	Total, Free int
	Degraded    int // free GPUs listed as degraded, all zones
	Zones       []marketZone
	Measured    []marketMeasure // empty: not yet measured
	Synthetic   bool            // the figures came from fake GPUs

	// The price now per GPU-hour on the hourly plan, and whether now is
	// off-peak; the two windows' list prices; the academic price now.
	NowFen              int64
	OffPeak             bool
	PeakFen, OffPeakFen int64
	AcademicNowFen      int64
	AcademicApplies     bool
	Packages            []marketPackage
}

// marketData is the market page's data.
type marketData struct {
	Types []marketType
	Zones []gpurent.Zone
	Rule  rating.Rule
	// RuleText is the off-peak rule in the page's language.
	RuleText string
}

// marketTypes gathers the GPU types exactly as GET /api/v1/gpu-types does:
// the fleet's types, with the free counts the scheduler would place
// (benchmark-held GPUs are not free; degraded ones are counted apart).
func (s *Pages) marketTypes(ctx context.Context) ([]marketType, []gpurent.Zone, error) {
	as, err := s.cfg.Fleet.GPUTypes(ctx)
	if err != nil {
		return nil, nil, err
	}
	zones, err := s.cfg.Fleet.Zones(ctx)
	if err != nil {
		return nil, nil, err
	}
	names := make(map[string]string, len(zones))
	for _, z := range zones {
		names[z.ID] = z.Name
	}
	counts, err := s.cfg.Rental.Availability(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := make([]marketType, 0, len(as))
	for _, a := range as {
		t := marketType{Type: a.Type, Total: a.Total}
		for _, z := range a.Zones {
			c := counts[a.Type.ID][z.ZoneID]
			mz := marketZone{ID: z.ZoneID, Name: names[z.ZoneID], Total: z.Total, Free: c.Free, Max: c.MaxPerHost,
				Degraded: c.DegradedFree, DegradedMax: c.DegradedMaxPerHost,
				DegradedMinPermil: c.MinPricePermille, DegradedMaxPermil: c.MaxPricePermille}
			if mz.Name == "" {
				mz.Name = z.ZoneID
			}
			t.Free += c.Free
			t.Degraded += c.DegradedFree
			t.Zones = append(t.Zones, mz)
		}
		out = append(out, t)
	}
	return out, zones, nil
}

// marketQuote is the price of one GPU-hour from now, read from the
// billing service's quote of the next hour.
type marketQuote struct {
	NowFen, AcademicNowFen int64
	OffPeak                bool
	AcademicApplies        bool
	Packages               []marketPackage
	Rule                   rating.Rule
}

// marketPriceNow reads a one-GPU, one-hour quote starting at now: the rate
// of the window now is in (the rule of the price version in force tells
// which), and the package prices in force.
func marketPriceNow(q *pricing.Quotes, now time.Time, loc *time.Location) marketQuote {
	mq := marketQuote{AcademicApplies: q.AcademicApplies, Rule: q.Rule}
	mq.OffPeak = q.Rule.OffPeakAt(now, loc)
	rate := func(qq rating.Quotation) int64 {
		for _, l := range qq.Lines {
			if l.OffPeak == mq.OffPeak && !l.NoGPU {
				return l.RateFen
			}
		}
		if len(qq.Lines) > 0 {
			return qq.Lines[0].RateFen
		}
		return 0
	}
	mq.NowFen, mq.AcademicNowFen = rate(q.List), rate(q.Academic)
	for _, o := range q.List.Packages {
		pk := marketPackage{Plan: o.Plan, UnitFen: o.UnitFen}
		for _, a := range q.Academic.Packages {
			if a.Plan == o.Plan {
				pk.AcademicFen = a.UnitFen
			}
		}
		mq.Packages = append(mq.Packages, pk)
	}
	return mq
}

// marketVersionAt is the price version in force at t.
func marketVersionAt(vs []rating.Version, t time.Time) (rating.Version, bool) {
	var cur rating.Version
	ok := false
	for _, v := range vs {
		if !v.Effective.After(t) {
			cur, ok = v, true
		}
	}
	return cur, ok
}

// marketMeasuredProbes are the figures the market shows per type, in
// order: dense BF16 matmul, device memory copy, ResNet-50 training.
func marketMeasuredProbes() []string {
	return []string{benchjudge.ProbeGEMMBF16, benchjudge.ProbeD2DBW, benchjudge.ProbeResNet50Train}
}

// marketMeasures picks the single-GPU fleet medians of the market's probes
// from a type's transparency report entry.
func marketMeasures(t *apiv1.TransparencyType) []marketMeasure {
	var out []marketMeasure
	for _, name := range marketMeasuredProbes() {
		for _, pr := range t.Probes {
			if pr.Probe != name || pr.GPUs != 1 || pr.Cards == 0 || !(pr.FleetMedian > 0) {
				continue
			}
			out = append(out, marketMeasure{Probe: name, Median: pr.FleetMedian, Unit: pr.Unit, Ratio: pr.SpecRatio, Cards: pr.Cards})
			break
		}
	}
	return out
}

func (s *Pages) market(w http.ResponseWriter, r *http.Request, p *web.Page, fleet *marketCache) {
	p.Title, p.Nav = p.T("market.title"), "market"
	d, err := s.marketData(p, fleet)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	p.Scripts = []string{"market.js"}
	w.Header().Set("Content-Security-Policy", web.ContentSecurityPolicy(probeOrigins(d.Zones)...))
	s.site.Render(w, r, p, "market", d)
}

// probeOrigins are the origins of the zones' own probe endpoints, which the
// latency test fetches from the page (sorted, each once). The fleet service
// checked each URL when it was set; one that fails the check now (stored
// another way) is left out.
func probeOrigins(zones []gpurent.Zone) []string {
	var out []string
	for _, z := range zones {
		if z.ProbeURL == "" || fleet.CheckProbeURL(z.ProbeURL) != nil {
			continue
		}
		u, err := url.Parse(z.ProbeURL)
		if err != nil {
			continue
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// marketData assembles the market: types and availability, the price now
// from one quote per type, the measured figures.
func (s *Pages) marketData(p *web.Page, fleet *marketCache) (*marketData, error) {
	ctx := p.Context()
	types, zones, err := fleet.get(ctx, s.marketTypes)
	if err != nil {
		return nil, err
	}
	loc, err := rating.LoadBillingZone()
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	vs, err := s.cfg.Billing.Versions(ctx)
	if err != nil {
		return nil, err
	}
	version, _ := marketVersionAt(vs, now)
	d := &marketData{Zones: zones, Rule: version.Rule}
	var report *apiv1.Transparency
	if s.cfg.Certification != nil {
		if report, err = s.cfg.Certification.Transparency(ctx); err != nil {
			return nil, err
		}
	}
	for i := range types {
		t := &types[i]
		q, err := s.cfg.Billing.Quote(ctx, p.Account, pricing.QuoteRequest{TypeID: t.Type.ID, Count: 1, Start: now, Duration: time.Hour})
		if err != nil {
			return nil, err
		}
		mq := marketPriceNow(q, now, loc)
		t.NowFen, t.OffPeak, t.AcademicNowFen, t.AcademicApplies = mq.NowFen, mq.OffPeak, mq.AcademicNowFen, mq.AcademicApplies
		t.Packages = mq.Packages
		d.Rule = mq.Rule
		if pr, ok := version.Types[t.Type.ID]; ok {
			t.PeakFen, t.OffPeakFen = pr.PeakFen, pr.OffPeakFen
		}
		if report != nil {
			for j := range report.Types {
				if report.Types[j].ID == t.Type.ID {
					t.Measured = marketMeasures(&report.Types[j])
					t.Synthetic = report.Synthetic
				}
			}
		}
	}
	d.Types = types
	d.RuleText = marketRuleText(p, d.Rule)
	return d, nil
}

// marketRuleText describes the off-peak rule in the page's language.
func marketRuleText(p *web.Page, r rating.Rule) string {
	switch {
	case r.Start != r.End && r.Weekends:
		return p.T("market.rule.daily_weekends", r.Start.String(), r.End.String())
	case r.Start != r.End:
		return p.T("market.rule.daily", r.Start.String(), r.End.String())
	case r.Weekends:
		return p.T("market.rule.weekends")
	}
	return p.T("market.rule.none")
}
