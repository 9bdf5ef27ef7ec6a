package browser

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/app"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/rental"
)

// addH100Host starts a third agent: host c, 4 H100 in zone cd-tianfu-a.
func addH100Host(t *testing.T, st *site) {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := st.s.Store.ListHosts(context.Background())
	if err != nil || len(hosts) == 0 {
		t.Fatalf("hosts: %v", err)
	}
	scope := strings.TrimSuffix(hosts[0].Name, "-a")
	scope = strings.TrimSuffix(scope, "-b")
	as, err := app.StartAgents(context.Background(), app.AgentsConfig{InitBinary: dockertest.InitBinary(t), ServerURL: st.url, Join: st.s,
		DataDir: filepath.Join(t.TempDir(), "agents"), Catalog: c, Runtime: app.RuntimeDocker,
		Hosts:             []app.DemoHost{{Name: scope + "-c", Zone: "cd-tianfu-a", TypeID: "h100-80g-sxm", GPUs: 4, GroupSize: 4}},
		HeartbeatInterval: 300 * time.Millisecond, RetryMax: time.Second, HealthInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Stop)
	st.waitHosts(len(hosts) + 1)
}

// waitInstance waits until the instance satisfies ok, as the rental
// service sees it.
func waitInstance(t *testing.T, st *site, acc *gpurent.Account, id, what string, ok func(*rental.Detail) bool) *rental.Detail {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		d, err := st.s.Rental.Get(context.Background(), acc, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s: instance is %s (%s) with %d GPUs", what, d.Instance.State, d.Instance.StateReason, d.Instance.GPUCount)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// poll waits until the JavaScript expression is true in the page; the
// page may reload meanwhile (a live update can ask for it).
func poll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			if len(body) > 2000 {
				body = body[:2000]
			}
			t.Fatalf("%s: %v (last error %v)\nat %s\n%s", what, expr, err, loc, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPath waits until the browser is at a path starting with prefix
// (a navigation that ends on a page the test does not know).
func waitPath(t *testing.T, ctx context.Context, what, prefix string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err == nil {
			if u, perr := url.Parse(loc); perr == nil && strings.HasPrefix(u.Path, prefix) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the browser is at %s (%v), want a path starting %s", what, loc, err, prefix)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval is the value of a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// postAs submits a form with the page's CSRF token to path, as a foreign
// page could not (the browser's own session and token).
func postAs(t *testing.T, ctx context.Context, path string, fields map[string]string) {
	t.Helper()
	js := `(() => { const f = document.createElement('form'); f.method = 'post'; f.action = ` + strconv.Quote(path) + `;
	const add = (n, v) => { const i = document.createElement('input'); i.type = 'hidden'; i.name = n; i.value = v; f.appendChild(i); };
	add('_csrf', document.querySelector('input[name=_csrf]').value);`
	for k, v := range fields {
		js += "add(" + strconv.Quote(k) + ", " + strconv.Quote(v) + ");"
	}
	js += `document.body.appendChild(f); f.submit(); return true; })()`
	eval[bool](t, ctx, js)
}

// yuan reads "¥1,234.56/h" (or /小时) as fen.
func yuan(t *testing.T, s string) int64 {
	t.Helper()
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	s = strings.TrimPrefix(s, "¥")
	if i := strings.Index(s, "/"); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, ",", "")
	whole, frac, ok := strings.Cut(s, ".")
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || err1 != nil || err2 != nil || len(frac) != 2 {
		t.Fatalf("not an amount: %q", s)
	}
	if neg {
		return -(w*100 + f)
	}
	return w*100 + f
}

// TestInstancePages: a customer with 2 H100 sees them go running live on
// the dashboard; the instance page shows the SSH command (copied by its
// button), the gateway's host key, live GPU charts, and opens a forwarded
// port; the upgrade to 4 H100 shows its plan with the price difference and
// runs; stop asks for confirmation and the history grows. Bad input is
// refused in the page's language (zh and en), and another customer gets
// the 404 page on every page and action of the instance.
func TestInstancePages(t *testing.T) {
	st := startSite(t)
	addH100Host(t, st) // a second H100 host, for the upgrade
	bg := context.Background()
	ctx := browser(t)
	signup(t, ctx, st.url, "lab@instances.example", "视觉实验室", "lab-password-12", "zh")
	acc, err := st.s.Store.AccountByEmail(bg, "lab@instances.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.s.Wallet.Credit(bg, st.ops, acc.ID, 5_000_000, "browser test", "instances-topup"); err != nil {
		t.Fatal(err)
	}
	d, _, err := st.s.Rental.Rent(bg, acc, rental.RentRequest{Name: "train-7b", Image: st.image, TypeID: "h100-80g-sxm", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	id := d.Instance.ID
	page := st.url + "/instances/" + id

	// The dashboard: the instance goes running live (the page is not
	// reloaded). It is stopped first, so that the page surely sees it start.
	waitInstance(t, st, acc, id, "running", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateRunning })
	if _, err := st.s.Rental.Stop(bg, acc, id); err != nil {
		t.Fatal(err)
	}
	waitInstance(t, st, acc, id, "stopped", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateStopped })
	run(t, ctx, "open the dashboard", nav(st.url+"/dashboard?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#row-"+id)))
	if got := text(t, ctx, "#state-"+id); got != "已关机" {
		t.Fatalf("dashboard state before the start: %q", got)
	}
	eval[bool](t, ctx, `window.__sameDashboard = true`)
	if _, err := st.s.Rental.Start(bg, acc, id); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the state goes running live", `document.getElementById('state-`+id+`').textContent === '运行中'`)
	if !eval[bool](t, ctx, `window.__sameDashboard === true`) {
		t.Error("the dashboard reloaded instead of updating the state in place")
	}
	poll(t, ctx, "the hourly cost follows the start", `document.getElementById('cost-`+id+`').textContent.endsWith('/小时')`)
	poll(t, ctx, "the burn rate follows the start", `document.getElementById('wallet-burn').textContent !== '¥0.00/小时'`)
	if row := text(t, ctx, "#row-"+id); !strings.Contains(row, "2 × h100-80g-sxm") || !strings.Contains(row, "train-7b") {
		t.Errorf("dashboard row: %q", row)
	}
	if !eval[bool](t, ctx, `window.__sameDashboard === true`) {
		t.Error("the dashboard reloaded instead of updating the cost in place")
	}
	if bal := text(t, ctx, "#wallet-balance"); !strings.HasPrefix(bal, "¥") {
		t.Errorf("wallet balance %q", bal)
	}
	shot(t, ctx, "dashboard-zh")

	// The instance page: SSH command, copy button, host key, charts.
	run(t, ctx, "open the instance page", nav(page), chromedp.WaitVisible(chromedp.CSS("#instance-access")))
	host, port, _ := strings.Cut(st.s.SSHAddr, ":")
	wantSSH := fmt.Sprintf("ssh -p %s %s@%s", port, id, host)
	if got := text(t, ctx, "#ssh-command"); got != wantSSH {
		t.Errorf("SSH command %q, want %q", got, wantSSH)
	}
	if got := eval[string](t, ctx, `document.getElementById('ssh-copy').getAttribute('data-copy')`); got != wantSSH {
		t.Errorf("the copy button copies %q, want %q", got, wantSSH)
	}
	run(t, ctx, "copy the SSH command", chromedp.Click(chromedp.CSS("#ssh-copy")))
	poll(t, ctx, "the copy button marks it copied", `document.getElementById('ssh-copy').getAttribute('data-done') === '1'`)
	if fp := text(t, ctx, "#ssh-fingerprint"); !strings.HasPrefix(fp, "SHA256:") {
		t.Errorf("host key fingerprint %q", fp)
	}
	if got := text(t, ctx, "#scp-command"); !strings.Contains(got, "-P "+port) || !strings.HasSuffix(got, id+"@"+host+":/root/data/") {
		t.Errorf("scp line %q", got)
	}
	poll(t, ctx, "the GPU charts draw both GPUs", `document.querySelectorAll('#chart-util polyline').length === 2 && document.querySelectorAll('#chart-mem polyline').length === 2`)
	shot(t, ctx, "instance-zh")

	// A custom port out of range: refused in Chinese, the input kept.
	run(t, ctx, "open port 70000",
		chromedp.SendKeys(chromedp.CSS("#port-input"), "70000"), chromedp.Click(chromedp.CSS("#port-open")),
		chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if got := text(t, ctx, "#form-error"); got != "端口必须是 1 到 65535 之间的数字" {
		t.Errorf("zh port error %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('port-input').value`); got != "70000" {
		t.Errorf("the refused port is not kept: %q", got)
	}
	// An upgrade count that is not a number.
	run(t, ctx, "plan an upgrade to 'two' GPUs",
		nav(page), chromedp.WaitVisible(chromedp.CSS("#upgrade-form")),
		chromedp.SetValue(chromedp.CSS("#upgrade-count"), "two"), chromedp.Click(chromedp.CSS("#upgrade-plan")),
		chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if got := text(t, ctx, "#form-error"); got != "GPU 数量 必须是数字" {
		t.Errorf("zh count error %q", got)
	}

	// English: the same page and its messages.
	run(t, ctx, "the instance page in English", nav(page+"?lang=en"), chromedp.WaitVisible(chromedp.CSS("#instance-access")))
	if got := text(t, ctx, "#instance-state"); got != "Running" {
		t.Errorf("en state %q", got)
	}
	poll(t, ctx, "the charts in English", `document.querySelectorAll('#chart-util polyline').length === 2`)
	shot(t, ctx, "instance-en")
	run(t, ctx, "plan an upgrade to 9 GPUs",
		chromedp.SetValue(chromedp.CSS("#upgrade-count"), "9"), chromedp.Click(chromedp.CSS("#upgrade-plan")),
		chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if got := text(t, ctx, "#form-error"); got != "GPU count must be from 0 to 8" {
		t.Errorf("en count error %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('upgrade-count').value`); got != "9" {
		t.Errorf("the refused count is not kept: %q", got)
	}
	// Jupyter: a POST that sends the browser to a port link.
	run(t, ctx, "open Jupyter", chromedp.Click(chromedp.CSS("#port-jupyter")))
	waitHost(t, ctx, "the port link, on the port's own host", id+"-8888.localhost:"+st.url[strings.LastIndex(st.url, ":")+1:])
	run(t, ctx, "the dashboard in English", nav(st.url+"/dashboard"), chromedp.WaitVisible(chromedp.CSS("#row-"+id)))
	if got := text(t, ctx, "#state-"+id); got != "Running" {
		t.Errorf("en dashboard state %q", got)
	}
	shot(t, ctx, "dashboard-en")

	// Another customer: the 404 page on the instance's pages and actions,
	// and nothing of it on their dashboard.
	other := browser(t)
	signup(t, other, st.url, "intruder@instances.example", "Other", "other-password-12", "en")
	if rows := eval[int](t, other, `document.querySelectorAll('#instances tbody tr').length`); rows != 0 {
		t.Errorf("another customer's dashboard lists %d instances", rows)
	}
	for _, path := range []string{"/instances/" + id, "/instances/" + id + "/upgrade?gpu_type=h100-80g-sxm&gpu_count=4"} {
		run(t, other, "open "+path, nav(st.url+path), chromedp.WaitVisible(chromedp.CSS("#error-title")))
		if got := text(t, other, "#error-title"); got != "Page not found" {
			t.Errorf("another customer on %s: %q", path, got)
		}
	}
	if got := eval[int](t, other, `(async () => (await fetch('/instances/`+id+`/events')).status)()`, chromedp.EvalAwaitPromise); got != 404 {
		t.Errorf("another customer's event stream: %d, want 404", got)
	}
	for _, a := range []struct {
		path   string
		fields map[string]string
	}{
		{"/stop", nil}, {"/start", nil}, {"/delete", nil}, {"/verify", nil}, {"/migrate", map[string]string{"zone": ""}},
		{"/port", map[string]string{"port": "8888"}}, {"/upgrade", map[string]string{"gpu_type": "h100-80g-sxm", "gpu_count": "4"}},
	} {
		run(t, other, "back to the dashboard", nav(st.url+"/dashboard"), chromedp.WaitVisible(chromedp.CSS("#dashboard")))
		postAs(t, other, "/instances/"+id+a.path, a.fields)
		run(t, other, "POST "+a.path, chromedp.WaitVisible(chromedp.CSS("#error-title")))
		if got := text(t, other, "#error-title"); got != "Page not found" {
			t.Errorf("another customer's POST %s: %q", a.path, got)
		}
	}
	if d := waitInstance(t, st, acc, id, "the instance untouched", func(*rental.Detail) bool { return true }); d.Instance.State != gpurent.StateRunning || d.Instance.GPUCount != 2 {
		t.Fatalf("another customer's actions changed the instance: %s with %d GPUs", d.Instance.State, d.Instance.GPUCount)
	}

	// Upgrade to 4 H100: the plan with the price difference, then the change.
	// The target is claimed beside the instance's two GPUs, so it goes to
	// the other H100 host (once its GPUs are past their first
	// certification runs).
	waitStart := time.Now()
	four, target := 4, ""
	deadline := time.Now().Add(60 * time.Second)
	for {
		plan, err := st.s.Rental.PlanUpgrade(bg, acc, id, rental.UpgradeRequest{TypeID: "h100-80g-sxm", Count: &four})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Available && !plan.SameHost {
			target = plan.HostName
			break
		}
		if time.Now().After(deadline) {
			hosts, _ := st.s.Store.ListHosts(bg)
			var gpus []string
			for _, h := range hosts {
				for _, g := range h.GPUs {
					gpus = append(gpus, fmt.Sprintf("%s/%d %s %s job=%q inst=%q deg=%v", h.Name, g.Index, g.TypeID, g.Health, g.BenchJobID, g.InstanceID, g.Degraded))
				}
				gpus = append(gpus, fmt.Sprintf("host %s state %s seen %v", h.Name, h.State, h.LastSeenAt))
			}
			t.Fatalf("the upgrade to 4 H100 never became possible on the host: %s\n%s", plan.Reason, strings.Join(gpus, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the other H100 host was free for the upgrade after %v", time.Since(waitStart).Round(time.Millisecond))
	run(t, ctx, "plan the upgrade to 4 H100",
		nav(page+"?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#upgrade-form")),
		chromedp.SetValue(chromedp.CSS("#upgrade-type"), "h100-80g-sxm"),
		chromedp.SetValue(chromedp.CSS("#upgrade-count"), "4"), chromedp.Click(chromedp.CSS("#upgrade-plan")),
		chromedp.WaitVisible(chromedp.CSS("#upgrade-diff")))
	from, to, diff := yuan(t, text(t, ctx, "#upgrade-from-price")), yuan(t, text(t, ctx, "#upgrade-to-price")), yuan(t, text(t, ctx, "#upgrade-diff"))
	// Twice the GPUs cost twice as much within a fen: each plan's hourly
	// price is rounded once (an off-peak or academic factor may leave half
	// a fen on the two-GPU plan).
	if twice := to - 2*from; from <= 0 || twice < -1 || twice > 1 || diff != to-from || !strings.HasPrefix(text(t, ctx, "#upgrade-diff"), "+¥") {
		t.Errorf("plan prices: from %d, to %d, difference %d fen", from, to, diff)
	}
	if got := text(t, ctx, "#upgrade-to-gpus"); got != "4 × h100-80g-sxm" {
		t.Errorf("plan target %q", got)
	}
	if got := text(t, ctx, "#upgrade-where"); !strings.Contains(got, "迁移到主机 "+target) {
		t.Errorf("the plan does not say which host it moves to: %q", got)
	}
	shot(t, ctx, "instance-upgrade-zh")
	run(t, ctx, "confirm the upgrade",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS("#upgrade-confirm")), chromedp.WaitVisible(chromedp.CSS(".flash")))
	waitInstance(t, st, acc, id, "4 H100 running", func(d *rental.Detail) bool {
		return d.Instance.GPUCount == 4 && len(d.Instance.GPUIDs) == 4 && d.Instance.State == gpurent.StateRunning
	})
	run(t, ctx, "the upgraded instance", nav(page), chromedp.WaitVisible(chromedp.CSS("#instance-gpus")))
	if got := text(t, ctx, "#instance-gpus"); got != "4 × h100-80g-sxm" {
		t.Errorf("after the upgrade: %q", got)
	}

	// Stop: refused at the confirmation, then confirmed; the history grows.
	before := eval[int](t, ctx, `document.querySelectorAll('#events tr.event').length`)
	run(t, ctx, "stop, then think again",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => false`), chromedp.Click(chromedp.CSS("#instance-stop")))
	if loc := eval[string](t, ctx, `location.pathname`); loc != "/instances/"+id {
		t.Errorf("a refused confirmation left the page for %s", loc)
	}
	run(t, ctx, "stop with confirmation",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS("#instance-stop")), chromedp.WaitVisible(chromedp.CSS(".flash")))
	if got := text(t, ctx, ".flash"); got != "已发出关机指令。" {
		t.Errorf("stop notice %q", got)
	}
	waitInstance(t, st, acc, id, "stopped", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateStopped })
	poll(t, ctx, "the page follows the stop live", `document.getElementById('instance-state') && document.getElementById('instance-state').textContent === '已关机' && !!document.getElementById('instance-start')`)
	if after := eval[int](t, ctx, `document.querySelectorAll('#events tr.event').length`); after <= before {
		t.Errorf("the history did not grow: %d events before the stop, %d after", before, after)
	}

	// Delete, confirmed: back on the dashboard with the notice.
	run(t, ctx, "delete with confirmation",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS("#instance-delete")))
	// The dashboard may reload itself meanwhile, as the instance leaves it.
	poll(t, ctx, "the dashboard says the instance is being deleted",
		`!!document.getElementById('dashboard') && document.querySelector('.flash').textContent === '实例已开始释放。'`)
	waitInstance(t, st, acc, id, "deleted", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateDeleted })
	poll(t, ctx, "the deleted instance leaves the dashboard", `!!document.getElementById('instances-empty')`)
}
