package incident

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/faultrules"
	"github.com/gpurent/gpurent/internal/sla"
)

// Mover fails instances over (the rental service).
type Mover interface {
	Failover(ctx context.Context, id string, leaveHost bool, why string) (*gpurent.Operation, error)
	Invalidate()
}

// Granter posts SLA credits (the wallet).
type Granter interface {
	GrantSLA(ctx context.Context, accountID string, fen int64, key string, at, expires time.Time, note string) (bool, error)
}

// Store is what the incident service reads and writes: incidents and
// GPU health of its own; the fleet, instances, allocations, operations and
// events it judges incidents by and reports them in; and, read only, a
// credit's ledger transaction and the usage runs an incident touched.
type Store interface {
	// Its own.
	gpurent.IncidentStore
	gpurent.GPUHealthStore
	// What it judges incidents by.
	gpurent.FleetStore
	gpurent.InstanceStore
	gpurent.AllocationStore
	gpurent.OperationStore
	// Where it reports them.
	gpurent.EventStore
	gpurent.AlertStore
	// Read only.
	LedgerTxByKey(ctx context.Context, key string) (*gpurent.LedgerTx, error)
	ListUsageRuns(ctx context.Context, f gpurent.UsageRunFilter) ([]gpurent.UsageRun, error)
}

// Prices answers list prices (the billing service).
type Prices interface {
	// HourlyFen is the list price of count GPUs of typeID for an hour
	// from at.
	HourlyFen(ctx context.Context, typeID string, count int, at time.Time) (int64, error)
}

// Notifier tells an account something (the wallet's webhook).
type Notifier interface {
	Notice(ctx context.Context, accountID, kind, message string)
}

// Relister holds a repaired GPU under a benchmark before it is listed
// again (the certification service); true: it did, false: the GPU is
// busy and is benchmarked once idle.
type Relister interface {
	Relist(ctx context.Context, hostID, gpuID, by string) (bool, error)
}

// Config configures the service.
type Config struct {
	Store Store
	Rules *faultrules.Rules
	Terms sla.Terms
	Mover Mover
	// Credits posts the SLA credits; nil posts none (the amounts are
	// still computed and recorded).
	Credits Granter
	// Prices are the list prices credits are computed from (the billing
	// service's price book); nil computes no credit.
	Prices Prices
	// Notify tells an account something (an account event is written by
	// the caller's store; this posts the webhook); nil tells nobody.
	Notify Notifier
	// Injector puts faults into fake GPUs (the demo); nil elsewhere.
	Injector Injector
	// Relist, when set, is asked before a repaired GPU is marked healthy:
	// the certification service holds it under a benchmark job so that it
	// is listed again only once it has passed.
	Relist Relister
	// Location is where hours and months are counted (Asia/Shanghai).
	Location *time.Location
	// HostDownAfter is how long an agent may be silent before its host is
	// down and its instances get incidents (default 60 s).
	HostDownAfter time.Duration
	Now           func() time.Time
	Logger        *slog.Logger
}

// Service is the health and incident service. It is safe for concurrent use.
type Service struct {
	cfg     Config
	store   Store
	log     *slog.Logger
	mu      sync.Mutex
	samples map[string]sampleOf // by GPU UUID
	// history is each GPU's recent samples, for the instance charts.
	history sampleHistory
	metrics *metrics
	// openCount is how many incidents were open at the last tick.
	openCount int
	// paid are the recent incidents whose credit is posted; monthsDone
	// the instances whose availability credit for the month starting at
	// monthOf is settled (both: what this process needs not read again).
	paid       map[string]bool
	monthOf    time.Time
	monthsDone map[string]bool
	// hostsCheckedAt is when silent hosts were last looked for.
	hostsCheckedAt time.Time
}

// sampleOf is a GPU's latest telemetry with where it is.
type sampleOf struct {
	host   *gpurent.Host
	sample Sample
	index  int
	model  string
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HostDownAfter <= 0 {
		cfg.HostDownAfter = time.Minute
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	return &Service{cfg: cfg, store: cfg.Store, log: cfg.Logger, samples: map[string]sampleOf{}, metrics: newMetrics(),
		paid: map[string]bool{}, monthsDone: map[string]bool{}}
}

// Terms are the SLA terms the service applies.
func (s *Service) Terms() sla.Terms { return s.cfg.Terms }

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

func requireOperator(acc *gpurent.Account) error {
	if acc == nil {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if acc.Role != gpurent.RoleOperator {
		return gpurent.Errorf(gpurent.CodeForbidden, "operators only")
	}
	return nil
}

// severity orders fault classes: a burst's verdict acts only when it is
// more severe than what was already done for the burst.
func severity(c gpurent.FaultClass) int {
	switch c {
	case gpurent.FaultInfo:
		return 1
	case gpurent.FaultUnknown:
		return 2
	case gpurent.FaultApp:
		return 3
	case gpurent.FaultDegraded:
		return 4
	case gpurent.FaultReset:
		return 5
	case gpurent.FaultDrainReset:
		return 6
	case gpurent.FaultRMA:
		return 7
	case gpurent.FaultNode, gpurent.FaultHostDown:
		return 8
	case gpurent.FaultHost:
		return 9
	}
	return 0
}
