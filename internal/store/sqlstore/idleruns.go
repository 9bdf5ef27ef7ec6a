package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

// FlagIdleRun marks the GPU for a run when idle; an existing flag stays.
func (s *Store) FlagIdleRun(ctx context.Context, f *gpurent.IdleRunFlag) error {
	if f.GPUID == "" || f.HostID == "" || f.JobID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "an idle-run flag needs its GPU, host and job")
	}
	f.FlaggedAt = nowOr(f.FlaggedAt)
	_, err := s.exec(ctx, `INSERT INTO idle_run_flags (gpu_id, host_id, job_id, reason, flagged_at)
SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM gpus WHERE id = ?) ON CONFLICT (gpu_id) DO NOTHING`,
		f.GPUID, f.HostID, f.JobID, f.Reason, s.ts(f.FlaggedAt), f.GPUID)
	return s.dbErr(err, "flag GPU for an idle run")
}

// ListIdleRunFlags lists the flags of hostID's GPUs, or ("") of all.
func (s *Store) ListIdleRunFlags(ctx context.Context, hostID string) ([]gpurent.IdleRunFlag, error) {
	q := `SELECT gpu_id, host_id, job_id, reason, flagged_at FROM idle_run_flags`
	var args []any
	if hostID != "" {
		q += ` WHERE host_id = ?`
		args = append(args, hostID)
	}
	return queryAll(ctx, s, "list idle-run flags", q+` ORDER BY flagged_at, gpu_id`, func(r rowScanner) (gpurent.IdleRunFlag, error) {
		var f gpurent.IdleRunFlag
		err := r.Scan(&f.GPUID, &f.HostID, &f.JobID, &f.Reason, timeCol{&f.FlaggedAt})
		return f, err
	}, args...)
}

// ClearIdleRunFlags removes the GPUs' flags set at or before at.
func (s *Store) ClearIdleRunFlags(ctx context.Context, gpuIDs []string, at time.Time) error {
	if len(gpuIDs) == 0 {
		return nil
	}
	args := []any{s.ts(at)}
	for _, id := range gpuIDs {
		args = append(args, id)
	}
	_, err := s.exec(ctx, `DELETE FROM idle_run_flags WHERE flagged_at <= ? AND gpu_id IN (`+placeholders(len(gpuIDs))+`)`, args...)
	return s.dbErr(err, "clear idle-run flags")
}

// SetEmailVerified records that the account proved the address.
func (s *Store) SetEmailVerified(ctx context.Context, accountID, email string, at time.Time) error {
	if accountID == "" || email == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "a verified address needs its account and e-mail")
	}
	_, err := s.exec(ctx, `INSERT INTO email_verifications (account_id, email, verified_at) VALUES (?, ?, ?)
ON CONFLICT (account_id, email) DO NOTHING`, accountID, email, s.ts(nowOr(at)))
	if s.d.Classify(err) == ErrForeignKey {
		return notFound("account", accountID)
	}
	return s.dbErr(err, "record a verified e-mail address")
}

// EmailVerifiedAt answers when the account proved the address, or nil.
func (s *Store) EmailVerifiedAt(ctx context.Context, accountID, email string) (*time.Time, error) {
	var at time.Time
	err := s.queryRow(ctx, `SELECT verified_at FROM email_verifications WHERE account_id = ? AND email = ?`, accountID, email).
		Scan(timeCol{&at})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.dbErr(err, "read a verified e-mail address")
	}
	return &at, nil
}
