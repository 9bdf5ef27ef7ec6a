package customer

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/rental"
)

// The rent form: GET /rent shows it (with an estimate of the values it
// shows), POST /rent either re-renders it with a new estimate (the
// "estimate" button, for browsers without JavaScript) or rents through
// the rental service with the Idempotency-Key the form was made with, as
// POST /api/v1/instances does. GET /rent/estimate is the estimate as JSON
// for rent.js; it is the billing service's quote, as GET /api/v1/price.

// Bounds of the rent form beyond the rental service's own checks.
const (
	rentMaxCount    = 8 // the rental service's default per instance
	rentMinVolume   = 10
	rentMaxVolume   = 10_000
	rentMaxName     = 63
	rentMaxImage    = 255
	rentMaxHours    = 366 * 24 // the billing service's longest quote
	rentDefaultVol  = 50
	rentDefaultHour = 24
)

// The seed's example: 4 × H100 for 5 days.
const (
	rentSeedType  = "h100-80g-sxm"
	rentSeedCount = 4
	rentSeedHours = 120
)

// rentPlans are the plans a rental may be billed on, in the form's order.
func rentPlans() []gpurent.Plan {
	return []gpurent.Plan{gpurent.PlanHourly, gpurent.PlanDaily, gpurent.PlanWeekly, gpurent.PlanMonthly}
}

// rentForm is the form's values as typed, so a refused form keeps them.
type rentForm struct {
	GPU, Zone, Image, Name, Plan string
	Count, Volume, Hours         string
	Degraded                     bool
	// Startup is the startup command as typed; StartupNone asks for none
	// (both empty: the image's own).
	Startup     string
	StartupNone bool
	// Idem is the Idempotency-Key made when the form was first shown: a
	// second submit of the same form answers with the same instance.
	Idem string
}

// rentData is the rent page's data.
type rentData struct {
	Form     rentForm
	Types    []marketType
	Zones    []gpurent.Zone
	Plans    []gpurent.Plan
	Estimate *rentEstimate
	// Texts are the estimate's figures by element id ("—" without one).
	Texts map[string]string
	// EstimateError says why there is no estimate (the form's values).
	EstimateError string
	Seed          bool // the seed's preset is shown
	// Images are the operator's base images, offered as the image field's
	// choices.
	Images []gpurent.BaseImage
}

// rentNewKey is a fresh idempotency key for a form.
func rentNewKey() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return "web-" + base64.RawURLEncoding.EncodeToString(b)
}

// rentKeyOK accepts the keys rentNewKey makes (and nothing odd).
func rentKeyOK(k string) bool {
	if len(k) < 8 || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (s *Pages) rentPage(w http.ResponseWriter, r *http.Request, p *web.Page, fleet *marketCache) {
	q := r.URL.Query()
	f := rentForm{GPU: q.Get("gpu"), Zone: q.Get("zone"), Plan: q.Get("plan"), Count: q.Get("count"),
		Hours: q.Get("hours"), Image: q.Get("image"), Volume: strconv.Itoa(rentDefaultVol), Idem: rentNewKey()}
	seed := q.Get("preset") == "seed"
	if seed {
		f.GPU, f.Count, f.Hours = rentSeedType, strconv.Itoa(rentSeedCount), strconv.Itoa(rentSeedHours)
	}
	if f.Plan == "" {
		f.Plan = string(gpurent.PlanHourly)
	}
	if f.Count == "" {
		f.Count = "1"
	}
	if f.Hours == "" {
		f.Hours = strconv.Itoa(rentDefaultHour)
	}
	s.rentShow(w, r, p, fleet, http.StatusOK, f, seed)
}

// rentShow renders the form with an estimate of its values.
func (s *Pages) rentShow(w http.ResponseWriter, r *http.Request, p *web.Page, fleet *marketCache, status int, f rentForm, seed bool) {
	p.Title, p.Nav = p.T("rent.title"), "rent"
	p.Scripts = []string{"rent.js"}
	types, zones, err := fleet.get(p.Context(), s.marketTypes)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if f.GPU == "" && len(types) > 0 {
		f.GPU = types[0].Type.ID
		for _, t := range types {
			if t.Free > 0 {
				f.GPU = t.Type.ID
				break
			}
		}
	}
	d := rentData{Form: f, Types: types, Zones: zones, Plans: rentPlans(), Seed: seed, Texts: map[string]string{}}
	if s.cfg.Images != nil {
		if d.Images, err = s.cfg.Images.List(p.Context(), p.Account); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
	}
	for _, id := range rentTextIDs() {
		d.Texts[id] = "—"
	}
	in, msg := rentEstimateInput(p, f.GPU, f.Count, f.Plan, f.Hours)
	if f.Degraded {
		in.Share = rentDegradedShare(types, in.TypeID)
	}
	if msg == "" {
		e, err := s.rentQuote(p, in)
		switch {
		case err == nil:
			d.Estimate, d.Texts = e, rentTexts(p, e)
		case gpurent.IsCode(err, gpurent.CodeInvalid):
			d.EstimateError = p.ErrText(err) + " " + web.DetailOf(err)
		default:
			s.site.Fail(w, r, p, err)
			return
		}
	} else {
		d.EstimateError = msg
	}
	s.site.RenderStatus(w, r, p, status, "rent", d)
}

func (s *Pages) rentSubmit(w http.ResponseWriter, r *http.Request, p *web.Page, fleet *marketCache) {
	f := rentForm{GPU: strings.TrimSpace(r.PostFormValue("gpu")), Zone: strings.TrimSpace(r.PostFormValue("zone")),
		Image: strings.TrimSpace(r.PostFormValue("image")), Name: strings.TrimSpace(r.PostFormValue("name")),
		Plan: r.PostFormValue("plan"), Count: strings.TrimSpace(r.PostFormValue("count")),
		Volume: strings.TrimSpace(r.PostFormValue("volume")), Hours: strings.TrimSpace(r.PostFormValue("hours")),
		Degraded: r.PostFormValue("degraded") != "", Idem: r.PostFormValue("idem"),
		Startup: strings.TrimSpace(strings.ReplaceAll(r.PostFormValue("startup"), "\r\n", "\n")), StartupNone: r.PostFormValue("startup_none") != ""}
	if !rentKeyOK(f.Idem) {
		f.Idem = rentNewKey()
	}
	if r.PostFormValue("do") == "estimate" {
		status := http.StatusOK
		if _, msg := rentEstimateInput(p, f.GPU, f.Count, f.Plan, f.Hours); msg != "" {
			p.Error, status = msg, http.StatusBadRequest
		}
		s.rentShow(w, r, p, fleet, status, f, false)
		return
	}
	// A fresh reading: a rent is never refused from a cached one.
	types, _, err := s.marketTypes(p.Context())
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	req, msg := s.rentValidate(p, f, types)
	if msg != "" {
		p.Error = msg
		s.rentShow(w, r, p, fleet, http.StatusBadRequest, f, false)
		return
	}
	d, _, err := s.cfg.Rental.Rent(p.Context(), p.Account, req)
	if err != nil {
		code := gpurent.ErrorCode(err)
		if code == gpurent.CodeInternal || code == gpurent.CodeUnauthorized {
			s.site.Fail(w, r, p, err)
			return
		}
		p.FormError(err)
		status := map[gpurent.Code]int{gpurent.CodeInvalid: 400, gpurent.CodeConflict: 409, gpurent.CodePaymentRequired: 402,
			gpurent.CodeUnavailable: 503, gpurent.CodeNotFound: 404, gpurent.CodeForbidden: 403}[code]
		s.rentShow(w, r, p, fleet, status, f, false)
		return
	}
	http.Redirect(w, r, "/instances/"+url.PathEscape(d.Instance.ID), http.StatusSeeOther)
}

// rentType finds a type by id.
func rentType(types []marketType, id string) (*marketType, bool) {
	for i := range types {
		if types[i].Type.ID == id {
			return &types[i], true
		}
	}
	return nil, false
}

// rentValidate checks the form and makes the rental request; msg says
// what is wrong, in the page's language.
func (s *Pages) rentValidate(p *web.Page, f rentForm, types []marketType) (req rental.RentRequest, msg string) {
	t, ok := rentType(types, f.GPU)
	if !ok {
		return req, p.T("rent.bad_type")
	}
	count, err := strconv.Atoi(f.Count)
	switch {
	case f.Count == "":
		return req, p.T("common.required", p.T("rent.count"))
	case err != nil:
		return req, p.T("common.not_number", p.T("rent.count"))
	case count < 1 || count > rentMaxCount:
		return req, p.T("common.out_of_range", p.T("rent.count"), 1, rentMaxCount)
	}
	zoneOK := f.Zone == ""
	for _, z := range t.Zones {
		zoneOK = zoneOK || z.ID == f.Zone
	}
	if !zoneOK {
		return req, p.T("rent.bad_zone", t.Type.Name)
	}
	plan := gpurent.Plan(f.Plan)
	planOK := false
	for _, pl := range rentPlans() {
		planOK = planOK || pl == plan
	}
	if !planOK {
		return req, p.T("rent.bad_plan")
	}
	if f.Degraded && plan != gpurent.PlanHourly {
		return req, p.T("rent.degraded_hourly")
	}
	switch {
	case f.Image == "":
		return req, p.T("common.required", p.T("rent.image"))
	case len(f.Image) > rentMaxImage || strings.IndexFunc(f.Image, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) >= 0:
		return req, p.T("rent.bad_image", rentMaxImage)
	}
	vol, err := strconv.Atoi(f.Volume)
	switch {
	case f.Volume == "":
		return req, p.T("common.required", p.T("rent.volume"))
	case err != nil:
		return req, p.T("common.not_number", p.T("rent.volume"))
	case vol < rentMinVolume || vol > min(rentMaxVolume, s.cfg.Rental.MaxVolumeGiB()):
		return req, p.T("common.out_of_range", p.T("rent.volume"), rentMinVolume, min(rentMaxVolume, s.cfg.Rental.MaxVolumeGiB()))
	}
	if len(f.Name) > rentMaxName {
		return req, p.T("common.too_long", p.T("rent.name"), rentMaxName)
	}
	for _, c := range f.Name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return req, p.T("rent.bad_name")
		}
	}
	// What fits on one host now: a friendlier answer than the
	// scheduler's; the rental service still decides.
	most := 0
	for _, z := range t.Zones {
		if f.Zone != "" && z.ID != f.Zone {
			continue
		}
		if f.Degraded {
			most = max(most, z.DegradedMax)
		} else {
			most = max(most, z.Max)
		}
	}
	switch {
	case most == 0 && f.Degraded:
		return req, p.T("rent.none_degraded", t.Type.Name)
	case most == 0:
		return req, p.T("rent.none_free", t.Type.Name)
	case count > most:
		return req, p.T("rent.too_many", most, t.Type.Name)
	}
	startup, msg := startupOf(p, f.Startup, f.StartupNone)
	if msg != "" {
		return req, msg
	}
	return rental.RentRequest{Name: f.Name, Image: f.Image, TypeID: t.Type.ID, Count: count, ZoneID: f.Zone,
		Plan: plan, VolumeGiB: vol, IdempotencyKey: f.Idem, Degraded: f.Degraded, StartupCommand: startup}, ""
}

// rentEstimateIn is what an estimate is asked.
type rentEstimateIn struct {
	TypeID string
	Count  int
	Plan   gpurent.Plan
	Hours  int
	// Share prices a degraded listing: the highest share of the list
	// price among the type's free degraded GPUs (permille; 0: full
	// price), so the estimate is what it costs at most.
	Share int
}

// rentDegradedShare is the highest price share among the free GPUs of
// typeID listed as degraded, 0 when none is free.
func rentDegradedShare(types []marketType, typeID string) int {
	share := 0
	for _, t := range types {
		if t.Type.ID != typeID {
			continue
		}
		for _, z := range t.Zones {
			if z.Degraded > 0 {
				share = max(share, z.DegradedMaxPermil)
			}
		}
	}
	return share
}

// rentEstimateInput checks an estimate's parameters; msg says what is
// wrong in the page's language.
func rentEstimateInput(p *web.Page, gpu, count, plan, hours string) (rentEstimateIn, string) {
	in := rentEstimateIn{TypeID: strings.TrimSpace(gpu), Plan: gpurent.Plan(plan)}
	if in.TypeID == "" {
		return in, p.T("rent.bad_type")
	}
	if in.Plan == "" {
		in.Plan = gpurent.PlanHourly
	}
	ok := false
	for _, pl := range rentPlans() {
		ok = ok || pl == in.Plan
	}
	if !ok {
		return in, p.T("rent.bad_plan")
	}
	var err error
	if in.Count, err = strconv.Atoi(strings.TrimSpace(count)); err != nil {
		return in, p.T("common.not_number", p.T("rent.count"))
	}
	if in.Count < 1 || in.Count > rentMaxCount {
		return in, p.T("common.out_of_range", p.T("rent.count"), 1, rentMaxCount)
	}
	if in.Hours, err = strconv.Atoi(strings.TrimSpace(hours)); err != nil {
		return in, p.T("common.not_number", p.T("rent.hours"))
	}
	if in.Hours < 1 || in.Hours > rentMaxHours {
		return in, p.T("common.out_of_range", p.T("rent.hours"), 1, rentMaxHours)
	}
	return in, ""
}

// rentWindow is the part of an estimate in one price window.
type rentWindow struct {
	Seconds int64
	Hours   string // exact to four decimals
	RateFen int64  // per GPU-hour; 0 when the rate changes within it
	Units   int64
	Fen     int64
}

// rentPrice is one way to pay, at list or academic prices.
type rentPrice struct {
	Peak, OffPeak  *rentWindow
	HourlyFen      int64
	Packages       []rating.PackageOption
	Cheapest       gpurent.Plan
	CheapestFen    int64
	PlanFen        int64 // the chosen plan's cost
	PlanPeriods    int64 // the chosen package's periods; 0 for hourly
	PlanPeriodUnit int64 // the chosen package's price per GPU per period
}

// rentEstimate is the quote of a planned rental for the form.
type rentEstimate struct {
	In       rentEstimateIn
	Start    time.Time
	End      time.Time
	List     rentPrice
	Academic rentPrice
	// AcademicApplies: the viewer is verified; Academic is what it pays.
	AcademicApplies bool
	RuleText        string
}

// Pays is the price the viewer pays.
func (e *rentEstimate) Pays() rentPrice {
	if e.AcademicApplies {
		return e.Academic
	}
	return e.List
}

// rentQuote asks the billing service, as the API's quote does.
func (s *Pages) rentQuote(p *web.Page, in rentEstimateIn) (*rentEstimate, error) {
	q, err := s.cfg.Billing.Quote(p.Context(), p.Account, pricing.QuoteRequest{TypeID: in.TypeID, Count: in.Count,
		Duration: time.Duration(in.Hours) * time.Hour, PricePermille: in.Share})
	if err != nil {
		return nil, err
	}
	e := rentEstimateOf(q, in)
	e.RuleText = marketRuleText(p, q.Rule)
	return &e, nil
}

// rentEstimateOf reads a quote for the form: per window, per plan, and
// the chosen plan's cost.
func rentEstimateOf(q *pricing.Quotes, in rentEstimateIn) rentEstimate {
	return rentEstimate{In: in, Start: q.List.Start, End: q.List.End, List: rentPriceOf(q.List, in.Plan),
		Academic: rentPriceOf(q.Academic, in.Plan), AcademicApplies: q.AcademicApplies}
}

func rentPriceOf(q rating.Quotation, plan gpurent.Plan) rentPrice {
	rp := rentPrice{HourlyFen: q.HourlyFen, Packages: q.Packages, Cheapest: q.Cheapest, CheapestFen: q.CheapestFen,
		PlanFen: q.HourlyFen}
	for _, l := range q.Lines {
		w := &rp.Peak
		if l.OffPeak {
			w = &rp.OffPeak
		}
		if *w == nil {
			*w = &rentWindow{RateFen: l.RateFen, Units: l.Units}
		} else if (*w).RateFen != l.RateFen {
			(*w).RateFen = 0
		}
		(*w).Seconds += l.Seconds
		(*w).Fen += l.Fen
	}
	for _, w := range []*rentWindow{rp.Peak, rp.OffPeak} {
		if w != nil {
			w.Hours = rating.QuoteLine{Seconds: w.Seconds}.Hours()
		}
	}
	for _, o := range q.Packages {
		if o.Plan == plan {
			rp.PlanFen, rp.PlanPeriods, rp.PlanPeriodUnit = o.TotalFen, o.Periods, o.UnitFen
		}
	}
	return rp
}

// rentWindowText is one window's line: "55 h × ¥31.25 × 4 GPUs = ¥6,875.00".
func rentWindowText(p *web.Page, w *rentWindow) string {
	if w == nil {
		return "—"
	}
	rate := p.T("rent.rate_varies")
	if w.RateFen > 0 {
		rate = money.Format(w.RateFen)
	}
	return p.T("rent.window_line", w.Hours, rate, w.Units, money.Format(w.Fen))
}

// rentTextIDs are the ids of the estimate's figures on the page.
func rentTextIDs() []string {
	return []string{"est-peak", "est-offpeak", "est-hourly", "est-daily", "est-weekly", "est-monthly", "est-cheapest",
		"est-total", "est-summary", "est-window", "est-academic"}
}

// rentTexts are the estimate's figures by element id, in the page's
// language: what the page shows and what rent.js puts in place.
func rentTexts(p *web.Page, e *rentEstimate) map[string]string {
	pays := e.Pays()
	out := map[string]string{
		"est-peak":     rentWindowText(p, pays.Peak),
		"est-offpeak":  rentWindowText(p, pays.OffPeak),
		"est-hourly":   money.Format(pays.HourlyFen),
		"est-cheapest": p.T("rent.cheapest_line", p.T("market.plan."+string(pays.Cheapest)), money.Format(pays.CheapestFen)),
		"est-total":    money.Format(pays.PlanFen),
		"est-summary":  p.T("rent.summary", e.In.Count, e.In.TypeID, e.In.Hours, p.T("market.plan."+string(e.In.Plan))),
		"est-window": p.T("rent.window", e.Start.In(web.Location()).Format("01-02 15:04"), e.End.In(web.Location()).Format("01-02 15:04"),
			e.RuleText),
		"est-academic": p.T("rent.academic_line", money.Format(e.Academic.PlanFen)),
	}
	if e.AcademicApplies {
		out["est-academic"] = p.T("rent.academic_yours", money.Format(e.List.PlanFen))
	}
	for _, pl := range rentPlans()[1:] {
		id := "est-" + string(pl)
		out[id] = "—"
		for _, o := range pays.Packages {
			if o.Plan == pl {
				out[id] = p.T("rent.package_line", o.Periods, money.Format(o.UnitFen), e.In.Count, money.Format(o.TotalFen))
			}
		}
	}
	return out
}

// rentEstimateJSON is GET /rent/estimate's answer.
type rentEstimateJSON struct {
	GPUType         string            `json:"gpu_type"`
	Count           int               `json:"gpu_count"`
	Hours           int               `json:"hours"`
	Plan            string            `json:"plan"`
	Start           time.Time         `json:"start"`
	End             time.Time         `json:"end"`
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
	Error           string            `json:"error,omitempty"`
}

// rentEstimate answers GET /rent/estimate?gpu=&count=&plan=&hours=: the
// list price figures (or, for a verified academic viewer, the academic
// ones it pays) and the page's texts.
func (s *Pages) rentEstimate(w http.ResponseWriter, r *http.Request, p *web.Page, fleet *marketCache) {
	q := r.URL.Query()
	write := func(status int, v rentEstimateJSON) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	in, msg := rentEstimateInput(p, q.Get("gpu"), q.Get("count"), q.Get("plan"), q.Get("hours"))
	if msg != "" {
		write(http.StatusBadRequest, rentEstimateJSON{Error: msg})
		return
	}
	if q.Get("degraded") != "" {
		types, _, err := fleet.get(p.Context(), s.marketTypes)
		if err != nil {
			write(http.StatusServiceUnavailable, rentEstimateJSON{Error: p.ErrText(err)})
			return
		}
		in.Share = rentDegradedShare(types, in.TypeID)
	}
	e, err := s.rentQuote(p, in)
	if err != nil {
		code := gpurent.ErrorCode(err)
		if code == gpurent.CodeInternal {
			s.log.Error("console: estimate", "err", err)
		}
		status := http.StatusInternalServerError
		if code == gpurent.CodeInvalid {
			status = http.StatusBadRequest
		}
		write(status, rentEstimateJSON{Error: strings.TrimSpace(p.ErrText(err) + " " + web.DetailOf(err))})
		return
	}
	pays := e.Pays()
	v := rentEstimateJSON{GPUType: in.TypeID, Count: in.Count, Hours: in.Hours, Plan: string(in.Plan),
		Start: e.Start, End: e.End, HourlyFen: pays.HourlyFen, PlanFen: pays.PlanFen,
		CheapestPlan: string(pays.Cheapest), CheapestFen: pays.CheapestFen, AcademicPlanFen: e.Academic.PlanFen,
		AcademicApplies: e.AcademicApplies, Packages: map[string]int64{}, Set: rentTexts(p, e)}
	if pays.Peak != nil {
		v.PeakFen = pays.Peak.Fen
	}
	if pays.OffPeak != nil {
		v.OffPeakFen = pays.OffPeak.Fen
	}
	for _, o := range pays.Packages {
		v.Packages[string(o.Plan)] = o.TotalFen
	}
	write(http.StatusOK, v)
}

// startupOf is the startup command a form asks for: the line, "" with
// none checked, nil (the image's own) with neither; msg says what is
// wrong.
func startupOf(p *web.Page, line string, none bool) (*string, string) {
	switch {
	case line != "" && none:
		return nil, p.T("startup.both")
	case none:
		empty := ""
		return &empty, ""
	case line == "":
		return nil, ""
	case len(line) > gpurent.MaxStartupCommandBytes:
		return nil, p.T("common.too_long", p.T("startup.command"), gpurent.MaxStartupCommandBytes)
	case strings.IndexByte(line, 0) >= 0 || !utf8.ValidString(line):
		return nil, p.T("startup.bad")
	}
	return &line, ""
}
