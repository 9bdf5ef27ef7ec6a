package sqlstore

import (
	"context"
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
	runID := UsageRunID(e.AllocationID, e.StartedAt)
	dup := false
	err := s.atomic(ctx, func(st *Store) error {
		n, err := st.execN(ctx, `INSERT INTO usage_events (id, host_id, kind, instance_id, allocation_id, started_at, ended_at,
payload_hash, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			e.ID, e.HostID, e.Kind, e.InstanceID, e.AllocationID, st.ts(e.StartedAt), st.tsp(e.EndedAt), payloadHash, st.ts(at))
		if err != nil {
			return st.dbErr(err, "store run event")
		}
		if n == 0 {
			var have string
			if err := st.queryRow(ctx, `SELECT payload_hash FROM usage_events WHERE id = ?`, e.ID).Scan(&have); err != nil {
				return st.dbErr(err, "read run event")
			}
			if have != payloadHash {
				return gpurent.Errorf(gpurent.CodeConflict, "run event %s was reported before with other content", e.ID)
			}
			dup = true
			return nil
		}
		// A start says the run was alive at its start, no later: reports
		// that see it running move its last sign of life (TouchRun).
		seen := e.StartedAt
		if e.EndedAt != nil {
			seen = *e.EndedAt
		}
		if seen.Before(e.StartedAt) {
			seen = e.StartedAt
		}
		if _, err := st.exec(ctx, `INSERT INTO usage_runs (id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count,
started_at, ended_at, end_reason, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '', ?) ON CONFLICT DO NOTHING`,
			runID, e.InstanceID, e.AllocationID, e.HostID, run.AccountID, run.TypeID, run.GPUCount, st.ts(e.StartedAt), st.ts(seen)); err != nil {
			return st.dbErr(err, "open usage run")
		}
		if e.Kind == gpurent.RunEnded {
			// A run closed already (reported, or at a silent host's last
			// heartbeat) keeps its end: nobody is billed for the unknown.
			if _, err := st.exec(ctx, `UPDATE usage_runs SET ended_at = ?, end_reason = ?, last_seen_at = ?
WHERE id = ? AND ended_at IS NULL`, st.tsp(e.EndedAt), gpurent.RunEndReported, st.tsp(e.EndedAt), runID); err != nil {
				return st.dbErr(err, "end usage run")
			}
		}
		return nil
	})
	return dup, err
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
