package browser

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/rental"
)

// portsApp is a CGI program that a customer's instance serves on port
// 8080 (busybox httpd): it shows the cookies it received and answers with
// Set-Cookie for the console's session (host-only and for the parent
// domain), a cookie of its own for the parent domain, and
// Service-Worker-Allowed.
const portsApp = `#!/bin/sh
printf 'Content-Type: text/html\r\n'
printf 'Set-Cookie: gpurent_session=evil; Path=/\r\n'
printf 'Set-Cookie: gpurent_session=evil-parent; Domain=localhost; Path=/\r\n'
printf 'Set-Cookie: gpurent_csrf=evil; Domain=localhost; Path=/\r\n'
printf 'Set-Cookie: app_pref=dark; Domain=localhost; Path=/\r\n'
printf 'Service-Worker-Allowed: /\r\n'
printf '\r\n'
printf '<html><body><pre id="seen">COOKIE=[%s]</pre></body></html>\n' "$HTTP_COOKIE"
`

// waitHost waits until the browser is on host (host:port of its address).
func waitHost(t *testing.T, ctx context.Context, what, host string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err == nil {
			if u, perr := url.Parse(loc); perr == nil && u.Host == host {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the browser is at %s (%v), want host %s", what, loc, err, host)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// browserCookies are all the cookies of the browser, or those that it
// would send to urls.
func browserCookies(t *testing.T, ctx context.Context, urls ...string) []*network.Cookie {
	t.Helper()
	var (
		got []*network.Cookie
		err error
	)
	if len(urls) == 0 {
		got, err = chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
			res, err := cdp.Call(ctx, tg, storage.GetCookies, storage.GetCookiesParams{})
			return res.Cookies, err
		})
	} else {
		got, err = chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
			res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: urls})
			return res.Cookies, err
		})
	}
	if err != nil {
		t.Fatalf("read the browser's cookies: %v", err)
	}
	return got
}

func cookieNamed(cs []*network.Cookie, name, domain string) *network.Cookie {
	for _, c := range cs {
		if c.Name == name && c.Domain == domain {
			return c
		}
	}
	return nil
}

// TestPortLinksOwnOrigin: a customer signed in to the console opens a port
// of their instance from its page. The port is served on its own host name
// (<instance>-8080.localhost), never the console's; the application there
// sees no console cookie, its attempts to set gpurent_session (host-only
// and for the parent domain) and Service-Worker-Allowed never reach the
// browser, and the console's session is unchanged afterwards and still
// works. The console's host no longer serves /p/.
func TestPortLinksOwnOrigin(t *testing.T) {
	st := startSite(t)
	bg := context.Background()
	const email, password = "owner@ports.example", "ports-password-12"
	acc, err := st.s.Auth.CreateAccount(bg, email, "Ports", password, gpurent.RoleCustomer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.s.Wallet.Credit(bg, st.ops, acc.ID, 1_000_000, "browser test", "ports-topup"); err != nil {
		t.Fatal(err)
	}
	d, _, err := st.s.Rental.Rent(bg, acc, rental.RentRequest{Name: "ports", Image: st.image, TypeID: "a100-80g-sxm", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := d.Instance.ID
	waitInstance(t, st, acc, id, "running", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateRunning })
	cli := dockertest.Client(t)
	ctr := dockertest.InstanceContainer(t, cli, id)
	dockertest.MustExec(t, cli, ctr, "sh", "-c", "mkdir -p /root/www/cgi-bin && cat > /root/www/cgi-bin/app <<'EOF'\n"+portsApp+
		"EOF\nchmod +x /root/www/cgi-bin/app && httpd -p 127.0.0.1:8080 -h /root/www")

	consoleURL, err := url.Parse(st.url)
	if err != nil {
		t.Fatal(err)
	}
	consoleHost := consoleURL.Hostname() // 127.0.0.1
	portHost := id + "-8080.localhost:" + consoleURL.Port()
	portOrigin := "http://" + portHost

	ctx := browser(t)
	login(t, ctx, st.url, email, password, "en")
	before := cookieNamed(browserCookies(t, ctx), "gpurent_session", consoleHost)
	if before == nil || before.Value == "" || !before.HTTPOnly {
		t.Fatalf("no HttpOnly console session cookie on %s after login", consoleHost)
	}
	for _, c := range browserCookies(t, ctx) {
		if strings.HasPrefix(c.Name, "gpurent_") && c.Domain != consoleHost {
			t.Errorf("console cookie %s is not host-only: domain %q", c.Name, c.Domain)
		}
	}

	// The console's button: a POST that sends the browser to the link on
	// the port's own host, which trades its token for a cookie there.
	run(t, ctx, "open port 8080 from the instance page",
		nav(st.url+"/instances/"+id+"?lang=en"), chromedp.WaitVisible(chromedp.CSS("#port-input")),
		chromedp.SendKeys(chromedp.CSS("#port-input"), "8080"), chromedp.Click(chromedp.CSS("#port-open")))
	waitHost(t, ctx, "the browser lands on the port's own host", portHost)
	if loc := eval[string](t, ctx, "location.href"); strings.Contains(loc, "gpurent_token") {
		t.Errorf("the token stayed in the address: %s", loc)
	}

	// The application, at / of its host: what it saw and what it answered.
	run(t, ctx, "open the application", nav(portOrigin+"/cgi-bin/app"), chromedp.WaitVisible(chromedp.CSS("#seen")))
	seen := text(t, ctx, "#seen")
	if !strings.HasPrefix(seen, "COOKIE=[") || strings.Contains(seen, "gpurent") {
		t.Errorf("the application saw %q: a gpurent cookie reached it", seen)
	}
	// What the browser itself would send to the port's host: no console
	// cookie, only the proxy's own and the app's (now host-only) cookie.
	for _, c := range browserCookies(t, ctx, portOrigin+"/cgi-bin/app") {
		switch {
		case c.Name == "gpurent_port" && c.Domain == id+"-8080.localhost" && c.HTTPOnly:
		case c.Name == "app_pref" && c.Domain == id+"-8080.localhost":
		default:
			t.Errorf("the browser would send %s (domain %q) to the port's host", c.Name, c.Domain)
		}
	}
	if cookieNamed(browserCookies(t, ctx), "app_pref", id+"-8080.localhost") == nil {
		var names []string
		for _, c := range browserCookies(t, ctx) {
			names = append(names, c.Name+"@"+c.Domain)
		}
		t.Errorf("the application's own cookie was not kept on its host: %v", names)
	}
	// The page's script reads its own answer's headers (same origin).
	swa := eval[string](t, ctx, `(async () => { const r = await fetch('/cgi-bin/app', {cache: 'no-store'});
		return r.status + ':' + (r.headers.get('Service-Worker-Allowed') ?? 'absent'); })()`, chromedp.EvalAwaitPromise)
	if swa != "200:absent" {
		t.Errorf("Service-Worker-Allowed through the proxy: %q", swa)
	}

	// The console's session is unchanged, no cookie of the application
	// reached the console's host, and the console still works.
	all := browserCookies(t, ctx)
	if after := cookieNamed(all, "gpurent_session", consoleHost); after == nil || after.Value != before.Value {
		t.Errorf("the console session cookie changed: before %q, after %+v", before.Value, after)
	}
	for _, c := range browserCookies(t, ctx, st.url+"/dashboard") {
		if strings.Contains(c.Value, "evil") || c.Name == "app_pref" {
			t.Errorf("a cookie from the port's host reaches the console: %s=%s (domain %q)", c.Name, c.Value, c.Domain)
		}
	}
	for _, c := range all {
		if strings.Contains(c.Value, "evil") || c.Domain == "localhost" || c.Domain == ".localhost" {
			t.Errorf("the application set %s=%s for domain %q", c.Name, c.Value, c.Domain)
		}
	}
	run(t, ctx, "the console still works", nav(st.url+"/dashboard?lang=en"), chromedp.WaitVisible(chromedp.CSS("#dashboard")))
	if rows := eval[int](t, ctx, `document.querySelectorAll('#row-`+id+`').length`); rows != 1 {
		t.Errorf("the dashboard lists the instance %d times", rows)
	}

	// The console's host no longer serves instance ports.
	status := eval[int](t, ctx, `(async () => (await fetch('/p/`+id+`/8080/cgi-bin/app')).status)()`, chromedp.EvalAwaitPromise)
	if status != 404 {
		t.Errorf("/p/ on the console's host: %d, want 404", status)
	}
	shot(t, ctx, "ports-own-origin")
}
