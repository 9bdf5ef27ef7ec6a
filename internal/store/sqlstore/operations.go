package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

const operationCols = `id, instance_id, account_id, kind, step, from_allocation_id, from_host_id,
to_allocation_id, to_host_id, to_type_id, to_count, to_cpu_milli, to_memory_mib, to_zone_id, was_running,
token, passes, bytes_moved, message, idempotency_key, request_hash, step_deadline, version,
created_at, updated_at, finished_at`

func scanOperation(r rowScanner) (*gpurent.Operation, error) {
	var op gpurent.Operation
	var kind, step string
	var deadline *time.Time
	err := r.Scan(&op.ID, &op.InstanceID, &op.AccountID, &kind, &step, &op.FromAllocationID, &op.FromHostID,
		&op.ToAllocationID, &op.ToHostID, &op.ToTypeID, &op.ToCount, &op.ToCPUMilli, &op.ToMemoryMiB, &op.ToZoneID,
		&op.WasRunning, &op.Token, &op.Passes, &op.BytesMoved, &op.Message, &op.IdempotencyKey, &op.RequestHash,
		nullTimeCol{&deadline}, &op.Version, timeCol{&op.CreatedAt}, timeCol{&op.UpdatedAt},
		nullTimeCol{&op.FinishedAt})
	if err != nil {
		return nil, err
	}
	op.Kind = gpurent.OperationKind(kind)
	op.Step = gpurent.OperationStep(step)
	if deadline != nil {
		op.StepDeadline = *deadline
	}
	return &op, nil
}

// checkOperation validates what the store keeps consistent about op: a
// known kind and step, and FinishedAt set exactly when the step ends the
// operation. A finished step without FinishedAt is given finishedDefault.
func checkOperation(op *gpurent.Operation, finishedDefault time.Time) error {
	switch op.Kind {
	case gpurent.OpUpgrade, gpurent.OpMigrate, gpurent.OpStart, gpurent.OpFailover:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "unknown operation kind %q", op.Kind)
	}
	switch op.Step {
	case gpurent.StepQueued, gpurent.StepCopying, gpurent.StepFinal, gpurent.StepStarting,
		gpurent.StepCleanup, gpurent.StepRollingBack, gpurent.StepDone, gpurent.StepRolledBack:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "unknown operation step %q", op.Step)
	}
	if op.Step.Finished() {
		if op.FinishedAt == nil {
			op.FinishedAt = &finishedDefault
		}
		op.FinishedAt = normTimePtr(op.FinishedAt)
	} else if op.FinishedAt != nil {
		return gpurent.Errorf(gpurent.CodeInvalid, "operation at step %s cannot be finished", op.Step)
	}
	if op.ToCount < 0 || op.ToCPUMilli < 0 || op.ToMemoryMiB < 0 || op.Passes < 0 || op.BytesMoved < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "operation counts cannot be negative")
	}
	return nil
}

// deadlineArg binds StepDeadline: NULL when zero (no deadline).
func (s *Store) deadlineArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.ts(t)
}

// normDeadline is StepDeadline as stored.
func normDeadline(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return normTime(t)
}

// CreateOperation inserts op. The instance must have no unfinished
// operation, and (AccountID, IdempotencyKey) must be unused when the key is
// set; either is a conflict. An empty ID gets a new one, a zero CreatedAt
// now, a zero UpdatedAt CreatedAt, a Version below 1 the value 1, and a
// finished step without FinishedAt the time UpdatedAt; op is updated to
// what was stored. A zero StepDeadline means the step has none.
func (s *Store) CreateOperation(ctx context.Context, op *gpurent.Operation) error {
	if op.InstanceID == "" || op.AccountID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "operation instance and account are required")
	}
	op.CreatedAt = nowOr(op.CreatedAt)
	if op.UpdatedAt.IsZero() {
		op.UpdatedAt = op.CreatedAt
	}
	op.UpdatedAt = normTime(op.UpdatedAt)
	if err := checkOperation(op, op.UpdatedAt); err != nil {
		return err
	}
	if op.ID == "" {
		op.ID = gpurent.NewID(gpurent.PrefixOperation)
	}
	op.StepDeadline = normDeadline(op.StepDeadline)
	if op.Version < 1 {
		op.Version = 1
	}
	n, err := s.execN(ctx, `INSERT INTO operations (`+operationCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		op.ID, op.InstanceID, op.AccountID, string(op.Kind), string(op.Step), op.FromAllocationID, op.FromHostID,
		op.ToAllocationID, op.ToHostID, op.ToTypeID, op.ToCount, op.ToCPUMilli, op.ToMemoryMiB, op.ToZoneID,
		op.WasRunning, op.Token, op.Passes, op.BytesMoved, op.Message, op.IdempotencyKey, op.RequestHash,
		s.deadlineArg(op.StepDeadline), op.Version, s.ts(op.CreatedAt), s.ts(op.UpdatedAt), s.tsp(op.FinishedAt))
	if err != nil {
		return s.dbErr(err, "create operation")
	}
	if n == 1 {
		return nil
	}
	// Nothing inserted: say which rule refused it.
	if op.IdempotencyKey != "" {
		dup, err := s.exists(ctx, `SELECT 1 FROM operations WHERE account_id = ? AND idempotency_key = ?`,
			op.AccountID, op.IdempotencyKey)
		if err != nil {
			return s.dbErr(err, "create operation")
		}
		if dup {
			return gpurent.Errorf(gpurent.CodeConflict, "an operation with this idempotency key already exists")
		}
	}
	if op.FinishedAt == nil {
		busy, err := s.exists(ctx, `SELECT 1 FROM operations WHERE instance_id = ? AND finished_at IS NULL`, op.InstanceID)
		if err != nil {
			return s.dbErr(err, "create operation")
		}
		if busy {
			return gpurent.Errorf(gpurent.CodeConflict, "instance %q already has an operation in progress", op.InstanceID)
		}
	}
	return gpurent.Errorf(gpurent.CodeConflict, "operation %q already exists", op.ID)
}

// OperationByID returns the operation with id.
func (s *Store) OperationByID(ctx context.Context, id string) (*gpurent.Operation, error) {
	return s.oneOperation(ctx, `WHERE id = ?`, []any{id}, notFound("operation", id))
}

// OperationByIdempotencyKey returns the account's operation made with key.
func (s *Store) OperationByIdempotencyKey(ctx context.Context, accountID, key string) (*gpurent.Operation, error) {
	missing := gpurent.Errorf(gpurent.CodeNotFound, "no operation with this idempotency key")
	if key == "" {
		return nil, missing
	}
	return s.oneOperation(ctx, `WHERE account_id = ? AND idempotency_key = ?`, []any{accountID, key}, missing)
}

// ActiveOperation returns the instance's unfinished operation.
func (s *Store) ActiveOperation(ctx context.Context, instanceID string) (*gpurent.Operation, error) {
	return s.oneOperation(ctx, `WHERE instance_id = ? AND finished_at IS NULL`, []any{instanceID},
		gpurent.Errorf(gpurent.CodeNotFound, "instance %q has no operation in progress", instanceID))
}

func (s *Store) oneOperation(ctx context.Context, where string, args []any, missing error) (*gpurent.Operation, error) {
	op, err := scanOperation(s.queryRow(ctx, `SELECT `+operationCols+` FROM operations `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, missing
	}
	if err != nil {
		return nil, s.dbErr(err, "read operation")
	}
	return op, nil
}

// ListOperations returns the operations f selects, newest first (ties in
// reverse insertion order).
func (s *Store) ListOperations(ctx context.Context, f gpurent.OperationFilter) ([]gpurent.Operation, error) {
	var conds []string
	var args []any
	if f.InstanceID != "" {
		conds = append(conds, "instance_id = ?")
		args = append(args, f.InstanceID)
	}
	if f.HostID != "" {
		conds = append(conds, "(from_host_id = ? OR to_host_id = ?)")
		args = append(args, f.HostID, f.HostID)
	}
	if f.Step != "" {
		conds = append(conds, "step = ?")
		args = append(args, string(f.Step))
	}
	// An unfinished step implies an unfinished operation (the store keeps
	// the two consistent): saying so lets the partial indexes serve it.
	if f.ActiveOnly || (f.Step != "" && !f.Step.Finished()) {
		conds = append(conds, "finished_at IS NULL")
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	return queryAll(ctx, s, "list operations", `SELECT `+operationCols+` FROM operations`+where+` ORDER BY created_at DESC, seq DESC`,
		func(r rowScanner) (gpurent.Operation, error) {
			op, err := scanOperation(r)
			if err != nil {
				return gpurent.Operation{}, err
			}
			return *op, nil
		}, args...)
}

// UpdateOperation writes every field but ID, InstanceID, AccountID, Kind,
// IdempotencyKey, RequestHash and CreatedAt, with UpdatedAt now when zero,
// where the stored Version equals op.Version, then bumps op.Version. A
// stale Version is a conflict, and so is reopening a finished operation of
// an instance that has another one in progress. A finished step without
// FinishedAt gets the update time; an unfinished one with it is invalid.
func (s *Store) UpdateOperation(ctx context.Context, op *gpurent.Operation) error {
	updated := nowOr(op.UpdatedAt)
	finished := op.FinishedAt
	if err := checkOperation(op, updated); err != nil {
		op.FinishedAt = finished
		return err
	}
	n, err := s.execN(ctx, `UPDATE operations SET step = ?, from_allocation_id = ?, from_host_id = ?,
	to_allocation_id = ?, to_host_id = ?, to_type_id = ?, to_count = ?, to_cpu_milli = ?, to_memory_mib = ?,
	to_zone_id = ?, was_running = ?, token = ?, passes = ?, bytes_moved = ?, message = ?, step_deadline = ?,
	updated_at = ?, finished_at = ?, version = version + 1
WHERE id = ? AND version = ?`,
		string(op.Step), op.FromAllocationID, op.FromHostID, op.ToAllocationID, op.ToHostID, op.ToTypeID,
		op.ToCount, op.ToCPUMilli, op.ToMemoryMiB, op.ToZoneID, op.WasRunning, op.Token, op.Passes,
		op.BytesMoved, op.Message, s.deadlineArg(op.StepDeadline), s.ts(updated), s.tsp(op.FinishedAt),
		op.ID, op.Version)
	if err == nil && n == 0 {
		var ok bool
		ok, err = s.exists(ctx, `SELECT 1 FROM operations WHERE id = ?`, op.ID)
		if err == nil && !ok {
			err = notFound("operation", op.ID)
		} else if err == nil {
			err = gpurent.Errorf(gpurent.CodeConflict, "operation %q changed, retry", op.ID)
		}
	}
	if err != nil {
		op.FinishedAt = finished // leave the caller's struct as it was
		return s.dbErr(err, "update operation")
	}
	op.StepDeadline = normDeadline(op.StepDeadline)
	op.UpdatedAt = updated
	op.Version++
	return nil
}
