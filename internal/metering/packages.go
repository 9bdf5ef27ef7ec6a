package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// ChargePackages charges every live instance on a package plan (daily,
// weekly, monthly) for each period begun: up front, at the prices in force
// when the period begins, academic prices for verified accounts, each once
// under its key (see packagePeriods). Periods count from the rent, or from
// the conversion to the package. Instances whose wallet cannot pay a period
// are listed (the caller stops them; their GPUs stay reserved only while
// paid for).
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
		spans, err := s.spansOf(ctx, in)
		if err != nil {
			return charged, unpaid, err
		}
		acc, err := s.cfg.Store.AccountByID(ctx, in.AccountID)
		if err != nil {
			return charged, unpaid, err
		}
		for _, p := range packagePeriods(in, spans, now) {
			_, dup, short, err := s.chargePeriod(ctx, b, in, acc, p, now)
			if err != nil {
				return charged, unpaid, err
			}
			if dup {
				continue
			}
			charged++
			if short {
				unpaid = append(unpaid, in.ID)
			}
		}
	}
	return charged, unpaid, nil
}

// chargePeriod posts one package period under its key: dup when it was
// posted before, short when the wallet could not cover it.
func (s *Service) chargePeriod(ctx context.Context, b *rating.Book, in *gpurent.Instance, acc *gpurent.Account, p packagePeriod, now time.Time) (fen int64, dup, short bool, err error) {
	line, err := rating.RatePackage(b, in.TypeID, p.at, 1, rating.Terms{Plan: p.plan, GPUCount: in.GPUCount, Academic: acc.Academic(p.at)})
	if err != nil {
		return 0, false, false, err
	}
	tx := &gpurent.LedgerTx{Op: "debit", Charge: "compute", Key: p.key, Customer: in.AccountID, At: now, AmountFen: line.Fen(),
		Note: packageNote(in, p)}
	dup, err = s.cfg.Store.PostLedger(ctx, tx)
	if err != nil || dup {
		return 0, dup, false, err
	}
	return tx.AmountFen, false, collected(tx, in.AccountID) < tx.AmountFen, nil
}

func packageNote(in *gpurent.Instance, p packagePeriod) string {
	return fmt.Sprintf("%s package %d of %s: %d x %s from %s", p.plan, p.n, in.ID, in.GPUCount, in.TypeID, p.at.Format(time.RFC3339))
}
