package sshgate_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gpurent/gpurent/internal/sshgate"
)

const proxySecret = "0123456789abcdef0123456789abcdef-test-secret"

// proxyHarness is the gateway harness plus the port proxy served on
// loopback for the ports domain "localhost" (port P of instance I at
// http://I-P.localhost:<server port>), and an application listening on a
// loopback port "inside" the instance that echoes what it saw and serves a
// websocket echo; at /evil it tries to set the console's cookies.
type proxyHarness struct {
	*harness
	proxy   *sshgate.PortProxy
	srv     *httptest.Server
	appPort int
	hits    atomic.Int64
}

func newProxyHarness(t *testing.T, tlsServer bool) *proxyHarness {
	t.Helper()
	ph := &proxyHarness{harness: newHarness(t, nil)}
	ph.srv = httptest.NewUnstartedServer(nil)
	scheme := "http"
	if tlsServer {
		scheme = "https"
	}
	_, srvPort, _ := net.SplitHostPort(ph.srv.Listener.Addr().String())
	var err error
	ph.proxy, err = sshgate.NewPortProxy(ph.gw, sshgate.ProxyConfig{Secret: []byte(proxySecret), Domain: "localhost",
		LinkScheme: scheme, LinkPort: srvPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ph.proxy.Close)
	ph.appPort = loopbackHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ph.hits.Add(1)
		if strings.HasSuffix(r.URL.Path, "/ws") {
			c, err := websocket.Accept(w, r, nil) // checks Origin against Host
			if err != nil {
				return
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			for {
				typ, data, err := c.Read(r.Context())
				if err != nil {
					return
				}
				if err := c.Write(r.Context(), typ, append([]byte("echo: "), data...)); err != nil {
					return
				}
			}
		}
		if strings.HasSuffix(r.URL.Path, "/big") {
			w.Write(make([]byte, 1<<20))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/evil") {
			h := w.Header()
			h.Add("Set-Cookie", "gpurent_session=evil; Path=/")
			h.Add("Set-Cookie", "gpurent_csrf=evil; Domain=localhost; Path=/")
			h.Add("Set-Cookie", "GPURENT_PORT=evil")
			h.Add("Set-Cookie", "__Host-gpurent_session=evil; Secure; Path=/")
			h.Add("Set-Cookie", "app=1; Domain=localhost; Path=/; HttpOnly")
			h.Add("Set-Cookie", "theme=dark; domain=.LOCALHOST")
			h.Add("Set-Cookie", "_xsrf=abc")
			h.Set("Service-Worker-Allowed", "/")
		}
		fmt.Fprintf(w, "path=%s host=%s cookie=%q query=%q xfh=%s xfp=%q", r.URL.Path, r.Host, r.Header.Get("Cookie"),
			r.URL.RawQuery, r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Prefix"))
	}))
	ph.srv.Config.Handler = ph.proxy
	if tlsServer {
		ph.srv.StartTLS()
	} else {
		ph.srv.Start()
	}
	t.Cleanup(ph.srv.Close)
	return ph
}

// origin is where port of instance is served, as a browser names it.
func (ph *proxyHarness) origin(instance string, port int) string {
	return ph.proxy.Origin(instance, port)
}

// browser is an HTTP client with a cookie jar that shows redirects. It
// reaches any host name at the harness's server, as a browser resolves
// *.localhost to loopback (Go's resolver does not).
func (ph *proxyHarness) browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	addr := ph.srv.Listener.Addr().String()
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		// The test certificate names 127.0.0.1, not the port hosts.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Timeout: testTimeout, Transport: tr}
}

func get(t *testing.T, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

func TestPortProxyHTTPAndWebsocket(t *testing.T) {
	ph := newProxyHarness(t, false)
	b := ph.browser(t)
	link := ph.proxy.Link(instA, ph.appPort, accountA, time.Minute)
	origin := ph.origin(instA, ph.appPort)
	host := strings.TrimPrefix(origin, "http://")
	if want := fmt.Sprintf("http://%s-%d.localhost:", instA, ph.appPort); !strings.HasPrefix(origin, want) ||
		!strings.HasPrefix(link, origin+"/?"+sshgate.TokenParam+"=") {
		t.Fatalf("origin %q, link %q", origin, link)
	}

	// The first visit sets a host-only cookie and drops the token from the
	// address.
	noFollow := *b
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	code, _, resp := get(t, &noFollow, link+"&lab=1")
	if code != http.StatusSeeOther || resp.Header.Get("Location") != "/?lab=1" {
		t.Fatalf("first visit: %d to %q", code, resp.Header.Get("Location"))
	}
	set := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{sshgate.ProxyCookie + "=", "Path=/", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(set, attr) {
			t.Errorf("cookie %q lacks %q", set, attr)
		}
	}
	if strings.Contains(set, "Secure") || strings.Contains(strings.ToLower(set), "domain") {
		t.Errorf("cookie over plain HTTP marked Secure, or not host-only: %q", set)
	}

	code, body, _ := get(t, b, origin+"/tree/x?a=b")
	want := fmt.Sprintf("path=/tree/x host=%s cookie=\"\" query=\"a=b\" xfh=%s xfp=\"\"", host, host)
	if code != 200 || body != want {
		t.Fatalf("proxied GET: %d %q\nwant %q", code, body, want)
	}
	// The app's own cookies pass; the proxy's and the console's never
	// reach it.
	req, _ := http.NewRequest("GET", origin+"/x", nil)
	req.Header.Set("Cookie", "_xsrf=abc; gpurent_session=s; gpurent_csrf=c")
	req.Header.Set("X-Forwarded-Prefix", "/p/x")
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(got), `cookie="_xsrf=abc"`) || !strings.Contains(string(got), `xfp=""`) {
		t.Errorf("app cookie: %s", got)
	}

	// A websocket through the same cookie, with a browser's Origin.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+host+"/ws", &websocket.DialOptions{
		HTTPClient: b,
		HTTPHeader: http.Header{"Origin": {origin}},
	})
	if err != nil {
		t.Fatalf("websocket through the proxy: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	for _, msg := range []string{"hello", strings.Repeat("x", 100_000)} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil || string(data) != "echo: "+msg {
			t.Fatalf("websocket echo: %d bytes, %v", len(data), err)
		}
	}
	ws.Close(websocket.StatusNormalClosure, "")

	ph.proxy.Close()
	ph.audit.wait(t, "proxy record", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindProxy && r.Refusal == "" && r.AccountID == accountA && r.BytesOut > 100_000
	})
}

// TestPortProxyFiltersResponses: an application's attempts to set gpurent's
// cookies are dropped, Domain attributes are removed (its cookies stay on
// its own host) and Service-Worker-Allowed never reaches the browser.
func TestPortProxyFiltersResponses(t *testing.T) {
	ph := newProxyHarness(t, false)
	b := ph.browser(t)
	origin := ph.origin(instA, ph.appPort)
	get(t, b, ph.proxy.Link(instA, ph.appPort, accountA, time.Minute))
	code, body, resp := get(t, b, origin+"/evil")
	if code != 200 || !strings.HasPrefix(body, "path=/evil") {
		t.Fatalf("GET /evil: %d %q", code, body)
	}
	want := []string{"app=1; Path=/; HttpOnly", "theme=dark", "_xsrf=abc"}
	if got := resp.Header.Values("Set-Cookie"); !slices.Equal(got, want) {
		t.Errorf("Set-Cookie through the proxy:\n%q\nwant\n%q", got, want)
	}
	if v, ok := resp.Header["Service-Worker-Allowed"]; ok {
		t.Errorf("Service-Worker-Allowed came back: %q", v)
	}
	// The proxy's own cookie survived the application's attempt.
	if code, _, _ := get(t, b, origin+"/again"); code != 200 {
		t.Errorf("after /evil: %d", code)
	}
}

// TestPortProxyHostNames: the proxy answers only on <instance>-<port> under
// its domain; any other name (the console's, the bare domain, a look-alike)
// gets 404 and never reaches an application.
func TestPortProxyHostNames(t *testing.T) {
	ph := newProxyHarness(t, false)
	b := ph.browser(t)
	link := ph.proxy.Link(instA, ph.appPort, accountA, time.Minute)
	query := link[strings.Index(link, "/?"):]
	_, srvPort, _ := net.SplitHostPort(ph.srv.Listener.Addr().String())
	ph.hits.Store(0)
	for _, host := range []string{
		"127.0.0.1:" + srvPort, "localhost:" + srvPort, "localhost",
		fmt.Sprintf("%s-%d.localhost.example.com", instA, ph.appPort),
		fmt.Sprintf("%s-%d.notlocalhost", instA, ph.appPort),
		fmt.Sprintf("x.%s-%d.localhost", instA, ph.appPort),
		fmt.Sprintf("%s.%d.localhost", instA, ph.appPort),
		fmt.Sprintf("%s-0%d.localhost", instA, ph.appPort),
		instA + "-70000.localhost", instA + "-notaport.localhost", instA + ".localhost",
	} {
		req, _ := http.NewRequest("GET", "http://"+host+query, nil)
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("Host %q: %d %q %q", host, resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
		}
	}
	if n := ph.hits.Load(); n != 0 {
		t.Errorf("other host names reached the application %d times", n)
	}
	// Host names are case-insensitive: the upper-case spelling works.
	upper := strings.ToUpper(strings.TrimPrefix(ph.origin(instA, ph.appPort), "http://"))
	if code, body, _ := get(t, b, "http://"+upper+query); code != 200 {
		t.Errorf("upper-case host: %d %q", code, body)
	}
}

func TestPortProxySecureCookieOverTLS(t *testing.T) {
	ph := newProxyHarness(t, true)
	c := ph.browser(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	link := ph.proxy.Link(instA, ph.appPort, accountA, time.Minute)
	if !strings.HasPrefix(link, "https://") {
		t.Fatalf("link over TLS %q", link)
	}
	_, _, resp := get(t, c, link)
	if set := resp.Header.Get("Set-Cookie"); !strings.Contains(set, "Secure") {
		t.Errorf("cookie over TLS not Secure: %q", set)
	}
}

func TestPortProxyRefusals(t *testing.T) {
	ph := newProxyHarness(t, false)
	port := ph.appPort
	here := ph.origin(instA, port) + "/"
	noFollow := func() *http.Client {
		c := ph.browser(t)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	// A valid cookie for port, to try elsewhere.
	c := noFollow()
	_, _, resp := get(t, c, ph.proxy.Link(instA, port, accountA, time.Minute))
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == sshgate.ProxyCookie {
			cookie = ck.Value
		}
	}
	if cookie == "" {
		t.Fatal("no cookie from a valid link")
	}
	ph.hits.Store(0)

	link := ph.proxy.Link(instA, port, accountA, time.Minute)
	tok := tokenOf(link)
	tampered := []byte(tok)
	tampered[3] ^= 1
	badSig := tok[:len(tok)-2] + "AA"
	if strings.HasSuffix(tok, "AA") {
		badSig = tok[:len(tok)-2] + "BB"
	}
	withToken := func(tok string) string { return here + "?" + sshgate.TokenParam + "=" + tok }

	cases := []struct {
		name   string
		url    string
		cookie string
		want   int
	}{
		{"no credentials", here, "", http.StatusUnauthorized},
		{"tampered token", withToken(string(tampered)), "", http.StatusUnauthorized},
		{"forged signature", withToken(badSig), "", http.StatusUnauthorized},
		{"expired token", ph.proxy.Link(instA, port, accountA, -time.Minute), "", http.StatusUnauthorized},
		{"token for another port", withToken(tokenOf(ph.proxy.Link(instA, port+1, accountA, time.Minute))), "", http.StatusForbidden},
		{"token for another instance", withToken(tokenOf(ph.proxy.Link(instB, port, accountB, time.Minute))), "", http.StatusForbidden},
		{"token of another account", ph.proxy.Link(instA, port, accountB, time.Minute), "", http.StatusForbidden},
		{"nonexistent instance", ph.proxy.Link("i-nonexistent", port, accountB, time.Minute), "", http.StatusForbidden},
		{"stopped instance", ph.proxy.Link(instStop, port, accountA, time.Minute), "", http.StatusConflict},
		{"cookie of another port", ph.origin(instA, port+1) + "/", cookie, http.StatusUnauthorized},
		{"cookie of another instance", ph.origin(instB, port) + "/", cookie, http.StatusUnauthorized},
		{"cookie used as a link token", withToken(cookie), "", http.StatusUnauthorized},
		{"link token used as a cookie", here, tok, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", tc.url, nil)
			if tc.cookie != "" {
				req.Header.Set("Cookie", sshgate.ProxyCookie+"="+tc.cookie)
			}
			resp, err := noFollow().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.want)
			}
			if resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("a refusal set a cookie")
			}
		})
	}
	if n := ph.hits.Load(); n != 0 {
		t.Errorf("refused requests reached the application %d times", n)
	}
	// Another account's instance and a missing one read the same.
	_, a, _ := get(t, noFollow(), ph.proxy.Link(instA, port, accountB, time.Minute))
	_, b, _ := get(t, noFollow(), ph.proxy.Link("i-nonexistent", port, accountB, time.Minute))
	if a != b {
		t.Errorf("foreign %q vs missing %q", a, b)
	}
	ph.audit.wait(t, "proxy refusal", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindProxy && r.AccountID == accountB && r.InstanceID == instA && r.Refusal == "no such instance"
	})
	ph.audit.wait(t, "expired refusal", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindProxy && r.Refusal == "expired link token"
	})

	// Nothing listening on the port: a clear 502, not a hang.
	closed := freePort(t)
	c = ph.browser(t)
	code, body, _ := get(t, c, ph.proxy.Link(instA, closed, accountA, time.Minute))
	if code != http.StatusBadGateway || !strings.Contains(body, "nothing answered on port") {
		t.Errorf("closed port: %d %q", code, body)
	}
}

func tokenOf(link string) string { return link[strings.Index(link, "=")+1:] }

func TestNewPortProxyNeedsASecretAndADomain(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := sshgate.NewPortProxy(h.gw, sshgate.ProxyConfig{Secret: []byte("short"), Domain: "localhost"}); err == nil {
		t.Error("a short secret was accepted")
	}
	for _, d := range []string{"", "127.0.0.1", "a..b", "-x.example", "ports.example.com:8080", "x_y.example"} {
		if _, err := sshgate.NewPortProxy(h.gw, sshgate.ProxyConfig{Secret: []byte(proxySecret), Domain: d}); err == nil {
			t.Errorf("ports domain %q was accepted", d)
		}
	}
}

func TestCheckPortsDomain(t *testing.T) {
	for _, tc := range []struct {
		domain, console string
		ok              bool
	}{
		{"localhost", "127.0.0.1:8080", true},
		{"ports.example-usercontent.com", "cloud.example.com", true},
		{"localhost", "localhost:8080", false},
		{"Cloud.Example.com", "cloud.example.com", false},
		{"example.com", "cloud.example.com", false},
		{"ports.cloud.example.com", "cloud.example.com", false},
		{"localhost", "[::1]:8080", true},
	} {
		if err := sshgate.CheckPortsDomain(tc.domain, tc.console); (err == nil) != tc.ok {
			t.Errorf("CheckPortsDomain(%q, %q) = %v, want ok %v", tc.domain, tc.console, err, tc.ok)
		}
	}
}
