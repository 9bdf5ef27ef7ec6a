package customer

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rating"
)

// The rent-or-buy calculator's pages: GET /calculator renders the form
// and the answer from query parameters (it works without JavaScript);
// GET /calculator.json answers the same computation for calculator.js.

// Defaults of the calculator's form that are not the price book's or a
// GPU type's: the electricity price the issue names, and the project's
// own assumptions, all editable.
const (
	calcDefaultCount    = 8
	calcDefaultHours    = 240 // tenths: around the clock
	calcDefaultMonths   = 12
	calcDefaultKWhFen   = 80      // 0.8 CNY per kWh
	calcDefaultHosting  = 3000_00 // CNY per server per month
	calcDefaultYears    = 3
	calcDefaultResale   = 20
	calcDefaultWatts    = 700
	calcDefaultTypeSeed = "h100-80g-sxm"
)

// calcForm is the form's values as typed.
type calcForm struct {
	GPU, For                          string
	Count, Hours, Months, OffPeak     string
	GPUPrice, ServerPrice, Watts, KWh string
	Hosting, Years, Resale            string
}

// calcTypeOption is a GPU type the calculator knows a price of.
type calcTypeOption struct {
	ID, Name string
	TDP      int
	Prices   rating.Prices
}

// calcView is the calculator page's data.
type calcView struct {
	Form  calcForm
	Types []calcTypeOption
	// OK: the inputs were valid and In, Res, Chart and Texts hold the answer.
	OK    bool
	In    rentOrBuyInput
	Res   rentOrBuyResult
	Chart string // the chart's data-chart JSON
	Texts map[string]string
	// Source of the purchase defaults of the chosen type.
	Seed, Estimated, NoDefault bool
	AllDayOffPeak              int // percent of a week that is off-peak
	Academic                   bool
	RuleText                   string
}

// calcChart is the data-chart JSON console.js draws.
type calcChart struct {
	Labels []string        `json:"labels"`
	Series []calcChartLine `json:"series"`
	Unit   string          `json:"unit"`
}

type calcChartLine struct {
	Name   string  `json:"name"`
	Values []int64 `json:"values"`
	Color  string  `json:"color,omitempty"`
}

func (s *Pages) calculator(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title, p.Nav = p.T("calc.title"), "calculator"
	p.Scripts = []string{"calculator.js"}
	v, err := s.calcCompute(p, r.URL.Query())
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	status := http.StatusOK
	if !v.OK {
		status = http.StatusBadRequest
	}
	s.site.RenderStatus(w, r, p, status, "calculator", v)
}

// calcJSON is GET /calculator.json's answer.
type calcJSON struct {
	Inputs map[string]string `json:"inputs"`
	Result *rentOrBuyResult  `json:"result,omitempty"`
	Set    map[string]string `json:"set,omitempty"`
	Chart  *json.RawMessage  `json:"chart,omitempty"`
	Error  string            `json:"error,omitempty"`
}

func (s *Pages) calculatorJSON(w http.ResponseWriter, r *http.Request, p *web.Page) {
	v, err := s.calcCompute(p, r.URL.Query())
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		if gpurent.ErrorCode(err) == gpurent.CodeInternal {
			s.log.Error("console: calculator", "err", err)
		}
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(calcJSON{Error: p.ErrText(err)})
		return
	}
	f := v.Form
	out := calcJSON{Inputs: map[string]string{"gpu": f.GPU, "for": f.For, "count": f.Count, "hours": f.Hours,
		"months": f.Months, "offpeak": f.OffPeak, "gpu_price": f.GPUPrice, "server_price": f.ServerPrice,
		"watts": f.Watts, "kwh": f.KWh, "hosting": f.Hosting, "years": f.Years, "resale": f.Resale}}
	if !v.OK {
		out.Error = p.Error
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	raw := json.RawMessage(v.Chart)
	out.Result, out.Set, out.Chart = &v.Res, v.Texts, &raw
	_ = json.NewEncoder(w).Encode(out)
}

// calcTypes are the GPU types with a price in the book in force: names
// and TDP from the fleet's catalog, prices (academic for a verified
// viewer) from the billing service.
func (s *Pages) calcTypes(p *web.Page) ([]calcTypeOption, rating.Rule, bool, error) {
	ctx := p.Context()
	as, err := s.cfg.Fleet.GPUTypes(ctx)
	if err != nil {
		return nil, rating.Rule{}, false, err
	}
	vs, err := s.cfg.Billing.Versions(ctx)
	if err != nil {
		return nil, rating.Rule{}, false, err
	}
	now := s.cfg.Now()
	v, ok := marketVersionAt(vs, now)
	if !ok {
		return nil, rating.Rule{}, false, gpurent.Errorf(gpurent.CodeUnavailable, "no price list is in force")
	}
	academic := p.Account != nil && p.Account.Academic(now)
	var out []calcTypeOption
	for _, a := range as {
		pr, ok := v.Types[a.Type.ID]
		if !ok {
			continue
		}
		if academic {
			pr.PeakFen, pr.OffPeakFen, pr.MonthlyFen = pr.AcademicPeakFen, pr.AcademicOffPeakFen, pr.AcademicMonthlyFen
		}
		out = append(out, calcTypeOption{ID: a.Type.ID, Name: a.Type.Name, TDP: a.Type.TDPWatts, Prices: pr})
	}
	return out, v.Rule, academic, nil
}

// calcCompute reads the form from q (defaults for what it lacks), checks
// it and computes the answer. A form error sets p.Error and leaves OK
// false; err is a service's failure.
func (s *Pages) calcCompute(p *web.Page, q url.Values) (*calcView, error) {
	types, rule, academic, err := s.calcTypes(p)
	if err != nil {
		return nil, err
	}
	v := &calcView{Types: types, Academic: academic, AllDayOffPeak: calcOffPeakAllDay(rule), RuleText: marketRuleText(p, rule),
		Texts: map[string]string{}}
	for _, id := range calcTextIDs() {
		v.Texts[id] = "—"
	}
	if len(types) == 0 {
		p.Error = p.T("calc.no_types")
		return v, nil
	}
	get := func(name, def string) string {
		if !q.Has(name) {
			return def
		}
		return strings.TrimSpace(q.Get(name))
	}
	f := calcForm{GPU: get("gpu", "")}
	var typ *calcTypeOption
	for i := range types {
		if types[i].ID == f.GPU {
			typ = &types[i]
		}
	}
	if typ == nil {
		typ = &types[0]
		for i := range types {
			if types[i].ID == calcDefaultTypeSeed {
				typ = &types[i]
			}
		}
		f.GPU = typ.ID
	}
	def, hasDef := calcPurchaseDefaults(typ.ID)
	v.Seed, v.Estimated, v.NoDefault = def.Seed, hasDef && !def.Seed, !hasDef
	defGPU, defServer := "", ""
	if hasDef {
		defGPU, defServer = money.Short(def.GPUFen), money.Short(def.ServerFen)
	}
	watts := calcDefaultWatts
	if typ.TDP > 0 {
		watts = typ.TDP
	}
	f.For = typ.ID
	f.Count = get("count", strconv.Itoa(calcDefaultCount))
	f.Hours = get("hours", calcFormatTenths(calcDefaultHours))
	f.Months = get("months", strconv.Itoa(calcDefaultMonths))
	f.OffPeak = get("offpeak", strconv.Itoa(v.AllDayOffPeak))
	f.KWh = get("kwh", money.Short(calcDefaultKWhFen))
	f.Hosting = get("hosting", money.Short(calcDefaultHosting))
	f.Years = get("years", strconv.Itoa(calcDefaultYears))
	f.Resale = get("resale", strconv.Itoa(calcDefaultResale))
	// The buy-side figures belong to a type: when the type changed since
	// the form was filled, they are the new type's defaults.
	if get("for", "") == typ.ID {
		f.GPUPrice = get("gpu_price", defGPU)
		f.ServerPrice = get("server_price", defServer)
		f.Watts = get("watts", strconv.Itoa(watts))
	} else {
		f.GPUPrice, f.ServerPrice, f.Watts = defGPU, defServer, strconv.Itoa(watts)
	}
	v.Form = f

	in := rentOrBuyInput{PeakFen: typ.Prices.PeakFen, OffPeakFen: typ.Prices.OffPeakFen, MonthlyFen: typ.Prices.MonthlyFen}
	if msg := calcParse(p, f, &in); msg != "" {
		p.Error = msg
		return v, nil
	}
	v.OK, v.In, v.Res = true, in, rentOrBuy(in)
	series := rentOrBuySeries(in)
	chart := calcChart{Unit: p.T("calc.chart_unit"), Series: []calcChartLine{
		{Name: p.T("calc.rent_hourly"), Color: "#1f5fbf"},
		{Name: p.T("calc.rent_package"), Color: "#9a6700"},
		{Name: p.T("calc.buy"), Color: "#1d7a46"},
	}}
	for i, m := range series.Months {
		chart.Labels = append(chart.Labels, p.T("calc.month_n", m))
		chart.Series[0].Values = append(chart.Series[0].Values, calcYuan(series.RentHourly[i]))
		chart.Series[1].Values = append(chart.Series[1].Values, calcYuan(series.RentPkg[i]))
		chart.Series[2].Values = append(chart.Series[2].Values, calcYuan(series.Buy[i]))
	}
	b, err := json.Marshal(chart)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "calculator chart")
	}
	v.Chart = string(b)
	v.Texts = calcTexts(p, in, v.Res)
	return v, nil
}

// calcYuan is fen as whole yuan, rounded half-up, for the chart's axis.
func calcYuan(fen int64) int64 { return (fen + 50) / 100 }

// calcParse checks the form's values into in; msg says what is wrong in
// the page's language.
func calcParse(p *web.Page, f calcForm, in *rentOrBuyInput) string {
	integer := func(v, label string, lo, hi int, dst *int) string {
		if v == "" {
			return p.T("common.required", p.T(label))
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return p.T("common.not_number", p.T(label))
		}
		if n < lo || n > hi {
			return p.T("common.out_of_range", p.T(label), lo, hi)
		}
		*dst = n
		return ""
	}
	money := func(v, label string, hi int64, dst *int64) string {
		if v == "" {
			return p.T("common.required", p.T(label))
		}
		fen, ok := calcParseYuan(v)
		if !ok {
			return p.T("calc.bad_money", p.T(label))
		}
		if fen > hi {
			return p.T("calc.too_much", p.T(label), money.Format(hi))
		}
		*dst = fen
		return ""
	}
	checks := []func() string{
		func() string { return integer(f.Count, "calc.count", 1, calcMaxCount, &in.Count) },
		func() string {
			t, ok := calcParseTenths(f.Hours)
			switch {
			case f.Hours == "":
				return p.T("common.required", p.T("calc.hours"))
			case !ok || t < 1 || t > calcMaxHoursTenths:
				return p.T("calc.bad_hours")
			}
			in.HoursTenths = t
			return ""
		},
		func() string { return integer(f.Months, "calc.months", 1, calcMaxMonths, &in.Months) },
		func() string { return integer(f.OffPeak, "calc.offpeak", 0, 100, &in.OffPeakPercent) },
		func() string {
			if f.GPUPrice == "" && f.ServerPrice == "" {
				return p.T("calc.enter_prices")
			}
			return money(f.GPUPrice, "calc.gpu_price", calcMaxPriceFen, &in.GPUPriceFen)
		},
		func() string { return money(f.ServerPrice, "calc.server_price", calcMaxPriceFen, &in.ServerPriceFen) },
		func() string { return integer(f.Watts, "calc.watts", 1, calcMaxWatts, &in.Watts) },
		func() string { return money(f.KWh, "calc.kwh", calcMaxKWhFen, &in.KWhFen) },
		func() string { return money(f.Hosting, "calc.hosting", calcMaxHostingFen, &in.HostingFen) },
		func() string {
			if f.Years != "2" && f.Years != "3" {
				return p.T("calc.bad_years")
			}
			in.DepreciationYears = int(f.Years[0] - '0')
			return ""
		},
		func() string { return integer(f.Resale, "calc.resale", 0, calcMaxResalePct, &in.ResalePercent) },
	}
	for _, c := range checks {
		if msg := c(); msg != "" {
			return msg
		}
	}
	return ""
}

// calcTextIDs are the ids of the answer's figures on the page.
func calcTextIDs() []string {
	return []string{"calc-rent-hourly", "calc-rent-package", "calc-rent", "calc-buy", "calc-capex", "calc-resale",
		"calc-depreciation", "calc-power", "calc-hosting", "calc-servers", "calc-gpu-hours", "calc-rent-how",
		"calc-verdict", "calc-breakeven-hours", "calc-breakeven"}
}

// calcTexts are the answer's figures by element id, in the page's
// language: what the page shows and calculator.js puts in place.
func calcTexts(p *web.Page, in rentOrBuyInput, r rentOrBuyResult) map[string]string {
	t := map[string]string{
		"calc-rent-hourly":  money.Format(r.RentHourlyFen),
		"calc-rent-package": money.Format(r.RentPackageFen),
		"calc-rent":         money.Format(r.RentFen),
		"calc-buy":          money.Format(r.BuyFen),
		"calc-capex":        money.Format(r.CapexFen),
		"calc-resale":       money.Format(r.ResaleFen),
		"calc-depreciation": money.Format(r.DepreciationFen),
		"calc-power":        money.Format(r.PowerFen),
		"calc-hosting":      money.Format(r.HostingFen),
		"calc-servers":      strconv.FormatInt(r.Servers, 10),
		"calc-gpu-hours":    calcGroup(calcFormatTenths(int(r.GPUHoursTenths))),
		"calc-rent-how":     p.T("calc.rent_how_hourly"),
	}
	if r.RentPackage {
		t["calc-rent-how"] = p.T("calc.rent_how_package")
	}
	if r.BuyCheaper {
		t["calc-verdict"] = p.T("calc.verdict_buy", money.Format(r.RentFen-r.BuyFen))
	} else {
		t["calc-verdict"] = p.T("calc.verdict_rent", money.Format(r.BuyFen-r.RentFen))
	}
	switch {
	case r.BreakEvenFrom < 0:
		t["calc-breakeven-hours"] = "—"
		t["calc-breakeven"] = p.T("calc.breakeven_never", in.Months)
	case r.BreakEvenTo < calcMaxHoursTenths:
		t["calc-breakeven-hours"] = calcFormatTenths(r.BreakEvenFrom)
		t["calc-breakeven"] = p.T("calc.breakeven_range", calcFormatTenths(r.BreakEvenFrom), calcFormatTenths(r.BreakEvenTo), in.Months)
	default:
		t["calc-breakeven-hours"] = calcFormatTenths(r.BreakEvenFrom)
		t["calc-breakeven"] = p.T("calc.breakeven_from", calcFormatTenths(r.BreakEvenFrom), in.Months)
	}
	return t
}

// calcGroup writes a decimal number's whole part in groups of three:
// "69120" → "69,120", "1234.5" → "1,234.5".
func calcGroup(n string) string {
	whole, frac, dot := strings.Cut(n, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if dot {
		b.WriteString("." + frac)
	}
	return b.String()
}
