// Package graph builds the control plane's services and wires each to
// those it needs, in one order, through the small interfaces each service
// declares on its own side (metering's Instances, rental's Packages,
// incident's Relister...): nothing is set on a service after it is made.
// `gpurent serve`, the demo and the tests all build their services with
// New, so that they run one graph.
//
// The order breaks the three cycles of the graph. The move workflow is
// built on the rental service's lifecycle, whose agents' desired state and
// reports include the workflow's operations: rental.NewWithMoves makes the
// workflow from the rental service it is building. The rental service needs
// metering's package charging when it claims GPUs, and metering stops and
// releases instances through the rental service: the charging is a
// metering.Collector, made before the rental service, and metering after
// it. The incident service relists repaired GPUs through the certification
// service, and confirmed benchmark FAILs go through the incident service:
// certification.NewWithIncidents makes the incident service from the
// certification service it is building.
package graph

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/agentreport"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/faultrules"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/imageref"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/move"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sla"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/wallet"
)

// Config is what the services are built from. Store is required; every
// other zero field takes the services' defaults.
type Config struct {
	Store  gpurent.Store
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discard
	// BcryptCost lowers password hashing cost in tests (0: default).
	BcryptCost int
	// PollWait bounds agents' long polls (0: 25 s).
	PollWait time.Duration
	// HostTimeout: a host silent longer gets no new placements.
	HostTimeout time.Duration
	// Images is the operator's allow-list of image registries (nil: any
	// registry, never the host's own).
	Images *imageref.Policy
	// Registry is the operator's registry and the pull credential handed
	// to agents (nil: none).
	Registry *agentproto.Registry
	// MaxImageBytes bounds the size a base image of the catalog may state
	// (0: none).
	MaxImageBytes int64
	// PaymentProviders are the gateways customers may top up through.
	PaymentProviders []wallet.PaymentProvider
	// Webhook posts an alert to a customer's webhook, and CheckWebhook
	// checks a webhook URL when it is set (nil: none posted, any taken).
	Webhook      func(ctx context.Context, url string, body []byte)
	CheckWebhook func(raw string) error
	// MoveStallTimeout and MoveStartTimeout bound a move's copy without
	// progress and its target's start (0: the move workflow's defaults).
	MoveStallTimeout, MoveStartTimeout time.Duration
	// BenchOptions shorten the benchmark suite's runs handed to agents.
	BenchOptions agentproto.BenchOptions
	// AcceptSynthetic lets fake GPUs' synthetic results certify cards (the
	// demo and tests only); MaxOpenJobs and RetryAfter tune the benchmark
	// schedule (0: the certification service's defaults).
	AcceptSynthetic bool
	MaxOpenJobs     int
	RetryAfter      time.Duration
	// HostDownAfter is how long an agent may be silent before its
	// instances get host-down incidents (0: 60 s).
	HostDownAfter time.Duration
	// FleetChanged, when set, is told of every change of the fleet after
	// the rental service's placement snapshot is dropped (the API's cached
	// GPU-type answer listens).
	FleetChanged func()
}

// Services are the control plane's services, wired.
type Services struct {
	Store   gpurent.Store
	Auth    *auth.Service
	Wallet  *wallet.Service
	Billing *pricing.Service
	Rental  *rental.Service
	// Moves upgrades, migrates and fails instances over, and moves or
	// queues starts (the rental service answers its requests too).
	Moves    *move.Service
	Fleet    *fleet.Service
	Academic *academic.Service
	Metering *metering.Service
	SSHKeys  *sshkeys.Service
	// Incidents watches GPU health, fails instances over and posts SLA
	// credits.
	Incidents *incident.Service
	// Certification benchmarks GPUs, certifies them and publishes the
	// transparency report.
	Certification *certification.Service
	// Reports applies agents' reports.
	Reports *agentreport.Service
	// Images keeps the operator's base image catalog.
	Images *imagecatalog.Service
}

// New builds the services over cfg.Store.
func New(cfg Config) (*Services, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	st, now, log := cfg.Store, cfg.Now, cfg.Logger
	s := &Services{Store: st}
	s.Auth = auth.New(auth.Config{Store: st, Now: now, BcryptCost: cfg.BcryptCost})
	s.Wallet = wallet.New(wallet.Config{Store: st, Now: now, Logger: log, Providers: cfg.PaymentProviders,
		Notify: cfg.Webhook, CheckWebhook: cfg.CheckWebhook})
	s.Billing = pricing.New(pricing.Config{Store: st, Now: now, Logger: log})
	// A package's periods are paid in the claim's transaction.
	// The move workflow is built on the lifecycle it extends.
	s.Rental = rental.NewWithMoves(rental.Config{Store: st, Now: now, Logger: log, Images: cfg.Images, Registry: cfg.Registry,
		PollWait: cfg.PollWait, HostTimeout: cfg.HostTimeout, Funds: s.Wallet, BenchOptions: cfg.BenchOptions,
		Packages: metering.NewCollector(now, s.Wallet), Prices: s.Billing},
		func(r *rental.Service) rental.Moves {
			s.Moves = move.New(move.Config{Store: st, Lifecycle: r, Now: now, Logger: log, Notify: s.Wallet,
				StallTimeout: cfg.MoveStallTimeout, StartTimeout: cfg.MoveStartTimeout})
			return s.Moves
		})
	s.Fleet = fleet.New(fleet.Config{Store: st, Now: now, Logger: log, HostTimeout: cfg.HostTimeout,
		OnChange: fleetChanged(s.Rental, cfg.FleetChanged)})
	s.Images = imagecatalog.New(imagecatalog.Config{Store: st, Now: now, Logger: log, Images: cfg.Images, Agents: s.Rental,
		MaxImageBytes: cfg.MaxImageBytes})
	s.Academic = academic.New(academic.Config{Store: st, Now: now, Logger: log, Emails: s.Auth})
	s.Metering = metering.New(metering.Config{Store: st, Now: now, Logger: log, HostTimeout: cfg.HostTimeout,
		Book: s.Billing, Wallet: s.Wallet, Instances: s.Rental})
	s.SSHKeys = sshkeys.New(st, now)
	rules, err := faultrules.DefaultRules()
	if err != nil {
		return nil, err
	}
	loc, err := sla.LoadZone()
	if err != nil {
		return nil, err
	}
	s.Certification, err = certification.NewWithIncidents(certification.Config{Store: st, AcceptSynthetic: cfg.AcceptSynthetic,
		MaxOpenJobs: cfg.MaxOpenJobs, RetryAfter: cfg.RetryAfter, HostFresh: cfg.HostTimeout, Placement: s.Rental,
		Now: now, Logger: log},
		func(cert *certification.Service) (certification.Incidents, error) {
			s.Incidents = incident.New(incident.Config{Store: st, Rules: rules, Terms: sla.DefaultTerms(),
				Mover: s.Moves, Credits: s.Wallet, Prices: s.Billing, Notify: s.Wallet, Relist: cert,
				Location: loc, HostDownAfter: cfg.HostDownAfter, Now: now, Logger: log})
			return s.Incidents, nil
		})
	if err != nil {
		return nil, err
	}
	s.Reports = agentreport.New(agentreport.Config{Fleet: s.Fleet, Instances: s.Rental, Runs: s.Metering,
		Health: s.Incidents, Logger: log})
	return s, nil
}

// fleetChanged drops the rental service's placement snapshot and then
// tells also (when set).
func fleetChanged(r *rental.Service, also func()) func() {
	return func() {
		r.Invalidate()
		if also != nil {
			also()
		}
	}
}
