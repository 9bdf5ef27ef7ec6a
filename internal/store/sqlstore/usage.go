package sqlstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// UsageRunID names the run of an allocation that started at t.
func UsageRunID(allocationID string, t time.Time) string {
	return allocationID + "@" + strconv.FormatInt(normTime(t).UnixMicro(), 10)
}

// IngestRunEvent stores a run event under its ID and applies it to its run,
// in one transaction; see gpurent.Queries. It is IngestRunEvents with one
// event.
func (s *Store) IngestRunEvent(ctx context.Context, e *gpurent.RunEvent, payloadHash string, run *gpurent.UsageRun, at time.Time) (bool, error) {
	if e == nil {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "run event is required")
	}
	res, err := s.IngestRunEvents(ctx, []gpurent.RunEvent{*e}, []string{payloadHash}, []*gpurent.UsageRun{run}, at)
	if err != nil {
		return false, err
	}
	if res[0].Err == nil {
		e.StartedAt, e.EndedAt = normTime(e.StartedAt), normTimePtr(e.EndedAt)
	}
	return res[0].Dup, res[0].Err
}

// checkRunEvent refuses a malformed event.
func checkRunEvent(e *gpurent.RunEvent, payloadHash string, run *gpurent.UsageRun) error {
	if e.ID == "" || e.HostID == "" || e.InstanceID == "" || e.AllocationID == "" || e.StartedAt.IsZero() || payloadHash == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "run event: id, host, instance, allocation, start and hash are required")
	}
	if run == nil || run.AccountID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "run event %s: the run's account is required", e.ID)
	}
	switch e.Kind {
	case gpurent.RunStarted:
		if e.EndedAt != nil {
			return gpurent.Errorf(gpurent.CodeInvalid, "run event %s: a start has no end", e.ID)
		}
	case gpurent.RunEnded:
		if e.EndedAt == nil || e.EndedAt.Before(e.StartedAt) {
			return gpurent.Errorf(gpurent.CodeInvalid, "run event %s: an end needs an end time not before the start", e.ID)
		}
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "run event %s: kind must be run_started or run_ended", e.ID)
	}
	return nil
}

// ingestRowsPerStatement bounds the events one statement carries (SQLite
// binds at most 32,766 parameters, 9 per event; PostgreSQL's statement
// takes one array per column, and the bound keeps its work in steps).
const ingestRowsPerStatement = 500

// runEventRow is one event of a batch on its way to the database.
type runEventRow struct {
	i     int // its index in the batch
	e     gpurent.RunEvent
	hash  string
	run   *gpurent.UsageRun
	runID string
}

// IngestRunEvents stores a report's run events and applies them to their
// runs in one transaction; see gpurent.Queries. Each distinct ID is taken
// once (its first well-formed occurrence); a later occurrence is answered
// against what is stored under the ID once the batch is in.
//
// PostgreSQL does it all in one statement per 500 events: the events whose
// references exist are inserted (ON CONFLICT DO NOTHING RETURNING), the
// runs of those inserted upserted from that RETURNING, and each ID answered
// with what happened and the hash stored before. SQLite, whose one writer
// serialises every write transaction, reads the stored hashes and the
// references first, then inserts the new events and upserts their runs,
// merged in report order.
func (s *Store) IngestRunEvents(ctx context.Context, events []gpurent.RunEvent, hashes []string, runs []*gpurent.UsageRun, at time.Time) ([]gpurent.RunEventResult, error) {
	if len(hashes) != len(events) || len(runs) != len(events) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "run events: %d events with %d hashes and %d runs", len(events), len(hashes), len(runs))
	}
	at = nowOr(at)
	res := make([]gpurent.RunEventResult, len(events))
	wellFormed := make([]bool, len(events))
	first := make(map[string]int, len(events)) // id → its first well-formed occurrence
	rows := make([]runEventRow, 0, len(events))
	for i := range events {
		e := events[i]
		if err := checkRunEvent(&e, hashes[i], runs[i]); err != nil {
			res[i].Err = err
			continue
		}
		wellFormed[i] = true
		if _, seen := first[e.ID]; seen {
			continue
		}
		first[e.ID] = i
		e.StartedAt, e.EndedAt = normTime(e.StartedAt), normTimePtr(e.EndedAt)
		rows = append(rows, runEventRow{i: i, e: e, hash: hashes[i], run: runs[i], runID: UsageRunID(e.AllocationID, e.StartedAt)})
	}
	if len(rows) == 0 {
		return res, nil
	}
	// stored is the hash under each ID once the batch is in ("" for none).
	stored := make(map[string]string, len(rows))
	apply := func(st *Store) error {
		clear(stored)
		for k := 0; k < len(rows); k += ingestRowsPerStatement {
			chunk := rows[k:min(k+ingestRowsPerStatement, len(rows))]
			var err error
			if st.d.ModifyingCTEs {
				err = st.ingestPostgres(ctx, chunk, at, res, stored)
			} else {
				err = st.ingestShared(ctx, chunk, at, res, stored)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.batch(ctx, apply); err != nil {
		return nil, err
	}
	for i := range events {
		if !wellFormed[i] || first[events[i].ID] == i {
			continue
		}
		have := stored[events[i].ID]
		switch {
		case have == "":
			res[i] = res[first[events[i].ID]] // refused like the first
		case have == hashes[i]:
			res[i] = gpurent.RunEventResult{Dup: true}
		default:
			res[i].Err = sameRunEventErr(events[i].ID)
		}
	}
	return res, nil
}

// answerStored answers an event whose ID was stored before: a duplicate
// with the same hash, a conflict with another.
func answerStored(r runEventRow, have string, res []gpurent.RunEventResult, stored map[string]string) {
	stored[r.e.ID] = have
	if have == r.hash {
		res[r.i] = gpurent.RunEventResult{Dup: true}
		return
	}
	res[r.i].Err = sameRunEventErr(r.e.ID)
}

func sameRunEventErr(id string) error {
	return gpurent.Errorf(gpurent.CodeConflict, "run event %s was reported before with other content", id)
}

func missingRefErr(id string) error {
	return gpurent.Errorf(gpurent.CodeInvalid, "run event %s refers to a host, instance, allocation or account that does not exist", id)
}

// runEndReason is what a run's end_reason says for an event: an end is
// reported, a start says nothing.
func runEndReason(e *gpurent.RunEvent) string {
	if e.EndedAt != nil {
		return gpurent.RunEndReported
	}
	return ""
}

// runPriceExpr is the share of the list price a new run is billed at: the
// run's own when given (not 0), else the allocation's, copied now. It
// binds the run's share and the allocation id.
const runPriceExpr = `COALESCE(NULLIF(?, 0), (SELECT a.price_permille FROM allocations a WHERE a.id = ?), 0)`

// upsertRunOnConflict makes an insert of a run open it, or end it when open;
// a run ended already keeps its end. An end says the run was alive until
// then: its last sign of life is the end.
const upsertRunOnConflict = ` ON CONFLICT (id) DO UPDATE SET ended_at = excluded.ended_at, end_reason = excluded.end_reason,
last_seen_at = excluded.last_seen_at WHERE usage_runs.ended_at IS NULL AND excluded.ended_at IS NOT NULL`

// ingestPostgres ingests a chunk in one statement. The run upsert takes,
// per run, the first end among the events inserted now (else the first
// start): what applying them one by one leaves. The answer per ID: 'n'
// inserted now, 'h' stored before (with its hash), 'r' a reference that
// does not exist, ” stored by a racing transaction that committed while
// this statement waited (its snapshot did not see it; a new one does).
func (s *Store) ingestPostgres(ctx context.Context, rows []runEventRow, at time.Time, res []gpurent.RunEventResult, stored map[string]string) error {
	// The chunk travels as one array per column (thirteen arrays and
	// the time, whatever its size: one prepared statement serves every
	// chunk size, and the server binds fourteen values rather than
	// fourteen per event). Times are bound as they are: PostgreSQL's
	// dialect encodes a time as itself.
	n := len(rows)
	ids, hosts, kinds, instances, allocs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	starts, ends := make([]time.Time, n), make([]*time.Time, n)
	hashes, runIDs, accounts, types, counts := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	prices := make([]int32, n)
	for k, r := range rows {
		ids[k], hosts[k], kinds[k], instances[k], allocs[k] = r.e.ID, r.e.HostID, r.e.Kind, r.e.InstanceID, r.e.AllocationID
		starts[k], ends[k] = r.e.StartedAt, r.e.EndedAt
		hashes[k], runIDs[k], accounts[k], types[k], counts[k] = r.hash, r.runID, r.run.AccountID, r.run.TypeID, int32(r.run.GPUCount)
		prices[k] = int32(r.run.PricePermille)
	}
	var q strings.Builder
	q.WriteString(`WITH v (ord, id, host_id, kind, instance_id, allocation_id, started_at, ended_at, payload_hash, run_id,
account_id, type_id, gpu_count, price_permille) AS (SELECT CAST(x.ord AS INTEGER) - 1, x.id, x.host_id, x.kind, x.instance_id,
x.allocation_id, x.started_at, x.ended_at, x.payload_hash, x.run_id, x.account_id, x.type_id, x.gpu_count, x.price_permille
FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TIMESTAMPTZ[]),
CAST(? AS TIMESTAMPTZ[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS INTEGER[]),
CAST(? AS INTEGER[]))
WITH ORDINALITY AS x (id, host_id, kind, instance_id, allocation_id, started_at, ended_at, payload_hash, run_id, account_id,
type_id, gpu_count, price_permille, ord)`)
	args := []any{ids, hosts, kinds, instances, allocs, starts, ends, hashes, runIDs, accounts, types, counts, prices}
	q.WriteString(`),
ok AS (SELECT * FROM v WHERE EXISTS (SELECT 1 FROM allocations a WHERE a.id = v.allocation_id)
AND EXISTS (SELECT 1 FROM instances i WHERE i.id = v.instance_id) AND EXISTS (SELECT 1 FROM hosts h WHERE h.id = v.host_id)
AND EXISTS (SELECT 1 FROM accounts c WHERE c.id = v.account_id)),
ev AS (INSERT INTO usage_events (id, host_id, kind, instance_id, allocation_id, started_at, ended_at, payload_hash, received_at)
SELECT id, host_id, kind, instance_id, allocation_id, started_at, ended_at, payload_hash, CAST(? AS TIMESTAMPTZ) FROM ok ORDER BY ord
ON CONFLICT DO NOTHING RETURNING id),
run AS (INSERT INTO usage_runs (id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count, started_at, ended_at,
end_reason, last_seen_at, price_permille)
SELECT DISTINCT ON (ok.run_id) ok.run_id, ok.instance_id, ok.allocation_id, ok.host_id, ok.account_id, ok.type_id, ok.gpu_count,
ok.started_at, ok.ended_at, CASE WHEN ok.ended_at IS NULL THEN '' ELSE '`)
	q.WriteString(gpurent.RunEndReported)
	q.WriteString(`' END, COALESCE(ok.ended_at, ok.started_at),
COALESCE(NULLIF(ok.price_permille, 0), (SELECT a.price_permille FROM allocations a WHERE a.id = ok.allocation_id), 0)
FROM ok JOIN ev ON ev.id = ok.id ORDER BY ok.run_id, ok.ended_at IS NULL, ok.ord`)
	q.WriteString(upsertRunOnConflict)
	q.WriteString(`)
SELECT v.ord, CASE WHEN v.id IN (SELECT id FROM ev) THEN 'n' WHEN e.id IS NOT NULL THEN 'h'
WHEN v.id NOT IN (SELECT id FROM ok) THEN 'r' ELSE '' END, COALESCE(e.payload_hash, '')
FROM v LEFT JOIN usage_events e ON e.id = v.id`)
	args = append(args, s.ts(at))
	rs, err := s.writeRows(ctx, q.String(), args...)
	if err != nil {
		return s.dbErr(err, "store run events")
	}
	var raced []runEventRow
	for rs.Next() {
		var k int
		var state, have string
		if err := rs.Scan(&k, &state, &have); err != nil {
			rs.Close()
			return s.dbErr(err, "store run events")
		}
		if k < 0 || k >= len(rows) {
			rs.Close()
			return gpurent.Errorf(gpurent.CodeInternal, "store run events: row %d answered of %d", k, len(rows))
		}
		r := rows[k]
		switch state {
		case "n":
			stored[r.e.ID] = r.hash
		case "h":
			answerStored(r, have, res, stored)
		case "r":
			res[r.i].Err = missingRefErr(r.e.ID)
		default:
			raced = append(raced, r)
		}
	}
	err = rs.Err()
	rs.Close()
	if err != nil {
		return s.dbErr(err, "store run events")
	}
	if len(raced) == 0 {
		return nil
	}
	have, err := s.storedHashes(ctx, raced)
	if err != nil {
		return err
	}
	for _, r := range raced {
		h, ok := have[r.e.ID]
		if !ok {
			return gpurent.Errorf(gpurent.CodeInternal, "run event %s was neither stored nor found", r.e.ID)
		}
		answerStored(r, h, res, stored)
	}
	return nil
}

// storedHashes reads the hashes stored under the rows' IDs.
func (s *Store) storedHashes(ctx context.Context, rows []runEventRow) (map[string]string, error) {
	args := make([]any, len(rows))
	for k, r := range rows {
		args[k] = r.e.ID
	}
	rs, err := s.query(ctx, `SELECT id, payload_hash FROM usage_events WHERE id IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return nil, s.dbErr(err, "read run events")
	}
	defer rs.Close()
	out := make(map[string]string, len(rows))
	for rs.Next() {
		var id, h string
		if err := rs.Scan(&id, &h); err != nil {
			return nil, s.dbErr(err, "read run events")
		}
		out[id] = h
	}
	if err := rs.Err(); err != nil {
		return nil, s.dbErr(err, "read run events")
	}
	return out, nil
}

// ingestShared ingests a chunk with three statements (SQLite, inside the
// batch's transaction or savepoint, where no other writer can interleave):
// read the hashes stored under the IDs and which references exist; insert
// the new events; upsert their runs, merged in report order.
func (s *Store) ingestShared(ctx context.Context, rows []runEventRow, at time.Time, res []gpurent.RunEventResult, stored map[string]string) error {
	have, refs, err := s.readIngestState(ctx, rows)
	if err != nil {
		return err
	}
	type runRow struct {
		r      runEventRow // the event that made the row
		ended  *time.Time
		reason string
		seen   time.Time
	}
	merged := make(map[string]*runRow)
	var q strings.Builder
	args := make([]any, 0, 9*len(rows))
	q.WriteString(`INSERT INTO usage_events (id, host_id, kind, instance_id, allocation_id, started_at, ended_at, payload_hash,
received_at) VALUES `)
	n := 0
	for _, r := range rows {
		if h, ok := have[r.e.ID]; ok {
			answerStored(r, h, res, stored)
			continue
		}
		if !refs["a"+r.e.AllocationID] || !refs["i"+r.e.InstanceID] || !refs["h"+r.e.HostID] || !refs["c"+r.run.AccountID] {
			res[r.i].Err = missingRefErr(r.e.ID)
			continue
		}
		stored[r.e.ID] = r.hash
		if n > 0 {
			q.WriteString(", ")
		}
		n++
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.e.ID, r.e.HostID, r.e.Kind, r.e.InstanceID, r.e.AllocationID, s.ts(r.e.StartedAt), s.tsp(r.e.EndedAt),
			r.hash, s.ts(at))
		// Applied one by one, the first event makes the run, and the
		// first end ends it: later ones change nothing.
		m := merged[r.runID]
		switch {
		case m == nil:
			m = &runRow{r: r, ended: r.e.EndedAt, reason: runEndReason(&r.e), seen: r.e.StartedAt}
			if r.e.EndedAt != nil {
				m.seen = *r.e.EndedAt
			}
			merged[r.runID] = m
		case m.ended == nil && r.e.EndedAt != nil:
			m.ended, m.reason, m.seen = r.e.EndedAt, gpurent.RunEndReported, *r.e.EndedAt
		}
	}
	if n == 0 {
		return nil
	}
	if _, err := s.exec(ctx, q.String(), args...); err != nil {
		return s.dbErr(err, "store run events")
	}
	ids := make([]string, 0, len(merged))
	for id := range merged {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one lock order for every writer
	q.Reset()
	args = args[:0]
	q.WriteString(`INSERT INTO usage_runs (id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count, started_at,
ended_at, end_reason, last_seen_at, price_permille) VALUES `)
	for k, id := range ids {
		m := merged[id]
		if k > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " + runPriceExpr + ")")
		args = append(args, id, m.r.e.InstanceID, m.r.e.AllocationID, m.r.e.HostID, m.r.run.AccountID, m.r.run.TypeID,
			m.r.run.GPUCount, s.ts(m.r.e.StartedAt), s.tsp(m.ended), m.reason, s.ts(m.seen),
			m.r.run.PricePermille, m.r.e.AllocationID)
	}
	q.WriteString(upsertRunOnConflict)
	if _, err := s.exec(ctx, q.String(), args...); err != nil {
		// The events are in: the batch must not commit.
		return gpurent.WrapError(gpurent.CodeInternal, err, "apply run events")
	}
	return nil
}

// readIngestState reads, in one query, the hashes stored under the rows'
// IDs and which of the hosts, instances, allocations and accounts they
// name exist (keyed "h", "i", "a", "c" + id).
func (s *Store) readIngestState(ctx context.Context, rows []runEventRow) (map[string]string, map[string]bool, error) {
	sets := [5]map[string]bool{}
	for k := range sets {
		sets[k] = map[string]bool{}
	}
	for _, r := range rows {
		sets[0][r.e.ID] = true
		sets[1][r.e.AllocationID] = true
		sets[2][r.e.InstanceID] = true
		sets[3][r.e.HostID] = true
		sets[4][r.run.AccountID] = true
	}
	tables := [5]struct{ tag, sel string }{
		{"e", `SELECT 'e', id, payload_hash FROM usage_events`},
		{"a", `SELECT 'a', id, '' FROM allocations`},
		{"i", `SELECT 'i', id, '' FROM instances`},
		{"h", `SELECT 'h', id, '' FROM hosts`},
		{"c", `SELECT 'c', id, '' FROM accounts`},
	}
	var q strings.Builder
	var args []any
	for k, t := range tables {
		if k > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString(t.sel)
		q.WriteString(" WHERE id IN (")
		q.WriteString(placeholders(len(sets[k])))
		q.WriteString(")")
		for id := range sets[k] {
			args = append(args, id)
		}
	}
	rs, err := s.query(ctx, q.String(), args...)
	if err != nil {
		return nil, nil, s.dbErr(err, "read run events")
	}
	defer rs.Close()
	have := map[string]string{}
	refs := map[string]bool{}
	for rs.Next() {
		var tag, id, h string
		if err := rs.Scan(&tag, &id, &h); err != nil {
			return nil, nil, s.dbErr(err, "read run events")
		}
		if tag == "e" {
			have[id] = h
		} else {
			refs[tag+id] = true
		}
	}
	if err := rs.Err(); err != nil {
		return nil, nil, s.dbErr(err, "read run events")
	}
	return have, refs, nil
}

// TouchRun moves an open run's LastSeenAt forward to at, only if the run
// and its allocation are on the host hostID.
func (s *Store) TouchRun(ctx context.Context, hostID, allocationID string, startedAt, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE usage_runs SET last_seen_at = ? WHERE id = ? AND host_id = ? AND ended_at IS NULL
AND last_seen_at < ? AND EXISTS (SELECT 1 FROM allocations a WHERE a.id = usage_runs.allocation_id AND a.host_id = ?)`,
		s.ts(at), UsageRunID(allocationID, startedAt), hostID, s.ts(at), hostID)
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
last_seen_at, debited_fen, settled, price_permille FROM usage_runs WHERE 1 = 1`
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
	if !f.Since.IsZero() {
		q += ` AND (ended_at IS NULL OR ended_at >= ?)`
		args = append(args, s.ts(f.Since))
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
			timeCol{&r.StartedAt}, nullTimeCol{&r.EndedAt}, &r.EndReason, timeCol{&r.LastSeenAt}, &r.DebitedFen, &r.Settled,
			&r.PricePermille); err != nil {
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
