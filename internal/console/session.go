package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Cookie names. The session cookie holds the auth service's login secret;
// the CSRF cookie a random value every form repeats.
const (
	sessionCookie = "gpurent_session"
	csrfCookie    = "gpurent_csrf"
	csrfField     = "_csrf"
)

// setSession stores a login secret in the session cookie.
func (s *Server) setSession(w http.ResponseWriter, secret string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: s.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
}

func (s *Server) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
}

// csrfToken returns the request's CSRF value, setting a new cookie when it
// has none. Forms carry it in the _csrf field.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true,
		Secure: s.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
	// The handlers of this request read it back from the request.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: v})
	return v
}

// checkCSRF holds a state-changing request to the double-submit rule (the
// form's _csrf equals the cookie) and to the same-origin rule (an Origin or
// Referer header, when sent, names this host).
func (s *Server) checkCSRF(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	if got == "" {
		got = r.Header.Get("X-CSRF-Token")
	}
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(got)) != 1 {
		return false
	}
	for _, h := range []string{r.Header.Get("Origin"), r.Header.Get("Referer")} {
		if h == "" || h == "null" {
			continue
		}
		u, err := url.Parse(h)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
		break
	}
	return true
}

// limiter counts attempts per key in a sliding window: logins per client
// address and per e-mail. It is per process; each replica counts its own.
type limiter struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	hits   map[string][]time.Time
	now    func() time.Time
}

func newLimiter(max int, window time.Duration, now func() time.Time) *limiter {
	return &limiter{window: window, max: max, hits: map[string][]time.Time{}, now: now}
}

// allow records an attempt for key and reports whether it is within the
// limit, and if not, how long until the oldest attempt leaves the window.
func (l *limiter) allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	recent := l.hits[key][:0]
	for _, t := range l.hits[key] {
		if now.Sub(t) < l.window {
			recent = append(recent, t)
		}
	}
	if len(recent) >= l.max {
		l.hits[key] = recent
		return false, l.window - now.Sub(recent[0])
	}
	l.hits[key] = append(recent, now)
	if len(l.hits) > 100_000 { // bound memory under a flood: forget the quiet
		for k, v := range l.hits {
			if len(v) == 0 || now.Sub(v[len(v)-1]) >= l.window {
				delete(l.hits, k)
			}
		}
	}
	return true, 0
}

// clientIP is the request's peer address (the console is served directly or
// behind a proxy that the operator configures to set X-Forwarded-For only
// when TrustProxy is on).
func (s *Server) clientIP(r *http.Request) string {
	if s.cfg.TrustProxy {
		if f := r.Header.Get("X-Forwarded-For"); f != "" {
			return strings.TrimSpace(strings.Split(f, ",")[0])
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
