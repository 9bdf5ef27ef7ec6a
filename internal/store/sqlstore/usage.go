package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
)

// UsageRunID names the run of an allocation that started at t.
func UsageRunID(allocationID string, t time.Time) string {
	return allocationID + "@" + strconv.FormatInt(normTime(t).UnixMicro(), 10)
}

// IngestRunEvent stores a run event under its ID and applies it to its run,
// in one transaction; see gpurent.Queries.
func (s *Store) IngestRunEvent(ctx context.Context, e *gpurent.RunEvent, payloadHash string, run *gpurent.UsageRun, at time.Time) (bool, error) {
	if e.ID == "" || e.HostID == "" || e.InstanceID == "" || e.AllocationID == "" || e.StartedAt.IsZero() || payloadHash == "" {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "run event: id, host, instance, allocation, start and hash are required")
	}
	switch e.Kind {
	case gpurent.RunStarted:
		if e.EndedAt != nil {
			return false, gpurent.Errorf(gpurent.CodeInvalid, "run event %s: a start has no end", e.ID)
		}
	case gpurent.RunEnded:
		if e.EndedAt == nil || e.EndedAt.Before(e.StartedAt) {
			return false, gpurent.Errorf(gpurent.CodeInvalid, "run event %s: an end needs an end time not before the start", e.ID)
		}
	default:
		return false, gpurent.Errorf(gpurent.CodeInvalid, "run event %s: kind must be run_started or run_ended", e.ID)
	}
	at = nowOr(at)
	e.StartedAt, e.EndedAt = normTime(e.StartedAt), normTimePtr(e.EndedAt)
	// A start says the run was alive at its start, no later: reports that
	// see it running move its last sign of life (TouchRun). An end closes
	// the run, unless it was closed already (reported, or at a silent
	// host's last heartbeat): nobody is billed for the unknown. One upsert
	// does both, for a run whose start arrived or not.
	r := runRow{id: UsageRunID(e.AllocationID, e.StartedAt), seen: e.StartedAt}
	if e.EndedAt != nil {
		r.ended, r.reason = e.EndedAt, gpurent.RunEndReported
		if e.EndedAt.After(r.seen) {
			r.seen = *e.EndedAt
		}
	}
	if s.d.Name == "postgres" {
		return s.ingestPostgres(ctx, e, payloadHash, run, r, at)
	}
	return s.ingestShared(ctx, e, payloadHash, run, r, at)
}

// runRow is what an event writes to its run.
type runRow struct {
	id     string
	ended  *time.Time
	reason string
	seen   time.Time
}

// upsertRunOnConflict makes an insert of a run open it, or end it when open;
// a run ended already keeps its end.
const upsertRunOnConflict = ` ON CONFLICT (id) DO UPDATE SET ended_at = excluded.ended_at, end_reason = excluded.end_reason,
last_seen_at = excluded.last_seen_at WHERE usage_runs.ended_at IS NULL AND excluded.ended_at IS NOT NULL`

// ingestPostgres stores the event and applies it to its run in one
// statement: one round trip, atomic by itself, so no savepoint is needed
// inside a surrounding transaction (where an error aborts that transaction,
// so nothing half-done can commit).
func (s *Store) ingestPostgres(ctx context.Context, e *gpurent.RunEvent, payloadHash string, run *gpurent.UsageRun, r runRow, at time.Time) (bool, error) {
	var inserted int
	var have string
	err := s.writeRow(ctx, `WITH ev AS (INSERT INTO usage_events (id, host_id, kind, instance_id, allocation_id, started_at, ended_at,
payload_hash, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id),
run AS (INSERT INTO usage_runs (id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count, started_at, ended_at,
end_reason, last_seen_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER),
CAST(? AS TIMESTAMPTZ), CAST(? AS TIMESTAMPTZ), CAST(? AS TEXT), CAST(? AS TIMESTAMPTZ) FROM ev`+upsertRunOnConflict+`)
SELECT (SELECT COUNT(*) FROM ev), COALESCE((SELECT payload_hash FROM usage_events WHERE id = ?), '')`,
		e.ID, e.HostID, e.Kind, e.InstanceID, e.AllocationID, s.ts(e.StartedAt), s.tsp(e.EndedAt), payloadHash, s.ts(at),
		r.id, e.InstanceID, e.AllocationID, e.HostID, run.AccountID, run.TypeID, run.GPUCount,
		s.ts(e.StartedAt), s.tsp(r.ended), r.reason, s.ts(r.seen),
		e.ID).Scan(&inserted, &have)
	if err != nil {
		return false, s.dbErr(err, "store run event")
	}
	if inserted == 1 {
		return false, nil
	}
	if have == "" {
		// Stored by a racing transaction that committed while this
		// statement waited: its snapshot did not see it; a new one does.
		if err := s.queryRow(ctx, `SELECT payload_hash FROM usage_events WHERE id = ?`, e.ID).Scan(&have); err != nil {
			return false, s.dbErr(err, "read run event")
		}
	}
	return sameRunEvent(e.ID, have, payloadHash)
}

// ingestShared stores the event and applies it to its run with three
// statements and no savepoint (SQLite, whose one writer serialises every
// write transaction): look the id up; apply the event to its run, the
// statement that may fail on a bad reference, before anything is written;
// then store the event.
func (s *Store) ingestShared(ctx context.Context, e *gpurent.RunEvent, payloadHash string, run *gpurent.UsageRun, r runRow, at time.Time) (bool, error) {
	dup := false
	apply := func(st *Store) error {
		var have string
		err := st.queryRow(ctx, `SELECT payload_hash FROM usage_events WHERE id = ?`, e.ID).Scan(&have)
		if err == nil {
			dup, err = sameRunEvent(e.ID, have, payloadHash)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return st.dbErr(err, "read run event")
		}
		if _, err := st.exec(ctx, `INSERT INTO usage_runs (id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count,
started_at, ended_at, end_reason, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`+upsertRunOnConflict,
			r.id, e.InstanceID, e.AllocationID, e.HostID, run.AccountID, run.TypeID, run.GPUCount,
			st.ts(e.StartedAt), st.tsp(r.ended), r.reason, st.ts(r.seen)); err != nil {
			return st.dbErr(err, "apply run event")
		}
		if _, err := st.exec(ctx, `INSERT INTO usage_events (id, host_id, kind, instance_id, allocation_id, started_at, ended_at,
payload_hash, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, e.HostID, e.Kind, e.InstanceID, e.AllocationID, st.ts(e.StartedAt), st.tsp(e.EndedAt), payloadHash, st.ts(at)); err != nil {
			// Never taken for a refusal: the run moved already, so the
			// surrounding transaction must not commit.
			return gpurent.WrapError(gpurent.CodeInternal, err, "store run event %s", e.ID)
		}
		return nil
	}
	if s.tx != nil {
		return dup, apply(s)
	}
	err := s.atomic(ctx, apply)
	return dup, err
}

// sameRunEvent answers a stored event's id seen again: a duplicate with the
// same content, a conflict with other content.
func sameRunEvent(id, have, payloadHash string) (bool, error) {
	if have != payloadHash {
		return false, gpurent.Errorf(gpurent.CodeConflict, "run event %s was reported before with other content", id)
	}
	return true, nil
}

// TouchRun moves an open run's LastSeenAt forward to at.
func (s *Store) TouchRun(ctx context.Context, allocationID string, startedAt, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE usage_runs SET last_seen_at = ? WHERE id = ? AND ended_at IS NULL AND last_seen_at < ?`,
		s.ts(at), UsageRunID(allocationID, startedAt), s.ts(at))
	if err != nil {
		return s.dbErr(err, "touch usage runs")
	}
	return nil
}

// CloseSilentRuns ends the host's open runs at their last heartbeat.
func (s *Store) CloseSilentRuns(ctx context.Context, hostID string) (int, error) {
	n, err := s.execN(ctx, `UPDATE usage_runs SET ended_at = last_seen_at, end_reason = ? WHERE host_id = ? AND ended_at IS NULL`,
		gpurent.RunEndHostSilent, hostID)
	if err != nil {
		return 0, s.dbErr(err, "close silent usage runs")
	}
	return int(n), nil
}

// ListUsageRuns lists runs by start.
func (s *Store) ListUsageRuns(ctx context.Context, f gpurent.UsageRunFilter) ([]gpurent.UsageRun, error) {
	q := `SELECT id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count, started_at, ended_at, end_reason,
last_seen_at, debited_fen, settled FROM usage_runs WHERE 1 = 1`
	var args []any
	if f.AccountID != "" {
		q += ` AND account_id = ?`
		args = append(args, f.AccountID)
	}
	if f.InstanceID != "" {
		q += ` AND instance_id = ?`
		args = append(args, f.InstanceID)
	}
	if f.HostID != "" {
		q += ` AND host_id = ?`
		args = append(args, f.HostID)
	}
	if f.OpenOnly {
		q += ` AND ended_at IS NULL`
	}
	if f.UnsettledOnly {
		q += ` AND NOT settled`
	}
	rows, err := s.query(ctx, q+` ORDER BY started_at, id`, args...)
	if err != nil {
		return nil, s.dbErr(err, "list usage runs")
	}
	defer rows.Close()
	var out []gpurent.UsageRun
	for rows.Next() {
		var r gpurent.UsageRun
		if err := rows.Scan(&r.ID, &r.InstanceID, &r.AllocationID, &r.HostID, &r.AccountID, &r.TypeID, &r.GPUCount,
			timeCol{&r.StartedAt}, nullTimeCol{&r.EndedAt}, &r.EndReason, timeCol{&r.LastSeenAt}, &r.DebitedFen, &r.Settled); err != nil {
			return nil, s.dbErr(err, "list usage runs")
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list usage runs")
	}
	return out, nil
}

// RecordRunDebit moves a run's debited amount from prev to debited.
func (s *Store) RecordRunDebit(ctx context.Context, runID string, prev, debited int64, settled bool) error {
	n, err := s.execN(ctx, `UPDATE usage_runs SET debited_fen = ?, settled = ? WHERE id = ? AND debited_fen = ? AND NOT settled`,
		debited, settled, runID, prev)
	if err != nil {
		return s.dbErr(err, "record run debit")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "run %s was debited meanwhile", runID)
	}
	return nil
}
