package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

// SpendLimits returns the account's caps.
func (s *Store) SpendLimits(ctx context.Context, accountID string) (gpurent.SpendLimits, error) {
	var l gpurent.SpendLimits
	err := s.queryRow(ctx, `SELECT daily_cap_fen, monthly_cap_fen, stop_at_cap FROM accounts WHERE id = ?`, accountID).
		Scan(&l.DailyFen, &l.MonthlyFen, &l.StopRunning)
	if errors.Is(err, sql.ErrNoRows) {
		return l, notFound("account", accountID)
	}
	if err != nil {
		return l, s.dbErr(err, "read spend limits")
	}
	return l, nil
}

// SetSpendLimits sets the account's caps.
func (s *Store) SetSpendLimits(ctx context.Context, accountID string, l gpurent.SpendLimits) error {
	if l.DailyFen < 0 || l.MonthlyFen < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "spend limits cannot be negative")
	}
	n, err := s.execN(ctx, `UPDATE accounts SET daily_cap_fen = ?, monthly_cap_fen = ?, stop_at_cap = ? WHERE id = ?`,
		l.DailyFen, l.MonthlyFen, l.StopRunning, accountID)
	if err != nil {
		return s.dbErr(err, "set spend limits")
	}
	if n == 0 {
		return notFound("account", accountID)
	}
	return nil
}

// DebitsBetween sums the customer's debits with At in [from, to).
func (s *Store) DebitsBetween(ctx context.Context, customer string, from, to time.Time) (int64, error) {
	var sum int64
	err := s.queryRow(ctx, `SELECT COALESCE(SUM(amount_fen), 0) FROM ledger_tx WHERE customer = ? AND op = 'debit'
AND at >= ? AND at < ?`, customer, s.ts(from), s.ts(to)).Scan(&sum)
	if err != nil {
		return 0, s.dbErr(err, "sum debits")
	}
	return sum, nil
}
