package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/api"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/console"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/mail"
	"github.com/gpurent/gpurent/internal/metering"
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
	Listen    string
	JoinToken string
	Logger    *slog.Logger
	Now       func() time.Time
	// BcryptCost lowers password hashing cost in tests (0: default).
	BcryptCost int
	// PollWait bounds agents' long polls (0: 25 s).
	PollWait time.Duration
	// HostTimeout: a host silent longer gets no new placements (0: 30 s).
	HostTimeout time.Duration
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
	Store    gpurent.Store
	Auth     *auth.Service
	Rental   *rental.Service
	Fleet    *fleet.Service
	Billing  *billing.Service
	Academic *academic.Service
	Wallet   *wallet.Service
	Metering *metering.Service
	SSHKeys  *sshkeys.Service
	// Incidents watches GPU health, fails instances over and posts SLA credits.
	Incidents *incident.Service
	// Certification benchmarks GPUs, certifies them and publishes the
	// transparency report.
	Certification *certification.Service
	// Console is the web console, served at every path the API does not
	// claim.
	Console *console.Server
	// URL is the base URL it serves on, e.g. http://127.0.0.1:8080.
	URL string
	// SSHAddr is where customers reach the SSH gateway ("" when off).
	SSHAddr string

	gateway *gateway

	ownStore    bool
	http        *http.Server
	done        chan error
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
	s.Auth = auth.New(auth.Config{Store: s.Store, Now: cfg.Now, BcryptCost: cfg.BcryptCost})
	s.Wallet = wallet.New(wallet.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger,
		Providers: cfg.PaymentProviders, Notify: webhookPoster(cfg.Logger)})
	s.Rental = rental.New(rental.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger,
		PollWait: cfg.PollWait, HostTimeout: cfg.HostTimeout, Funds: s.Wallet, Notify: s.Wallet.Notice,
		MoveStallTimeout: cfg.MoveStallTimeout, MoveStartTimeout: cfg.MoveStartTimeout,
		BenchOptions: cfg.Certification.Options})
	s.Fleet = fleet.New(fleet.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger,
		JoinToken: cfg.JoinToken, OnChange: s.Rental.Invalidate, HostTimeout: cfg.HostTimeout})
	s.Billing = billing.New(billing.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger})
	s.Academic = academic.New(academic.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger})
	s.Metering = metering.New(metering.Config{Store: s.Store, Now: cfg.Now, Logger: cfg.Logger, HostTimeout: cfg.HostTimeout,
		Book: s.Billing, MustStop: s.Wallet.MustStop, ReviewArrears: s.Wallet.ReviewArrears, CheckFunds: s.Wallet.CheckFunds,
		OnRelease: func(ctx context.Context, id string) {
			if err := s.Rental.ReleaseUnpaid(ctx, id); err != nil {
				cfg.Logger.Error("releasing an instance for arrears", "instance", id, "err", err)
			}
		},
		OnShortfall: func(ctx context.Context, id string) {
			if err := s.Rental.StopUnpaid(ctx, id); err != nil {
				cfg.Logger.Error("stopping an unpaid instance", "instance", id, "err", err)
			}
		},
		OnPlanApplied: func(ctx context.Context, c gpurent.PlanChange) {
			if err := s.Rental.ReleaseIdleGPUs(ctx, c.InstanceID); err != nil {
				cfg.Logger.Error("releasing a stopped instance's GPUs after a plan change", "instance", c.InstanceID, "err", err)
			}
		}})
	s.SSHKeys = sshkeys.New(s.Store, cfg.Now)
	var err error
	if s.Certification, err = certification.New(certification.Config{Store: s.Store, AcceptSynthetic: cfg.Certification.AcceptSynthetic,
		MaxOpenJobs: cfg.Certification.MaxOpenJobs, RetryAfter: cfg.Certification.RetryAfter, HostFresh: cfg.HostTimeout,
		Invalidate: s.Rental.Invalidate, Now: cfg.Now, Logger: cfg.Logger}); err != nil {
		s.closeStore()
		return nil, err
	}
	if s.Incidents, err = newIncidents(cfg, s); err != nil {
		s.closeStore()
		return nil, err
	}
	s.Certification.SetIncidents(s.Incidents)
	var access *api.Access
	if cfg.SSHListen != "" {
		if cfg.KeyDir == "" {
			s.closeStore()
			return nil, errors.New("the SSH gateway needs a key directory (ServerConfig.KeyDir)")
		}
		if s.gateway, access, err = startGateway(cfg, s.Store, s.SSHKeys); err != nil {
			s.closeStore()
			return nil, err
		}
		s.SSHAddr = access.SSHAddr
	}
	registry := prometheus.NewRegistry()
	if err := registry.Register(s.Incidents.Collector()); err != nil {
		s.closeStore()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		if s.gateway != nil {
			s.gateway.close()
		}
		s.closeStore()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	s.URL = "http://" + ln.Addr().String()
	web, err := newConsole(cfg, s, access, mailer)
	s.Console = web
	if err != nil {
		ln.Close()
		if s.gateway != nil {
			s.gateway.close()
		}
		s.closeStore()
		return nil, err
	}
	srv := api.New(api.Config{Wallet: s.Wallet, Auth: s.Auth, Rental: s.Rental, Fleet: s.Fleet, Billing: s.Billing, Academic: s.Academic,
		Metering: s.Metering, Store: s.Store, SSHKeys: s.SSHKeys, Access: access, Incidents: s.Incidents, Health: s.Incidents,
		Certification: s.Certification, SLA: s.Incidents.Terms(), Logger: cfg.Logger, Registry: registry, Version: Version, Now: cfg.Now,
		Console: web.Handler()})
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
			s.Rental.RunOperations(watchCtx, cfg.OperationsInterval)
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
	s.http = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.http.Serve(ln) }()
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

// webhookPoster posts alerts to customers' webhooks: in the background,
// bounded in time, never retried more than twice; failures are logged.
func webhookPoster(log *slog.Logger) func(ctx context.Context, url string, body []byte) {
	client := &http.Client{Timeout: 5 * time.Second}
	return func(_ context.Context, url string, body []byte) {
		go func() {
			for attempt := 0; attempt < 3; attempt++ {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode < 300 {
						return
					}
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				log.Warn("webhook not delivered", "url", url, "attempt", attempt+1, "err", err)
				time.Sleep(time.Duration(attempt+1) * time.Second)
			}
		}()
	}
}
