package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

func (s *Store) accountText(ctx context.Context, col, accountID string) (string, error) {
	var v string
	err := s.queryRow(ctx, `SELECT `+col+` FROM accounts WHERE id = ?`, accountID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("account", accountID)
	}
	if err != nil {
		return "", s.dbErr(err, "read account")
	}
	return v, nil
}

// WebhookURL returns where the account's alerts go ("" for nowhere).
func (s *Store) WebhookURL(ctx context.Context, accountID string) (string, error) {
	return s.accountText(ctx, "webhook_url", accountID)
}

// SetWebhookURL sets where the account's alerts go.
func (s *Store) SetWebhookURL(ctx context.Context, accountID, url string) error {
	n, err := s.execN(ctx, `UPDATE accounts SET webhook_url = ? WHERE id = ?`, url, accountID)
	if err != nil {
		return s.dbErr(err, "set webhook")
	}
	if n == 0 {
		return notFound("account", accountID)
	}
	return nil
}

// RunwayAlert returns the last runway alert level sent ("" for none).
func (s *Store) RunwayAlert(ctx context.Context, accountID string) (string, error) {
	return s.accountText(ctx, "runway_alert", accountID)
}

// SetRunwayAlert moves the alert level from one value to another.
func (s *Store) SetRunwayAlert(ctx context.Context, accountID, from, to string) (bool, error) {
	n, err := s.execN(ctx, `UPDATE accounts SET runway_alert = ? WHERE id = ? AND runway_alert = ?`, to, accountID, from)
	if err != nil {
		return false, s.dbErr(err, "set runway alert")
	}
	return n == 1, nil
}

// AddAccountEvent appends an event to the account's history.
func (s *Store) AddAccountEvent(ctx context.Context, e *gpurent.AccountEvent) error {
	e.At = nowOr(e.At)
	_, err := s.exec(ctx, `INSERT INTO account_events (account_id, at, kind, message) VALUES (?, ?, ?, ?)`,
		e.AccountID, s.ts(e.At), e.Kind, e.Message)
	if err != nil {
		return s.dbErr(err, "add account event")
	}
	return nil
}

// ListAccountEvents returns the account's newest events first.
func (s *Store) ListAccountEvents(ctx context.Context, accountID string, limit int) ([]gpurent.AccountEvent, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT seq, account_id, at, kind, message FROM account_events WHERE account_id = ?
ORDER BY seq DESC LIMIT ?`, accountID, limit)
	if err != nil {
		return nil, s.dbErr(err, "list account events")
	}
	defer rows.Close()
	var out []gpurent.AccountEvent
	for rows.Next() {
		var e gpurent.AccountEvent
		if err := rows.Scan(&e.Seq, &e.AccountID, timeCol{&e.At}, &e.Kind, &e.Message); err != nil {
			return nil, s.dbErr(err, "list account events")
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list account events")
	}
	return out, nil
}

// Arrears returns when the account fell into arrears and the last notice.
func (s *Store) Arrears(ctx context.Context, accountID string) (*time.Time, string, error) {
	var since *time.Time
	var notice string
	err := s.queryRow(ctx, `SELECT arrears_since, arrears_notice FROM accounts WHERE id = ?`, accountID).
		Scan(nullTimeCol{&since}, &notice)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", notFound("account", accountID)
	}
	if err != nil {
		return nil, "", s.dbErr(err, "read arrears")
	}
	return since, notice, nil
}

// SetArrears records when the account fell into arrears, or (nil) that it
// is out of them.
func (s *Store) SetArrears(ctx context.Context, accountID string, since *time.Time) error {
	n, err := s.execN(ctx, `UPDATE accounts SET arrears_since = ?, arrears_notice = CASE WHEN ? THEN '' ELSE arrears_notice END
WHERE id = ?`, s.tsp(since), since == nil, accountID)
	if err != nil {
		return s.dbErr(err, "set arrears")
	}
	if n == 0 {
		return notFound("account", accountID)
	}
	return nil
}

// SetArrearsNotice moves the last release notice from prev to notice.
func (s *Store) SetArrearsNotice(ctx context.Context, accountID, prev, notice string) (bool, error) {
	n, err := s.execN(ctx, `UPDATE accounts SET arrears_notice = ? WHERE id = ? AND arrears_notice = ?`, notice, accountID, prev)
	if err != nil {
		return false, s.dbErr(err, "set arrears notice")
	}
	return n == 1, nil
}
