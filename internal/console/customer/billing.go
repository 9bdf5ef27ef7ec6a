package customer

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/outbound"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/wallet"
)

// billingMessages are the billing pages' messages.
func billingMessages() map[string]web.Pair {
	return map[string]web.Pair{
		"billing.title":                  {"费用", "Billing"},
		"billing.wallet":                 {"钱包", "Wallet"},
		"billing.spendable":              {"可用余额", "Spendable"},
		"billing.cash":                   {"现金", "Cash"},
		"billing.credit":                 {"赠送与补偿额度", "Credits"},
		"billing.arrears":                {"欠费（存储）", "Owed (storage)"},
		"billing.arrears_note":           {"欠费期间无法启动实例，请先充值。", "No instance can start while you owe: top up first."},
		"billing.burn":                   {"当前消耗", "Burn rate"},
		"billing.per_hour":               {"%s / 小时", "%s / hour"},
		"billing.running":                {"%d 个按量实例运行中", "%d hourly instances running"},
		"billing.runway":                 {"预计可用", "Runway"},
		"billing.runway.none":            {"无按量实例在消耗", "Nothing is burning"},
		"billing.runway.dhm":             {"%d 天 %d 小时", "%d d %d h"},
		"billing.runway.hm":              {"%d 小时 %d 分钟", "%d h %d min"},
		"billing.runway.m":               {"%d 分钟", "%d min"},
		"billing.lots":                   {"额度明细", "Credit lots"},
		"billing.lot.kind":               {"类型", "Kind"},
		"billing.lot.promo":              {"赠送", "Promotion"},
		"billing.lot.sla":                {"SLA 补偿", "SLA credit"},
		"billing.lot.balance":            {"余额", "Balance"},
		"billing.lot.expires":            {"到期", "Expires"},
		"billing.voucher":                {"兑换代金券", "Redeem a voucher"},
		"billing.voucher.code":           {"兑换码", "Voucher code"},
		"billing.voucher.submit":         {"兑换", "Redeem"},
		"billing.voucher.bad":            {"兑换码为 12 位字母和数字，如 7KQ2-M9XD-4RTB", "A voucher code is 12 letters and digits, like 7KQ2-M9XD-4RTB"},
		"billing.voucher.unknown":        {"兑换码不存在，请核对后重试", "No voucher has this code: check it and try again"},
		"billing.topup":                  {"对公转账充值", "Top up by bank transfer"},
		"billing.topup.intro":            {"提交金额后获得转账附言编号；到账后由运营人员确认入账。", "Submit an amount to get a reference to quote; an operator credits it when the money arrives."},
		"billing.topup.amount":           {"金额（元）", "Amount (CNY)"},
		"billing.topup.submit":           {"获取转账信息", "Get transfer details"},
		"billing.topup.ref":              {"请转账 %s，并在附言中注明编号：", "Transfer %s and quote this reference:"},
		"billing.topup.details":          {"收款信息：", "Payee:"},
		"billing.limits":                 {"消费上限", "Spend limits"},
		"billing.limits.daily":           {"每日上限（元，0 为不限）", "Daily cap (CNY, 0: none)"},
		"billing.limits.monthly":         {"每月上限（元，0 为不限）", "Monthly cap (CNY, 0: none)"},
		"billing.limits.stop":            {"达到上限时同时停止运行中的实例", "Also stop running instances at a cap"},
		"billing.limits.day":             {"每日上限", "Daily cap"},
		"billing.limits.month":           {"每月上限", "Monthly cap"},
		"billing.limits.spent":           {"今日已消费 %s，本月已消费 %s", "Spent %s today and %s this month"},
		"billing.limits.reached":         {"已达到上限：新租用被拒绝", "A cap is reached: new rentals are refused"},
		"billing.limits.none":            {"不限", "none"},
		"billing.limits.submit":          {"保存上限", "Save limits"},
		"billing.webhook":                {"余额预警 Webhook", "Runway alert webhook"},
		"billing.webhook.intro":          {"余额不足 2 小时等预警会以 JSON POST 到此地址（留空则不发送）。", "Alerts such as a runway under two hours are POSTed here as JSON (empty: none)."},
		"billing.webhook.url":            {"Webhook 地址", "Webhook URL"},
		"billing.webhook.submit":         {"保存 Webhook", "Save webhook"},
		"billing.webhook.bad":            {"Webhook 必须是 http:// 或 https:// 开头的网址", "The webhook must be an http:// or https:// URL"},
		"billing.webhook.refused":        {"Webhook 必须是公网上的 https:// 地址：本机、内网、链路本地和云元数据地址一律拒绝。", "The webhook must be a public https:// address: loopback, private, link-local and metadata addresses are refused."},
		"billing.events":                 {"最近的预警与通知", "Recent alerts and notices"},
		"billing.ledger":                 {"收支明细", "Transactions"},
		"billing.ledger.when":            {"时间", "When"},
		"billing.ledger.op":              {"类型", "Type"},
		"billing.ledger.amount":          {"金额", "Amount"},
		"billing.ledger.net":             {"余额变动", "Balance change"},
		"billing.ledger.note":            {"说明", "Note"},
		"billing.ledger.older":           {"更早的记录", "Older"},
		"billing.ledger.newest":          {"最新记录", "Newest"},
		"billing.op.topup":               {"充值", "Top-up"},
		"billing.op.grant":               {"赠送额度", "Credit granted"},
		"billing.op.debit":               {"扣费", "Charge"},
		"billing.op.expire":              {"额度过期", "Credit expired"},
		"billing.op.settle":              {"结清欠费", "Owed settled"},
		"billing.statements":             {"月度账单", "Monthly statements"},
		"billing.statement.title":        {"%s 账单", "Statement %s"},
		"billing.statement.this":         {"本月（%s）至今：%s", "This month (%s) so far: %s"},
		"billing.statement.csv":          {"下载 CSV", "Download CSV"},
		"billing.statement.open":         {"进行中：本月或其中的实例尚未结束，金额还会增加", "Open: the month or a run in it is not over; it can still grow"},
		"billing.statement.final":        {"已出账：不再变动，之后上报的用量在下月更正", "Final: it never changes; usage reported later is corrected next month"},
		"billing.statement.complete":     {"已完整：月末一天后出账", "Complete: made final a day after the month ends"},
		"billing.statement.empty":        {"本月没有按量用量。", "No metered usage this month."},
		"billing.statement.instance":     {"实例", "Instance"},
		"billing.statement.gpus":         {"GPU", "GPUs"},
		"billing.statement.window":       {"时段", "Window"},
		"billing.statement.hours":        {"时长（小时）", "Hours"},
		"billing.statement.rate":         {"单价", "Rate"},
		"billing.statement.units":        {"计费单位", "Units"},
		"billing.statement.total":        {"合计", "Total"},
		"billing.statement.months":       {"其他月份", "Other months"},
		"billing.statement.degraded":     {"降级 GPU，按 %s 计价", "degraded GPUs, billed at %s"},
		"billing.window.peak":            {"高峰", "peak"},
		"billing.window.off-peak":        {"闲时", "off-peak"},
		"billing.window.no-gpu":          {"无卡模式", "no-GPU mode"},
		"billing.window.correction":      {"更正", "correction"},
		"billing.window.daily_package":   {"日包", "daily package"},
		"billing.window.weekly_package":  {"周包", "weekly package"},
		"billing.window.monthly_package": {"月包", "monthly package"},
		"billing.amount.bad":             {"%s 必须是金额，如 100 或 99.50", "%s must be an amount such as 100 or 99.50"},
		"billing.amount.decimals":        {"%s 最多两位小数", "%s takes at most two decimals"},
		"billing.amount.negative":        {"%s 不能为负数", "%s cannot be negative"},
		"billing.amount.positive":        {"%s 必须大于 0", "%s must be more than 0"},
		"billing.amount.min":             {"%s 至少为 %s", "%s must be at least %s"},
		"billing.amount.max":             {"%s 不能超过 %s", "%s must be at most %s"},
		"billing.done.redeemed":          {"代金券已兑换，金额已计入钱包。", "The voucher is redeemed into your wallet."},
		"billing.done.redeemed_before":   {"你已兑换过这张代金券。", "You redeemed this voucher before."},
		"billing.done.limits":            {"消费上限已保存。", "Your spend limits are saved."},
		"billing.done.webhook":           {"Webhook 已保存。", "The webhook is saved."},
	}
}

// billingRoutes are the billing pages and actions.
func (s *Pages) billingRoutes() []web.Route {
	return []web.Route{
		{Pattern: "GET /billing", Who: web.Customer, Handle: s.billingPage},
		{Pattern: "GET /billing/statements/{month}", Who: web.Customer, Handle: s.billingStatement},
		{Pattern: "POST /billing/voucher", Who: web.Customer, Handle: s.billingRedeem},
		{Pattern: "POST /billing/limits", Who: web.Customer, Handle: s.billingSetLimits},
		{Pattern: "POST /billing/webhook", Who: web.Customer, Handle: s.billingSetWebhook},
		{Pattern: "POST /billing/topup", Who: web.Customer, Handle: s.billingTopUp},
	}
}

// Bounds of the billing forms: the largest spending limit (¥100,000,000 a
// day or month), the longest webhook address, and how much a page lists.
const billMaxLimitFen int64 = 10_000_000_000

const (
	billMaxWebhook   = 2000
	billLedgerPage   = 50
	billMonthsListed = 36
	billEventsListed = 10
)

// billingData is the billing page's data.
type billingData struct {
	Wallet      *wallet.View
	RunwayText  string // "" when nothing burns
	Limits      *wallet.LimitsView
	Webhook     string
	Events      []gpurent.AccountEvent
	BankTopUp   bool
	Payment     *gpurent.Payment // a top-up just started
	Entries     []billEntry
	Before      int64 // the page of the ledger shown (0: newest)
	Older       int64 // before= of the next page (0: none)
	Statements  bool
	Months      []string
	ThisMonth   string
	ThisTotal   int64
	Form        billForm
	LimitsLabel struct{ Daily, Monthly string }
}

// billEntry is one ledger entry with its kind in the page's language.
type billEntry struct {
	wallet.Entry
	OpText string
}

// billForm is what the user typed, kept when a form is shown again.
type billForm struct {
	Voucher        string
	Daily, Monthly string
	StopRunning    bool
	Webhook        string
	TopUp          string
}

// billingDoneKey is the notice key of ?done=, or "".
func billingDoneKey(done string) string {
	switch done {
	case "redeemed", "redeemed_before", "limits", "webhook":
		return "billing.done." + done
	}
	return ""
}

func (s *Pages) billingPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if k := billingDoneKey(r.URL.Query().Get("done")); k != "" {
		p.Flash = p.T(k)
	}
	before, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	if err != nil || before < 0 {
		before = 0
	}
	s.billingRender(w, r, p, http.StatusOK, nil, before, nil)
}

// billingRender loads the billing page's data and renders it; f is what the
// user typed (nil: the stored values), pay a top-up just started.
func (s *Pages) billingRender(w http.ResponseWriter, r *http.Request, p *web.Page, status int, f *billForm, before int64, pay *gpurent.Payment) {
	p.Title, p.Nav = p.T("billing.title"), "billing"
	ctx, acc := p.Context(), p.Account
	d := &billingData{Before: before, Payment: pay, Statements: s.statementsOn()}
	if s.cfg.Wallet == nil && !d.Statements {
		s.site.NotFound(w, r, p)
		return
	}
	if s.cfg.Wallet != nil {
		var err error
		if d.Wallet, err = s.cfg.Wallet.Wallet(ctx, acc); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		if d.Wallet.RunwaySeconds != ledger.NoLimit {
			d.RunwayText = billRunway(p, d.Wallet.RunwaySeconds)
		}
		if d.Limits, err = s.cfg.Wallet.Limits(ctx, acc); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		if d.Events, d.Webhook, err = s.cfg.Wallet.Events(ctx, acc, billEventsListed); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		_, err = s.cfg.Wallet.Provider(wallet.BankTransferName)
		d.BankTopUp = err == nil
		es, err := s.cfg.Wallet.Transactions(ctx, acc, before, billLedgerPage)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		for _, e := range es {
			d.Entries = append(d.Entries, billEntry{Entry: e, OpText: billOp(p, e.Op)})
		}
		if len(es) == billLedgerPage {
			d.Older = es[len(es)-1].Seq
		}
		d.LimitsLabel.Daily, d.LimitsLabel.Monthly = billCap(p, d.Limits.DailyFen), billCap(p, d.Limits.MonthlyFen)
	}
	if d.Statements {
		loc, err := rating.LoadBillingZone()
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		now := s.cfg.Now()
		d.Months = web.BillMonths(acc.CreatedAt, now, loc, billMonthsListed)
		st, err := s.cfg.Metering.Statement(ctx, s.cfg.Billing, acc, now)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.ThisMonth, d.ThisTotal = now.In(loc).Format("2006-01"), st.TotalFen
	}
	if f != nil {
		d.Form = *f
	} else if d.Limits != nil {
		d.Form = billForm{Daily: web.BillYuanValue(d.Limits.DailyFen), Monthly: web.BillYuanValue(d.Limits.MonthlyFen),
			StopRunning: d.Limits.StopRunning, Webhook: d.Webhook}
	}
	s.site.RenderStatus(w, r, p, status, "billing", d)
}

// billingAgain shows the billing page again with a form error.
func (s *Pages) billingAgain(w http.ResponseWriter, r *http.Request, p *web.Page, status int, f billForm, msg string) {
	p.Error = msg
	s.billingRender(w, r, p, status, &f, 0, nil)
}

// billingServiceError shows a service's refusal on the form when the user
// can act on it, else the error page.
func (s *Pages) billingServiceError(w http.ResponseWriter, r *http.Request, p *web.Page, f billForm, err error) {
	code := gpurent.ErrorCode(err)
	switch code {
	case gpurent.CodeInvalid, gpurent.CodeConflict, gpurent.CodeUnavailable, gpurent.CodePaymentRequired:
	default:
		s.site.Fail(w, r, p, err)
		return
	}
	p.FormError(err)
	s.billingRender(w, r, p, gpurent.HTTPStatus(code), &f, 0, nil)
}

// billingForm reads the billing forms' fields (the ones a request lacks
// keep the stored values when the page is shown again).
func (s *Pages) billingForm(r *http.Request, p *web.Page) billForm {
	f := billForm{Voucher: strings.TrimSpace(r.PostFormValue("code")), Daily: strings.TrimSpace(r.PostFormValue("daily")),
		Monthly: strings.TrimSpace(r.PostFormValue("monthly")), StopRunning: r.PostFormValue("stop_running") != "",
		Webhook: strings.TrimSpace(r.PostFormValue("webhook")), TopUp: strings.TrimSpace(r.PostFormValue("amount"))}
	if _, ok := r.PostForm["daily"]; !ok && s.cfg.Wallet != nil {
		if l, err := s.cfg.Wallet.Limits(p.Context(), p.Account); err == nil {
			f.Daily, f.Monthly, f.StopRunning = web.BillYuanValue(l.DailyFen), web.BillYuanValue(l.MonthlyFen), l.StopRunning
		}
	}
	if _, ok := r.PostForm["webhook"]; !ok && s.cfg.Wallet != nil {
		if _, hook, err := s.cfg.Wallet.Events(p.Context(), p.Account, 1); err == nil {
			f.Webhook = hook
		}
	}
	return f
}

func (s *Pages) billingRedeem(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.Wallet == nil {
		s.site.NotFound(w, r, p)
		return
	}
	f := s.billingForm(r, p)
	switch {
	case f.Voucher == "":
		s.billingAgain(w, r, p, http.StatusBadRequest, f, p.T("common.required", p.T("billing.voucher.code")))
		return
	case len(f.Voucher) > 64 || wallet.NormalizeCode(f.Voucher) == "":
		s.billingAgain(w, r, p, http.StatusBadRequest, f, p.T("billing.voucher.bad"))
		return
	}
	red, err := s.cfg.Wallet.RedeemVoucher(p.Context(), p.Account, f.Voucher)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		s.billingAgain(w, r, p, http.StatusBadRequest, f, p.T("billing.voucher.unknown"))
		return
	}
	if err != nil {
		s.billingServiceError(w, r, p, f, err)
		return
	}
	done := "redeemed"
	if red.Dup {
		done = "redeemed_before"
	}
	http.Redirect(w, r, "/billing?done="+done, http.StatusSeeOther)
}

// billAmountText is an amount problem in the page's language.
func billAmountText(p *web.Page, problem web.BillAmountProblem, labelKey string, minFen, maxFen int64) string {
	label := p.T(labelKey)
	switch problem {
	case web.BillDecimals:
		return p.T("billing.amount.decimals", label)
	case web.BillNotAbove:
		return p.T("billing.amount.positive", label)
	case web.BillNegative:
		return p.T("billing.amount.negative", label)
	case web.BillTooSmall:
		return p.T("billing.amount.min", label, money.Format(minFen))
	case web.BillTooLarge:
		return p.T("billing.amount.max", label, money.Format(maxFen))
	}
	return p.T("billing.amount.bad", label)
}

func (s *Pages) billingSetLimits(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.Wallet == nil {
		s.site.NotFound(w, r, p)
		return
	}
	f := s.billingForm(r, p)
	var l gpurent.SpendLimits
	var problem web.BillAmountProblem
	if l.DailyFen, problem = web.BillParseYuan(f.Daily, true, 1, billMaxLimitFen); problem != web.BillOK {
		s.billingAgain(w, r, p, http.StatusBadRequest, f, billAmountText(p, problem, "billing.limits.daily", 1, billMaxLimitFen))
		return
	}
	if l.MonthlyFen, problem = web.BillParseYuan(f.Monthly, true, 1, billMaxLimitFen); problem != web.BillOK {
		s.billingAgain(w, r, p, http.StatusBadRequest, f, billAmountText(p, problem, "billing.limits.monthly", 1, billMaxLimitFen))
		return
	}
	l.StopRunning = f.StopRunning
	if _, err := s.cfg.Wallet.SetLimits(p.Context(), p.Account, l); err != nil {
		s.billingServiceError(w, r, p, f, err)
		return
	}
	http.Redirect(w, r, "/billing?done=limits#limits", http.StatusSeeOther)
}

func (s *Pages) billingSetWebhook(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.Wallet == nil {
		s.site.NotFound(w, r, p)
		return
	}
	f := s.billingForm(r, p)
	if f.Webhook != "" {
		u, err := url.Parse(f.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(f.Webhook) > billMaxWebhook {
			s.billingAgain(w, r, p, http.StatusBadRequest, f, p.T("billing.webhook.bad"))
			return
		}
	}
	if err := s.cfg.Wallet.SetWebhook(p.Context(), p.Account, f.Webhook); err != nil {
		if errors.Is(err, outbound.ErrRefused) {
			s.billingAgain(w, r, p, http.StatusBadRequest, f, p.T("billing.webhook.refused"))
			return
		}
		s.billingServiceError(w, r, p, f, err)
		return
	}
	http.Redirect(w, r, "/billing?done=webhook#webhook", http.StatusSeeOther)
}

// billingTopUp opens a bank transfer and shows its reference. The answer
// renders rather than redirects: the reference is this answer's, and the
// wallet service offers no read of a payment by it.
func (s *Pages) billingTopUp(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.Wallet == nil {
		s.site.NotFound(w, r, p)
		return
	}
	if _, err := s.cfg.Wallet.Provider(wallet.BankTransferName); err != nil {
		s.site.NotFound(w, r, p)
		return
	}
	f := s.billingForm(r, p)
	fen, problem := web.BillParseYuan(f.TopUp, false, wallet.MinPaymentFen, wallet.MaxCreditFen)
	if problem != web.BillOK {
		s.billingAgain(w, r, p, http.StatusBadRequest, f, billAmountText(p, problem, "billing.topup.amount", wallet.MinPaymentFen, wallet.MaxCreditFen))
		return
	}
	pay, err := s.cfg.Wallet.StartPayment(p.Context(), p.Account, wallet.BankTransferName, fen)
	if err != nil {
		s.billingServiceError(w, r, p, f, err)
		return
	}
	f.TopUp = ""
	s.billingRender(w, r, p, http.StatusOK, &f, 0, pay)
}

// statementsOn reports whether statements can be shown: they need the
// metering and billing services.
func (s *Pages) statementsOn() bool { return s.cfg.Metering != nil && s.cfg.Billing != nil }

// statementData is a statement page's data.
type statementData struct {
	Month     string
	StateText string
	Lines     []statementLine
	TotalFen  int64
	Months    []string
}

// statementLine is one line as the page shows it.
type statementLine struct {
	metering.StatementLine
	GPUs, WindowText, Hours, Degraded string
}

// billingStatement serves a month's statement: /billing/statements/2026-11
// as a page, /billing/statements/2026-11.csv as CSV (the API's columns).
func (s *Pages) billingStatement(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if !s.statementsOn() {
		s.site.NotFound(w, r, p)
		return
	}
	key, asCSV := strings.CutSuffix(r.PathValue("month"), ".csv")
	loc, err := rating.LoadBillingZone()
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	month, err := time.ParseInLocation("2006-01", key, loc)
	if err != nil || month.Format("2006-01") != key {
		s.site.NotFound(w, r, p)
		return
	}
	months := web.BillMonths(p.Account.CreatedAt, s.cfg.Now(), loc, 1200)
	if len(months) == 0 || key > months[0] || key < months[len(months)-1] {
		s.site.NotFound(w, r, p) // before the account, or not yet
		return
	}
	st, err := s.cfg.Metering.Statement(p.Context(), s.cfg.Billing, p.Account, month)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if asCSV {
		writeStatementCSV(w, st)
		return
	}
	p.Title, p.Nav = p.T("billing.statement.title", key), "billing"
	d := statementData{Month: key, TotalFen: st.TotalFen, StateText: p.T("billing.statement.complete")}
	switch {
	case st.Final:
		d.StateText = p.T("billing.statement.final")
	case st.Open:
		d.StateText = p.T("billing.statement.open")
	}
	if len(months) > billMonthsListed {
		months = months[:billMonthsListed]
	}
	d.Months = months
	for _, l := range st.Lines {
		sl := statementLine{StatementLine: l, GPUs: strconv.Itoa(l.GPUCount) + " × " + l.TypeID, WindowText: billWindow(p, l.Window),
			Hours: billHours(l.Seconds)}
		if l.TypeID == "" {
			sl.GPUs = ""
		}
		if l.PricePermille > 0 && l.PricePermille < 1000 {
			sl.Degraded = p.T("billing.statement.degraded", strconv.Itoa(l.PricePermille/10)+"."+strconv.Itoa(l.PricePermille%10)+"%")
		}
		d.Lines = append(d.Lines, sl)
	}
	s.site.Render(w, r, p, "billing_statement", d)
}

// writeStatementCSV sends a statement as the API's CSV download.
func writeStatementCSV(w http.ResponseWriter, st *metering.Statement) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="gpurent-`+st.Month.Format("2006-01")+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = st.WriteCSV(w) // the status is sent: a broken connection is all that can fail
}

// billOp is a ledger operation in the page's language.
func billOp(p *web.Page, op string) string {
	if k := "billing.op." + op; p.Has(k) {
		return p.T(k)
	}
	return op
}

// billWindow is a statement line's window in the page's language.
func billWindow(p *web.Page, window string) string {
	if k := "billing.window." + strings.ReplaceAll(window, " ", "_"); p.Has(k) {
		return p.T(k)
	}
	return window
}

// billCap is a spend cap, or "none".
func billCap(p *web.Page, fen int64) string {
	if fen == 0 {
		return p.T("billing.limits.none")
	}
	return money.Format(fen)
}

// billRunway shows a runway to the minute, largest units first.
func billRunway(p *web.Page, seconds int64) string {
	d, h, m := web.BillRunwayParts(seconds)
	switch {
	case d > 0:
		return p.T("billing.runway.dhm", d, h)
	case h > 0:
		return p.T("billing.runway.hm", h, m)
	}
	return p.T("billing.runway.m", m)
}

// billHours shows seconds as hours with two decimals, from integers
// (truncated, as the CLI does).
func billHours(sec int64) string {
	h, rest := sec/3600, sec%3600
	if rest == 0 {
		return strconv.FormatInt(h, 10)
	}
	cents := rest * 100 / 3600
	if cents < 10 {
		return strconv.FormatInt(h, 10) + ".0" + strconv.FormatInt(cents, 10)
	}
	return strconv.FormatInt(h, 10) + "." + strconv.FormatInt(cents, 10)
}
