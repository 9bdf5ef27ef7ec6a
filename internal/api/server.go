// Package api is the HTTP API of the control plane: the public JSON API
// under /api/v1 (accounts, tokens, catalog, instances, operator host
// actions), the agent API under /agent/v1, health and readiness probes,
// Prometheus metrics and the OpenAPI document that describes it all.
//
// It is an adapter: it decodes requests strictly, authenticates bearer
// tokens, calls the auth, rental and fleet services, maps their answers to
// the wire types of internal/apiv1 and internal/agentproto, and answers
// every error as RFC 9457 problem+json with a stable code.
package api

import (
	"context"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/keymutex"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/ratelimit"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sla"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/wallet"
)

// Store is what the API reads and writes itself, beside its services:
// readiness and the backend's name (status), idempotency records, the
// access-session audit, and the accounts and plan changes a few answers
// read.
type Store interface {
	gpurent.IdempotencyStore
	Ping(ctx context.Context) error
	Backend() string
	AccountByID(ctx context.Context, id string) (*gpurent.Account, error)
	AccountByEmail(ctx context.Context, email string) (*gpurent.Account, error)
	ListAccessSessions(ctx context.Context, accountID string, limit int) ([]gpurent.AccessSession, error)
	PlanChanges(ctx context.Context, instanceID string) ([]gpurent.PlanChange, error)
}

// Config configures the server.
type Config struct {
	Auth   *auth.Service
	Rental *rental.Service
	Fleet  *fleet.Service
	// Billing serves prices and quotes.
	Billing *pricing.Service
	// Academic runs academic verification.
	Academic *academic.Service
	// Metering takes agents' run events.
	Metering *metering.Service
	// Wallet serves balances, credits, vouchers and payments; /me takes
	// the balance from it.
	Wallet *wallet.Service
	// SSHKeys keeps customers' SSH keys.
	SSHKeys *sshkeys.Service
	// Images keeps the operator's base image catalog; nil answers its
	// routes unavailable.
	Images *imagecatalog.Service
	// Access, when set, says where the SSH gateway and port links are.
	Access *Access
	// Incidents serves GPU health, incidents, GPU cordon and repair, the
	// RMA list and fault injection; nil answers those routes unavailable.
	Incidents incident.API
	// Reports applies agents' reports (internal/agentreport); nil answers
	// them unavailable.
	Reports AgentReports
	// SLA are the terms published on /sla and /api/v1/sla: pass the very
	// value the incident service credits by. The zero Terms publish
	// sla.DefaultTerms.
	SLA sla.Terms
	// Certification serves compute transparency: the public report,
	// verify runs, benchmark jobs and certifications, and agents'
	// benchmark results; nil answers those routes unavailable.
	Certification *certification.Service
	// Logs streams instances' startup-command output from their agents
	// (the SSH gateway); nil answers GET /instances/{id}/logs unavailable.
	Logs InstanceLogs
	// Console, when set, is the web console, served at every path the API
	// does not claim.
	Console http.Handler
	// Limiter counts credential checks (sign-in, sign-up); pass the
	// console's too, so that both count together (nil: the API's own).
	Limiter *ratelimit.Limiter
	// GPUTypesTTL is how long GET /api/v1/gpu-types serves one answer
	// (the fleet's types, totals and free counts); 0 reads the fleet per
	// request. The reading is dropped by
	// InvalidateGPUTypes and after every change made through the API.
	GPUTypesTTL time.Duration
	// Store serves readiness checks and idempotency records.
	Store Store
	// Logger receives the access log and internal errors; nil discards.
	Logger *slog.Logger
	// Registry receives the Go, process and HTTP metrics and is served on
	// /metrics; nil makes a new one.
	Registry *prometheus.Registry
	// Version is reported by /healthz and gpurent_build_info.
	Version string
	// Now is the clock for idempotency records; nil is time.Now.
	Now func() time.Time
}

// Server serves the API. Make it with New; it is safe for concurrent use.
type Server struct {
	auth     *auth.Service
	rental   *rental.Service
	fleet    *fleet.Service
	billing  *pricing.Service
	wallet   *wallet.Service
	academic *academic.Service
	metering *metering.Service
	sshKeys  *sshkeys.Service
	images   *imagecatalog.Service
	access   *Access
	store    Store
	log      *slog.Logger
	reg      *prometheus.Registry
	version  string
	now      func() time.Time

	// incidents may be nil (see Config.Incidents); sla are the published
	// terms and slaPage their page's template.
	incidents incident.API
	reports   AgentReports
	cert      *certification.Service
	logs      InstanceLogs
	sla       sla.Terms
	slaPage   *template.Template

	routes  []route
	console bool // a console is mounted at "/"
	mux     *http.ServeMux
	// table holds the routes of mux without the console: what the server
	// itself claims, asked when a request falls through to the console.
	table   *http.ServeMux
	metrics *httpMetrics
	locks   keymutex.Mutex
	limit   *ratelimit.Limiter
	types   *typesCache
}

// route is one registered (method, path) with its handler.
type route struct {
	method string
	path   string // ServeMux path pattern, e.g. /api/v1/instances/{id}
	h      http.HandlerFunc
}

func (rt route) pattern() string { return rt.method + " " + rt.path }

// New builds the server and registers its routes and metrics.
func New(cfg Config) *Server {
	s := &Server{
		auth:     cfg.Auth,
		rental:   cfg.Rental,
		fleet:    cfg.Fleet,
		billing:  cfg.Billing,
		wallet:   cfg.Wallet,
		academic: cfg.Academic,
		metering: cfg.Metering,
		sshKeys:  cfg.SSHKeys,
		images:   cfg.Images,
		access:   cfg.Access,
		store:    cfg.Store,
		log:      cfg.Logger,
		reg:      cfg.Registry,
		version:  cfg.Version,
		now:      cfg.Now,
		limit:    cfg.Limiter,
	}
	s.incidents, s.sla, s.slaPage = cfg.Incidents, termsOrDefault(cfg.SLA), newSLAPage()
	s.reports = cfg.Reports
	s.logs = cfg.Logs
	s.cert = cfg.Certification
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.types = &typesCache{ttl: cfg.GPUTypesTTL, load: s.gpuTypesBody}
	if s.limit == nil {
		s.limit = ratelimit.New(ratelimit.Config{Now: s.now})
	}
	if s.version == "" {
		s.version = "dev"
	}
	s.metrics = newHTTPMetrics(s.reg, s.version, s.log)
	s.routes = s.routeTable()
	s.mux, s.table = http.NewServeMux(), http.NewServeMux()
	for _, mux := range []*http.ServeMux{s.mux, s.table} {
		for _, rt := range s.routes {
			mux.Handle(rt.pattern(), rt.h)
		}
		// Instance ports used to be served here, in the console's origin;
		// they now live on their own host names (see Access.PortHost).
		mux.HandleFunc("/p/", s.handleOldPortPath)
	}
	if cfg.Console != nil {
		s.mux.Handle("/", cfg.Console)
		s.console = true
	}
	return s
}

// Handler returns the API's root handler, with recovery, metrics and the
// access log around every route.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// InvalidateGPUTypes drops the cached reading of GPU types (call it when
// hosts or GPUs change).
func (s *Server) InvalidateGPUTypes() { s.types.invalidate() }

// MetricsHandler serves the Prometheus metrics without authentication,
// for a listener of their own that only the operator's scraper reaches
// (serve --metrics-listen).
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})
}

// Route is one (method, path pattern) the server serves, as Routes lists
// it. Method "*" is any method: a mounted prefix.
type Route struct{ Method, Path string }

// Routes lists every route the server registers, from the very table New
// registers from, then the prefixes it mounts: "/p/" (port links) and "/"
// (the console) when one is set. The authorization matrix test enumerates
// it.
func (s *Server) Routes() []Route {
	out := make([]Route, 0, len(s.routes)+2)
	for _, rt := range s.routes {
		out = append(out, Route{Method: rt.method, Path: rt.path})
	}
	out = append(out, Route{Method: "*", Path: "/p/"})
	if s.console {
		out = append(out, Route{Method: "*", Path: "/"})
	}
	return out
}

// routeTable lists every route. The OpenAPI test holds openapi.json to it.
func (s *Server) routeTable() []route {
	metrics := s.MetricsHandler()
	return []route{
		{"GET", "/healthz", s.handleHealthz},
		{"GET", "/readyz", s.handleReadyz},
		// The metrics name every host, GPU UUID and per-GPU use: operators
		// only (Prometheus sends an operator's token), or the separate
		// listener of MetricsHandler.
		{"GET", "/metrics", s.operator(func(w http.ResponseWriter, r *http.Request, _ *gpurent.Account) {
			metrics.ServeHTTP(w, r)
		})},
		{"GET", "/api/v1/openapi.json", s.handleOpenAPI},

		{"POST", "/api/v1/auth/register", s.handleRegister},
		{"POST", "/api/v1/auth/login", s.handleLogin},
		{"POST", "/api/v1/auth/logout", s.handleLogout},
		{"GET", "/api/v1/me", s.user(s.handleMe)},
		{"POST", "/api/v1/me/email/confirm", s.user(s.handleConfirmEmail)},
		{"POST", "/api/v1/tokens", s.user(s.handleCreateToken)},

		{"GET", "/api/v1/gpu-types", s.handleGPUTypes},
		{"GET", "/api/v1/zones", s.handleZones},
		{"PUT", "/api/v1/zones/{id}/probe", s.operator(s.handleSetZoneProbe)},
		{"GET", "/api/v1/price", s.handleQuote},
		{"GET", "/api/v1/prices", s.handleListPrices},
		{"POST", "/api/v1/prices", s.operator(s.handleAddPrices)},

		{"GET", "/api/v1/statements/{month}", s.user(s.handleStatement)},
		{"GET", "/api/v1/revenue", s.operator(s.handleRevenue)},

		{"POST", "/api/v1/academic/applications", s.user(s.handleAcademicApply)},
		{"GET", "/api/v1/academic/applications", s.user(s.handleAcademicList)},
		{"GET", "/api/v1/academic/applications/{id}", s.user(s.handleAcademicGet)},
		{"POST", "/api/v1/academic/applications/{id}/approve", s.operator(s.handleAcademicDecide(true))},
		{"POST", "/api/v1/academic/applications/{id}/reject", s.operator(s.handleAcademicDecide(false))},

		{"GET", "/api/v1/wallet", s.user(s.handleWallet)},
		{"GET", "/api/v1/wallet/limits", s.user(s.handleGetLimits)},
		{"PUT", "/api/v1/wallet/limits", s.user(s.handleSetLimits)},
		{"GET", "/api/v1/wallet/events", s.user(s.handleAccountEvents)},
		{"PUT", "/api/v1/wallet/webhook", s.user(s.handleSetWebhook)},
		{"GET", "/api/v1/wallet/transactions", s.user(s.handleWalletTransactions)},
		{"POST", "/api/v1/vouchers/redeem", s.user(s.handleRedeemVoucher)},
		{"POST", "/api/v1/vouchers", s.operator(s.handleCreateVoucher)},
		{"POST", "/api/v1/payments", s.user(s.handleCreatePayment)},
		{"POST", "/api/v1/payments/{provider}/callback", s.handlePaymentCallback},
		{"POST", "/api/v1/payments/{provider}/{id}/settle", s.operator(s.handleSettlePayment)},
		{"POST", "/api/v1/accounts/{id}/credit", s.operator(s.handleCredit)},

		{"POST", "/api/v1/instances", s.user(s.handleCreateInstance)},
		{"GET", "/api/v1/instances", s.user(s.handleListInstances)},
		{"GET", "/api/v1/instances/{id}", s.user(s.handleGetInstance)},
		{"POST", "/api/v1/instances/{id}/stop", s.user(s.handleStopInstance)},
		{"POST", "/api/v1/instances/{id}/start", s.user(s.handleStartInstance)},
		{"GET", "/api/v1/instances/{id}/upgrade/plan", s.user(s.handleUpgradePlan)},
		{"POST", "/api/v1/instances/{id}/upgrade", s.user(s.handleUpgrade)},
		{"POST", "/api/v1/instances/{id}/migrate", s.user(s.handleMigrate)},
		{"GET", "/api/v1/instances/{id}/operations", s.user(s.handleOperations)},
		{"DELETE", "/api/v1/instances/{id}/queue", s.user(s.handleCancelQueued)},
		{"GET", "/api/v1/instances/{id}/plan", s.user(s.handlePlanHistory)},
		{"GET", "/api/v1/instances/{id}/access", s.user(s.handleInstanceAccess)},
		{"POST", "/api/v1/instances/{id}/ports/{port}/link", s.user(s.handlePortLink)},
		{"GET", "/api/v1/ssh-keys", s.user(s.handleListSSHKeys)},
		{"POST", "/api/v1/ssh-keys", s.user(s.handleAddSSHKey)},
		{"DELETE", "/api/v1/ssh-keys/{id}", s.user(s.handleDeleteSSHKey)},
		// The operator's base image catalog: every signed-in account reads
		// it, operators change it.
		{"GET", "/api/v1/images", s.user(s.handleListImages)},
		{"PUT", "/api/v1/images/{name}", s.operator(s.handlePutImage)},
		{"DELETE", "/api/v1/images/{name}", s.operator(s.handleDeleteImage)},
		{"PUT", "/api/v1/images/{name}/prepull", s.operator(s.handleSetPrepull)},
		{"GET", "/api/v1/access-sessions", s.user(s.handleAccessSessions)},
		{"POST", "/api/v1/instances/{id}/plan", s.user(s.handleChangePlan)},
		{"DELETE", "/api/v1/instances/{id}", s.user(s.handleDeleteInstance)},

		{"GET", "/api/v1/instances/{id}/incidents", s.user(s.handleInstanceIncidents)},
		{"GET", "/api/v1/incidents", s.user(s.handleAccountIncidents)},
		{"PUT", "/api/v1/instances/{id}/failover", s.user(s.handleSetFailover)},
		{"PUT", "/api/v1/instances/{id}/startup", s.user(s.handleSetStartup)},
		{"GET", "/api/v1/instances/{id}/logs", s.user(s.handleLogs)},
		{"GET", "/api/v1/gpus/health", s.operator(s.handleFleetHealth)},
		{"POST", "/api/v1/gpus/{uuid}/cordon", s.operator(s.handleCordonGPU)},
		{"POST", "/api/v1/gpus/{uuid}/repair", s.operator(s.handleRepairGPU)},
		{"GET", "/api/v1/rma", s.operator(s.handleRMAList)},
		{"POST", "/api/v1/faults", s.operator(s.handleInjectFault)},
		{"GET", "/api/v1/sla", s.handleSLATerms},
		{"GET", "/sla", s.handleSLAPage},

		{"GET", "/transparency", s.handleTransparencyPage},
		{"GET", "/api/v1/transparency", s.handleTransparency},
		{"GET", "/api/v1/transparency.csv", s.handleTransparencyCSV},
		{"POST", "/api/v1/instances/{id}/verify", s.user(s.withCert(s.handleVerify))},
		{"GET", "/api/v1/instances/{id}/verify", s.user(s.withCert(s.handleInstanceVerifies))},
		{"GET", "/api/v1/bench/jobs/{id}", s.user(s.withCert(s.handleBenchJob))},
		{"DELETE", "/api/v1/bench/jobs/{id}", s.user(s.withCert(s.handleCancelBenchJob))},
		{"GET", "/api/v1/bench/jobs", s.operator(s.withCert(s.handleBenchJobs))},
		{"POST", "/api/v1/bench/jobs", s.operator(s.withCert(s.handleBenchRun))},
		{"GET", "/api/v1/bench/settings", s.operator(s.withCert(s.handleCertSettings))},
		{"PUT", "/api/v1/bench/settings", s.operator(s.withCert(s.handleSaveCertSettings))},
		{"GET", "/api/v1/gpus/certification", s.operator(s.withCert(s.handleGPUCerts))},

		{"GET", "/api/v1/hosts", s.operator(s.handleListHosts)},
		{"POST", "/api/v1/hosts/{id}/cordon", s.operator(s.handleHostState(gpurent.HostCordoned))},
		{"POST", "/api/v1/hosts/{id}/uncordon", s.operator(s.handleHostState(gpurent.HostReady))},
		{"POST", "/api/v1/hosts/{id}/drain", s.operator(s.handleDrainHost)},
		// Per-host join tokens and agent credential resets (issue 14).
		{"POST", "/api/v1/hosts/{id}/reset", s.operator(s.handleResetHost)},
		{"GET", "/api/v1/join-tokens", s.operator(s.handleListJoinTokens)},
		{"POST", "/api/v1/join-tokens", s.operator(s.handleCreateJoinToken)},
		{"DELETE", "/api/v1/join-tokens/{id}", s.operator(s.handleRevokeJoinToken)},

		{"POST", "/agent/v1/register", s.handleAgentRegister},
		{"GET", "/agent/v1/desired", s.agent(s.handleAgentDesired)},
		{"POST", "/agent/v1/report", s.agent(s.handleAgentReport)},
		{"POST", agentproto.PathBench, s.agent(s.handleAgentBench)},
	}
}

// statusResponse is the body of /healthz and /readyz.
type statusResponse struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
	Store   string `json:"store,omitempty"`
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, statusResponse{Status: "ok", Version: s.version})
}

// readyTimeout bounds the readiness probe's database ping.
const readyTimeout = 3 * time.Second

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if s.store == nil {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeUnavailable, "no store configured"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "readiness: store ping failed", slog.String("error", err.Error()))
		s.writeProblem(w, r, gpurent.WrapError(gpurent.CodeUnavailable, err, "the database is not reachable"))
		return
	}
	writeJSON(w, http.StatusOK, statusResponse{Status: "ok", Version: s.version, Store: s.store.Backend()})
}

// bearer returns the token of an "Authorization: Bearer ..." header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// clientAddr is the request's peer address, what credential checks are
// counted by.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tooMany answers a request a rate limit refused, saying when to retry.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeTooManyRequests, "too many attempts; try again in %d s", secs))
}

// errNoBearer answers a request without credentials.
func errNoBearer() error {
	return gpurent.Errorf(gpurent.CodeUnauthorized, "send Authorization: Bearer <token>")
}

// user wraps h with bearer authentication of an account.
func (s *Server) user(h func(http.ResponseWriter, *http.Request, *gpurent.Account)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if !ok {
			s.writeProblem(w, r, errNoBearer())
			return
		}
		acc, err := s.auth.Authenticate(r.Context(), tok)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		h(w, r, acc)
	}
}

// operator wraps h with authentication of an operator account; customers
// are forbidden.
func (s *Server) operator(h func(http.ResponseWriter, *http.Request, *gpurent.Account)) http.HandlerFunc {
	return s.user(func(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
		if acc.Role != gpurent.RoleOperator {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeForbidden, "this action is for operators only"))
			return
		}
		h(w, r, acc)
	})
}

// agent wraps h with authentication of a host agent.
func (s *Server) agent(h func(http.ResponseWriter, *http.Request, *gpurent.Host)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if !ok {
			s.writeProblem(w, r, errNoBearer())
			return
		}
		host, err := s.fleet.AuthenticateAgent(r.Context(), tok)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		h(w, r, host)
	}
}

// queryBool parses an optional boolean query parameter.
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "query parameter %s must be true or false, got %q", name, v)
	}
	return b, nil
}
