package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// Storage defaults: the free size of a data volume and the price of each
// GiB beyond it per day, in fen (both operator-configurable).
const (
	DefaultFreeStorageGiB      = 50
	DefaultStorageFenPerGiBDay = 1
)

// ChargeStorage charges every volume for each whole day (Asia/Shanghai)
// before today that it existed for any part of and was not charged for
// yet: (size − free size) GiB × the daily price, also while its instance is
// stopped. Storage charges may put the wallet into arrears. Each day's
// debit and the volume's charged-through day are written in one
// transaction under the key storage:<volume>:<day>, so it is charged once.
func (s *Service) ChargeStorage(ctx context.Context) (charged int, err error) {
	loc, err := rating.LoadBillingZone()
	if err != nil {
		return 0, err
	}
	now := s.cfg.Now().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	vols, err := s.cfg.Store.ListVolumeCharges(ctx)
	if err != nil {
		return 0, err
	}
	for _, vc := range vols {
		v := vc.Volume
		billable := int64(v.SizeGiB - s.cfg.FreeStorageGiB)
		c := v.CreatedAt.In(loc)
		day := time.Date(c.Year(), c.Month(), c.Day(), 0, 0, 0, 0, loc)
		if vc.ChargedThrough != "" {
			last, err := time.ParseInLocation(time.DateOnly, vc.ChargedThrough, loc)
			if err != nil {
				return charged, gpurent.WrapError(gpurent.CodeInternal, err, "volume %s charged through %q", v.ID, vc.ChargedThrough)
			}
			day = last.AddDate(0, 0, 1)
		}
		prev := vc.ChargedThrough
		for ; day.Before(today); day = day.AddDate(0, 0, 1) {
			if v.DeletedAt != nil && !v.DeletedAt.After(day) {
				break // gone before this day began
			}
			key := day.Format(time.DateOnly)
			err := s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
				if billable > 0 && s.cfg.StorageFenPerGiBDay > 0 {
					if _, err := q.PostLedger(ctx, &gpurent.LedgerTx{Op: "debit", Charge: "storage",
						Key: fmt.Sprintf("storage:%s:%s", v.ID, key), Customer: v.AccountID, At: s.cfg.Now(),
						AmountFen: billable * s.cfg.StorageFenPerGiBDay,
						Note:      fmt.Sprintf("volume %s of %s: %d GiB beyond %d free, %s", v.ID, v.InstanceID, billable, s.cfg.FreeStorageGiB, key)}); err != nil {
						return err
					}
				}
				return q.SetVolumeChargedThrough(ctx, v.ID, prev, key)
			})
			if gpurent.IsCode(err, gpurent.CodeConflict) {
				break // another pass charges this volume
			}
			if err != nil {
				return charged, err
			}
			prev = key
			if billable > 0 {
				charged++
			}
		}
	}
	return charged, nil
}
