package sshgate_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gpurent/gpurent/internal/sshgate"
)

const proxySecret = "0123456789abcdef0123456789abcdef-test-secret"

// proxyHarness is the gateway harness plus the port proxy served on
// loopback, and an application listening on a loopback port "inside" the
// instance that echoes what it saw and serves a websocket echo.
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
	var err error
	ph.proxy, err = sshgate.NewPortProxy(ph.gw, sshgate.ProxyConfig{Secret: []byte(proxySecret)})
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
		fmt.Fprintf(w, "path=%s host=%s cookie=%q query=%q xfh=%s", r.URL.Path, r.Host, r.Header.Get("Cookie"),
			r.URL.RawQuery, r.Header.Get("X-Forwarded-Host"))
	}))
	if tlsServer {
		ph.srv = httptest.NewTLSServer(ph.proxy)
	} else {
		ph.srv = httptest.NewServer(ph.proxy)
	}
	t.Cleanup(ph.srv.Close)
	return ph
}

// browser is an HTTP client with a cookie jar that shows redirects.
func (ph *proxyHarness) browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	c := *ph.srv.Client() // a copy: tests change CheckRedirect
	c.Jar = jar
	c.Timeout = testTimeout
	return &c
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
	prefix := fmt.Sprintf("/p/%s/%d/", instA, ph.appPort)
	if !strings.HasPrefix(link, prefix+"?"+sshgate.TokenParam+"=") {
		t.Fatalf("link %q", link)
	}

	// The first visit sets the cookie and drops the token from the address.
	noFollow := *b
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	code, _, resp := get(t, &noFollow, ph.srv.URL+link+"&lab=1")
	if code != http.StatusSeeOther || resp.Header.Get("Location") != prefix+"?lab=1" {
		t.Fatalf("first visit: %d to %q", code, resp.Header.Get("Location"))
	}
	set := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{sshgate.ProxyCookie + "=", "Path=" + prefix, "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(set, attr) {
			t.Errorf("cookie %q lacks %q", set, attr)
		}
	}
	if strings.Contains(set, "Secure") {
		t.Errorf("cookie over plain HTTP marked Secure: %q", set)
	}

	code, body, _ := get(t, b, ph.srv.URL+prefix+"tree/x?a=b")
	host := strings.TrimPrefix(ph.srv.URL, "http://")
	want := fmt.Sprintf("path=%stree/x host=%s cookie=\"\" query=\"a=b\" xfh=%s", prefix, host, host)
	if code != 200 || body != want {
		t.Fatalf("proxied GET: %d %q\nwant %q", code, body, want)
	}
	// The app's own cookies pass; the proxy's never reach it.
	u := ph.srv.URL + prefix + "x"
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Cookie", "_xsrf=abc")
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(got), `cookie="_xsrf=abc"`) {
		t.Errorf("app cookie: %s", got)
	}

	// A websocket through the same cookie, with a browser's Origin.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+host+prefix+"ws", &websocket.DialOptions{
		HTTPClient: b,
		HTTPHeader: http.Header{"Origin": {ph.srv.URL}},
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

	// The path without its slash is sent to the one with it.
	code, _, resp = get(t, &noFollow, ph.srv.URL+strings.TrimSuffix(prefix, "/"))
	if code != http.StatusMovedPermanently || resp.Header.Get("Location") != prefix {
		t.Errorf("no slash: %d %q", code, resp.Header.Get("Location"))
	}
	ph.proxy.Close()
	ph.audit.wait(t, "proxy record", func(r sshgate.Record) bool {
		return r.Kind == sshgate.KindProxy && r.Refusal == "" && r.AccountID == accountA && r.BytesOut > 100_000
	})
}

func TestPortProxySecureCookieOverTLS(t *testing.T) {
	ph := newProxyHarness(t, true)
	c := ph.browser(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	_, _, resp := get(t, c, ph.srv.URL+ph.proxy.Link(instA, ph.appPort, accountA, time.Minute))
	if set := resp.Header.Get("Set-Cookie"); !strings.Contains(set, "Secure") {
		t.Errorf("cookie over TLS not Secure: %q", set)
	}
}

func TestPortProxyRefusals(t *testing.T) {
	ph := newProxyHarness(t, false)
	port := ph.appPort
	prefix := fmt.Sprintf("/p/%s/%d/", instA, port)
	noFollow := func() *http.Client {
		c := ph.browser(t)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	// A valid cookie for port, to try elsewhere.
	c := noFollow()
	_, _, resp := get(t, c, ph.srv.URL+ph.proxy.Link(instA, port, accountA, time.Minute))
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
	tok := link[strings.Index(link, "=")+1:]
	tampered := []byte(tok)
	tampered[3] ^= 1
	badSig := tok[:len(tok)-2] + "AA"
	if strings.HasSuffix(tok, "AA") {
		badSig = tok[:len(tok)-2] + "BB"
	}

	cases := []struct {
		name   string
		path   string
		cookie string
		want   int
	}{
		{"no credentials", prefix, "", http.StatusUnauthorized},
		{"tampered token", prefix + "?" + sshgate.TokenParam + "=" + string(tampered), "", http.StatusUnauthorized},
		{"forged signature", prefix + "?" + sshgate.TokenParam + "=" + badSig, "", http.StatusUnauthorized},
		{"expired token", ph.proxy.Link(instA, port, accountA, -time.Minute), "", http.StatusUnauthorized},
		{"token for another port", prefix + "?" + sshgate.TokenParam + "=" + tokenOf(ph.proxy.Link(instA, port+1, accountA, time.Minute)), "", http.StatusForbidden},
		{"token for another instance", prefix + "?" + sshgate.TokenParam + "=" + tokenOf(ph.proxy.Link(instB, port, accountB, time.Minute)), "", http.StatusForbidden},
		{"token of another account", ph.proxy.Link(instA, port, accountB, time.Minute), "", http.StatusForbidden},
		{"nonexistent instance", ph.proxy.Link("i-nonexistent", port, accountB, time.Minute), "", http.StatusForbidden},
		{"stopped instance", ph.proxy.Link(instStop, port, accountA, time.Minute), "", http.StatusConflict},
		{"cookie of another port", fmt.Sprintf("/p/%s/%d/", instA, port+1), cookie, http.StatusUnauthorized},
		{"cookie of another instance", fmt.Sprintf("/p/%s/%d/", instB, port), cookie, http.StatusUnauthorized},
		{"cookie used as a link token", prefix + "?" + sshgate.TokenParam + "=" + cookie, "", http.StatusUnauthorized},
		{"link token used as a cookie", prefix, tok, http.StatusUnauthorized},
		{"not a proxy path", "/p/" + instA + "/notaport/", "", http.StatusNotFound},
		{"port out of range", "/p/" + instA + "/70000/", "", http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ph.srv.URL+tc.path, nil)
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
	_, a, _ := get(t, noFollow(), ph.srv.URL+ph.proxy.Link(instA, port, accountB, time.Minute))
	_, b, _ := get(t, noFollow(), ph.srv.URL+ph.proxy.Link("i-nonexistent", port, accountB, time.Minute))
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
	code, body, _ := get(t, c, ph.srv.URL+ph.proxy.Link(instA, closed, accountA, time.Minute))
	if code != http.StatusBadGateway || !strings.Contains(body, "nothing answered on port") {
		t.Errorf("closed port: %d %q", code, body)
	}
}

func tokenOf(link string) string { return link[strings.Index(link, "=")+1:] }

func TestNewPortProxyNeedsASecret(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := sshgate.NewPortProxy(h.gw, sshgate.ProxyConfig{Secret: []byte("short")}); err == nil {
		t.Error("a short secret was accepted")
	}
}
