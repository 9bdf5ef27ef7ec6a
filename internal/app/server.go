package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/agentreport"
	"github.com/gpurent/gpurent/internal/api"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/console"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/graph"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/mail"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/move"
	"github.com/gpurent/gpurent/internal/outbound"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/ratelimit"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/wallet"
)

// ServerConfig configures a control plane.
type ServerConfig struct {
	// DSN is a SQLite file path or a postgres:// URL.
	DSN string
	// Store, when set, is used instead of opening DSN (tests); Close does
	// not close it.
	Store gpurent.Store
	// Listen is the TCP address, "127.0.0.1:0" for any free port.
	Listen string
	// JoinToken is ignored: there is no shared join token any more. Each
	// host joins with its own one-time token (Server.MintJoinToken for
	// in-process agents; `gpurent hosts join-token create` for others).
	//
	// Deprecated: kept so that configurations that set it still build.
	JoinToken string
	Logger    *slog.Logger
	Now       func() time.Time
	// BcryptCost lowers password hashing cost in tests (0: default).
	BcryptCost int
	// PollWait bounds agents' long polls (0: 25 s).
	PollWait time.Duration
	// HostTimeout: a host silent longer gets no new placements (0: 30 s).
	HostTimeout time.Duration
	// ImageRegistries is the operator's allow-list of image registries
	// checked at rent (serve --image-registries; nil: Docker Hub only, "*"
	// any; the host's own addresses never).
	ImageRegistries []string
	// Registry is the operator's own registry (serve --registry, with the
	// pull credential of --registry-credentials): agents pull from it with
	// that credential, and with ImageRegistries empty it is the only
	// registry customers may rent from.
	Registry RegistryConfig
	// BillingInterval is how often runs are billed and silent hosts' runs
	// closed (0: 10 s; at most 60 s).
	BillingInterval time.Duration
	// PaymentProviders are the gateways customers may top up through
	// (none: top-ups by operator credit and vouchers only).
	PaymentProviders []wallet.PaymentProvider
	// SSHListen, when set, runs the SSH gateway there ("127.0.0.1:0": any
	// free port); SSHAdvertise is the host:port customers dial, when it is
	// not the listener's address (behind NAT or a load balancer).
	SSHListen, SSHAdvertise string
	// SSHIdleTimeout closes gateway connections idle that long (0: none;
	// keepalives still drop dead ones).
	SSHIdleTimeout time.Duration
	// KeyDir keeps the gateway's host key, its key toward agents and the
	// port proxy's secret (made on first start); every replica needs the
	// same files. Required with SSHListen.
	KeyDir string
	// SecureCookies marks the port proxy's and the console's cookies
	// Secure (behind TLS).
	SecureCookies bool
	// PortsDomain is where instance ports are served, with the gateway:
	// port P of instance I at I-P.PortsDomain, on this listener (the
	// request's Host header decides), with the scheme and port of
	// PublicURL. The operator points a wildcard DNS name (and
	// certificate) at it. It must share no cookies with the console's host
	// name: a domain of its own (console on cloud.example.com, ports on
	// *.ports.example-usercontent.com), never the console's name, a parent
	// or a child of it. "" with a console on a loopback address:
	// "localhost" (*.localhost names resolve to loopback in browsers);
	// otherwise "": no port links.
	PortsDomain string
	// PublicURL is the control plane's address as customers and agents
	// reach it, shown by the console and put in the links it mails
	// (default: the listener's URL).
	PublicURL string
	// MailURL names the SMTP server that mails password-reset links
	// (see package mail; "": links are logged for an operator instead).
	MailURL string
	// OperationsInterval is how often moves are checked for deadlines and
	// queued starts for free GPUs (0: 2 s).
	OperationsInterval time.Duration
	// MoveStallTimeout and MoveStartTimeout bound a move's copy without
	// progress and its target's start (0: 2 min and 5 min).
	MoveStallTimeout, MoveStartTimeout time.Duration
	// HostDownAfter is how long an agent may be silent before its
	// instances get host-down incidents (0: 60 s).
	HostDownAfter time.Duration
	// Webhooks is the policy for customers' webhook URLs, checked when
	// they are set and at every dial of a delivery: https only (AllowHTTP:
	// serve --demo --webhook-allow-http), never an internal address.
	Webhooks outbound.Policy
	// MetricsListen, when set, serves /metrics without authentication on
	// a listener of its own, for a scraper on a network only the
	// operator reaches (default off: /metrics on the main listener needs
	// an operator's bearer token).
	MetricsListen string
	// HTTPTimeouts are the HTTP server's timeouts (zero fields: the
	// defaults of api.Timeouts); long polls, live streams and the port
	// proxy lift theirs.
	HTTPTimeouts api.Timeouts
	// RateLimits tunes the limiter of credential checks that the API and
	// the console share (zero: its defaults; Now defaults to this Now).
	RateLimits ratelimit.Config
	// Certification tunes compute transparency: the benchmark options
	// handed to agents, whether synthetic results (fake GPUs) certify, and
	// how often the schedule looks for idle GPUs (0: 30 s).
	Certification CertificationConfig
}

// CertificationConfig tunes the benchmark schedule and runs.
type CertificationConfig struct {
	// AcceptSynthetic lets fake GPUs' synthetic results certify cards: the
	// demo and tests; never a production control plane.
	AcceptSynthetic bool
	// Options shorten the suite's runs (zero: the tier's defaults).
	Options agentproto.BenchOptions
	// Interval is how often the schedule looks for idle GPUs to benchmark
	// (onboarding, weekly, re-runs); 0 runs no schedule (operators' runs,
	// relisting and verify still work). `gpurent serve` sets 30 s.
	// RetryAfter is how long a card waits after a failed or unjudged run
	// (0: 10 min).
	Interval, RetryAfter time.Duration
	// MaxOpenJobs bounds the scheduled jobs open at once (0: 16).
	MaxOpenJobs int
}

// Server is a running control plane.
type Server struct {
	Store  gpurent.Store
	Auth   *auth.Service
	Rental *rental.Service
	// Moves upgrades, migrates and fails instances over.
	Moves    *move.Service
	Fleet    *fleet.Service
	Billing  *pricing.Service
	Academic *academic.Service
	Wallet   *wallet.Service
	Metering *metering.Service
	SSHKeys  *sshkeys.Service
	// Incidents watches GPU health, fails instances over and posts SLA credits.
	Incidents *incident.Service
	// Certification benchmarks GPUs, certifies them and publishes the
	// transparency report.
	Certification *certification.Service
	// Images keeps the operator's base image catalog.
	Images *imagecatalog.Service
	// Console is the web console, served at every path the API does not
	// claim.
	Console *console.Server
	// API is the HTTP API (its Routes list what it serves).
	API *api.Server
	// URL is the base URL it serves on, e.g. http://127.0.0.1:8080.
	URL string
	// SSHAddr is where customers reach the SSH gateway ("" when off).
	SSHAddr string
	// PortsPattern is where instance ports are served, for people, e.g.
	// http://<instance>-<port>.localhost:8080 ("" when off).
	PortsPattern string
	// MetricsURL is the metrics listener's /metrics ("" when off).
	MetricsURL string

	gateway *gateway
	reports *agentreport.Service

	ownStore    bool
	http        *http.Server
	done        chan error
	api         atomic.Pointer[api.Server] // for the fleet's changes
	metricsLn   net.Listener
	metricsHTTP *http.Server
	stopWatch   context.CancelFunc
	watchExited chan struct{}
}

// StartServer opens the store, seeds the catalog on first start, and serves
// the API until Close.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OperationsInterval <= 0 {
		cfg.OperationsInterval = 2 * time.Second
	}
	if cfg.BillingInterval <= 0 || cfg.BillingInterval > time.Minute {
		cfg.BillingInterval = 10 * time.Second
	}
	images, opRegistry, imgErr := imagePolicy(cfg.ImageRegistries, cfg.Registry)
	if imgErr != nil {
		return nil, imgErr
	}
	var mailer console.Mailer
	if cfg.MailURL != "" {
		m, err := mail.New(cfg.MailURL)
		if err != nil {
			return nil, err
		}
		mailer = m
	}
	s := &Server{Store: cfg.Store}
	if s.Store == nil {
		st, err := openStore(ctx, cfg.DSN)
		if err != nil {
			return nil, fmt.Errorf("open the database: %w", err)
		}
		s.Store, s.ownStore = st, true
	}
	if err := seedCatalog(ctx, s.Store); err != nil {
		s.closeStore()
		return nil, err
	}
	g, err := graph.New(graph.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger, BcryptCost: cfg.BcryptCost,
		PollWait: cfg.PollWait, HostTimeout: cfg.HostTimeout, Images: images, Registry: opRegistry, MaxImageBytes: cfg.Registry.MaxImageGiB << 30, PaymentProviders: cfg.PaymentProviders,
		Webhook: webhookPoster(cfg.Logger, outbound.New(cfg.Webhooks)), CheckWebhook: cfg.Webhooks.CheckURL,
		MoveStallTimeout: cfg.MoveStallTimeout, MoveStartTimeout: cfg.MoveStartTimeout,
		BenchOptions: cfg.Certification.Options, AcceptSynthetic: cfg.Certification.AcceptSynthetic,
		MaxOpenJobs: cfg.Certification.MaxOpenJobs, RetryAfter: cfg.Certification.RetryAfter,
		HostDownAfter: cfg.HostDownAfter,
		FleetChanged: func() {
			if a := s.api.Load(); a != nil {
				a.InvalidateGPUTypes()
			}
		}})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.Auth, s.Wallet, s.Billing, s.Rental, s.Fleet = g.Auth, g.Wallet, g.Billing, g.Rental, g.Fleet
	s.Academic, s.Metering, s.SSHKeys, s.Incidents, s.Certification = g.Academic, g.Metering, g.SSHKeys, g.Incidents, g.Certification
	s.Moves, s.reports = g.Moves, g.Reports
	s.Images = g.Images
	registry := prometheus.NewRegistry()
	if err := registry.Register(s.Incidents.Collector()); err != nil {
		s.closeStore()
		return nil, err
	}
	// The listener first: port links name its address when there is no
	// public URL.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		s.closeStore()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if cfg.MetricsListen != "" {
		if s.metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			ln.Close()
			if s.gateway != nil {
				s.gateway.close()
			}
			s.closeStore()
			return nil, fmt.Errorf("listen on %s for metrics: %w", cfg.MetricsListen, err)
		}
		s.MetricsURL = "http://" + s.metricsLn.Addr().String() + "/metrics"
	}
	s.URL = "http://" + ln.Addr().String()
	var access *api.Access
	if cfg.SSHListen != "" {
		if cfg.KeyDir == "" {
			ln.Close()
			s.closeStore()
			return nil, errors.New("the SSH gateway needs a key directory (ServerConfig.KeyDir)")
		}
		if s.gateway, access, err = startGateway(cfg, s.Store, s.SSHKeys, s.URL); err != nil {
			ln.Close()
			s.closeStore()
			return nil, err
		}
		s.SSHAddr = access.SSHAddr
		if s.gateway.proxy != nil {
			s.PortsPattern = s.gateway.proxy.Pattern()
		} else {
			cfg.Logger.Warn("port links are off: set a ports domain (gpurent serve --ports-domain)")
		}
	}
	if cfg.RateLimits.Now == nil {
		cfg.RateLimits.Now = cfg.Now
	}
	limiter := ratelimit.New(cfg.RateLimits)
	web, err := newConsole(cfg, s, access, mailer, limiter)
	s.Console = web
	if err != nil {
		ln.Close()
		if s.metricsLn != nil {
			s.metricsLn.Close()
		}
		if s.gateway != nil {
			s.gateway.close()
		}
		s.closeStore()
		return nil, err
	}
	var logs api.InstanceLogs // the gateway reads instances' logs from their agents
	if s.gateway != nil {
		logs = s.gateway.gw
	}
	srv := api.New(api.Config{Logs: logs, Images: s.Images, Wallet: s.Wallet, Auth: s.Auth, Rental: s.Rental, Fleet: s.Fleet, Billing: s.Billing, Academic: s.Academic,
		Metering: s.Metering, Store: s.Store, SSHKeys: s.SSHKeys, Access: access, Incidents: s.Incidents, Reports: s.reports,
		Certification: s.Certification, SLA: s.Incidents.Terms(), Logger: cfg.Logger, Registry: registry, Version: Version, Now: cfg.Now,
		Console: web.Handler(), Limiter: limiter, GPUTypesTTL: gpuTypesTTL})
	s.api.Store(srv)
	s.API = srv
	watchCtx, stopWatch := context.WithCancel(context.Background())
	s.stopWatch, s.watchExited = stopWatch, make(chan struct{})
	go func() {
		defer close(s.watchExited)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Metering.Run(watchCtx, cfg.BillingInterval)
		}()
		ops := make(chan struct{})
		go func() {
			defer close(ops)
			s.Moves.RunOperations(watchCtx, cfg.OperationsInterval)
		}()
		defer func() { <-ops }()
		incidents := make(chan struct{})
		go func() {
			defer close(incidents)
			s.Incidents.Run(watchCtx, cfg.OperationsInterval)
		}()
		defer func() { <-incidents }()
		certs := make(chan struct{})
		go func() {
			defer close(certs)
			if every := cfg.Certification.Interval; every > 0 {
				s.Certification.Run(watchCtx, every)
			}
		}()
		defer func() { <-certs }()
		s.Rental.Watch(watchCtx)
		<-done
	}()
	s.http = &http.Server{Handler: srv.Handler()}
	cfg.HTTPTimeouts.Apply(s.http)
	s.done = make(chan error, 1)
	go func() { s.done <- s.http.Serve(ln) }()
	if s.metricsLn != nil {
		s.metricsHTTP = &http.Server{Handler: metricsMux(srv.MetricsHandler())}
		cfg.HTTPTimeouts.Apply(s.metricsHTTP)
		go func() { _ = s.metricsHTTP.Serve(s.metricsLn) }()
		cfg.Logger.Info("metrics serving", "url", s.MetricsURL)
	}
	cfg.Logger.Info("control plane serving", "url", s.URL, "store", s.Store.Backend())
	return s, nil
}

// Close stops serving (waiting briefly for requests in flight) and closes
// the store it opened.
func (s *Server) Close() error {
	// Background work stops first: nothing (a move's deadline, a billing
	// pass) acts while the agents cannot report; then long polls answer
	// at once, so that in-flight requests end quickly.
	s.stopWatch()
	<-s.watchExited
	s.Rental.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.metricsHTTP != nil {
		s.metricsHTTP.Close()
	}
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if s.gateway != nil {
		s.gateway.close()
	}
	if cerr := s.closeStore(); err == nil {
		err = cerr
	}
	return err
}

func (s *Server) closeStore() error {
	if s.ownStore {
		return s.Store.Close()
	}
	return nil
}

// gpuTypesTTL is how long GET /api/v1/gpu-types serves one answer (types,
// totals, free counts), like the console's market; fleet changes and API
// writes drop it sooner.
const gpuTypesTTL = 2 * time.Second

// metricsMux serves metrics at /metrics and nothing else.
func metricsMux(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return mux
}

// seedCatalog writes the default GPU types and zones into an empty store.
// Once there, they are the operator's to change: a restart never
// overwrites them.
func seedCatalog(ctx context.Context, st gpurent.Store) error {
	c, err := catalog.Default()
	if err != nil {
		return err
	}
	types, err := st.GPUTypes(ctx)
	if err != nil {
		return err
	}
	zones, err := st.Zones(ctx)
	if err != nil {
		return err
	}
	return st.InTx(ctx, func(q gpurent.Queries) error {
		if len(types) == 0 {
			for _, t := range c.GPUTypes {
				if err := q.UpsertGPUType(ctx, t); err != nil {
					return err
				}
			}
		}
		if len(zones) == 0 {
			for _, z := range c.Zones {
				if err := q.UpsertZone(ctx, z); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// webhookPoster posts alerts to customers' webhooks through the outbound
// client (every dialled address checked, no redirects, bounded): in the
// background, never retried more than twice, and never retried when the
// destination is refused; failures are logged.
func webhookPoster(log *slog.Logger, client *outbound.Client) func(ctx context.Context, url string, body []byte) {
	return func(_ context.Context, url string, body []byte) {
		go func() {
			for attempt := 0; attempt < 3; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				status, err := client.Post(ctx, url, "application/json", body)
				cancel()
				if err == nil && status < 300 {
					return
				}
				if err == nil {
					err = fmt.Errorf("status %d", status)
				}
				log.Warn("webhook not delivered", "url", url, "attempt", attempt+1, "err", err)
				if errors.Is(err, outbound.ErrRefused) {
					return
				}
				time.Sleep(time.Duration(attempt+1) * time.Second)
			}
		}()
	}
}

// MintJoinToken makes a one-time join token for host name in zone, for an
// in-process agent (the demo's, the tests'): it never leaves the process.
func (s *Server) MintJoinToken(ctx context.Context, zone, name string) (string, error) {
	secret, _, err := s.Fleet.MintJoinToken(ctx, zone, name, 0, "")
	return secret, err
}
