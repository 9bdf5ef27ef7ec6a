package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gpurent/gpurent"
)

// Access says who may see a route.
type Access int

// The accesses, from the widest.
const (
	Public   Access = iota // anyone; the account, if logged in, is known
	Customer               // logged in (customers and operators)
	Operator               // operators only; others get 404
)

// String is the access as the console's Routes lists it: "public",
// "customer" or "operator".
func (a Access) String() string {
	switch a {
	case Public:
		return "public"
	case Customer:
		return "customer"
	case Operator:
		return "operator"
	}
	return "unknown"
}

// Handler answers one request with its page's context (the viewer, the
// language, the CSRF token) already resolved.
type Handler func(w http.ResponseWriter, r *http.Request, p *Page)

// Route is one console page or form action.
type Route struct {
	Pattern string // "GET /market"
	Who     Access
	Handle  Handler
}

// ContentSecurityPolicy is every page's policy: nothing inline, nothing
// from elsewhere; scripts may also fetch from the extra origins given
// (the zones' latency probes, on the market).
func ContentSecurityPolicy(connect ...string) string {
	src := "'self'"
	for _, o := range connect {
		src += " " + o
	}
	return "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src " + src +
		"; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

// PortFormsPolicy is the instance page's policy: its port forms may also
// redirect to the ports' own host names (never the console's origin).
func PortFormsPolicy(ports string) string {
	return strings.Replace(ContentSecurityPolicy(), "form-action 'self'", "form-action 'self' "+ports, 1)
}

// Wrap resolves the language, the session and the CSRF token, enforces
// access and, for state-changing methods, the CSRF rule, then calls the
// handler with the page's context.
func (s *Site) Wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", ContentSecurityPolicy())
		p := s.Page(r, pickLang(w, r, s.secure))
		p.CSRF = s.csrfToken(w, r)
		if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
			acc, err := s.auth.Authenticate(r.Context(), c.Value)
			switch {
			case err == nil:
				p.Account = acc
			case gpurent.IsCode(err, gpurent.CodeUnauthorized):
				s.ClearSession(w)
			default:
				s.Fail(w, r, p, err)
				return
			}
		}
		switch {
		case rt.Who >= Customer && p.Account == nil:
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.RenderStatus(w, r, p, http.StatusUnauthorized, "error", ErrorData{Title: p.T("err.login_first")})
			return
		case rt.Who == Operator && p.Account.Role != gpurent.RoleOperator:
			s.NotFound(w, r, p)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if err := r.ParseForm(); err != nil {
				s.RenderStatus(w, r, p, http.StatusBadRequest, "error", ErrorData{Title: p.T("err.bad_form")})
				return
			}
			if !s.checkCSRF(r) {
				s.RenderStatus(w, r, p, http.StatusForbidden, "error", ErrorData{Title: p.T("err.csrf")})
				return
			}
		}
		rt.Handle(w, r, p)
	})
}
