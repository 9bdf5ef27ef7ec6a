package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rating"
)

// ChargePackages charges every live instance on a package plan (daily,
// weekly, monthly) for each period begun: up front, at the prices in force
// when the period begins, academic prices for verified accounts, each once
// under its key (see packagePeriods). Periods count from the rent, or from
// the conversion to the package.
//
// A period is charged in full or not at all (CollectDue's rule): one the
// wallet cannot cover is never posted short. The package lapses instead:
// from that period's start the instance is on the hourly plan (an applied
// plan change, so the period is never listed again), billed by the second
// like any hourly instance. Such instances are listed in unpaid: the
// caller stops them, and the hourly plan releases their GPUs once stopped.
// Operators' packages are charged what their wallet holds and never lapse
// (their usage is the house's, as at the rent).
func (s *Service) ChargePackages(ctx context.Context, book PriceBook) (charged int, unpaid []string, err error) {
	b, err := book.Book(ctx)
	if err != nil {
		return 0, nil, err
	}
	list, err := s.cfg.Store.ListInstances(ctx, gpurent.InstanceFilter{ActiveOnly: true})
	if err != nil {
		return 0, nil, err
	}
	now := s.cfg.Now().UTC()
	for i := range list {
		in := &list[i]
		if in.Plan == gpurent.PlanHourly || !in.Active() {
			continue
		}
		n, lapsed, err := s.renew(ctx, b, in.ID, now)
		charged += n
		if err != nil {
			return charged, unpaid, err
		}
		if lapsed {
			unpaid = append(unpaid, in.ID)
		}
	}
	return charged, unpaid, nil
}

// renew charges the instance's due periods in one transaction, each one
// under its own savepoint, until one cannot be covered: that one is rolled
// back (nothing posted) and from its start the instance is on the hourly
// plan (a pending change away from the package is canceled). It answers
// how many periods it charged and whether the package lapsed.
func (s *Service) renew(ctx context.Context, b *rating.Book, id string, now time.Time) (charged int, lapsed bool, err error) {
	err = s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		charged, lapsed = 0, false
		in, err := q.InstanceByID(ctx, id)
		if err != nil {
			return err
		}
		if in.Plan == gpurent.PlanHourly || !in.Active() {
			return nil // converted or deleted meanwhile
		}
		changes, err := q.PlanChanges(ctx, in.ID)
		if err != nil {
			return err
		}
		acc, err := q.AccountByID(ctx, in.AccountID)
		if err != nil {
			return err
		}
		for _, p := range packagePeriods(in, planSpans(in, changes), now) {
			err := savepoint(ctx, q, func(q gpurent.Queries) error {
				_, dup, err := s.collect.collectPeriod(ctx, q, b, in, acc, p, now, acc.Role == gpurent.RoleOperator)
				if err == nil && !dup {
					charged++
				}
				return err
			})
			if err == nil {
				continue
			}
			if !gpurent.IsCode(err, gpurent.CodePaymentRequired) {
				return err
			}
			lapsed = true
			if n := len(changes); n > 0 && changes[n-1].State == gpurent.PlanChangePending {
				if _, err := q.SetPlanChangeState(ctx, changes[n-1].ID, gpurent.PlanChangeCanceled); err != nil {
					return err
				}
			}
			c := &gpurent.PlanChange{InstanceID: in.ID, From: p.plan, To: gpurent.PlanHourly, EffectiveAt: p.at,
				State: gpurent.PlanChangeApplied, RequestedBy: "system", CreatedAt: now}
			if err := q.AddPlanChange(ctx, c); err != nil {
				return err
			}
			s.cfg.Logger.Warn("package unpaid: lapsed to the hourly plan", "instance", in.ID, "period", p.n, "at", p.at)
			return q.AddEvent(ctx, &gpurent.Event{ID: gpurent.NewID(gpurent.PrefixEvent), InstanceID: in.ID, At: now, Kind: "plan",
				Message: fmt.Sprintf("%s package period %d (from %s) unpaid, nothing charged for it: %s. From then on the instance is on the hourly plan; it is stopped and its GPUs released (volume kept)",
					p.plan, p.n, p.at.Format(time.RFC3339), gpurent.ErrorMessage(err))})
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return charged, lapsed, nil
}

// savepoint runs fn under a savepoint of q's transaction (the store's
// InTx nests so), so that a refused period is rolled back alone.
func savepoint(ctx context.Context, q gpurent.Queries, fn func(q gpurent.Queries) error) error {
	nested, ok := q.(interface {
		InTx(ctx context.Context, fn func(q gpurent.Queries) error) error
	})
	if !ok {
		return gpurent.Errorf(gpurent.CodeInternal, "the store's transactions do not nest")
	}
	return nested.InTx(ctx, fn)
}

// CollectDue charges, in the caller's transaction q, every period of the
// instance's package begun by now and not charged yet: the first period
// of a rent (q is the transaction that claims its GPUs), or one begun
// before a start. Each period is charged in full or refused: the debit is
// posted under the account's lock (PostLedger's row lock on PostgreSQL,
// the one writer on SQLite), and when it could not take the whole price,
// or what stays spendable is less than an hour of the account's running
// hourly instances (the Wallet's Reserver), it answers CodePaymentRequired and
// the caller rolls the transaction back: nothing is charged and the GPUs
// are not claimed. Operators' instances are charged what their wallet
// holds and never refused (their usage is the house's). An instance on the
// hourly plan owes nothing here. b is the price book, read before q's
// transaction began (reading or seeding it inside would wait for a
// connection the transaction may hold).
func (s *Service) CollectDue(ctx context.Context, q gpurent.Queries, b *rating.Book, in *gpurent.Instance) (int64, error) {
	return s.collect.CollectDue(ctx, q, b, in)
}

// Collector takes the due periods of package instances inside the
// transactions that claim their GPUs (Service.CollectDue's rule). It needs
// neither the rental service nor the billing passes, so that a composition
// root can hand it to the rental service before metering is built (metering
// stops and releases instances through the rental service).
type Collector struct {
	now     func() time.Time
	reserve Reserver // nil: nothing kept back
}

// NewCollector makes a collector on the clock now (nil: time.Now); reserve
// says what a charge must leave spendable (nil: nothing).
func NewCollector(now func() time.Time, reserve Reserver) *Collector {
	if now == nil {
		now = time.Now
	}
	return &Collector{now: now, reserve: reserve}
}

// CollectDue is Service.CollectDue.
func (s *Collector) CollectDue(ctx context.Context, q gpurent.Queries, b *rating.Book, in *gpurent.Instance) (int64, error) {
	if in.Plan == gpurent.PlanHourly || in.Plan == "" {
		return 0, nil
	}
	acc, err := q.AccountByID(ctx, in.AccountID)
	if err != nil {
		return 0, err
	}
	changes, err := q.PlanChanges(ctx, in.ID)
	if err != nil {
		return 0, err
	}
	now := s.now().UTC()
	var sum int64
	for _, p := range packagePeriods(in, planSpans(in, changes), now) {
		fen, _, err := s.collectPeriod(ctx, q, b, in, acc, p, now, acc.Role == gpurent.RoleOperator)
		if err != nil {
			return sum, err
		}
		sum += fen
	}
	return sum, nil
}

// collectPeriod posts one package period under its key through q, in full:
// dup when it was posted before. Unless lenient, a wallet that could not
// cover it (see CollectDue) is CodePaymentRequired, and the caller must
// roll q's transaction back (the short debit was written in it).
func (s *Collector) collectPeriod(ctx context.Context, q gpurent.Queries, b *rating.Book, in *gpurent.Instance, acc *gpurent.Account,
	p packagePeriod, now time.Time, lenient bool) (fen int64, dup bool, err error) {
	line, err := rating.RatePackage(b, in.TypeID, p.at, 1, rating.Terms{Plan: p.plan, GPUCount: in.GPUCount, Academic: acc.Academic(p.at)})
	if err != nil {
		return 0, false, err
	}
	tx := &gpurent.LedgerTx{Op: "debit", Charge: "compute", Key: p.key, Customer: in.AccountID, At: now, AmountFen: line.Fen(),
		Note: packageNote(in, p)}
	// The post locks the account until q's transaction ends: what it
	// reads next is what concurrent rents of the account see after it.
	dup, err = q.PostLedger(ctx, tx)
	if err != nil || dup || lenient {
		return tx.AmountFen, dup, err
	}
	got := collected(tx, in.AccountID)
	left, err := spendable(ctx, q, in.AccountID, now)
	if err != nil {
		return 0, false, err
	}
	var reserve int64
	if s.reserve != nil {
		if reserve, err = s.reserve.ReserveFen(ctx, q, in.AccountID, in.ID); err != nil {
			return 0, false, err
		}
	}
	if got < tx.AmountFen || left < reserve {
		have := got + left // what was spendable before this debit
		return 0, false, gpurent.Errorf(gpurent.CodePaymentRequired,
			"the wallet holds %s (%s of it kept for an hour of your running instances), less than the %s package's period %d (%s for %d x %s): top up first (`gpurent wallet`)",
			money.Format(have), money.Format(reserve), p.plan, p.n, money.Format(tx.AmountFen), in.GPUCount, in.TypeID)
	}
	return tx.AmountFen, false, nil
}

// spendable is the customer's cash and live credit at now, read through q.
func spendable(ctx context.Context, q gpurent.Queries, customer string, now time.Time) (int64, error) {
	bal, err := q.LedgerBalances(ctx, customer)
	if err != nil {
		return 0, err
	}
	sum := bal.CashFen
	for _, l := range bal.Lots {
		if now.Before(l.ExpiresAt) && l.BalanceFen > 0 {
			sum += l.BalanceFen
		}
	}
	return sum, nil
}

func packageNote(in *gpurent.Instance, p packagePeriod) string {
	return fmt.Sprintf("%s package %d of %s: %d x %s from %s", p.plan, p.n, in.ID, in.GPUCount, in.TypeID, p.at.Format(time.RFC3339))
}
