package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// planSpan is a stretch of an instance's life under one plan: [from, to),
// to zero while it lasts.
type planSpan struct {
	plan     gpurent.Plan
	from, to time.Time
}

// planSpans is the instance's plan history: the plan it was rented on from
// its creation, then each change (applied or pending, by effective time)
// from its effective time.
func planSpans(in *gpurent.Instance, changes []gpurent.PlanChange) []planSpan {
	if len(changes) == 0 {
		return []planSpan{{plan: in.Plan, from: in.CreatedAt}}
	}
	out := []planSpan{{plan: changes[0].From, from: in.CreatedAt, to: changes[0].EffectiveAt}}
	for i, c := range changes {
		sp := planSpan{plan: c.To, from: c.EffectiveAt}
		if i+1 < len(changes) {
			sp.to = changes[i+1].EffectiveAt
		}
		out = append(out, sp)
	}
	return out
}

// spansOf reads the instance's plan history.
func (s *Service) spansOf(ctx context.Context, in *gpurent.Instance) ([]planSpan, error) {
	changes, err := s.cfg.Store.PlanChanges(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return planSpans(in, changes), nil
}

// hourlyPieces cuts [start, end) to the parts under the hourly plan; whole
// reports that all of it is (a power-on wholly by the second, to which the
// 60-second minimum applies).
func hourlyPieces(spans []planSpan, start, end time.Time) (pieces [][2]time.Time, whole bool) {
	for i, sp := range spans {
		if sp.plan != gpurent.PlanHourly {
			continue
		}
		from, to := start, end
		if i > 0 { // the plan rented on covers all before the first change
			from = maxTime(start, sp.from)
		}
		if !sp.to.IsZero() && sp.to.Before(to) {
			to = sp.to
		}
		if from.Before(to) || (from.Equal(to) && from.Equal(start)) {
			pieces = append(pieces, [2]time.Time{from, to})
		}
	}
	whole = len(pieces) == 1 && !pieces[0][0].After(start) && !pieces[0][1].Before(end)
	return pieces, whole
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// packagePeriod is one period of a package to charge.
type packagePeriod struct {
	plan gpurent.Plan
	n    int64
	at   time.Time
	key  string
}

// packagePeriods lists the package periods of the instance begun by now:
// each package span in periods from its start, the last one beginning
// before the span ends. Periods of the plan it was rented on keep the key
// package:<instance>:<n>; those after a conversion are keyed by the
// conversion's time too.
func packagePeriods(in *gpurent.Instance, spans []planSpan, now time.Time) []packagePeriod {
	var out []packagePeriod
	for _, sp := range spans {
		secs, err := rating.PackageSeconds(sp.plan)
		if err != nil {
			continue // hourly
		}
		period := time.Duration(secs) * time.Second
		for n := int64(1); ; n++ {
			at := sp.from.Add(time.Duration(n-1) * period).Truncate(time.Second)
			if at.After(now) || (!sp.to.IsZero() && !at.Before(sp.to)) {
				break
			}
			key := fmt.Sprintf("package:%s:%d", in.ID, n)
			if !sp.from.Equal(in.CreatedAt) {
				key = fmt.Sprintf("package:%s:%d:%d", in.ID, sp.from.Unix(), n)
			}
			out = append(out, packagePeriod{plan: sp.plan, n: n, at: at, key: key})
		}
	}
	return out
}

// paidUntil is when the package period running at now ends.
func paidUntil(sp planSpan, now time.Time) (time.Time, error) {
	secs, err := rating.PackageSeconds(sp.plan)
	if err != nil {
		return time.Time{}, err
	}
	period := time.Duration(secs) * time.Second
	begun := now.Sub(sp.from)/period + 1
	return sp.from.Add(begun * period).Truncate(time.Second), nil
}

// PlanChangeResult is what ChangePlan did.
type PlanChangeResult struct {
	Change   *gpurent.PlanChange // nil when a pending change was canceled
	Canceled *gpurent.PlanChange // the pending change it canceled, if any
	// ChargedFen is the first period charged (a conversion to a package
	// from hourly, refused with CodePaymentRequired when the wallet cannot
	// cover it in full). Unpaid is never set any more (kept for callers).
	ChargedFen int64
	Unpaid     bool
}

// ChangePlan converts the instance to another plan. From hourly to a
// package it takes effect now: the seconds so far are billed by the
// second, the first period is charged at once, and the GPUs stay reserved
// while stopped from then on; the instance must hold its GPUs (running).
// From a package it takes effect when the paid period ends (the period is
// paid for: nothing is refunded or lost); asking for the plan in force
// cancels such a pending change. acc must own the instance or be an
// operator.
func (s *Service) ChangePlan(ctx context.Context, book PriceBook, acc *gpurent.Account, instanceID string, to gpurent.Plan) (*PlanChangeResult, error) {
	switch to {
	case gpurent.PlanHourly, gpurent.PlanDaily, gpurent.PlanWeekly, gpurent.PlanMonthly:
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "plan must be hourly, daily, weekly or monthly, got %q", to)
	}
	in, err := s.cfg.Store.InstanceByID(ctx, instanceID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) || (err == nil && in.AccountID != acc.ID && acc.Role != gpurent.RoleOperator) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", instanceID)
	}
	if err != nil {
		return nil, err
	}
	if !in.Active() {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s", in.ID, in.State)
	}
	if in.GPUCount == 0 && to != gpurent.PlanHourly {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "an instance in no-GPU mode is billed by the second; packages are for GPUs")
	}
	changes, err := s.cfg.Store.PlanChanges(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC().Truncate(time.Second)
	res := &PlanChangeResult{}
	if n := len(changes); n > 0 && changes[n-1].State == gpurent.PlanChangePending {
		p := changes[n-1]
		if p.To == to {
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s already changes to %s at %s", in.ID, to, p.EffectiveAt.Format(time.RFC3339))
		}
		if _, err := s.cfg.Store.SetPlanChangeState(ctx, p.ID, gpurent.PlanChangeCanceled); err != nil {
			return nil, err
		}
		res.Canceled = &p
		changes = changes[:n-1]
		if to == in.Plan {
			return res, s.planEvent(ctx, in.ID, now, "plan change to %s canceled: the instance stays on the %s plan", p.To, in.Plan)
		}
	}
	if to == in.Plan {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is on the %s plan already", in.ID, to)
	}
	c := &gpurent.PlanChange{InstanceID: in.ID, From: in.Plan, To: to, RequestedBy: acc.ID, CreatedAt: now}
	if in.Plan == gpurent.PlanHourly {
		if in.AllocationID == "" || len(in.GPUIDs) == 0 {
			return nil, gpurent.Errorf(gpurent.CodeConflict,
				"instance %s holds no GPUs now (%s): start it, then convert (a package reserves the GPUs it runs on)", in.ID, in.State)
		}
		// GPUs listed as degraded are billed by the second at their
		// share: no package is sold on them.
		a, err := s.cfg.Store.AllocationByID(ctx, in.AllocationID)
		if err != nil {
			return nil, err
		}
		if rating.DegradedBpsOf(a.PricePermille) > 0 {
			return nil, gpurent.Errorf(gpurent.CodeInvalid,
				"instance %s runs on GPUs listed as degraded (%s of the list price): they are billed by the second at that share; packages are for full-price GPUs",
				in.ID, sharePercent(a.PricePermille))
		}
		c.EffectiveAt, c.State = now, gpurent.PlanChangeApplied
	} else {
		spans := planSpans(in, changes)
		c.EffectiveAt, err = paidUntil(spans[len(spans)-1], now)
		if err != nil {
			return nil, err
		}
		c.State = gpurent.PlanChangePending
	}
	if c.State == gpurent.PlanChangePending {
		if err := s.cfg.Store.AddPlanChange(ctx, c); err != nil {
			return nil, err
		}
		res.Change = c
		return res, s.planEvent(ctx, in.ID, now, "plan changes from %s to %s at %s, when the paid period ends", c.From, to, c.EffectiveAt.Format(time.RFC3339))
	}
	// Arrears and spend limits first; the first period itself is taken
	// with the change, in one transaction, in full or not at all.
	if s.cfg.Wallet != nil && acc.Role != gpurent.RoleOperator {
		if err := s.cfg.Wallet.CheckFunds(ctx, in.AccountID, 0); err != nil {
			return nil, err
		}
	}
	b, err := book.Book(ctx)
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.AddPlanChange(ctx, c); err != nil {
			return err
		}
		conv := *in
		conv.Plan = to
		fen, err := s.CollectDue(ctx, q, b, &conv)
		if err != nil {
			return err
		}
		res.ChargedFen = fen
		return q.AddEvent(ctx, &gpurent.Event{ID: gpurent.NewID(gpurent.PrefixEvent), InstanceID: in.ID, At: now, Kind: "plan",
			Message: fmt.Sprintf("plan changed from hourly to %s: billed by the second until now, the first period charged, GPUs reserved while stopped", to)})
	})
	if err != nil {
		return nil, err
	}
	res.Change = c
	return res, nil
}

func (s *Service) planEvent(ctx context.Context, instanceID string, at time.Time, format string, args ...any) error {
	return s.cfg.Store.AddEvent(ctx, &gpurent.Event{ID: gpurent.NewID(gpurent.PrefixEvent), InstanceID: instanceID, At: at,
		Kind: "plan", Message: fmt.Sprintf(format, args...)})
}

// ApplyDuePlanChanges puts in force the pending changes whose time has
// come and returns them.
func (s *Service) ApplyDuePlanChanges(ctx context.Context) ([]gpurent.PlanChange, error) {
	now := s.cfg.Now().UTC()
	due, err := s.cfg.Store.DuePlanChanges(ctx, now)
	if err != nil {
		return nil, err
	}
	var out []gpurent.PlanChange
	for _, c := range due {
		moved, err := s.cfg.Store.SetPlanChangeState(ctx, c.ID, gpurent.PlanChangeApplied)
		if err != nil {
			return out, err
		}
		if !moved {
			continue // canceled or applied by another pass meanwhile
		}
		if err := s.planEvent(ctx, c.InstanceID, c.EffectiveAt, "plan changed from %s to %s", c.From, c.To); err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}
