// Package certification runs compute transparency (issue #7) on the
// control plane: it schedules benchmark jobs on idle GPUs (onboarding, the
// weekly schedule, after a reset-class fault, before a repaired GPU is
// listed again, re-runs of a provisional FAIL) and on customers' own
// instances (verify); it takes the agents' records, summarises and judges
// them against the fleet median of the type (internal/benchjudge), keeps each
// GPU's certification, delists or relists as degraded a card whose FAIL a
// re-run on the idle card confirmed (the operator's policy), and assembles
// the public report. A verify never changes a certification, a listing or
// a price and opens no incident (its renter controls the load): a FAIL it
// confirms only flags the card for a run once it is idle.
package certification

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/benchjudge"
)

// Incidents is the part of the incident service a confirmed FAIL goes
// through: a health event of kind "benchmark_fail" on the GPU, which the
// health rules judge as a degradation (the GPU leaves placement, an
// instance on it gets an incident that counts as down).
type Incidents interface {
	Ingest(ctx context.Context, host *gpurent.Host, rep agentproto.Report) ([]string, error)
}

// Store is what the certification service reads and writes: benchmark
// jobs, certifications and idle-run flags of its own, the hosts and their
// GPUs' health; and, read only, the GPU types, an instance it verifies for
// and the incidents that bar a GPU.
type Store interface {
	gpurent.BenchStore
	gpurent.CertStore
	gpurent.IdleRunStore
	gpurent.FleetStore
	gpurent.GPUHealthStore
	GPUTypes(ctx context.Context) ([]gpurent.GPUType, error)
	InstanceByID(ctx context.Context, id string) (*gpurent.Instance, error)
	ListIncidents(ctx context.Context, f gpurent.IncidentFilter) ([]gpurent.Incident, error)
}

// Placement drops what it knows of the fleet's free GPUs (the rental
// service's placement snapshot).
type Placement interface {
	Invalidate()
}

// Config configures the service.
type Config struct {
	Store Store
	// Incidents takes confirmed FAILs (nil: the GPU's health is set to
	// degraded directly, with no incident).
	Incidents Incidents
	// AcceptSynthetic lets records that say they are synthetic (fake GPUs:
	// the demo and tests) certify GPUs; a production control plane refuses
	// them and fails the job.
	AcceptSynthetic bool
	// JobTimeout is how long a job may stay open (queued or running)
	// before it fails: default 2 h for t2, a quarter of it for t1.
	JobTimeout time.Duration
	// MaxOpenJobs bounds the scheduled jobs open at once across the fleet
	// (default 16); operators' and customers' jobs are not bounded by it.
	MaxOpenJobs int
	// RetryAfter is how long after a failed or unjudgeable run, or a run
	// that the fleet median later put below the band, a card waits for the
	// schedule to run it again (default 10 min).
	RetryAfter time.Duration
	// HostFresh is how recently an agent must have reported for its GPUs
	// to be scheduled (default 60 s).
	HostFresh time.Duration
	// Placement, when set, is told after a certification changes
	// placement (a GPU delisted, degraded or relisted).
	Placement Placement
	Now       func() time.Time
	Logger    *slog.Logger
}

// Service is the certification service. It is safe for concurrent use.
type Service struct {
	cfg   Config
	store Store
	log   *slog.Logger
	ref   *benchjudge.Ref

	mu       sync.Mutex
	report   *apiv1.Transparency // cached public report
	reportAt time.Time
}

// reportTTL is how long an assembled public report is served again.
const reportTTL = 15 * time.Second

// New builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "certification needs a store")
	}
	if cfg.JobTimeout <= 0 {
		cfg.JobTimeout = 2 * time.Hour
	}
	if cfg.MaxOpenJobs <= 0 {
		cfg.MaxOpenJobs = 16
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 10 * time.Minute
	}
	if cfg.HostFresh <= 0 {
		cfg.HostFresh = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ref, err := benchjudge.Reference()
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "GPU reference data")
	}
	return &Service{cfg: cfg, store: cfg.Store, log: cfg.Logger, ref: ref}, nil
}

// NewWithIncidents builds the service and, through incidents, the
// incident service its confirmed FAILs go through, for a composition root:
// the incident service relists repaired GPUs through this one, so it is
// made from it (cfg.Incidents is ignored). An error of incidents is
// returned as it is.
func NewWithIncidents(cfg Config, incidents func(cert *Service) (Incidents, error)) (*Service, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if s.cfg.Incidents, err = incidents(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// timeout is how long a job of tier may stay open.
func (s *Service) timeout(tier string) time.Duration {
	if tier == "t1" {
		return s.cfg.JobTimeout / 4
	}
	return s.cfg.JobTimeout
}

func (s *Service) invalidate() {
	s.mu.Lock()
	s.report = nil
	s.mu.Unlock()
	if s.cfg.Placement != nil {
		s.cfg.Placement.Invalidate()
	}
}

// Run ticks every interval until ctx ends.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("certification tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Settings returns the operator's schedule and policy.
func (s *Service) Settings(ctx context.Context) (*gpurent.CertSettings, error) {
	return s.store.CertSettings(ctx)
}

// SaveSettings stores the schedule and policy (operators).
func (s *Service) SaveSettings(ctx context.Context, acc *gpurent.Account, in gpurent.CertSettings) (*gpurent.CertSettings, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	switch in.Policy {
	case gpurent.PolicyDelist, gpurent.PolicyDegrade:
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "policy must be delist or degrade, not %q", in.Policy)
	}
	if err := checkTier(in.Tier); err != nil {
		return nil, err
	}
	if in.Every < 0 || (in.Every > 0 && in.Every < time.Hour) || in.Every > 90*24*time.Hour {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "the schedule must be 0 (off) or from 1 hour to 90 days")
	}
	in.UpdatedAt = s.now()
	if err := s.store.SaveCertSettings(ctx, &in); err != nil {
		return nil, err
	}
	s.log.Info("certification settings", "by", acc.ID, "policy", in.Policy, "every", in.Every, "tier", in.Tier)
	return &in, nil
}

func checkTier(t string) error {
	if t != "t1" && t != "t2" {
		return gpurent.Errorf(gpurent.CodeInvalid, "tier must be t1 or t2, not %q", t)
	}
	return nil
}

func requireOperator(acc *gpurent.Account) error {
	if acc == nil || acc.Role != gpurent.RoleOperator {
		return gpurent.Errorf(gpurent.CodeForbidden, "operators only")
	}
	return nil
}
