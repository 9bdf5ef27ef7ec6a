package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Cookie names. The session cookie holds the auth service's login secret;
// the CSRF cookie a random value every form repeats.
const (
	SessionCookie = "gpurent_session"
	csrfCookie    = "gpurent_csrf"
	csrfField     = "_csrf"
)

// SetSession stores a login secret in the session cookie.
func (s *Site) SetSession(w http.ResponseWriter, secret string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// ClearSession ends the session cookie.
func (s *Site) ClearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// csrfToken returns the request's CSRF value, setting a new cookie when it
// has none. Forms carry it in the _csrf field.
func (s *Site) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteStrictMode})
	// The handlers of this request read it back from the request.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: v})
	return v
}

// checkCSRF holds a state-changing request to the double-submit rule (the
// form's _csrf equals the cookie) and to the same-origin rule (an Origin or
// Referer header, when sent, names this host).
func (s *Site) checkCSRF(r *http.Request) bool {
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

// ClientIP is the request's peer address (the console is served directly or
// behind a proxy that the operator configures to set X-Forwarded-For only
// when TrustProxy is on).
func (s *Site) ClientIP(r *http.Request) string {
	if s.trustProxy {
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
