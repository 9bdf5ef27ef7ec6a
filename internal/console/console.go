package console

import (
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/console/customer"
	"github.com/gpurent/gpurent/internal/console/operator"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/ratelimit"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/wallet"
)

// staticFS holds the assets every room's pages load (/assets/).
//
//go:embed static
var staticFS embed.FS

// Store is the little the console reads beside its services (the
// operator room's).
type Store = operator.Store

// Config holds the services the console calls: the very ones the API
// calls. A nil optional service hides its pages.
type Config struct {
	Auth          *auth.Service
	Rental        *rental.Service
	Fleet         *fleet.Service
	Billing       *pricing.Service
	Wallet        *wallet.Service
	Metering      *metering.Service
	Academic      *academic.Service
	SSHKeys       *sshkeys.Service
	Incidents     incident.API
	Certification *certification.Service
	// Images is the operator's base image catalog (the rent form's picker).
	Images *imagecatalog.Service
	Store  Store
	// SSHAddr is where customers reach the SSH gateway ("host:port"; ""
	// when it is off), SSHHostKeyFingerprint its host key's SHA256
	// fingerprint, PublicURL the control plane's base URL as customers and
	// agents reach it.
	SSHAddr               string
	SSHHostKeyFingerprint string
	// Logs reads instances' startup-command output for the instance page's
	// logs panel (the SSH gateway); nil when the gateway is off.
	Logs customer.InstanceLogs
	// PortLink makes a browser link to an HTTP port of an instance for an
	// account (the port proxy's); nil when the gateway is off.
	PortLink func(instanceID string, port int, accountID string, ttl time.Duration) string
	// PortsOrigin is the CSP source of the port links' host names (e.g.
	// http://*.localhost:8080): the instance page's port forms redirect
	// there, which its form-action must allow.
	PortsOrigin string
	PublicURL   string
	// Mailer delivers the password-reset links (nil: a link is logged at
	// WARN level with the address, for an operator to pass on).
	Mailer Mailer
	// SecureCookies marks the cookies Secure (behind TLS).
	SecureCookies bool
	// Limiter counts credential checks (sign-in, sign-up, resets); pass
	// the API's, so that both count together (nil: the console's own).
	Limiter *ratelimit.Limiter
	// TrustProxy takes the client address from X-Forwarded-For (behind a
	// reverse proxy that sets it).
	TrustProxy bool
	// SessionTTL is how long a login lasts (the auth service's session
	// lifetime; default 30 days), for the cookie's MaxAge.
	SessionTTL time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// Mailer sends one plain-text e-mail (mail.Sender is one); the customer
// room sends the password-reset and verification links with it.
type Mailer = customer.Mailer

// Server serves the console: it mounts the rooms (customer and operator
// pages) on one mux, each route wrapped by the plumbing. Make it with New.
type Server struct {
	site     *web.Site
	customer *customer.Pages
	operator *operator.Pages
	mux      *http.ServeMux
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
	if cfg.Limiter == nil {
		cfg.Limiter = ratelimit.New(ratelimit.Config{Now: cfg.Now})
	}
	site, err := web.NewSite(web.SiteConfig{
		Pages:         []fs.FS{customer.Templates(), operator.Templates()},
		Messages:      append(customer.Messages(), operator.Messages()...),
		Auth:          cfg.Auth,
		SecureCookies: cfg.SecureCookies,
		TrustProxy:    cfg.TrustProxy,
		Logger:        cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{site: site, mux: http.NewServeMux(),
		customer: customer.New(customer.Config{Auth: cfg.Auth, Rental: cfg.Rental, Fleet: cfg.Fleet, Billing: cfg.Billing,
			Wallet: cfg.Wallet, Metering: cfg.Metering, Academic: cfg.Academic, SSHKeys: cfg.SSHKeys,
			Incidents: cfg.Incidents, Certification: cfg.Certification, Images: cfg.Images, SSHAddr: cfg.SSHAddr, Logs: cfg.Logs,
			SSHHostKeyFingerprint: cfg.SSHHostKeyFingerprint, PortLink: cfg.PortLink, PortsOrigin: cfg.PortsOrigin,
			PublicURL: cfg.PublicURL, Mailer: cfg.Mailer, SecureCookies: cfg.SecureCookies, SessionTTL: cfg.SessionTTL,
			Limiter: cfg.Limiter, Logger: cfg.Logger, Now: cfg.Now}, site),
		operator: operator.New(operator.Config{Auth: cfg.Auth, Fleet: cfg.Fleet, Billing: cfg.Billing, Wallet: cfg.Wallet,
			Metering: cfg.Metering, Academic: cfg.Academic, Incidents: cfg.Incidents, Certification: cfg.Certification, Images: cfg.Images,
			Store: cfg.Store, PublicURL: cfg.PublicURL, Logger: cfg.Logger, Now: cfg.Now}, site),
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", cacheFor(http.FileServerFS(static), 3600)))
	for _, rt := range s.routes() {
		s.mux.Handle(rt.Pattern, site.Wrap(rt))
	}
	return s, nil
}

// Route is one console page or form action as Routes lists it: its
// pattern ("GET /market") and who may use it: "public", "customer" (any
// logged-in account) or "operator".
type Route struct{ Pattern, Access string }

// Routes lists every page and form action the console registers, from the
// very list New registers from, and the static assets. The authorization
// matrix test enumerates it.
func (s *Server) Routes() []Route {
	out := []Route{{Pattern: "GET /assets/", Access: "public"}}
	for _, rt := range s.routes() {
		out = append(out, Route{Pattern: rt.Pattern, Access: rt.Who.String()})
	}
	return out
}

// Handler serves every console path; the API server mounts it at "/".
func (s *Server) Handler() http.Handler { return s.mux }

func cacheFor(h http.Handler, seconds int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(seconds))
		h.ServeHTTP(w, r)
	})
}

// routes are the console's pages and form actions: the home page and the
// catch-all 404, then each room's.
func (s *Server) routes() []web.Route {
	out := []web.Route{
		{Pattern: "GET /{$}", Who: web.Public, Handle: home},
		{Pattern: "/", Who: web.Public, Handle: s.site.NotFound},
	}
	out = append(out, s.customer.Routes()...)
	return append(out, s.operator.Routes()...)
}

// home sends a signed-in visitor to the dashboard, others to the market.
func home(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if p.Account != nil {
		http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/market", http.StatusSeeOther)
}
