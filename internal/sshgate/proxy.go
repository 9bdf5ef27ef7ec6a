package sshgate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpurent/gpurent"
)

// TokenParam is the query parameter that carries a link's token.
const TokenParam = "gpurent_token"

// ProxyCookie is the name of the cookie a link's token is exchanged for.
const ProxyCookie = "gpurent_port"

// ProxyConfig configures a PortProxy.
type ProxyConfig struct {
	// Secret signs links and cookies (HMAC-SHA256); at least 32 bytes, the
	// same on every control-plane replica. Changing it logs everyone out.
	Secret []byte
	// SessionTTL is how long the cookie a link is exchanged for stays valid.
	// Default 12h.
	SessionTTL time.Duration
	// SecureCookies marks cookies Secure even for requests that did not
	// arrive over TLS here (TLS ends at a load balancer in front). Requests
	// that arrive over TLS always get Secure cookies.
	SecureCookies bool
	// Domain is the ports domain: port P of instance I is served at
	// I-P.Domain (wildcard DNS name and certificate by the operator), and
	// nowhere else. It must share no cookies with the console's host name
	// (see CheckPortsDomain). Required.
	Domain string
	// LinkScheme ("http" or "https"; default "http") and LinkPort (""
	// for the scheme's default) complete the origin of the links.
	LinkScheme, LinkPort string
}

// PortProxy is the browser's way to an instance's HTTP ports: an
// http.Handler for the host names {instance}-{port}.{domain} (see the
// package documentation). The application is at / of its host: paths reach
// it unchanged.
type PortProxy struct {
	g        *Gateway
	secret   []byte
	ttl      time.Duration
	secure   bool
	domain   string
	scheme   string
	linkPort string
	rp       *httputil.ReverseProxy
	tr       *http.Transport
}

// NewPortProxy returns the port proxy, which reaches instances through g's
// agent connections and audits through g's Audit.
func NewPortProxy(g *Gateway, cfg ProxyConfig) (*PortProxy, error) {
	if len(cfg.Secret) < 32 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "port proxy: the secret must be at least 32 bytes")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if err := CheckPortsDomain(cfg.Domain, ""); err != nil {
		return nil, err
	}
	switch cfg.LinkScheme {
	case "":
		cfg.LinkScheme = "http"
	case "http", "https":
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "port proxy: link scheme %q: want http or https", cfg.LinkScheme)
	}
	if cfg.LinkPort != "" {
		if n, err := strconv.Atoi(cfg.LinkPort); err != nil || n < 1 || n > 65535 {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "port proxy: link port %q: want 1 to 65535", cfg.LinkPort)
		}
	}
	p := &PortProxy{g: g, secret: append([]byte(nil), cfg.Secret...), ttl: cfg.SessionTTL, secure: cfg.SecureCookies,
		domain: strings.ToLower(cfg.Domain), scheme: cfg.LinkScheme, linkPort: cfg.LinkPort}
	p.tr = &http.Transport{
		DialContext:         p.dial,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // pass encodings through untouched
		ForceAttemptHTTP2:   false,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      p.tr,
		ErrorHandler:   p.proxyError,
		ModifyResponse: func(r *http.Response) error { filterResponse(r.Header); return nil },
	}
	return p, nil
}

// Close drops the idle connections of the proxy.
func (p *PortProxy) Close() { p.tr.CloseIdleConnections() }

// Link returns the address, with its token, that opens port of instance in
// the browser for account, on the port's own host name; the token is good
// for ttl.
func (p *PortProxy) Link(instance string, port int, account string, ttl time.Duration) string {
	tok := signToken(p.secret, claims{
		Kind: tokenLink, Instance: instance, Port: port, Account: account,
		Expires: p.g.cfg.Now().Add(ttl).Unix(),
	})
	return p.Origin(instance, port) + "/?" + TokenParam + "=" + tok
}

type proxyCtxKey struct{}

// proxyTarget travels in the request context from ServeHTTP to the dialer.
type proxyTarget struct {
	t          Target
	port       int
	clientAddr string
}

// transportHost names (instance, port) for the Transport's connection pool,
// so that a kept-alive connection to one instance's port is never reused for
// another. It never resolves: dial reads the target from the context.
func transportHost(instance string, port int) string {
	return fmt.Sprintf("%s.p%d.gpurent.invalid:%d", instance, port, port)
}

func (p *PortProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	instance, port, ok := parsePortHost(r.Host, p.domain)
	if !ok {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "gpurent: no instance port is served on this host name; open ports from the console or with `gpurent open`", http.StatusNotFound)
		return
	}
	now := p.g.cfg.Now()
	if tok := r.URL.Query().Get(TokenParam); tok != "" {
		p.exchange(w, r, tok, instance, port, now)
		return
	}
	// Several cookies of this name can arrive (a stale one may linger);
	// any valid one for here will do.
	var (
		c     claims
		found bool
	)
	for _, ck := range r.Cookies() {
		if ck.Name != ProxyCookie {
			continue
		}
		if cl, problem := verifyToken(p.secret, ck.Value, tokenCookie, instance, port, now); problem == tokenOK {
			c, found = cl, true
			break
		}
	}
	if !found {
		p.refuse(w, r, instance, port, claims{}, http.StatusUnauthorized,
			"open this port again from the console or `gpurent port-forward`: this browser has no valid link for it", "no valid cookie")
		return
	}
	t, err := p.target(r.Context(), c.Account, instance)
	if err != nil {
		p.refuseTarget(w, r, instance, port, c, err)
		return
	}
	stripCookies(r)
	ctx := context.WithValue(r.Context(), proxyCtxKey{}, &proxyTarget{t: t, port: port, clientAddr: r.RemoteAddr})
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// exchange turns a link's token into a cookie and sends the browser to the
// same address without the token.
func (p *PortProxy) exchange(w http.ResponseWriter, r *http.Request, tok, instance string, port int, now time.Time) {
	c, problem := verifyToken(p.secret, tok, tokenLink, instance, port, now)
	switch problem {
	case tokenBad:
		p.refuse(w, r, instance, port, claims{}, http.StatusUnauthorized, "this link is not valid", "bad link token")
		return
	case tokenExpired:
		p.refuse(w, r, instance, port, c, http.StatusUnauthorized, "this link has expired; open the port again from the console", "expired link token")
		return
	case tokenElsewhere:
		p.refuse(w, r, instance, port, c, http.StatusForbidden, "this link is for another instance or port", "link token for another instance or port")
		return
	}
	if _, err := p.target(r.Context(), c.Account, instance); err != nil {
		p.refuseTarget(w, r, instance, port, c, err)
		return
	}
	cookie := signToken(p.secret, claims{
		Kind: tokenCookie, Instance: instance, Port: port, Account: c.Account, Expires: now.Add(p.ttl).Unix(),
	})
	http.SetCookie(w, &http.Cookie{
		// Host-only (no Domain): it reaches this port's host alone.
		Name: ProxyCookie, Value: cookie, Path: "/", MaxAge: int(p.ttl / time.Second),
		HttpOnly: true, Secure: p.secure || r.TLS != nil, SameSite: http.SameSiteLaxMode,
	})
	u := *r.URL
	q := u.Query()
	q.Del(TokenParam)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

func (p *PortProxy) target(ctx context.Context, account, instance string) (Target, error) {
	t, err := p.g.cfg.Directory.Target(ctx, account, instance)
	if err == nil && (t.InstanceID != instance || t.AccountID != account) {
		err = gpurent.Errorf(gpurent.CodeInternal, "directory answered for instance %q of account %q", t.InstanceID, t.AccountID)
	}
	return t, err
}

func (p *PortProxy) refuseTarget(w http.ResponseWriter, r *http.Request, instance string, port int, c claims, err error) {
	switch gpurent.ErrorCode(err) {
	case gpurent.CodeNotFound, gpurent.CodeForbidden:
		p.refuse(w, r, instance, port, c, http.StatusForbidden, "there is no such instance on your account", "no such instance")
	case gpurent.CodeConflict:
		msg := "the instance is not running: " + gpurent.ErrorMessage(err)
		p.refuse(w, r, instance, port, c, http.StatusConflict, msg, "instance not running: "+gpurent.ErrorMessage(err))
	default:
		p.g.log.Error("port proxy: instance lookup failed", "instance", instance, "err", err)
		p.refuse(w, r, instance, port, c, http.StatusServiceUnavailable, "the instance cannot be reached right now; try again shortly", "instance lookup failed")
	}
}

// refuse answers without proxying. Refusals of a genuine token (whose
// account is known) are audited; anonymous ones are only logged.
func (p *PortProxy) refuse(w http.ResponseWriter, r *http.Request, instance string, port int, c claims, status int, msg, reason string) {
	p.g.log.Info("port proxy: refused", "instance", instance, "port", port, "account", c.Account,
		"client", r.RemoteAddr, "status", status, "reason", reason)
	if c.Account != "" {
		now := p.g.now()
		p.g.audit(r.Context(), Record{
			AccountID: c.Account, InstanceID: instance, Kind: KindProxy, Detail: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			ClientAddr: r.RemoteAddr, Start: now, End: now, ExitStatus: -1, Refusal: reason,
		})
	}
	w.Header().Set("Cache-Control", "no-store")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Cookie realm="gpurent port proxy"`)
	}
	http.Error(w, "gpurent: "+msg, status)
}

// stripCookies removes the proxy's own cookie, and any other gpurent
// cookie, from what the instance sees.
func stripCookies(r *http.Request) {
	lines := r.Header.Values("Cookie")
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		for part := range strings.SplitSeq(line, ";") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if n, _, _ := strings.Cut(part, "="); consoleCookie(n) {
				continue
			}
			kept = append(kept, part)
		}
	}
	r.Header.Del("Cookie")
	if len(kept) > 0 {
		r.Header.Set("Cookie", strings.Join(kept, "; "))
	}
}

func (p *PortProxy) rewrite(pr *httputil.ProxyRequest) {
	pt, _ := pr.In.Context().Value(proxyCtxKey{}).(*proxyTarget)
	if pt == nil {
		return // cannot happen: ServeHTTP always sets it; dial then fails
	}
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = transportHost(pt.t.InstanceID, pt.port)
	// The application sees the browser's host, so that its own origin
	// checks (Jupyter's websockets) agree with the browser.
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	pr.Out.Header.Del("X-Forwarded-Prefix") // the application is at /
}

func (p *PortProxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	pt, _ := r.Context().Value(proxyCtxKey{}).(*proxyTarget)
	if errors.Is(err, context.Canceled) {
		return // the browser went away
	}
	msg := "the instance did not answer"
	if pt != nil {
		msg = fmt.Sprintf("nothing answered on port %d inside instance %s; is the application running and listening?", pt.port, pt.t.InstanceID)
		p.g.log.Info("port proxy: upstream failed", "instance", pt.t.InstanceID, "port", pt.port, "err", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "gpurent: "+msg, http.StatusBadGateway)
}

// dial opens a direct-tcpip channel to 127.0.0.1:port inside the instance
// through the shared agent connection.
func (p *PortProxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	pt, _ := ctx.Value(proxyCtxKey{}).(*proxyTarget)
	if pt == nil || addr != transportHost(pt.t.InstanceID, pt.port) {
		return nil, gpurent.Errorf(gpurent.CodeInternal, "port proxy: dial of %s without its target", addr)
	}
	l, err := p.g.pool.acquire(ctx, pt.t)
	if err != nil {
		return nil, err
	}
	dest := net.JoinHostPort("127.0.0.1", strconv.Itoa(pt.port))
	nc, err := l.client().DialContext(ctx, "tcp", dest)
	if err != nil {
		l.release()
		return nil, err
	}
	return &proxyConn{Conn: nc, p: p, lease: l, rec: Record{
		ConnID: gpurent.NewID("conn"), AccountID: pt.t.AccountID, InstanceID: pt.t.InstanceID, Kind: KindProxy,
		Detail: dest, ClientAddr: pt.clientAddr, Start: p.g.now(), ExitStatus: -1,
	}}, nil
}

// proxyConn is one proxied connection: it counts bytes, holds its lease on
// the agent connection and is audited when it closes.
type proxyConn struct {
	net.Conn
	p       *PortProxy
	lease   *lease
	rec     Record
	in, out atomic.Int64
	once    sync.Once
}

func (c *proxyConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.out.Add(int64(n))
	return n, err
}

func (c *proxyConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *proxyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.lease.release()
		c.rec.End = c.p.g.now()
		c.rec.BytesIn, c.rec.BytesOut = c.in.Load(), c.out.Load()
		c.p.g.audit(context.Background(), c.rec)
	})
	return err
}
