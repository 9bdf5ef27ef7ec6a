package console

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/wallet"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config holds the services the console calls: the very ones the API
// calls. A nil optional service hides its pages.
type Config struct {
	Auth          *auth.Service
	Rental        *rental.Service
	Fleet         *fleet.Service
	Billing       *billing.Service
	Wallet        *wallet.Service
	Metering      *metering.Service
	Academic      *academic.Service
	SSHKeys       *sshkeys.Service
	Incidents     incident.API
	Certification *certification.Service
	Store         gpurent.Store
	// SSHAddr is where customers reach the SSH gateway ("host:port"; ""
	// when it is off), SSHHostKeyFingerprint its host key's SHA256
	// fingerprint, JoinToken what agents present (shown to operators for
	// onboarding a host), PublicURL the control plane's base URL as
	// customers and agents reach it.
	SSHAddr               string
	SSHHostKeyFingerprint string
	// PortLink makes a browser link to an HTTP port of an instance for an
	// account (the port proxy's); nil when the gateway is off.
	PortLink  func(instanceID string, port int, accountID string, ttl time.Duration) string
	JoinToken string
	PublicURL string
	// Mailer delivers the password-reset links (nil: a link is logged at
	// WARN level with the address, for an operator to pass on).
	Mailer Mailer
	// SecureCookies marks the cookies Secure (behind TLS).
	SecureCookies bool
	// TrustProxy takes the client address from X-Forwarded-For (behind a
	// reverse proxy that sets it).
	TrustProxy bool
	// SessionTTL is how long a login lasts (the auth service's session
	// lifetime; default 30 days), for the cookie's MaxAge.
	SessionTTL time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// Mailer sends one plain-text e-mail (mail.Sender is one).
type Mailer interface {
	Send(ctx context.Context, to, subject, body string) error
}

// Server serves the console. Make it with New.
type Server struct {
	cfg   Config
	log   *slog.Logger
	msgs  *catalog
	pages map[string]*template.Template
	mux   *http.ServeMux
	// Login attempts per client address and per e-mail.
	loginIP, loginEmail *limiter
	// streams counts the open live pages per account.
	streams streamCounter
}

// New builds the console.
func New(cfg Config) (*Server, error) {
	if cfg.Auth == nil || cfg.Rental == nil || cfg.Store == nil {
		return nil, errors.New("console: the auth and rental services and the store are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 30 * 24 * time.Hour
	}
	msgs, err := newCatalog(messageGroups()...)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, msgs: msgs,
		loginIP: newLimiter(30, 10*time.Minute, cfg.Now), loginEmail: newLimiter(8, 10*time.Minute, cfg.Now)}
	if s.pages, err = s.parsePages(); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", cacheFor(http.FileServerFS(static), 3600)))
	for _, rt := range s.routes() {
		s.mux.Handle(rt.pattern, s.wrap(rt))
	}
	return s, nil
}

// Handler serves every console path; the API server mounts it at "/".
func (s *Server) Handler() http.Handler { return s.mux }

func cacheFor(h http.Handler, seconds int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(seconds))
		h.ServeHTTP(w, r)
	})
}

// access says who may see a route.
type access int

const (
	public   access = iota // anyone; the account, if logged in, is known
	customer               // logged in (customers and operators)
	operator               // operators only; others get 404
)

// route is one console page or form action.
type route struct {
	pattern string // "GET /market"
	who     access
	h       func(w http.ResponseWriter, r *http.Request, p *Page)
}

// contentSecurityPolicy is every page's policy: nothing inline, nothing
// from elsewhere; scripts may also fetch from the extra origins given
// (the zones' latency probes, on the market).
func contentSecurityPolicy(connect ...string) string {
	src := "'self'"
	for _, o := range connect {
		src += " " + o
	}
	return "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src " + src +
		"; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

// wrap resolves the language, the session and the CSRF token, enforces
// access and, for state-changing methods, the CSRF rule, then calls the
// handler with the page's context.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", contentSecurityPolicy())
		p := &Page{s: s, Lang: pickLang(w, r, s.cfg.SecureCookies), Path: r.URL.Path, r: r}
		p.CSRF = s.csrfToken(w, r)
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			acc, err := s.cfg.Auth.Authenticate(r.Context(), c.Value)
			switch {
			case err == nil:
				p.Account = acc
			case gpurent.IsCode(err, gpurent.CodeUnauthorized):
				s.clearSession(w)
			default:
				s.fail(w, r, p, err)
				return
			}
		}
		switch {
		case rt.who >= customer && p.Account == nil:
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.renderStatus(w, r, p, http.StatusUnauthorized, "error", errorData{Title: p.T("err.login_first")})
			return
		case rt.who == operator && p.Account.Role != gpurent.RoleOperator:
			s.notFound(w, r, p)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if err := r.ParseForm(); err != nil {
				s.renderStatus(w, r, p, http.StatusBadRequest, "error", errorData{Title: p.T("err.bad_form")})
				return
			}
			if !s.checkCSRF(r) {
				s.renderStatus(w, r, p, http.StatusForbidden, "error", errorData{Title: p.T("err.csrf")})
				return
			}
		}
		rt.h(w, r, p)
	})
}

// ctx is the request's context.
func (p *Page) ctx() context.Context { return p.r.Context() }

// isOperator reports whether the page's viewer is an operator.
func (p *Page) isOperator() bool { return p.Account != nil && p.Account.Role == gpurent.RoleOperator }
