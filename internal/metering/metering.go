// Package metering turns agents' run events into usage runs, exactly once:
// each event is stored under the id the agent gave it before sending, a
// replay answers as the original did, and a host that falls silent has its
// open runs closed at its last heartbeat, so nobody is billed for the
// unknown. Rating the runs and debiting the wallet build on it
// (docs/billing.md).
package metering

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// MaxEventsPerReport bounds the run events one report may carry.
const MaxEventsPerReport = 1000

// Store is what the metering service reads and writes: usage runs and
// their debits, plan changes, final statements, storage charges and instance
// events, several at once in a transaction; and, read only, the instances,
// accounts, allocations, hosts, incidents and ledger debits it meters by.
type Store interface {
	// Its own, written together in transactions.
	gpurent.Transactor
	gpurent.UsageStore
	gpurent.PlanChangeStore
	gpurent.StatementStore
	gpurent.VolumeChargeStore
	// The instances it meters and records events on.
	gpurent.InstanceStore
	gpurent.EventStore
	// Read only.
	AccountByID(ctx context.Context, id string) (*gpurent.Account, error)
	AllocationByID(ctx context.Context, id string) (*gpurent.Allocation, error)
	ListHosts(ctx context.Context) ([]gpurent.Host, error)
	ListIncidents(ctx context.Context, f gpurent.IncidentFilter) ([]gpurent.Incident, error)
	ListDebits(ctx context.Context, from, to time.Time) ([]gpurent.Debit, error)
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time
	Logger *slog.Logger
	// HostTimeout: a host silent longer has its open runs closed at its
	// last heartbeat (default 60 s).
	HostTimeout time.Duration
	// Book, when set, makes Run also bill the runs every pass.
	Book PriceBook
	// Instances stops and releases instances for metering (the rental
	// service): a running instance whose wallet could not cover its usage,
	// or whose account reached a spend limit it wants enforced on running
	// instances, is stopped; the stopped instances of an account in
	// arrears past the release time are released; a stopped instance now
	// on the hourly plan has its GPUs released. Nil: metering only reports.
	Instances Instances
	// FreeStorageGiB and StorageFenPerGiBDay price data volumes (defaults
	// DefaultFreeStorageGiB, DefaultStorageFenPerGiBDay).
	FreeStorageGiB      int
	StorageFenPerGiBDay int64
	// Wallet, when set, answers for accounts' money (the wallet service):
	// arrears, spend limits, the funds a conversion to a package needs and
	// what a package's charge must leave spendable. Nil: none of these
	// gates apply.
	Wallet Wallet
}

// Instances is what metering needs done to instances (internal/rental
// does it). Each answers an error metering logs; the next pass tries again.
type Instances interface {
	// StopUnpaid stops a running instance its wallet no longer pays for.
	StopUnpaid(ctx context.Context, instanceID string) error
	// ReleaseUnpaid releases a stopped instance of an account in arrears.
	ReleaseUnpaid(ctx context.Context, instanceID string) error
	// ReleaseIdleGPUs releases a stopped instance's GPUs once it is on the
	// hourly plan.
	ReleaseIdleGPUs(ctx context.Context, instanceID string) error
}

// Wallet is what metering asks of the wallet (internal/wallet).
type Wallet interface {
	// ReviewArrears follows an account in arrears and says whether its
	// stopped instances must be released.
	ReviewArrears(ctx context.Context, accountID string) (bool, error)
	// MustStop says whether an account's running instances must stop (a
	// spend limit reached, with stop-running chosen).
	MustStop(ctx context.Context, accountID string) (bool, error)
	// CheckFunds gates a conversion to a package: the first period must
	// be payable (the wallet's start gate).
	CheckFunds(ctx context.Context, accountID string, needFen int64) error
	Reserver
}

// Reserver says what a package's charge must leave spendable: an hour of
// the account's instances already burning the wallet by the hour, except
// the one named, read through the transaction that takes the charge.
type Reserver interface {
	ReserveFen(ctx context.Context, q gpurent.Queries, accountID, except string) (int64, error)
}

// Service is the metering service.
type Service struct {
	cfg     Config
	collect *Collector
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = 60 * time.Second
	}
	if cfg.FreeStorageGiB <= 0 {
		cfg.FreeStorageGiB = DefaultFreeStorageGiB
	}
	if cfg.StorageFenPerGiBDay <= 0 {
		cfg.StorageFenPerGiBDay = DefaultStorageFenPerGiBDay
	}
	var reserve Reserver
	if cfg.Wallet != nil {
		reserve = cfg.Wallet
	}
	return &Service{cfg: cfg, collect: NewCollector(cfg.Now, reserve)}
}

// stop stops an instance through Instances (when set), logging a failure.
func (s *Service) stop(ctx context.Context, id string) {
	if s.cfg.Instances == nil {
		return
	}
	if err := s.cfg.Instances.StopUnpaid(ctx, id); err != nil {
		s.cfg.Logger.Error("stopping an unpaid instance", "instance", id, "err", err)
	}
}

// payloadHash identifies an event's content, to tell a replay (same id,
// same content) from a corrupted or forged one (same id, other content).
func payloadHash(e agentproto.RunEvent) string {
	b, _ := json.Marshal(struct {
		Kind, Instance, Allocation string
		Started                    int64
		Ended                      *int64
	}{e.Kind, e.InstanceID, e.AllocationID, e.StartedAt.UnixMicro(), endMicros(e.EndedAt)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func endMicros(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMicro()
	return &v
}

// Ingest stores a report's run events and moves the last sign of life of
// the runs the report shows running to now, in one transaction. It answers the ids the
// agent may drop: those stored now or before, and those refused for good
// (logged), so a bad event cannot be resent forever. A store failure
// returns an error and acknowledges nothing, so the agent resends.
func (s *Service) Ingest(ctx context.Context, host *gpurent.Host, events []agentproto.RunEvent, running []agentproto.ActualInstance) ([]string, error) {
	now := s.cfg.Now().UTC()
	if len(events) > MaxEventsPerReport {
		events = events[:MaxEventsPerReport] // the rest come with the next report
	}
	err := s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		runs := map[string]*gpurent.UsageRun{} // by allocation: one lookup per report
		batch := make([]gpurent.RunEvent, 0, len(events))
		hashes := make([]string, 0, len(events))
		of := make([]*gpurent.UsageRun, 0, len(events))
		for _, e := range events {
			run, err := s.check(ctx, q, host, e, now, runs)
			if err != nil {
				if err := s.refused(host, e.ID, err); err != nil {
					return err
				}
				continue
			}
			batch = append(batch, gpurent.RunEvent{ID: e.ID, HostID: host.ID, Kind: e.Kind, InstanceID: e.InstanceID,
				AllocationID: e.AllocationID, StartedAt: e.StartedAt, EndedAt: e.EndedAt})
			hashes = append(hashes, payloadHash(e))
			of = append(of, run)
		}
		if len(batch) > 0 {
			res, err := q.IngestRunEvents(ctx, batch, hashes, of, now)
			if err != nil {
				return err
			}
			for k, r := range res {
				if r.Err != nil {
					if err := s.refused(host, batch[k].ID, r.Err); err != nil {
						return err
					}
				}
			}
		}
		// Runs the agent sees running now were alive now.
		for _, a := range running {
			if a.State != agentproto.StateRunning || a.AllocationID == "" || a.StartedAt.IsZero() {
				continue
			}
			if err := q.TouchRun(ctx, host.ID, a.AllocationID, a.StartedAt, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.cfg.Book != nil && len(events) > 0 {
		// Bill what the report changed now, so the balance shows it at
		// once rather than at the next pass.
		instances := map[string]bool{}
		for _, e := range events {
			instances[e.InstanceID] = true
		}
		s.billInstances(ctx, instances)
	}
	acked := make([]string, len(events))
	for i, e := range events {
		acked[i] = e.ID
	}
	return acked, nil
}

// refused logs an event refused for good (it is acknowledged, so that it
// is not resent forever) and answers nil; any other error is answered as
// is (nothing is acknowledged: the agent resends).
func (s *Service) refused(host *gpurent.Host, eventID string, err error) error {
	switch gpurent.ErrorCode(err) {
	case gpurent.CodeInvalid, gpurent.CodeConflict, gpurent.CodeNotFound, gpurent.CodeForbidden:
		s.cfg.Logger.Warn("run event refused", "host", host.ID, "event", eventID, "err", err)
		return nil
	}
	return err
}

// billInstances bills the unsettled runs of the instances; failures are
// left to the next pass.
func (s *Service) billInstances(ctx context.Context, instances map[string]bool) {
	b, err := s.cfg.Book.Book(ctx)
	if err != nil {
		return
	}
	var runs []gpurent.UsageRun
	for id := range instances {
		list, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: id, UnsettledOnly: true})
		if err != nil {
			return
		}
		runs = append(runs, list...)
	}
	// Conflicts with a pass and refusals are the next pass's to retry.
	d, _ := s.billRuns(ctx, b, runs, s.cfg.Now().UTC())
	for _, id := range d.Shortfall {
		s.stop(ctx, id)
	}
}

// check answers the run an event belongs to (account, GPU type and count,
// the allocation's price share, looked up once per allocation and
// report), or why it is refused.
func (s *Service) check(ctx context.Context, q gpurent.Queries, host *gpurent.Host, e agentproto.RunEvent, now time.Time,
	runs map[string]*gpurent.UsageRun) (*gpurent.UsageRun, error) {
	if e.ID == "" || len(e.ID) > 100 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "run event id is required (at most 100 bytes)")
	}
	if e.StartedAt.After(now.Add(time.Minute)) || (e.EndedAt != nil && e.EndedAt.After(now.Add(time.Minute))) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "run event %s is in the future", e.ID)
	}
	run, ok := runs[e.AllocationID]
	if !ok {
		alloc, err := q.AllocationByID(ctx, e.AllocationID)
		if err != nil {
			return nil, err
		}
		// An agent reports only its own host's allocations.
		if alloc.HostID != host.ID {
			return nil, gpurent.Errorf(gpurent.CodeForbidden, "run event %s names allocation %s of another host", e.ID, e.AllocationID)
		}
		in, err := q.InstanceByID(ctx, alloc.InstanceID)
		if err != nil {
			return nil, err
		}
		// A run is priced at the type of the GPUs it ran on: after an
		// upgrade the instance's type is another one.
		typeID := in.TypeID
		if len(alloc.GPUIDs) > 0 {
			if typeID, err = gpuType(ctx, q, host, alloc.GPUIDs[0]); err != nil {
				return nil, err
			}
		}
		// The run is billed at the allocation's price share (GPUs listed
		// as degraded), copied when the run is made.
		run = &gpurent.UsageRun{InstanceID: in.ID, AccountID: in.AccountID, TypeID: typeID, GPUCount: len(alloc.GPUIDs),
			PricePermille: alloc.PricePermille}
		runs[e.AllocationID] = run
	}
	if run.InstanceID != e.InstanceID {
		return nil, gpurent.Errorf(gpurent.CodeForbidden, "run event %s names allocation %s of another instance", e.ID, e.AllocationID)
	}
	return run, nil
}

// FinalizeLastMonth makes final the last month's statement of every account
// that had runs in it, once that month is FinalizeAfter behind.
func (s *Service) FinalizeLastMonth(ctx context.Context) error {
	b, err := s.cfg.Book.Book(ctx)
	if err != nil {
		return err
	}
	now := s.cfg.Now().In(b.Location())
	last := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, b.Location()).AddDate(0, -1, 0)
	runs, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range runs {
		end := r.LastSeenAt
		if r.EndedAt != nil {
			end = *r.EndedAt
		}
		if seen[r.AccountID] || end.Before(last) || !r.StartedAt.Before(last.AddDate(0, 1, 0)) {
			continue
		}
		seen[r.AccountID] = true
		acc, err := s.cfg.Store.AccountByID(ctx, r.AccountID)
		if err != nil {
			return err
		}
		if _, err := s.Finalize(ctx, s.cfg.Book, acc, last); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseForArrears reviews every account holding a volume and releases
// the stopped instances of those in arrears past the release time.
func (s *Service) ReleaseForArrears(ctx context.Context) error {
	if s.cfg.Wallet == nil {
		return nil
	}
	vols, err := s.cfg.Store.ListVolumeCharges(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, vc := range vols {
		acc := vc.Volume.AccountID
		if seen[acc] || vc.Volume.DeletedAt != nil {
			continue
		}
		seen[acc] = true
		release, err := s.cfg.Wallet.ReviewArrears(ctx, acc)
		if err != nil {
			return err
		}
		if !release || s.cfg.Instances == nil {
			continue
		}
		ins, err := s.cfg.Store.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc,
			States: []gpurent.InstanceState{gpurent.StateStopped, gpurent.StateFailed}})
		if err != nil {
			return err
		}
		for _, in := range ins {
			s.cfg.Logger.Warn("releasing an instance for unpaid arrears", "instance", in.ID, "account", acc)
			if err := s.cfg.Instances.ReleaseUnpaid(ctx, in.ID); err != nil {
				s.cfg.Logger.Error("releasing an instance for arrears", "instance", in.ID, "err", err)
			}
		}
	}
	return nil
}

// OverLimit lists the running (metered, open) instances of accounts that
// must stop at their spend limit.
func (s *Service) OverLimit(ctx context.Context) ([]string, error) {
	if s.cfg.Wallet == nil {
		return nil, nil
	}
	open, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{OpenOnly: true})
	if err != nil {
		return nil, err
	}
	verdict := map[string]bool{}
	var out []string
	for _, r := range open {
		stop, ok := verdict[r.AccountID]
		if !ok {
			if stop, err = s.cfg.Wallet.MustStop(ctx, r.AccountID); err != nil {
				return out, err
			}
			verdict[r.AccountID] = stop
		}
		if stop {
			out = append(out, r.InstanceID)
		}
	}
	return out, nil
}

// CloseSilent closes the open runs of every host silent past HostTimeout at
// their last heartbeat. It returns how many runs it closed.
func (s *Service) CloseSilent(ctx context.Context) (int, error) {
	hosts, err := s.cfg.Store.ListHosts(ctx)
	if err != nil {
		return 0, err
	}
	now := s.cfg.Now()
	closed := 0
	for _, h := range hosts {
		if h.LastSeenAt != nil && now.Sub(*h.LastSeenAt) <= s.cfg.HostTimeout {
			continue
		}
		n, err := s.cfg.Store.CloseSilentRuns(ctx, h.ID)
		if err != nil {
			return closed, err
		}
		if n > 0 {
			s.cfg.Logger.Warn("host silent: its runs are closed at its last heartbeat", "host", h.ID, "runs", n)
		}
		closed += n
	}
	return closed, nil
}

// Run closes silent hosts' runs and bills the runs (with Config.Book)
// every interval until ctx ends. Keep interval at most 60 s: live debits
// are at most that far apart.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var finalized time.Time // statements are finalized at most hourly
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.CloseSilent(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("closing silent hosts' runs", "err", err)
			}
			if s.cfg.Book == nil {
				continue
			}
			applied, err := s.ApplyDuePlanChanges(ctx)
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("applying plan changes", "err", err)
			}
			for _, c := range applied {
				if s.cfg.Instances == nil {
					break
				}
				if err := s.cfg.Instances.ReleaseIdleGPUs(ctx, c.InstanceID); err != nil {
					s.cfg.Logger.Error("releasing a stopped instance's GPUs after a plan change", "instance", c.InstanceID, "err", err)
				}
			}
			d, err := s.Bill(ctx, s.cfg.Book)
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("billing runs", "err", err)
			}
			_, unpaid, err := s.ChargePackages(ctx, s.cfg.Book)
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("charging packages", "err", err)
			}
			d.Shortfall = append(d.Shortfall, unpaid...)
			for _, id := range d.Shortfall {
				s.cfg.Logger.Warn("wallet exhausted: stopping the instance", "instance", id)
				s.stop(ctx, id)
			}
			if now := s.cfg.Now(); now.Sub(finalized) >= time.Hour {
				finalized = now
				if err := s.FinalizeLastMonth(ctx); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Error("finalizing statements", "err", err)
				}
				if _, err := s.ChargeStorage(ctx); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Error("charging storage", "err", err)
				}
				if err := s.ReleaseForArrears(ctx); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Error("reviewing arrears", "err", err)
				}
			}
			stop, err := s.OverLimit(ctx)
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("checking spend limits", "err", err)
			}
			for _, id := range stop {
				s.cfg.Logger.Warn("spend limit reached: stopping the instance", "instance", id)
				s.stop(ctx, id)
			}
		}
	}
}

// gpuType is the type of one of the host's GPUs; host's GPU list is read
// (and kept on host for the rest of the report) when it was not.
func gpuType(ctx context.Context, q gpurent.Queries, host *gpurent.Host, gpuID string) (string, error) {
	for pass := 0; pass < 2; pass++ {
		for _, g := range host.GPUs {
			if g.ID == gpuID {
				return g.TypeID, nil
			}
		}
		if pass == 0 {
			h, err := q.HostByID(ctx, host.ID)
			if err != nil {
				return "", err
			}
			host.GPUs = h.GPUs
		}
	}
	return "", gpurent.Errorf(gpurent.CodeInternal, "GPU %s of an allocation is not on host %s", gpuID, host.ID)
}
