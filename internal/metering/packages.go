package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// ChargePackages charges every live instance on a package plan (daily,
// weekly, monthly) for each period begun since it was created: up front, at
// the prices in force when the period begins, academic prices for verified
// accounts. Period n is charged once under the key package:<instance>:<n>.
// Instances whose wallet cannot pay a period are listed (the caller stops
// them; their GPUs stay reserved only while paid for).
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
	for _, in := range list {
		if in.Plan == gpurent.PlanHourly || !in.Active() {
			continue
		}
		secs, err := rating.PackageSeconds(in.Plan)
		if err != nil {
			continue
		}
		period := time.Duration(secs) * time.Second
		acc, err := s.cfg.Store.AccountByID(ctx, in.AccountID)
		if err != nil {
			return charged, unpaid, err
		}
		begun := int64(now.Sub(in.CreatedAt)/period) + 1
		for n := int64(1); n <= begun; n++ {
			at := in.CreatedAt.Add(time.Duration(n-1) * period).Truncate(time.Second)
			line, err := rating.RatePackage(b, in.TypeID, at, 1, rating.Terms{Plan: in.Plan, GPUCount: in.GPUCount, Academic: acc.Academic(at)})
			if err != nil {
				return charged, unpaid, err
			}
			tx := &gpurent.LedgerTx{Op: "debit", Charge: "compute", Key: fmt.Sprintf("package:%s:%d", in.ID, n),
				Customer: in.AccountID, At: now, AmountFen: line.Fen(),
				Note: fmt.Sprintf("%s package %d of %s: %d x %s from %s", in.Plan, n, in.ID, in.GPUCount, in.TypeID, at.Format(time.RFC3339))}
			dup, err := s.cfg.Store.PostLedger(ctx, tx)
			if err != nil {
				return charged, unpaid, err
			}
			if dup {
				continue
			}
			charged++
			if collected(tx, in.AccountID) < tx.AmountFen {
				unpaid = append(unpaid, in.ID)
			}
		}
	}
	return charged, unpaid, nil
}
