package browser

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
)

// opsDialogs accepts every confirmation the page asks in ctx's browser and
// keeps their texts, so a test can check what the operator was asked.
type opsDialogs struct {
	mu   sync.Mutex
	msgs []string
}

func opsAcceptDialogs(t *testing.T, ctx context.Context) *opsDialogs {
	t.Helper()
	d := &opsDialogs{}
	events := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			d.mu.Lock()
			d.msgs = append(d.msgs, ev.Message)
			d.mu.Unlock()
			if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				return
			}
		}
	}()
	return d
}

func (d *opsDialogs) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.msgs) == 0 {
		return ""
	}
	return d.msgs[len(d.msgs)-1]
}

// opsWords are what the operator's pages say in one language, where the
// test checks them.
type opsWords struct {
	lang, overview, fleet, cordoned, confirmCordon, gpuReason, gpuCordoned, gpuHealthy, prices, negative,
	academic, approved, reasonRequired, credited string
}

// opsHosts are the site's hosts by the last letter of their names.
func opsHosts(t *testing.T, st *site) map[string]gpurent.Host {
	t.Helper()
	hosts, err := st.s.Store.ListHosts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]gpurent.Host{}
	for _, h := range hosts {
		out[h.Name[len(h.Name)-1:]] = h
	}
	if out["a"].ID == "" || out["b"].ID == "" {
		t.Fatalf("hosts a and b are not both there: %v", out)
	}
	return out
}

// TestOpsJourney is the operator's journey in Chinese and then in
// English, on one site: the overview; cordoning a host (with its
// confirmation) and seeing its state; a negative price refused in the
// page's language, then a new price version with other off-peak prices,
// effective soon, listed; a voucher made; a customer's academic
// application (filed through the service) approved; a customer credited
// (a credit without a reason refused first); the incidents and revenue
// pages with their chart.
func TestOpsJourney(t *testing.T) {
	st := startSite(t)
	hosts := opsHosts(t, st)
	ctx := browser(t)
	dialogs := opsAcceptDialogs(t, ctx)
	login(t, ctx, st.url, opsEmail, opsPassword, "zh")

	words := []opsWords{
		{lang: "zh", overview: "运营概览", fleet: "机群", cordoned: "已封锁", confirmCordon: "确定封锁主机",
			gpuReason: "封锁原因 为必填项", gpuCordoned: "已封锁", gpuHealthy: "健康",
			prices: "价格与代金券", negative: "h100-80g-sxm 闲时/小时 不能为负数", academic: "学术认证申请",
			approved: "已批准", reasonRequired: "理由 为必填项", credited: "已为客户充值。"},
		{lang: "en", overview: "Operations overview", fleet: "Fleet", cordoned: "cordoned", confirmCordon: "Cordon host",
			gpuReason: "Reason to cordon is required", gpuCordoned: "cordoned", gpuHealthy: "healthy",
			prices: "Prices and vouchers", negative: "h100-80g-sxm Off-peak/h cannot be negative", academic: "Academic applications",
			approved: "approved", reasonRequired: "Reason is required", credited: "Customer credited."},
	}
	for i, w := range words {
		host := hosts["a"]
		offPeak, academicOffPeak := "5.55", "4.44"
		if i == 1 {
			host = hosts["b"]
			offPeak, academicOffPeak = "6.66", "5.33"
		}

		// The overview.
		run(t, ctx, "open the overview", nav(st.url+"/ops?lang="+w.lang), chromedp.WaitVisible(chromedp.CSS("#ops-overview")))
		if h := text(t, ctx, "h1"); h != w.overview {
			t.Fatalf("%s: overview h1 %q, want %q", w.lang, h, w.overview)
		}
		if n := text(t, ctx, "#ops-gpus-total"); n != "8" {
			t.Fatalf("%s: the overview counts %s GPUs, want 8", w.lang, n)
		}
		shot(t, ctx, "ops-overview-"+w.lang)

		// Cordon a host, confirming.
		run(t, ctx, "open the fleet", nav(st.url+"/ops/fleet"), chromedp.WaitVisible(chromedp.CSS("#host-"+host.ID)))
		if h := text(t, ctx, "h1"); h != w.fleet {
			t.Fatalf("%s: fleet h1 %q", w.lang, h)
		}
		// The join section shows how to make a one-time token and an agent
		// command that reads it from a file: no secret.
		if cmd := text(t, ctx, "#join-cd-tianfu-a"); !strings.Contains(cmd, "gpurent hosts join-token create --zone cd-tianfu-a") ||
			!strings.Contains(cmd, "--server "+st.url) || !strings.Contains(cmd, "--join-token-file /etc/gpurent/join-token") ||
			strings.Contains(cmd, "join-console") || strings.Contains(cmd, "gpj_") {
			t.Fatalf("%s: join command %q", w.lang, cmd)
		}
		shot(t, ctx, "ops-fleet-"+w.lang)
		run(t, ctx, "cordon host "+host.Name,
			chromedp.Click(chromedp.CSS("#cordon-"+host.ID)),
			chromedp.WaitVisible(chromedp.CSS(".flash")),
			chromedp.WaitVisible(chromedp.CSS("#uncordon-"+host.ID)))
		if got := text(t, ctx, "#host-state-"+host.ID); got != w.cordoned {
			t.Fatalf("%s: host state %q after cordon, want %q", w.lang, got, w.cordoned)
		}
		if q := dialogs.last(); !strings.Contains(q, w.confirmCordon) || !strings.Contains(q, host.Name) {
			t.Fatalf("%s: the cordon was confirmed with %q", w.lang, q)
		}
		if h, err := st.s.Store.HostByID(context.Background(), host.ID); err != nil || h.State != gpurent.HostCordoned {
			t.Fatalf("%s: host %s in the store: %v, %v", w.lang, host.Name, h, err)
		}

		// On the host's page: cordon a GPU (a reason is required), then
		// mark it repaired.
		gpu := host.GPUs[0].ID
		run(t, ctx, "open the host", chromedp.Click(chromedp.CSS("#host-link-"+host.ID)), chromedp.WaitVisible(chromedp.CSS("#host-gpus")))
		run(t, ctx, "cordon a GPU without a reason",
			chromedp.Click(chromedp.CSS("#gpu-cordon-"+gpu)), chromedp.WaitVisible(chromedp.CSS("#form-error")))
		if got := text(t, ctx, "#form-error"); got != w.gpuReason {
			t.Fatalf("%s: GPU cordon without a reason: %q, want %q", w.lang, got, w.gpuReason)
		}
		run(t, ctx, "cordon a GPU",
			chromedp.SetValue(chromedp.CSS("#gpu-reason-"+gpu), "fan noise "+w.lang),
			chromedp.Click(chromedp.CSS("#gpu-cordon-"+gpu)),
			chromedp.WaitVisible(chromedp.CSS(".flash")), chromedp.WaitVisible(chromedp.CSS("#gpu-repair-"+gpu)))
		if got := text(t, ctx, "#gpu-health-"+gpu); got != w.gpuCordoned {
			t.Fatalf("%s: GPU health %q after cordon", w.lang, got)
		}
		if got := text(t, ctx, "#gpu-"+gpu); !strings.Contains(got, "fan noise "+w.lang) {
			t.Fatalf("%s: the GPU's row does not say why: %q", w.lang, got)
		}
		shot(t, ctx, "ops-host-"+w.lang)
		run(t, ctx, "repair the GPU",
			chromedp.Click(chromedp.CSS("#gpu-repair-"+gpu)),
			chromedp.WaitNotPresent(chromedp.CSS("#gpu-repair-"+gpu)))
		if got := text(t, ctx, "#gpu-health-"+gpu); got != w.gpuHealthy {
			t.Fatalf("%s: GPU health %q after repair", w.lang, got)
		}

		// A negative price is refused in the page's language and loses
		// nothing typed; then a new version with other off-peak prices.
		run(t, ctx, "open the prices", nav(st.url+"/ops/prices"), chromedp.WaitVisible(chromedp.CSS("#price-form")))
		if h := text(t, ctx, "h1"); h != w.prices {
			t.Fatalf("%s: prices h1 %q", w.lang, h)
		}
		run(t, ctx, "a negative off-peak price",
			chromedp.SetValue(chromedp.CSS("#price-h100-80g-sxm-off_peak"), "-1"),
			chromedp.Click(chromedp.CSS("#price-submit")),
			chromedp.WaitVisible(chromedp.CSS("#form-error")))
		if got := text(t, ctx, "#form-error"); got != w.negative {
			t.Fatalf("%s: negative price error %q, want %q", w.lang, got, w.negative)
		}
		if v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#price-h100-80g-sxm-off_peak"))); err != nil || v != "-1" {
			t.Fatalf("%s: the form kept %q (%v), want -1", w.lang, v, err)
		}
		run(t, ctx, "a new off-peak price",
			chromedp.SetValue(chromedp.CSS("#price-h100-80g-sxm-off_peak"), offPeak),
			chromedp.SetValue(chromedp.CSS("#price-h100-80g-sxm-academic_off_peak"), academicOffPeak),
			chromedp.SetValue(chromedp.CSS("#price-note"), "journey "+w.lang),
			chromedp.Click(chromedp.CSS("#price-submit")),
			chromedp.WaitVisible(chromedp.CSS(".flash")))
		first := text(t, ctx, "#price-versions .ops-version")
		if !strings.Contains(first, "¥"+offPeak) || !strings.Contains(first, "¥"+academicOffPeak) {
			t.Fatalf("%s: the newest version does not list the new off-peak prices:\n%s", w.lang, first)
		}
		status, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#price-versions .ops-version .badge"), "data-status"))
		if err != nil || status.Value != "scheduled" {
			t.Fatalf("%s: the new version's status %+v (%v), want scheduled", w.lang, status, err)
		}
		vs, err := st.s.Billing.Versions(context.Background())
		if err != nil || len(vs) != i+2 || vs[len(vs)-1].Types["h100-80g-sxm"].OffPeakFen != map[int]int64{0: 555, 1: 666}[i] {
			t.Fatalf("%s: the billing service has %d versions (%v)", w.lang, len(vs), err)
		}

		// A voucher.
		run(t, ctx, "create a voucher",
			chromedp.SetValue(chromedp.CSS("#voucher-amount-input"), "88"),
			chromedp.Click(chromedp.CSS("#voucher-submit")),
			chromedp.WaitVisible(chromedp.CSS("#voucher-code")))
		if got := text(t, ctx, "#voucher-amount"); got != "¥88.00" {
			t.Fatalf("%s: voucher amount %q", w.lang, got)
		}
		// It is listed with the others, its code masked.
		code := text(t, ctx, "#voucher-code")
		list := text(t, ctx, "#voucher-list")
		if first, _, _ := strings.Cut(code, "-"); !strings.Contains(list, first+"-••••-••••") || strings.Contains(list, code) {
			t.Fatalf("%s: voucher list %q for code %s", w.lang, list, code)
		}
		shot(t, ctx, "ops-prices-"+w.lang)

		// An academic application filed by a customer, approved.
		email := "student-" + w.lang + "@scu.example"
		cust, err := st.s.Auth.Register(context.Background(), email, "Student "+w.lang, "student-password-1")
		if err != nil {
			t.Fatal(err)
		}
		app, err := st.s.Academic.Apply(context.Background(), cust, gpurent.AcademicProof, "四川大学", "student card 2024-"+w.lang)
		if err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "open the academic applications", nav(st.url+"/ops/academic"),
			chromedp.WaitVisible(chromedp.CSS("#academic-"+app.ID)))
		if h := text(t, ctx, "h1"); h != w.academic {
			t.Fatalf("%s: academic h1 %q", w.lang, h)
		}
		run(t, ctx, "approve", chromedp.Click(chromedp.CSS("#approve-"+app.ID)), chromedp.WaitVisible(chromedp.CSS("#decided-"+app.ID)))
		if got := text(t, ctx, "#decided-"+app.ID+" .badge"); got != w.approved {
			t.Fatalf("%s: decided %q", w.lang, got)
		}
		if acc, err := st.s.Store.AccountByID(context.Background(), cust.ID); err != nil || !acc.Academic(time.Now()) {
			t.Fatalf("%s: the account is not academic after approval (%v)", w.lang, err)
		}

		// Credit the customer: without a reason first.
		run(t, ctx, "open the accounts", nav(st.url+"/ops/accounts?q="+email), chromedp.WaitVisible(chromedp.CSS("#account-"+cust.ID)))
		run(t, ctx, "credit without a reason",
			chromedp.SetValue(chromedp.CSS("#credit-account"), email),
			chromedp.SetValue(chromedp.CSS("#credit-amount"), "100"),
			chromedp.Click(chromedp.CSS("#credit-submit")),
			chromedp.WaitVisible(chromedp.CSS("#form-error")))
		if got := text(t, ctx, "#form-error"); got != w.reasonRequired {
			t.Fatalf("%s: credit without reason: %q, want %q", w.lang, got, w.reasonRequired)
		}
		run(t, ctx, "credit",
			chromedp.SetValue(chromedp.CSS("#credit-reason"), "goodwill "+w.lang),
			chromedp.Click(chromedp.CSS("#credit-submit")),
			chromedp.WaitVisible(chromedp.CSS(".flash")))
		if got := text(t, ctx, ".flash"); got != w.credited {
			t.Fatalf("%s: flash %q", w.lang, got)
		}
		if got := text(t, ctx, "#account-"+cust.ID+" .ops-balance"); got != "¥100.00" {
			t.Fatalf("%s: balance after the credit %q", w.lang, got)
		}
		shot(t, ctx, "ops-accounts-"+w.lang)

		// Incidents and revenue.
		run(t, ctx, "open the incidents", nav(st.url+"/ops/incidents"), chromedp.WaitVisible(chromedp.CSS("#ops-rma")))
		run(t, ctx, "open the revenue", nav(st.url+"/ops/revenue"), chromedp.WaitVisible(chromedp.CSS("#revenue-chart")))
		lines, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#revenue-chart polyline, #util-chart polyline").length`))
		if err != nil || lines < 3 { // total + H100 + A100 utilization, at least
			t.Fatalf("%s: %d chart lines drawn (%v)", w.lang, lines, err)
		}
		shot(t, ctx, "ops-revenue-"+w.lang)
	}
}

// TestOpsHiddenFromCustomers: a signed-in customer gets the 404 page on
// every operator page, and a POST to an operator action (with a valid
// CSRF token) answers 404 and changes nothing.
func TestOpsHiddenFromCustomers(t *testing.T) {
	st := startSite(t)
	hosts := opsHosts(t, st)
	ctx := browser(t)
	signup(t, ctx, st.url, "curious@lab.example", "Curious", "curious-password-1", "en")
	for _, path := range []string{"/ops", "/ops/fleet", "/ops/prices", "/ops/academic", "/ops/accounts", "/ops/incidents", "/ops/revenue"} {
		run(t, ctx, "open "+path, nav(st.url+path), chromedp.WaitVisible(chromedp.CSS("#error-title")))
		if got := text(t, ctx, "#error-title"); got != "Page not found" {
			t.Fatalf("%s as a customer: %q", path, got)
		}
	}
	run(t, ctx, "Chinese", nav(st.url+"/ops?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#error-title")))
	if got := text(t, ctx, "#error-title"); got != "页面不存在" {
		t.Fatalf("/ops as a customer, in Chinese: %q", got)
	}
	if nav := text(t, ctx, "header"); strings.Contains(nav, "运营") {
		t.Fatalf("a customer's menu offers the operations pages: %q", nav)
	}
	for _, action := range []string{"/ops/hosts/" + hosts["a"].ID + "/cordon", "/ops/accounts/credit"} {
		status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch(`+opsJSString(action)+`, {method: "POST",
			headers: {"Content-Type": "application/x-www-form-urlencoded"},
			body: new URLSearchParams({_csrf: document.querySelector("input[name=_csrf]").value,
				account: "curious@lab.example", amount: "1000", reason: "free money", key: "k1"})}).then(r => r.status)`,
			chromedp.EvalAwaitPromise))
		if err != nil || status != 404 {
			t.Fatalf("POST %s as a customer: status %d (%v), want 404", action, status, err)
		}
	}
	if h, err := st.s.Store.HostByID(context.Background(), hosts["a"].ID); err != nil || h.State != gpurent.HostReady {
		t.Fatalf("host a after a customer's cordon: %v, %v", h, err)
	}
	acc, err := st.s.Store.AccountByEmail(context.Background(), "curious@lab.example")
	if err != nil {
		t.Fatal(err)
	}
	if w, err := st.s.Wallet.Wallet(context.Background(), acc); err != nil || w.SpendableFen != 0 {
		t.Fatalf("the customer credited themselves: %+v, %v", w, err)
	}
}

// opsJSString quotes s as a JavaScript string literal (s is a path of ids).
func opsJSString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestOpsZoneProbe: an operator sets a zone's latency probe on the fleet
// page; a URL the fleet service refuses comes back with the message in the
// page's language and what was typed; an empty field removes the probe.
func TestOpsZoneProbe(t *testing.T) {
	st := startSite(t)
	ctx := browser(t)
	probeOf := func() string {
		t.Helper()
		zs, err := st.s.Fleet.Zones(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, z := range zs {
			if z.ID == "cd-tianfu-a" {
				return z.ProbeURL
			}
		}
		t.Fatal("no zone cd-tianfu-a")
		return ""
	}
	for _, c := range []struct{ lang, refused, set, cleared string }{
		{"zh", "输入有误", "测速端点已设置", "测速端点已移除"},
		{"en", "Please check your input", "Probe set", "Probe removed"},
	} {
		login(t, ctx, st.url, opsEmail, opsPassword, c.lang)
		got := acctFormError(t, ctx, st.url+"/ops/fleet?lang="+c.lang, "#probe-form-cd-tianfu-a",
			map[string]string{"probe_url": "ftp://probe.cd-a.example/"}, "#probe-set-cd-tianfu-a")
		if !strings.Contains(got, c.refused) || !strings.Contains(got, "http") {
			t.Fatalf("%s: refusal %q", c.lang, got)
		}
		if v := acctEval[string](t, ctx, `document.querySelector("#probe-form-cd-tianfu-a input[name=probe_url]").value`); v != "ftp://probe.cd-a.example/" {
			t.Fatalf("%s: the form lost what was typed: %q", c.lang, v)
		}
		if p := probeOf(); p != "" {
			t.Fatalf("%s: a refused URL was stored: %q", c.lang, p)
		}
		acctSubmit(t, ctx, "set the probe", "#probe-form-cd-tianfu-a", map[string]string{"probe_url": "https://probe.cd-a.example:8090/probe"},
			"#probe-set-cd-tianfu-a", ".flash")
		if f := text(t, ctx, ".flash"); !strings.Contains(f, c.set) || probeOf() != "https://probe.cd-a.example:8090/probe" {
			t.Fatalf("%s: after setting: flash %q, probe %q", c.lang, f, probeOf())
		}
		acctSubmit(t, ctx, "clear the probe", "#probe-form-cd-tianfu-a", map[string]string{"probe_url": ""},
			"#probe-set-cd-tianfu-a", ".flash")
		if f := text(t, ctx, ".flash"); !strings.Contains(f, c.cleared) || probeOf() != "" {
			t.Fatalf("%s: after clearing: flash %q, probe %q", c.lang, f, probeOf())
		}
	}
}
