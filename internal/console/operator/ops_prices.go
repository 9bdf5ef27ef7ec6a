package operator

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/wallet"
)

// This file serves /ops/prices: every version of the price list (what
// `gpurent prices` shows) with its effective time, a form that adds a new
// version by editing the latest one's values, and vouchers.

// opsPriceField is one price of a GPU type: its form key, its message and
// where it lives in rating.Prices.
type opsPriceField struct {
	key string
	at  func(*rating.Prices) *int64
}

// opsPriceFields are the prices of one GPU type, in the form's order.
func opsPriceFields() []opsPriceField {
	return []opsPriceField{
		{"peak", func(p *rating.Prices) *int64 { return &p.PeakFen }},
		{"off_peak", func(p *rating.Prices) *int64 { return &p.OffPeakFen }},
		{"academic_peak", func(p *rating.Prices) *int64 { return &p.AcademicPeakFen }},
		{"academic_off_peak", func(p *rating.Prices) *int64 { return &p.AcademicOffPeakFen }},
		{"daily", func(p *rating.Prices) *int64 { return &p.DailyFen }},
		{"weekly", func(p *rating.Prices) *int64 { return &p.WeeklyFen }},
		{"monthly", func(p *rating.Prices) *int64 { return &p.MonthlyFen }},
		{"academic_daily", func(p *rating.Prices) *int64 { return &p.AcademicDailyFen }},
		{"academic_weekly", func(p *rating.Prices) *int64 { return &p.AcademicWeeklyFen }},
		{"academic_monthly", func(p *rating.Prices) *int64 { return &p.AcademicMonthlyFen }},
		{"no_gpu", func(p *rating.Prices) *int64 { return &p.NoGPUFen }},
	}
}

// opsPricesData is the prices page.
type opsPricesData struct {
	Tabs        []opsTab
	Versions    []opsVersionView
	Form        opsPriceForm
	Fields      []string // the price columns' labels
	HasVouchers bool
	Voucher     opsVoucherForm
	// Recent are the newest vouchers, codes masked.
	Recent []opsVoucherView
	// Shown is the voucher just created or looked up; Lookup the code
	// asked for (not found when Shown is nil).
	Shown  *opsVoucherView
	Lookup string
}

type opsVersionView struct {
	ID, Anchor           string
	Effective            time.Time
	Status, Label, Class string
	Rule                 string
	Types                []opsPriceRow
}

type opsPriceRow struct {
	TypeID, Name  string
	Fen           []int64 // in the order of opsPriceFields
	AcademicShare string  // academic peak as a share of peak
}

type opsPriceForm struct {
	Effective, OffStart, OffEnd, Note string
	Weekends                          bool
	Types                             []opsPriceInputRow
}

type opsPriceInputRow struct {
	TypeID, Name string
	Inputs       []opsPriceInput
}

type opsPriceInput struct {
	Name, ID, Label, Value string
}

type opsVoucherForm struct {
	Amount, Expires, Max string
	Promo                bool
}

type opsVoucherView struct {
	Code, Kind       string
	AmountFen        int64
	Expires, Created time.Time
	Max, Redemptions int
}

func (s *Pages) opsPrices(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.prices.title")
	d, latest, err := s.opsPricesData(p)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d.Form = s.opsPriceFormOf(p, latest, s.opsPriceTypes(p, latest), s.opsNow())
	loc := web.Location()
	d.Voucher = opsVoucherForm{Expires: opsLocalValue(s.opsNow().AddDate(0, 0, 30), loc), Max: "1"}
	if code := r.URL.Query().Get("voucher"); code != "" && d.HasVouchers {
		d.Lookup = code
		v, err := s.cfg.Store.VoucherByCode(p.Context(), wallet.NormalizeCode(code))
		switch {
		case gpurent.IsCode(err, gpurent.CodeNotFound):
		case err != nil:
			s.site.Fail(w, r, p, err)
			return
		default:
			d.Shown = opsVoucherOf(v)
		}
	}
	s.site.Render(w, r, p, "ops_prices", d)
}

func opsVoucherOf(v *gpurent.Voucher) *opsVoucherView {
	return &opsVoucherView{Code: wallet.FormatCode(v.Code), Kind: string(v.Kind), AmountFen: v.AmountFen,
		Expires: v.ExpiresAt, Created: v.CreatedAt, Max: v.MaxRedemptions, Redemptions: v.Redemptions}
}

// opsPricesData gathers the versions, newest first, and answers the latest
// one (the one a new version follows).
func (s *Pages) opsPricesData(p *web.Page) (opsPricesData, rating.Version, error) {
	d := opsPricesData{Tabs: s.opsTabs(p, "prices"), HasVouchers: s.cfg.Wallet != nil}
	if d.HasVouchers {
		vs, err := s.cfg.Wallet.Vouchers(p.Context(), p.Account, 50)
		if err != nil {
			return d, rating.Version{}, err
		}
		for i := range vs {
			v := opsVoucherOf(&vs[i])
			v.Code = opsMaskCode(v.Code)
			d.Recent = append(d.Recent, *v)
		}
	}
	vs, err := s.cfg.Billing.Versions(p.Context())
	if err != nil {
		return d, rating.Version{}, err
	}
	if len(vs) == 0 {
		return d, rating.Version{}, gpurent.Errorf(gpurent.CodeInternal, "the price book has no version")
	}
	for _, f := range opsPriceFields() {
		d.Fields = append(d.Fields, p.T("ops.price."+f.key))
	}
	names := s.opsTypeNames(p)
	now := s.opsNow()
	current := -1
	for i, v := range vs {
		if !v.Effective.After(now) {
			current = i
		}
	}
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		status := "past"
		switch {
		case i == current:
			status = "current"
		case v.Effective.After(now):
			status = "scheduled"
		}
		view := opsVersionView{ID: v.ID, Anchor: "version-" + strconv.FormatInt(v.Effective.Unix(), 10),
			Effective: v.Effective, Status: status, Label: p.T("ops.prices." + status), Class: opsBadge(status),
			Rule: opsRule(p, v.Rule)}
		for _, id := range opsSortedTypes(v.Types) {
			pr := v.Types[id]
			row := opsPriceRow{TypeID: id, Name: names[id], AcademicShare: opsPercent(int(pr.AcademicPeakFen), int(pr.PeakFen))}
			for _, f := range opsPriceFields() {
				row.Fen = append(row.Fen, *f.at(&pr))
			}
			view.Types = append(view.Types, row)
		}
		d.Versions = append(d.Versions, view)
	}
	return d, vs[len(vs)-1], nil
}

// opsTypeNames are the GPU types' names by id, from the catalog the API
// serves ("" when the fleet service is off).
func (s *Pages) opsTypeNames(p *web.Page) map[string]string {
	names := map[string]string{}
	if s.cfg.Fleet == nil {
		return names
	}
	as, err := s.cfg.Fleet.GPUTypes(p.Context())
	if err != nil {
		s.log.Warn("console: GPU types for the price page", "err", err)
		return names
	}
	for _, a := range as {
		names[a.Type.ID] = a.Type.Name
	}
	return names
}

// opsPriceTypes are the prices a new version starts from: the latest
// version's, and the catalog's defaults for a GPU type added since (the
// billing service wants every type priced).
func (s *Pages) opsPriceTypes(p *web.Page, latest rating.Version) map[string]rating.Prices {
	out := make(map[string]rating.Prices, len(latest.Types))
	for id, pr := range latest.Types {
		out[id] = pr
	}
	if s.cfg.Fleet == nil {
		return out
	}
	as, err := s.cfg.Fleet.GPUTypes(p.Context())
	if err != nil {
		return out
	}
	for _, a := range as {
		if _, ok := out[a.Type.ID]; !ok {
			out[a.Type.ID] = rating.DefaultPrices(a.Type)
		}
	}
	return out
}

func opsSortedTypes(m map[string]rating.Prices) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// opsRule describes an off-peak rule in the page's language.
func opsRule(p *web.Page, r rating.Rule) string {
	s := p.T("ops.prices.rule_none")
	if r.Start != r.End {
		s = p.T("ops.prices.rule_window", r.Start.String(), r.End.String())
	}
	if r.Weekends {
		s += p.T("ops.prices.rule_weekends")
	}
	return s
}

// opsPriceFormOf is the new-version form filled with the latest version's
// values, effective at the next whole hour (or an hour after the latest
// version, when that is later).
func (s *Pages) opsPriceFormOf(p *web.Page, latest rating.Version, types map[string]rating.Prices, now time.Time) opsPriceForm {
	eff := opsNextHour(now)
	if !eff.After(latest.Effective) {
		eff = opsNextHour(latest.Effective)
	}
	loc := web.Location()
	f := opsPriceForm{Effective: opsLocalValue(eff, loc), OffStart: latest.Rule.Start.String(),
		OffEnd: latest.Rule.End.String(), Weekends: latest.Rule.Weekends}
	names := s.opsTypeNames(p)
	for _, id := range opsSortedTypes(types) {
		pr := types[id]
		row := opsPriceInputRow{TypeID: id, Name: names[id]}
		for _, fld := range opsPriceFields() {
			row.Inputs = append(row.Inputs, opsPriceInput{Name: "p." + id + "." + fld.key, ID: "price-" + id + "-" + fld.key,
				Label: p.T("ops.price." + fld.key), Value: money.Value(*fld.at(&pr))})
		}
		f.Types = append(f.Types, row)
	}
	return f
}

// opsAddPrices adds a price version from the form: the same document and
// the same validation as POST /api/v1/prices, then the billing service.
func (s *Pages) opsAddPrices(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.prices.title")
	d, latest, err := s.opsPricesData(p)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	types := s.opsPriceTypes(p, latest)
	// Keep what was typed.
	form := s.opsPriceFormOf(p, latest, types, s.opsNow())
	form.Effective, form.OffStart, form.OffEnd = r.PostFormValue("effective"), r.PostFormValue("off_start"), r.PostFormValue("off_end")
	form.Weekends, form.Note = r.PostFormValue("weekends") != "", r.PostFormValue("note")
	for i := range form.Types {
		for j := range form.Types[i].Inputs {
			in := &form.Types[i].Inputs[j]
			in.Value = r.PostFormValue(in.Name)
		}
	}
	d.Form = form
	d.Voucher = opsVoucherForm{Expires: opsLocalValue(s.opsNow().AddDate(0, 0, 30), web.Location()), Max: "1"}
	again := func(msg string) {
		p.Error = msg
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "ops_prices", d)
	}
	v, msg := opsParseVersion(p, r, types, s.opsNow())
	if msg != "" {
		again(msg)
		return
	}
	note, problem := opsOneLine(form.Note, 500, false)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.prices.note"))
		return
	}
	// The API's validation: the stored document, decoded.
	doc, err := pricing.EncodeVersion(v)
	if err == nil {
		v, err = pricing.DecodeVersion(doc)
	}
	if err == nil {
		v, err = s.cfg.Billing.AddVersion(p.Context(), p.Account, v, note)
	}
	if s.opsRefused(w, r, p, err, again) {
		return
	}
	opsDone(w, r, "/ops/prices", nil, "prices", "version-"+strconv.FormatInt(v.Effective.Unix(), 10))
}

// opsParseVersion reads the new-version form: the effective time (Beijing
// time, not in the past), the off-peak window and every type's prices in
// yuan. It answers the version or a message in the page's language.
func opsParseVersion(p *web.Page, r *http.Request, types map[string]rating.Prices, now time.Time) (rating.Version, string) {
	loc := web.Location()
	v := rating.Version{Types: map[string]rating.Prices{}}
	raw := r.PostFormValue("effective")
	if raw == "" {
		return v, opsFieldError(p, opsProblemRequired, "ops.prices.effective")
	}
	eff, ok := opsParseLocalTime(raw, loc)
	if !ok {
		return v, opsFieldError(p, opsProblemFormat, "ops.prices.effective")
	}
	if eff.Before(now) {
		return v, opsFieldError(p, opsProblemPast, "ops.prices.effective")
	}
	v.Effective = eff.Truncate(time.Second)
	start, ok := opsParseClock(r.PostFormValue("off_start"))
	if !ok {
		return v, opsFieldError(p, opsProblemFormat, "ops.prices.off_start")
	}
	end, ok := opsParseClock(r.PostFormValue("off_end"))
	if !ok {
		return v, opsFieldError(p, opsProblemFormat, "ops.prices.off_end")
	}
	v.Rule = rating.Rule{Start: start, End: end, Weekends: r.PostFormValue("weekends") != ""}
	for _, id := range opsSortedTypes(types) {
		var pr rating.Prices
		for _, f := range opsPriceFields() {
			fen, problem := opsParseYuan(r.PostFormValue("p."+id+"."+f.key), rating.MaxRateFen)
			if problem != "" {
				return v, p.T("ops.err."+problem, id+" "+p.T("ops.price."+f.key))
			}
			*f.at(&pr) = fen
		}
		if pr.OffPeakFen > pr.PeakFen {
			return v, p.T("ops.err.off_peak_dearer", id)
		}
		if pr.AcademicPeakFen > pr.PeakFen || pr.AcademicOffPeakFen > pr.OffPeakFen || pr.AcademicDailyFen > pr.DailyFen ||
			pr.AcademicWeeklyFen > pr.WeeklyFen || pr.AcademicMonthlyFen > pr.MonthlyFen {
			return v, p.T("ops.err.academic_dearer", id)
		}
		v.Types[id] = pr
	}
	return v, ""
}

// opsCreateVoucher creates a voucher as POST /api/v1/vouchers does and
// shows its code.
func (s *Pages) opsCreateVoucher(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.prices.title")
	f := opsVoucherForm{Amount: r.PostFormValue("amount"), Expires: r.PostFormValue("expires"),
		Max: r.PostFormValue("max"), Promo: r.PostFormValue("promo") != ""}
	again := func(msg string) {
		p.Error = msg
		if s.cfg.Billing == nil {
			s.site.RenderStatus(w, r, p, http.StatusBadRequest, "error", web.ErrorData{Title: msg})
			return
		}
		d, latest, err := s.opsPricesData(p)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.Form = s.opsPriceFormOf(p, latest, s.opsPriceTypes(p, latest), s.opsNow())
		d.Voucher = f
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "ops_prices", d)
	}
	amount, problem := opsParseAmount(f.Amount, wallet.MaxCreditFen)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.voucher.amount"))
		return
	}
	if f.Expires == "" {
		again(opsFieldError(p, opsProblemRequired, "ops.voucher.expires"))
		return
	}
	expires, ok := opsParseLocalTime(f.Expires, web.Location())
	if !ok {
		again(opsFieldError(p, opsProblemFormat, "ops.voucher.expires"))
		return
	}
	if !expires.After(s.opsNow()) {
		again(opsFieldError(p, opsProblemPast, "ops.voucher.expires"))
		return
	}
	max, problem := opsParseCount(f.Max, 1, wallet.MaxRedemptions)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.voucher.max"))
		return
	}
	kind := gpurent.VoucherCash
	if f.Promo {
		kind = gpurent.VoucherPromo
	}
	v, err := s.cfg.Wallet.CreateVoucher(p.Context(), p.Account, amount, kind, expires, max)
	switch {
	case gpurent.IsCode(err, gpurent.CodeInvalid):
		p.FormError(err)
		again(p.Error)
		return
	case err != nil:
		s.site.Fail(w, r, p, err)
		return
	}
	opsDone(w, r, "/ops/prices", url.Values{"voucher": {wallet.FormatCode(v.Code)}}, "voucher", "vouchers")
}

// opsMaskCode shows a voucher code's first group only: the list is for
// seeing what was issued and used, not for handing codes out again.
func opsMaskCode(code string) string {
	first, _, ok := strings.Cut(code, "-")
	if !ok || len(first) >= len(code) {
		return "••••"
	}
	return first + "-••••-••••"
}
