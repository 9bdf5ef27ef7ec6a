package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// GPU health events, GPU health, incidents and their timelines.

const gpuEventCols = `id, host_id, gpu_id, at, kind, xid, detail`

// gpuEventBatch is how many events one INSERT carries: 7 values a row stays
// far below both backends' limits on bound values.
const gpuEventBatch = 500

func scanGPUEvent(r rowScanner) (gpurent.GPUEvent, error) {
	var e gpurent.GPUEvent
	err := r.Scan(&e.ID, &e.HostID, &e.GPUID, timeCol{&e.At}, &e.Kind, &e.Xid, &e.Detail)
	return e, err
}

// AddGPUEvents stores evs by their ID and answers how many were new: an ID
// stored before, or met earlier in evs, is skipped. It writes all of them
// or none, in one statement per 500 events inside one transaction. Each
// event needs a HostID of a known host (invalid otherwise) and a Kind; an
// event without an ID gets a new one and a zero At the time now, written
// back into evs, whose times are also normalised to what is stored.
func (s *Store) AddGPUEvents(ctx context.Context, evs []gpurent.GPUEvent) (int, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	seen := make(map[string]bool, len(evs))
	fresh := make([]int, 0, len(evs)) // indexes of evs to insert, first of each ID
	for i := range evs {
		e := &evs[i]
		if e.HostID == "" {
			return 0, gpurent.Errorf(gpurent.CodeInvalid, "GPU event host is required")
		}
		if e.Kind == "" {
			return 0, gpurent.Errorf(gpurent.CodeInvalid, "GPU event kind is required")
		}
		if e.Xid < 0 {
			return 0, gpurent.Errorf(gpurent.CodeInvalid, "GPU event Xid cannot be negative")
		}
	}
	now := nowOr(time.Time{})
	for i := range evs {
		e := &evs[i]
		if e.ID == "" {
			e.ID = gpurent.NewID(gpurent.PrefixGPUEvent)
		}
		if e.At.IsZero() {
			e.At = now
		}
		e.At = normTime(e.At)
		if !seen[e.ID] {
			seen[e.ID] = true
			fresh = append(fresh, i)
		}
	}
	added := 0
	err := s.atomic(ctx, func(st *Store) error {
		for start := 0; start < len(fresh); start += gpuEventBatch {
			part := fresh[start:min(start+gpuEventBatch, len(fresh))]
			var q strings.Builder
			q.WriteString(`INSERT INTO gpu_events (` + gpuEventCols + `) VALUES `)
			args := make([]any, 0, len(part)*7)
			for j, i := range part {
				if j > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
				e := &evs[i]
				args = append(args, e.ID, e.HostID, e.GPUID, st.ts(e.At), e.Kind, e.Xid, e.Detail)
			}
			q.WriteString(` ON CONFLICT (id) DO NOTHING`)
			n, err := st.execN(ctx, q.String(), args...)
			if err != nil {
				return st.dbErr(err, "add GPU events")
			}
			added += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// ListGPUEvents returns the events f selects (At at or after f.Since when
// set): oldest first, or, with a Limit, the newest Limit events newest
// first. Ties in time go by insertion order.
func (s *Store) ListGPUEvents(ctx context.Context, f gpurent.GPUEventFilter) ([]gpurent.GPUEvent, error) {
	if f.Limit < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU event limit cannot be negative")
	}
	var conds []string
	var args []any
	if f.HostID != "" {
		conds = append(conds, "host_id = ?")
		args = append(args, f.HostID)
	}
	if f.GPUID != "" {
		conds = append(conds, "gpu_id = ?")
		args = append(args, f.GPUID)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "at >= ?")
		args = append(args, s.ts(f.Since))
	}
	q := `SELECT ` + gpuEventCols + ` FROM gpu_events`
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	if f.Limit > 0 {
		q += ` ORDER BY at DESC, seq DESC LIMIT ?`
		args = append(args, f.Limit)
	} else {
		q += ` ORDER BY at, seq`
	}
	return queryAll(ctx, s, "list GPU events", q, scanGPUEvent, args...)
}

// checkGPUHealth refuses a health the store does not know.
func checkGPUHealth(h gpurent.GPUHealth) error {
	switch h {
	case gpurent.GPUHealthy, gpurent.GPUDegraded, gpurent.GPUCordoned, gpurent.GPUFailed,
		gpurent.GPURetired, gpurent.GPUMissing:
		return nil
	}
	return gpurent.Errorf(gpurent.CodeInvalid, "unknown GPU health %q", h)
}

// SetGPUHealth sets the GPU's health and the reason for it (not_found for
// an unknown GPU).
func (s *Store) SetGPUHealth(ctx context.Context, gpuID string, h gpurent.GPUHealth, reason string) error {
	if err := checkGPUHealth(h); err != nil {
		return err
	}
	n, err := s.execN(ctx, `UPDATE gpus SET health = ?, health_reason = ? WHERE id = ?`, string(h), reason, gpuID)
	if err != nil {
		return s.dbErr(err, "set GPU health")
	}
	if n == 0 {
		return notFound("GPU", gpuID)
	}
	return nil
}

const incidentCols = `id, host_id, gpu_id, instance_id, account_id, class, attribution, cause, state,
started_at, ended_at, credit_fen, credit_key, created_at, updated_at`

func scanIncident(r rowScanner) (*gpurent.Incident, error) {
	var in gpurent.Incident
	var class, attr, state string
	err := r.Scan(&in.ID, &in.HostID, &in.GPUID, &in.InstanceID, &in.AccountID, &class, &attr, &in.Cause, &state,
		timeCol{&in.StartedAt}, nullTimeCol{&in.EndedAt}, &in.CreditFen, &in.CreditKey,
		timeCol{&in.CreatedAt}, timeCol{&in.UpdatedAt})
	if err != nil {
		return nil, err
	}
	in.Class = gpurent.FaultClass(class)
	in.Attribution = gpurent.Attribution(attr)
	in.State = gpurent.IncidentState(state)
	return &in, nil
}

// checkIncident validates what the store keeps consistent about an
// incident: a known class, attribution and state, no negative credit, and
// EndedAt set exactly when resolved (a resolved incident without EndedAt
// is given endedDefault).
func checkIncident(in *gpurent.Incident, endedDefault time.Time) error {
	switch in.Class {
	case gpurent.FaultApp, gpurent.FaultInfo, gpurent.FaultReset, gpurent.FaultDrainReset, gpurent.FaultNode,
		gpurent.FaultRMA, gpurent.FaultDegraded, gpurent.FaultHost, gpurent.FaultHostDown, gpurent.FaultUnknown:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "unknown fault class %q", in.Class)
	}
	switch in.Attribution {
	case gpurent.AttrHost, gpurent.AttrTenant, gpurent.AttrNone:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "unknown fault attribution %q", in.Attribution)
	}
	if in.CreditFen < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "incident credit cannot be negative")
	}
	switch in.State {
	case gpurent.IncidentOpen:
		if in.EndedAt != nil {
			return gpurent.Errorf(gpurent.CodeInvalid, "an open incident cannot have ended")
		}
	case gpurent.IncidentResolved:
		if in.EndedAt == nil {
			in.EndedAt = &endedDefault
		}
		in.EndedAt = normTimePtr(in.EndedAt)
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "unknown incident state %q", in.State)
	}
	return nil
}

// CreateIncident inserts in. An empty ID gets a new one, an empty State
// open, a zero CreatedAt now, a zero UpdatedAt CreatedAt, a zero StartedAt
// CreatedAt, and a resolved incident without EndedAt the time UpdatedAt;
// in is updated to what was stored. HostID is required; the class,
// attribution and state must be known ones, and EndedAt is set exactly
// when resolved, not before StartedAt. A used ID is a conflict.
func (s *Store) CreateIncident(ctx context.Context, in *gpurent.Incident) error {
	if in.HostID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "incident host is required")
	}
	if in.State == "" {
		in.State = gpurent.IncidentOpen
	}
	created := nowOr(in.CreatedAt)
	updated := created
	if !in.UpdatedAt.IsZero() {
		updated = normTime(in.UpdatedAt)
	}
	started := created
	if !in.StartedAt.IsZero() {
		started = normTime(in.StartedAt)
	}
	ended := in.EndedAt
	if err := checkIncident(in, updated); err != nil {
		in.EndedAt = ended
		return err
	}
	if in.EndedAt != nil && in.EndedAt.Before(started) {
		in.EndedAt = ended
		return gpurent.Errorf(gpurent.CodeInvalid, "incident cannot end before it started")
	}
	if in.ID == "" {
		in.ID = gpurent.NewID(gpurent.PrefixIncident)
	}
	in.CreatedAt, in.UpdatedAt, in.StartedAt = created, updated, started
	n, err := s.execN(ctx, `INSERT INTO incidents (`+incidentCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		in.ID, in.HostID, in.GPUID, in.InstanceID, in.AccountID, string(in.Class), string(in.Attribution),
		in.Cause, string(in.State), s.ts(in.StartedAt), s.tsp(in.EndedAt), in.CreditFen, in.CreditKey,
		s.ts(in.CreatedAt), s.ts(in.UpdatedAt))
	if err != nil {
		return s.dbErr(err, "create incident")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "incident %q already exists", in.ID)
	}
	return nil
}

// IncidentByID returns the incident with id.
func (s *Store) IncidentByID(ctx context.Context, id string) (*gpurent.Incident, error) {
	in, err := scanIncident(s.queryRow(ctx, `SELECT `+incidentCols+` FROM incidents WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("incident", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read incident")
	}
	return in, nil
}

// UpdateIncident writes State, EndedAt, Cause, Class, Attribution,
// CreditFen, CreditKey and UpdatedAt (now when zero); not_found for an
// unknown id. A resolved incident without EndedAt gets the update time; an
// open one with it is invalid. in is updated to what was stored.
func (s *Store) UpdateIncident(ctx context.Context, in *gpurent.Incident) error {
	updated := nowOr(in.UpdatedAt)
	ended := in.EndedAt
	if err := checkIncident(in, updated); err != nil {
		in.EndedAt = ended
		return err
	}
	n, err := s.execN(ctx, `UPDATE incidents SET state = ?, ended_at = ?, cause = ?, class = ?, attribution = ?,
	credit_fen = ?, credit_key = ?, updated_at = ?
WHERE id = ?`,
		string(in.State), s.tsp(in.EndedAt), in.Cause, string(in.Class), string(in.Attribution),
		in.CreditFen, in.CreditKey, s.ts(updated), in.ID)
	if err == nil && n == 0 {
		err = notFound("incident", in.ID)
	}
	if err != nil {
		in.EndedAt = ended // leave the caller's struct as it was
		return s.dbErr(err, "update incident")
	}
	in.UpdatedAt = updated
	return nil
}

// ListIncidents returns the incidents f selects, newest start first (ties
// in reverse insertion order). Since keeps those still open or ended at or
// after it.
func (s *Store) ListIncidents(ctx context.Context, f gpurent.IncidentFilter) ([]gpurent.Incident, error) {
	var conds []string
	var args []any
	// The id filters also say "<> ''" so that the partial indexes, which
	// leave out the rows without one, serve them.
	if f.InstanceID != "" {
		conds = append(conds, "instance_id = ? AND instance_id <> ''")
		args = append(args, f.InstanceID)
	}
	if f.AccountID != "" {
		conds = append(conds, "account_id = ? AND account_id <> ''")
		args = append(args, f.AccountID)
	}
	if f.HostID != "" {
		conds = append(conds, "host_id = ?")
		args = append(args, f.HostID)
	}
	if f.GPUID != "" {
		conds = append(conds, "gpu_id = ? AND gpu_id <> ''")
		args = append(args, f.GPUID)
	}
	if f.OpenOnly {
		conds = append(conds, "ended_at IS NULL")
	} else if !f.Since.IsZero() {
		conds = append(conds, "(ended_at IS NULL OR ended_at >= ?)")
		args = append(args, s.ts(f.Since))
	}
	q := `SELECT ` + incidentCols + ` FROM incidents`
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return queryAll(ctx, s, "list incidents", q+` ORDER BY started_at DESC, seq DESC`, func(r rowScanner) (gpurent.Incident, error) {
		in, err := scanIncident(r)
		if err != nil {
			return gpurent.Incident{}, err
		}
		return *in, nil
	}, args...)
}

// AddIncidentEntry appends e to its incident's timeline (not_found for an
// unknown incident). A zero At gets the time now; e.At is normalised to
// what is stored. Kind is required.
func (s *Store) AddIncidentEntry(ctx context.Context, e *gpurent.IncidentEntry) error {
	if e.Kind == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "incident entry kind is required")
	}
	// Asked first, not left to the foreign key: a failed statement would
	// abort a surrounding PostgreSQL transaction. Incidents are never
	// deleted, so the answer holds until the insert.
	ok, err := s.exists(ctx, `SELECT 1 FROM incidents WHERE id = ?`, e.IncidentID)
	if err != nil {
		return s.dbErr(err, "add incident entry")
	}
	if !ok {
		return notFound("incident", e.IncidentID)
	}
	at := nowOr(e.At)
	if _, err := s.exec(ctx, `INSERT INTO incident_entries (incident_id, at, kind, message) VALUES (?, ?, ?, ?)`,
		e.IncidentID, s.ts(at), e.Kind, e.Message); err != nil {
		return s.dbErr(err, "add incident entry")
	}
	e.At = at
	return nil
}

// ListIncidentEntries returns the incident's timeline, oldest first (ties
// in insertion order); not_found for an unknown incident.
func (s *Store) ListIncidentEntries(ctx context.Context, incidentID string) ([]gpurent.IncidentEntry, error) {
	out, err := queryAll(ctx, s, "list incident entries", `SELECT incident_id, at, kind, message FROM incident_entries
WHERE incident_id = ? ORDER BY at, seq`, func(r rowScanner) (gpurent.IncidentEntry, error) {
		var e gpurent.IncidentEntry
		err := r.Scan(&e.IncidentID, timeCol{&e.At}, &e.Kind, &e.Message)
		return e, err
	}, incidentID)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		ok, err := s.exists(ctx, `SELECT 1 FROM incidents WHERE id = ?`, incidentID)
		if err != nil {
			return nil, s.dbErr(err, "list incident entries")
		}
		if !ok {
			return nil, notFound("incident", incidentID)
		}
	}
	return out, nil
}
