package browser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent"
	"github.com/gpurent/gpurent/internal/rating"
)

// TestMarketPage: the market in both languages shows every type with its
// price and free GPUs, the latency test fills in a number, and the
// off-peak badge follows the price list's window.
func TestMarketPage(t *testing.T) {
	st := startSite(t)
	ctx := browser(t)
	// The catalog's types, with how many GPUs of each the hosts have.
	types := []struct {
		id    string
		total int
	}{{"h100-80g-sxm", 4}, {"a100-80g-sxm", 4}, {"rtx4090-24g", 0}}
	for _, c := range []struct{ lang, title, monthly string }{{"zh", "GPU 市场", "包月"}, {"en", "GPU market", "Monthly"}} {
		run(t, ctx, "open the market in "+c.lang, nav(st.url+"/market?lang="+c.lang),
			chromedp.WaitVisible(chromedp.CSS("#type-h100-80g-sxm")))
		if h := text(t, ctx, "h1"); h != c.title {
			t.Fatalf("%s: title %q, want %q", c.lang, h, c.title)
		}
		for _, ty := range types {
			price := text(t, ctx, "#price-"+ty.id)
			if !regexp.MustCompile(`^¥\d+\.\d\d$`).MatchString(price) {
				t.Fatalf("%s: %s's price %q", c.lang, ty.id, price)
			}
			free := text(t, ctx, "#free-"+ty.id)
			m := regexp.MustCompile(`^(\d+) / (\d+)$`).FindStringSubmatch(free)
			// Benchmark jobs may hold a GPU for a moment: free ≤ total.
			if m == nil {
				t.Fatalf("%s: %s free %q, want n / %d", c.lang, ty.id, free, ty.total)
			}
			if n, _ := strconv.Atoi(m[1]); m[2] != strconv.Itoa(ty.total) || n > ty.total {
				t.Fatalf("%s: %s free %q, want n / %d", c.lang, ty.id, free, ty.total)
			}
			if pk := text(t, ctx, "#packages-"+ty.id); !strings.Contains(pk, c.monthly) {
				t.Fatalf("%s: %s packages %q lack %s", c.lang, ty.id, pk, c.monthly)
			}
		}
		zone := text(t, ctx, "#free-h100-80g-sxm-cd-tianfu-a")
		if !strings.HasSuffix(zone, "/ 4") {
			t.Fatalf("%s: H100 in cd-tianfu-a: %q", c.lang, zone)
		}
		shot(t, ctx, "market-"+c.lang)
	}

	// The latency test: three fetches of the probe, the median in ms.
	run(t, ctx, "measure a zone", chromedp.Click(chromedp.CSS("#probe-cd-gaoxin-b")),
		chromedp.Poll[chromedp.Void](`document.getElementById("latency-cd-gaoxin-b").hasAttribute("data-ms")`))
	if ms := text(t, ctx, "#latency-cd-gaoxin-b"); !regexp.MustCompile(`^\d+(\.\d)? ms$`).MatchString(ms) {
		t.Fatalf("latency %q", ms)
	}
	if note := text(t, ctx, "#probe-cp-cd-gaoxin-b"); !strings.Contains(note, "control plane") {
		t.Fatalf("a zone without a probe of its own: note %q does not say the control plane is timed", note)
	}

	// A zone's own probe (an agent's, at another origin): the page times
	// that endpoint, a warm-up and three timed fetches, and the note goes.
	var hits atomic.Int32
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		agent.ProbeHandler().ServeHTTP(w, r)
	}))
	t.Cleanup(probe.Close)
	probeURL := probe.URL + agent.ProbePath
	if _, err := st.s.Fleet.SetZoneProbe(context.Background(), st.ops, "cd-tianfu-a", probeURL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		run(t, ctx, "reload the market for the new probe", nav(st.url+"/market?lang=en"), chromedp.WaitVisible(chromedp.CSS("#type-h100-80g-sxm")))
		got, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#probe-cd-tianfu-a"), "data-probe"))
		if err == nil && got.Value == probeURL {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the market still probes %q for cd-tianfu-a, want %s", got.Value, probeURL)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := acctEval[int](t, ctx, `document.querySelectorAll("#probe-cp-cd-tianfu-a").length`); n != 0 {
		t.Fatal("a zone with its own probe still says the control plane is timed")
	}
	run(t, ctx, "measure the zone with its own probe", chromedp.Click(chromedp.CSS("#probe-cd-tianfu-a")),
		chromedp.Poll[chromedp.Void](`document.getElementById("latency-cd-tianfu-a").hasAttribute("data-ms")`))
	if ms := text(t, ctx, "#latency-cd-tianfu-a"); !regexp.MustCompile(`^\d+(\.\d)? ms$`).MatchString(ms) {
		t.Fatalf("latency through the zone's probe %q", ms)
	}
	if n := hits.Load(); n != 4 {
		t.Fatalf("the zone's probe was fetched %d times, want 4 (a warm-up and three timed)", n)
	}

	// The off-peak badge: a price list whose window holds now shows it;
	// one whose window does not (and no weekends) does not.
	loc, err := rating.LoadBillingZone()
	if err != nil {
		t.Fatal(err)
	}
	setWindow := func(from, to time.Duration) {
		t.Helper()
		now := time.Now().In(loc)
		vs, err := st.s.Billing.Versions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		clock := func(d time.Duration) rating.ClockTime {
			c := now.Add(d)
			return rating.Clock(c.Hour(), c.Minute(), 0)
		}
		// A version takes effect after the latest one: when the badge was
		// already right (the default off-peak window may hold now), the
		// second call comes within the first one's second.
		eff := now.Add(2 * time.Second).Truncate(time.Second)
		if last := vs[len(vs)-1].Effective; !eff.After(last) {
			eff = last.Add(time.Second)
		}
		v := rating.Version{Effective: eff,
			Rule:  rating.Rule{Start: clock(from), End: clock(to)},
			Types: vs[len(vs)-1].Types}
		if _, err := st.s.Billing.AddVersion(context.Background(), st.ops, v, "browser test: off-peak window"); err != nil {
			t.Fatal(err)
		}
	}
	waitBadge := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			run(t, ctx, "reload the market", nav(st.url+"/market?lang=en"),
				chromedp.WaitVisible(chromedp.CSS("#type-h100-80g-sxm")))
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#offpeak-h100-80g-sxm").length`))
			if err != nil {
				t.Fatal(err)
			}
			if (n == 1) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the off-peak badge is shown: %v, want %v", n == 1, want)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	setWindow(-time.Hour, 2*time.Hour)
	waitBadge(true)
	if b := text(t, ctx, "#offpeak-h100-80g-sxm"); b != "Off-peak" {
		t.Fatalf("badge %q", b)
	}
	shot(t, ctx, "market-offpeak-en")
	setWindow(3*time.Hour, 4*time.Hour)
	waitBadge(false)
}

// TestRentForm: the seed's preset fills the form, bad input is refused
// in the page's language keeping what was typed, the estimate follows the
// form, and a rent of one A100 lands on the instance's page.
func TestRentForm(t *testing.T) {
	st := startSite(t)
	ctx := browser(t)
	run(t, ctx, "ask for /rent signed out", nav(st.url+"/rent"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	const email, password = "rent@lab.example", "rent-password-1"
	acc, err := st.s.Auth.CreateAccount(context.Background(), email, "Rent Lab", password, gpurent.RoleCustomer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.s.Wallet.Credit(context.Background(), st.ops, acc.ID, 1_000_000_00, "browser test", "rent-form"); err != nil {
		t.Fatal(err)
	}
	login(t, ctx, st.url, email, password, "en")

	run(t, ctx, "open the seed's preset", nav(st.url+"/rent?lang=en"),
		chromedp.WaitVisible(chromedp.CSS("#rent-form")), chromedp.Click(chromedp.CSS("#rent-preset-seed")),
		chromedp.WaitVisible(chromedp.CSS("#rent-seed-note")))
	for sel, want := range map[string]string{"#rent-gpu": "h100-80g-sxm", "#rent-count": "4", "#rent-hours": "120"} {
		if v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel))); err != nil || v != want {
			t.Fatalf("preset: %s = %q (%v), want %q", sel, v, err, want)
		}
	}
	if s := text(t, ctx, "#est-summary"); s != "4 × h100-80g-sxm for 120 hours, Hourly" {
		t.Fatalf("preset estimate: %q", s)
	}
	if p := text(t, ctx, "#est-peak") + text(t, ctx, "#est-offpeak"); !strings.Contains(p, "× 4 GPUs = ¥") {
		t.Fatalf("preset estimate lines: %q", p)
	}
	shot(t, ctx, "rent-en")

	// The live estimate: a new count and plan bring new figures.
	run(t, ctx, "change the count and plan",
		chromedp.Clear(chromedp.CSS("#rent-count")), chromedp.SendKeys(chromedp.CSS("#rent-count"), "2"),
		chromedp.SetValue(chromedp.CSS("#rent-plan"), "daily"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("rent-plan").dispatchEvent(new Event("change"))`),
		chromedp.Poll[chromedp.Void](`document.getElementById("est-summary").textContent === "2 × h100-80g-sxm for 120 hours, Daily"`))
	if total, daily := text(t, ctx, "#est-total"), text(t, ctx, "#est-daily"); !strings.HasSuffix(daily, "= "+total) {
		t.Fatalf("the daily plan's total %q is not the daily line's %q", total, daily)
	}

	// Bad input, in both languages: the message names what is wrong and
	// the form keeps what was typed.
	for _, c := range []struct{ lang, count, image, want string }{
		{"en", "0", "", "GPU count must be from 1 to 8"},
		{"zh", "3", "", "镜像 为必填项"},
		{"en", "2", "my image", "The image must be an image reference without spaces, at most 255 characters"},
	} {
		run(t, ctx, "submit a bad form in "+c.lang, nav(st.url+"/rent?preset=seed&lang="+c.lang),
			chromedp.WaitVisible(chromedp.CSS("#rent-form")),
			chromedp.Clear(chromedp.CSS("#rent-count")), chromedp.SendKeys(chromedp.CSS("#rent-count"), c.count),
			chromedp.SendKeys(chromedp.CSS("#rent-image"), c.image),
			chromedp.SendKeys(chromedp.CSS("#rent-name"), "kept-name"),
			chromedp.Click(chromedp.CSS("#rent-submit")), chromedp.WaitVisible(chromedp.CSS("#form-error")))
		if got := text(t, ctx, "#form-error"); got != c.want {
			t.Fatalf("%s: %q, want %q", c.lang, got, c.want)
		}
		for sel, want := range map[string]string{"#rent-count": c.count, "#rent-image": c.image, "#rent-name": "kept-name",
			"#rent-hours": "120", "#rent-gpu": "h100-80g-sxm"} {
			if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel))); v != want {
				t.Fatalf("%s: %s = %q after the error, want %q", c.lang, sel, v, want)
			}
		}
		if c.lang == "zh" {
			shot(t, ctx, "rent-zh")
		}
	}

	// The estimate button works without JavaScript: a page load.
	run(t, ctx, "estimate by the button", nav(st.url+"/rent?gpu=a100-80g-sxm&lang=en"),
		chromedp.WaitVisible(chromedp.CSS("#rent-form")),
		chromedp.Clear(chromedp.CSS("#rent-hours")), chromedp.SendKeys(chromedp.CSS("#rent-hours"), "48"))
	marketClickLoad(t, ctx, "#rent-estimate")
	if s := text(t, ctx, "#est-summary"); s != "1 × a100-80g-sxm for 48 hours, Hourly" {
		t.Fatalf("estimate by the button: %q", s)
	}

	// Rent one A100 on the hourly plan with the test image.
	run(t, ctx, "rent an A100", nav(st.url+"/rent?gpu=a100-80g-sxm&lang=en"),
		chromedp.WaitVisible(chromedp.CSS("#rent-form")),
		chromedp.SendKeys(chromedp.CSS("#rent-image"), st.image),
		chromedp.SendKeys(chromedp.CSS("#rent-name"), "web-a100"))
	marketClickLoad(t, ctx, "#rent-submit")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.s.Rental.List(context.Background(), acc, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !strings.HasSuffix(loc, "/instances/"+list[0].Instance.ID) || list[0].Instance.Name != "web-a100" ||
		list[0].Instance.TypeID != "a100-80g-sxm" || list[0].Instance.GPUCount != 1 || list[0].Instance.Plan != gpurent.PlanHourly {
		t.Fatalf("landed on %s; the account has %+v", loc, list)
	}
	// One form sent twice (a double click, a retry) is one rental: the
	// form carries the idempotency key it was made with.
	run(t, ctx, "fill another form", nav(st.url+"/rent?gpu=a100-80g-sxm&lang=en"),
		chromedp.WaitVisible(chromedp.CSS("#rent-form")),
		chromedp.SendKeys(chromedp.CSS("#rent-image"), st.image), chromedp.SendKeys(chromedp.CSS("#rent-name"), "web-a100-b"))
	urls, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(async () => {
		const body = new URLSearchParams(new FormData(document.getElementById("rent-form")));
		body.set("do", "rent");
		const a = await fetch("/rent", {method: "POST", body});
		const b = await fetch("/rent", {method: "POST", body});
		return [a.url, b.url];
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if list, err = st.s.Rental.List(context.Background(), acc, false); err != nil || len(list) != 2 {
		t.Fatalf("one form sent twice made %d instances in all (%v), want 2", len(list), err)
	}
	if len(urls) != 2 || urls[0] != urls[1] || !strings.Contains(urls[0], "/instances/i-") {
		t.Fatalf("the two sends landed on %v", urls)
	}
}

// TestCalculatorPage: rent or buy with the seed's defaults, in both
// languages: a chart of three lines and a break-even figure, updated live.
func TestCalculatorPage(t *testing.T) {
	st := startSite(t)
	ctx := browser(t)
	for _, c := range []struct{ lang, source string }{{"zh", "种子文章"}, {"en", "the seed article"}} {
		run(t, ctx, "open the calculator in "+c.lang, nav(st.url+"/calculator?lang="+c.lang),
			chromedp.WaitVisible(chromedp.CSS("#calc-chart")),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("#calc-chart polyline").length === 3`))
		if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#calc-gpu-price"))); v != "300000" {
			t.Fatalf("%s: GPU price %q, want the seed's 300000", c.lang, v)
		}
		if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#calc-server-price"))); v != "2600000" {
			t.Fatalf("%s: server price %q, want the seed's 2600000", c.lang, v)
		}
		if s := text(t, ctx, "#calc-source"); !strings.Contains(s, c.source) {
			t.Fatalf("%s: the source %q does not name %s", c.lang, s, c.source)
		}
		if h := text(t, ctx, "#calc-breakeven-hours"); !regexp.MustCompile(`^\d+(\.\d)?$`).MatchString(h) {
			t.Fatalf("%s: break-even %q", c.lang, h)
		}
		shot(t, ctx, "calculator-"+c.lang)
	}
	// On a phone: no page wider than the screen, the market's neither.
	for _, path := range []string{"/calculator?lang=en", "/market?lang=en"} {
		run(t, ctx, "open "+path+" on a phone", chromedp.EmulateViewport(390, 844), nav(st.url+path),
			chromedp.WaitVisible(chromedp.CSS("h1")))
		w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
		if err != nil || w > 0 {
			t.Fatalf("%s on a phone: %d px wider than the screen (%v)", path, w, err)
		}
		shot(t, ctx, "phone-"+strings.TrimPrefix(strings.SplitN(path, "?", 2)[0], "/"))
	}
	run(t, ctx, "back to a desktop", chromedp.EmulateViewport(1280, 900), nav(st.url+"/calculator?lang=en"),
		chromedp.WaitVisible(chromedp.CSS("#calc-chart")))

	// Live: fewer hours a day and a shorter project, recomputed in place.
	before := text(t, ctx, "#calc-rent-hourly")
	run(t, ctx, "change the hours",
		chromedp.Clear(chromedp.CSS("#calc-hours")), chromedp.SendKeys(chromedp.CSS("#calc-hours"), "4"),
		chromedp.Poll[chromedp.Void](`document.getElementById("calc-rent-hourly").textContent !== `+marketJS(before)))
	if v := text(t, ctx, "#calc-verdict"); !strings.HasPrefix(v, "Renting is cheaper, by ¥") {
		t.Fatalf("4 hours a day: %q", v)
	}
	// Bad input: a message in the page's language, the figures kept.
	run(t, ctx, "a bad electricity price",
		nav(st.url+"/calculator?lang=zh&kwh=cheap"), chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if e := text(t, ctx, "#form-error"); e != "电价（元/千瓦时） 须是金额，例如 300000 或 0.8" {
		t.Fatalf("bad input: %q", e)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#calc-kwh"))); v != "cheap" {
		t.Fatalf("the typed value is lost: %q", v)
	}
}

// marketClickLoad clicks what sel names and waits for the page it loads.
func marketClickLoad(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("click %s: %v (at %s)", sel, err, loc)
	}
}

// marketJS quotes s for a JavaScript expression.
func marketJS(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
