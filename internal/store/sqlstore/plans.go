package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

const planChangeCols = `id, instance_id, from_plan, to_plan, effective_at, state, requested_by, created_at`

// AddPlanChange writes c: pending, or applied together with the instance's
// new plan.
func (s *Store) AddPlanChange(ctx context.Context, c *gpurent.PlanChange) error {
	switch {
	case c.InstanceID == "" || c.From == "" || c.To == "" || c.EffectiveAt.IsZero():
		return gpurent.Errorf(gpurent.CodeInvalid, "a plan change needs its instance, plans and effective time")
	case c.State != gpurent.PlanChangePending && c.State != gpurent.PlanChangeApplied:
		return gpurent.Errorf(gpurent.CodeInvalid, "a new plan change is pending or applied, not %q", c.State)
	}
	if c.ID == "" {
		c.ID = gpurent.NewID("plan")
	}
	c.CreatedAt = nowOr(c.CreatedAt)
	c.EffectiveAt = normTime(c.EffectiveAt)
	return s.atomic(ctx, func(st *Store) error {
		if _, err := st.exec(ctx, `INSERT INTO plan_changes (`+planChangeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.InstanceID, string(c.From), string(c.To), st.ts(c.EffectiveAt), c.State, c.RequestedBy, st.ts(c.CreatedAt)); err != nil {
			return st.dbErr(err, "add plan change")
		}
		if c.State == gpurent.PlanChangeApplied {
			return st.setPlan(ctx, c.InstanceID, c.To)
		}
		return nil
	})
}

// setPlan writes the instance's plan in force, bumping its version.
func (s *Store) setPlan(ctx context.Context, instanceID string, p gpurent.Plan) error {
	n, err := s.execN(ctx, `UPDATE instances SET plan = ?, version = version + 1 WHERE id = ?`, string(p), instanceID)
	if err != nil {
		return s.dbErr(err, "set plan")
	}
	if n == 0 {
		return notFound("instance", instanceID)
	}
	return nil
}

// PlanChanges lists the instance's changes that are not canceled, by
// effective time.
func (s *Store) PlanChanges(ctx context.Context, instanceID string) ([]gpurent.PlanChange, error) {
	return s.planChanges(ctx, `instance_id = ? AND state <> 'canceled' ORDER BY effective_at, created_at`, instanceID)
}

// DuePlanChanges lists pending changes effective at or before at.
func (s *Store) DuePlanChanges(ctx context.Context, at time.Time) ([]gpurent.PlanChange, error) {
	return s.planChanges(ctx, `state = 'pending' AND effective_at <= ? ORDER BY effective_at, id`, s.ts(at))
}

func (s *Store) planChanges(ctx context.Context, where string, args ...any) ([]gpurent.PlanChange, error) {
	rows, err := s.query(ctx, `SELECT `+planChangeCols+` FROM plan_changes WHERE `+where, args...)
	if err != nil {
		return nil, s.dbErr(err, "list plan changes")
	}
	defer rows.Close()
	var out []gpurent.PlanChange
	for rows.Next() {
		var c gpurent.PlanChange
		var from, to string
		if err := rows.Scan(&c.ID, &c.InstanceID, &from, &to, timeCol{&c.EffectiveAt}, &c.State, &c.RequestedBy,
			timeCol{&c.CreatedAt}); err != nil {
			return nil, s.dbErr(err, "list plan changes")
		}
		c.From, c.To = gpurent.Plan(from), gpurent.Plan(to)
		out = append(out, c)
	}
	return out, s.dbErr(rows.Err(), "list plan changes")
}

// SetPlanChangeState moves a pending change to applied (with the
// instance's plan) or canceled.
func (s *Store) SetPlanChangeState(ctx context.Context, id, state string) (bool, error) {
	if state != gpurent.PlanChangeApplied && state != gpurent.PlanChangeCanceled {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "a pending plan change becomes applied or canceled, not %q", state)
	}
	var moved bool
	err := s.atomic(ctx, func(st *Store) error {
		var instanceID, to string
		err := st.queryRow(ctx, `SELECT instance_id, to_plan FROM plan_changes WHERE id = ? AND state = 'pending'`, id).
			Scan(&instanceID, &to)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return st.dbErr(err, "set plan change state")
		}
		n, err := st.execN(ctx, `UPDATE plan_changes SET state = ? WHERE id = ? AND state = 'pending'`, state, id)
		if err != nil || n == 0 {
			return st.dbErr(err, "set plan change state")
		}
		moved = true
		if state == gpurent.PlanChangeApplied {
			return st.setPlan(ctx, instanceID, gpurent.Plan(to))
		}
		return nil
	})
	return moved, err
}
