package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

const instanceCols = `id, account_id, name, image, type_id, gpu_count, zone_id, host_id, state, state_reason,
plan, cpu_milli, memory_mib, volume_id, idempotency_key, request_hash, failover, version, created_at, updated_at,
startup_command`

// startupCols are the startup status's columns, read with instanceCols
// and written only by RecordStartupStatus.
const startupCols = `startup_state, startup_argv, startup_started_at, startup_exited_at, startup_exit_code,
startup_signal, startup_error, startup_reported_at, startup_event_key`

func scanInstance(r rowScanner) (*gpurent.Instance, error) {
	var in gpurent.Instance
	var state, plan, failover string
	var startup sql.NullString
	var st gpurent.StartupStatus
	var argv string
	var exit sql.NullInt64
	var reported *time.Time
	err := r.Scan(&in.ID, &in.AccountID, &in.Name, &in.Image, &in.TypeID, &in.GPUCount, &in.ZoneID, &in.HostID,
		&state, &in.StateReason, &plan, &in.CPUMilli, &in.MemoryMiB, &in.VolumeID, &in.IdempotencyKey,
		&in.RequestHash, &failover, &in.Version, timeCol{&in.CreatedAt}, timeCol{&in.UpdatedAt}, &startup,
		&st.State, &argv, nullTimeCol{&st.StartedAt}, nullTimeCol{&st.ExitedAt}, &exit,
		&st.Signal, &st.Error, nullTimeCol{&reported}, &st.EventKey)
	in.State = gpurent.InstanceState(state)
	in.Plan = gpurent.Plan(plan)
	in.Failover = gpurent.Failover(failover)
	if startup.Valid {
		in.StartupCommand = &startup.String
	}
	if err == nil && st.State != "" {
		if argv != "" {
			if jerr := json.Unmarshal([]byte(argv), &st.Command); jerr != nil {
				return nil, fmt.Errorf("startup command of instance %s: %w", in.ID, jerr)
			}
		}
		if exit.Valid {
			c := int(exit.Int64)
			st.ExitCode = &c
		}
		if reported != nil {
			st.ReportedAt = *reported
		}
		in.Startup = &st
	}
	return &in, err
}

// checkStartupCommand refuses a startup command the store does not keep.
func checkStartupCommand(c *string) error {
	if c == nil {
		return nil
	}
	if len(*c) > gpurent.MaxStartupCommandBytes {
		return gpurent.Errorf(gpurent.CodeInvalid, "startup command must be at most %d bytes, got %d",
			gpurent.MaxStartupCommandBytes, len(*c))
	}
	if strings.IndexByte(*c, 0) >= 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "startup command must not contain a NUL byte")
	}
	return nil
}

// nullString is c as a nullable column.
func nullString(c *string) any {
	if c == nil {
		return nil
	}
	return *c
}

// checkFailover refuses a failover choice the store does not know; ""
// (unset, which the service reads as auto) is kept as it is.
func checkFailover(f gpurent.Failover) error {
	switch f {
	case "", gpurent.FailoverAuto, gpurent.FailoverWait:
		return nil
	}
	return gpurent.Errorf(gpurent.CodeInvalid, "unknown failover choice %q (want %s or %s)",
		f, gpurent.FailoverAuto, gpurent.FailoverWait)
}

// CreateInstance inserts in. (AccountID, IdempotencyKey) must be unused when
// the key is set. An empty ID gets a new one, a zero CreatedAt now, a zero
// UpdatedAt CreatedAt, a Version below 1 the value 1; in is updated to what
// was stored. Failover is stored as given ("" reads back as ""). The
// derived allocation fields are not written.
func (s *Store) CreateInstance(ctx context.Context, in *gpurent.Instance) error {
	if in.AccountID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "instance account is required")
	}
	if err := checkFailover(in.Failover); err != nil {
		return err
	}
	if err := checkStartupCommand(in.StartupCommand); err != nil {
		return err
	}
	if in.ID == "" {
		in.ID = gpurent.NewID(gpurent.PrefixInstance)
	}
	in.CreatedAt = nowOr(in.CreatedAt)
	if in.UpdatedAt.IsZero() {
		in.UpdatedAt = in.CreatedAt
	}
	in.UpdatedAt = normTime(in.UpdatedAt)
	if in.Version < 1 {
		in.Version = 1
	}
	n, err := s.execN(ctx, `INSERT INTO instances (`+instanceCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		in.ID, in.AccountID, in.Name, in.Image, in.TypeID, in.GPUCount, in.ZoneID, in.HostID,
		string(in.State), in.StateReason, string(in.Plan), in.CPUMilli, in.MemoryMiB, in.VolumeID,
		in.IdempotencyKey, in.RequestHash, string(in.Failover), in.Version, s.ts(in.CreatedAt), s.ts(in.UpdatedAt),
		nullString(in.StartupCommand))
	if err != nil {
		return s.dbErr(err, "create instance")
	}
	if n == 0 {
		if in.IdempotencyKey != "" {
			return gpurent.Errorf(gpurent.CodeConflict, "an instance with this idempotency key already exists")
		}
		return gpurent.Errorf(gpurent.CodeConflict, "instance %q already exists", in.ID)
	}
	return nil
}

// InstanceByID returns the instance with its open allocation's fields.
func (s *Store) InstanceByID(ctx context.Context, id string) (*gpurent.Instance, error) {
	return s.oneInstance(ctx, `WHERE id = ?`, []any{id}, notFound("instance", id))
}

// InstanceByIdempotencyKey returns the account's instance made with key.
func (s *Store) InstanceByIdempotencyKey(ctx context.Context, accountID, key string) (*gpurent.Instance, error) {
	if key == "" {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "no instance with this idempotency key")
	}
	return s.oneInstance(ctx, `WHERE account_id = ? AND idempotency_key = ?`, []any{accountID, key},
		gpurent.Errorf(gpurent.CodeNotFound, "no instance with this idempotency key"))
}

func (s *Store) oneInstance(ctx context.Context, where string, args []any, missing error) (*gpurent.Instance, error) {
	in, err := scanInstance(s.queryRow(ctx, `SELECT `+instanceCols+`, `+startupCols+` FROM instances `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, missing
	}
	if err != nil {
		return nil, s.dbErr(err, "read instance")
	}
	list := []gpurent.Instance{*in}
	if err := s.fillOpenAllocations(ctx, list, `instance_id = ?`, []any{in.ID}); err != nil {
		return nil, err
	}
	return &list[0], nil
}

// ListInstances returns the instances f selects, by creation time then id,
// each with its open allocation's fields: two queries whatever the count.
// ActiveOnly leaves out deleted instances (deleting ones stay listed).
func (s *Store) ListInstances(ctx context.Context, f gpurent.InstanceFilter) ([]gpurent.Instance, error) {
	var conds []string
	var args []any
	if f.AccountID != "" {
		conds = append(conds, "account_id = ?")
		args = append(args, f.AccountID)
	}
	if f.HostID != "" {
		conds = append(conds, "host_id = ?")
		args = append(args, f.HostID)
	}
	if len(f.States) > 0 {
		conds = append(conds, "state IN ("+placeholders(len(f.States))+")")
		for _, st := range f.States {
			args = append(args, string(st))
		}
	}
	if f.ActiveOnly {
		conds = append(conds, "state <> ?")
		args = append(args, string(gpurent.StateDeleted))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.query(ctx, `SELECT `+instanceCols+`, `+startupCols+` FROM instances`+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, s.dbErr(err, "list instances")
	}
	var out []gpurent.Instance
	for rows.Next() {
		in, err := scanInstance(rows)
		if err != nil {
			rows.Close()
			return nil, s.dbErr(err, "list instances")
		}
		out = append(out, *in)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list instances")
	}
	if len(out) == 0 {
		return out, nil
	}
	sub := "TRUE"
	if where != "" {
		sub = "instance_id IN (SELECT id FROM instances" + where + ")"
	}
	if err := s.fillOpenAllocations(ctx, out, sub, args); err != nil {
		return nil, err
	}
	return out, nil
}

// fillOpenAllocations sets AllocationID and GPUIDs (by GPU index) on list
// from the open allocations the condition on allocations selects. Where an
// instance has more than one open allocation (a migration holding its
// target), the most recently started one is shown.
func (s *Store) fillOpenAllocations(ctx context.Context, list []gpurent.Instance, cond string, args []any) error {
	rows, err := s.query(ctx, `SELECT a.instance_id, a.id, ag.gpu_id
FROM allocations a
LEFT JOIN allocation_gpus ag ON ag.allocation_id = a.id
LEFT JOIN gpus g ON g.id = ag.gpu_id
WHERE a.ended_at IS NULL AND `+cond+`
ORDER BY a.instance_id, a.started_at DESC, a.seq DESC, g.gpu_index, g.id`, args...)
	if err != nil {
		return s.dbErr(err, "read instance allocations")
	}
	defer rows.Close()
	byID := make(map[string]int, len(list))
	for i := range list {
		byID[list[i].ID] = i
	}
	for rows.Next() {
		var instID, allocID string
		var gpuID sql.NullString // none for an allocation of no GPUs
		if err := rows.Scan(&instID, &allocID, &gpuID); err != nil {
			return s.dbErr(err, "read instance allocations")
		}
		i, ok := byID[instID]
		if !ok {
			continue
		}
		in := &list[i]
		if in.AllocationID == "" {
			in.AllocationID = allocID
		}
		if in.AllocationID == allocID && gpuID.Valid {
			in.GPUIDs = append(in.GPUIDs, gpuID.String)
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbErr(err, "read instance allocations")
	}
	return nil
}

// UpdateInstance writes Name, HostID, State, StateReason, VolumeID, TypeID,
// GPUCount, CPUMilli, MemoryMiB, Failover, StartupCommand and UpdatedAt (now when zero)
// where the stored Version equals in.Version, then bumps in.Version. A
// stale Version is a conflict.
func (s *Store) UpdateInstance(ctx context.Context, in *gpurent.Instance) error {
	if in.GPUCount < 0 || in.CPUMilli < 0 || in.MemoryMiB < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "instance resources cannot be negative")
	}
	if err := checkFailover(in.Failover); err != nil {
		return err
	}
	if err := checkStartupCommand(in.StartupCommand); err != nil {
		return err
	}
	updated := nowOr(in.UpdatedAt)
	n, err := s.execN(ctx, `UPDATE instances SET name = ?, host_id = ?, state = ?, state_reason = ?, volume_id = ?,
	type_id = ?, gpu_count = ?, cpu_milli = ?, memory_mib = ?, failover = ?, startup_command = ?, updated_at = ?,
	version = version + 1
WHERE id = ? AND version = ?`,
		in.Name, in.HostID, string(in.State), in.StateReason, in.VolumeID,
		in.TypeID, in.GPUCount, in.CPUMilli, in.MemoryMiB, string(in.Failover), nullString(in.StartupCommand),
		s.ts(updated), in.ID, in.Version)
	if err != nil {
		return s.dbErr(err, "update instance")
	}
	if n == 0 {
		ok, err := s.exists(ctx, `SELECT 1 FROM instances WHERE id = ?`, in.ID)
		if err != nil {
			return s.dbErr(err, "update instance")
		}
		if !ok {
			return notFound("instance", in.ID)
		}
		return gpurent.Errorf(gpurent.CodeConflict, "instance %q changed, retry", in.ID)
	}
	in.UpdatedAt = updated
	in.Version++
	return nil
}

// RecordStartupStatus keeps st as the instance's latest startup status and
// answers whether its EventKey is new: one conditional UPDATE sets the key
// only where it differs, so of two reports of one exit one answers true.
func (s *Store) RecordStartupStatus(ctx context.Context, instanceID string, st *gpurent.StartupStatus) (bool, error) {
	if st == nil || st.State == "" {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "startup status needs a state")
	}
	argv := ""
	if len(st.Command) > 0 {
		b, err := json.Marshal(st.Command)
		if err != nil {
			return false, gpurent.Errorf(gpurent.CodeInvalid, "startup command: %v", err)
		}
		argv = string(b)
	}
	var exit any
	if st.ExitCode != nil {
		exit = int64(*st.ExitCode)
	}
	reported := nowOr(st.ReportedAt)
	args := []any{st.State, argv, s.tsp(st.StartedAt), s.tsp(st.ExitedAt), exit, st.Signal, st.Error, s.ts(reported)}
	const set = `UPDATE instances SET startup_state = ?, startup_argv = ?, startup_started_at = ?, startup_exited_at = ?,
	startup_exit_code = ?, startup_signal = ?, startup_error = ?, startup_reported_at = ?`
	if st.EventKey != "" {
		n, err := s.execN(ctx, set+`, startup_event_key = ? WHERE id = ? AND startup_event_key <> ?`,
			append(args, st.EventKey, instanceID, st.EventKey)...)
		if err != nil {
			return false, s.dbErr(err, "record startup status")
		}
		if n == 1 {
			st.ReportedAt = reported
			return true, nil
		}
	}
	n, err := s.execN(ctx, set+` WHERE id = ?`, append(args, instanceID)...)
	if err != nil {
		return false, s.dbErr(err, "record startup status")
	}
	if n == 0 {
		return false, notFound("instance", instanceID)
	}
	st.ReportedAt = reported
	return false, nil
}
