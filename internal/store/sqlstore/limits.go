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

// ListDebits returns the ledger's debits with At in [from, to), oldest first.
func (s *Store) ListDebits(ctx context.Context, from, to time.Time) ([]gpurent.Debit, error) {
	rows, err := s.query(ctx, `SELECT t.customer, t.at, t.amount_fen, t.key,
COALESCE((SELECT SUM(p.amount_fen) FROM ledger_posting p WHERE p.tx_seq = t.seq AND p.kind = 'revenue'), 0)
FROM ledger_tx t WHERE t.op = 'debit' AND t.at >= ? AND t.at < ? ORDER BY t.at, t.seq`, s.ts(from), s.ts(to))
	if err != nil {
		return nil, s.dbErr(err, "list debits")
	}
	defer rows.Close()
	var out []gpurent.Debit
	for rows.Next() {
		var d gpurent.Debit
		if err := rows.Scan(&d.Customer, timeCol{&d.At}, &d.AmountFen, &d.Key, &d.RevenueFen); err != nil {
			return nil, s.dbErr(err, "list debits")
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list debits")
	}
	return out, nil
}

// SaveFinalStatement stores a month's final statement, once.
func (s *Store) SaveFinalStatement(ctx context.Context, st *gpurent.FinalStatement) error {
	st.FinalizedAt = nowOr(st.FinalizedAt)
	n, err := s.execN(ctx, `INSERT INTO statements (account_id, month, total_fen, lines, finalized_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`, st.AccountID, st.Month, st.TotalFen, string(st.Lines), s.ts(st.FinalizedAt))
	if err != nil {
		return s.dbErr(err, "save final statement")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "the statement of %s is final already", st.Month)
	}
	return nil
}

// FinalStatement returns a month's final statement.
func (s *Store) FinalStatement(ctx context.Context, accountID, month string) (*gpurent.FinalStatement, error) {
	st := &gpurent.FinalStatement{AccountID: accountID, Month: month}
	var lines string
	err := s.queryRow(ctx, `SELECT total_fen, lines, finalized_at FROM statements WHERE account_id = ? AND month = ?`,
		accountID, month).Scan(&st.TotalFen, &lines, timeCol{&st.FinalizedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "no final statement for %s", month)
	}
	if err != nil {
		return nil, s.dbErr(err, "read final statement")
	}
	st.Lines = []byte(lines)
	return st, nil
}

// ListVolumeCharges lists every volume with the last day charged.
func (s *Store) ListVolumeCharges(ctx context.Context) ([]gpurent.VolumeCharge, error) {
	rows, err := s.query(ctx, `SELECT `+volumeCols+`, charged_through FROM volumes ORDER BY created_at, id`)
	if err != nil {
		return nil, s.dbErr(err, "list volumes")
	}
	defer rows.Close()
	var out []gpurent.VolumeCharge
	for rows.Next() {
		var vc gpurent.VolumeCharge
		v := &vc.Volume
		if err := rows.Scan(&v.ID, &v.InstanceID, &v.AccountID, &v.HostID, &v.SizeGiB, &v.Name, timeCol{&v.CreatedAt},
			nullTimeCol{&v.DeletedAt}, &vc.ChargedThrough); err != nil {
			return nil, s.dbErr(err, "list volumes")
		}
		out = append(out, vc)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list volumes")
	}
	return out, nil
}

// SetVolumeChargedThrough moves a volume's last charged day from prev.
func (s *Store) SetVolumeChargedThrough(ctx context.Context, volumeID, prev, day string) error {
	n, err := s.execN(ctx, `UPDATE volumes SET charged_through = ? WHERE id = ? AND charged_through = ?`, day, volumeID, prev)
	if err != nil {
		return s.dbErr(err, "set volume charge")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "volume %s was charged meanwhile", volumeID)
	}
	return nil
}
