package storetest

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// testPlanChanges: an applied change sets the plan at once, a pending one
// when applied; one pending change per instance; canceled ones are gone
// from the history; due changes are those effective by the time asked.
func testPlanChanges(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "plans@example.com")
	in := SeedInstance(t, s, acc.ID, "p")
	t0 := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

	wantCode(t, s.AddPlanChange(ctx, &gpurent.PlanChange{InstanceID: in.ID, From: gpurent.PlanHourly, To: gpurent.PlanDaily,
		EffectiveAt: t0, State: gpurent.PlanChangeCanceled}), gpurent.CodeInvalid, "a new change already canceled")
	wantCode(t, s.AddPlanChange(ctx, &gpurent.PlanChange{InstanceID: "i-nope", From: gpurent.PlanHourly, To: gpurent.PlanDaily,
		EffectiveAt: t0, State: gpurent.PlanChangeApplied, RequestedBy: acc.ID}), gpurent.CodeInvalid, "change of a missing instance")

	now := &gpurent.PlanChange{InstanceID: in.ID, From: gpurent.PlanHourly, To: gpurent.PlanDaily, EffectiveAt: t0,
		State: gpurent.PlanChangeApplied, RequestedBy: acc.ID}
	must(t, s.AddPlanChange(ctx, now), "applied change")
	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "read instance")
	if got.Plan != gpurent.PlanDaily || got.Version == in.Version {
		t.Fatalf("after an applied change: plan %s version %d (was %d), want daily and a new version", got.Plan, got.Version, in.Version)
	}

	later := t0.Add(24 * time.Hour)
	pend := &gpurent.PlanChange{InstanceID: in.ID, From: gpurent.PlanDaily, To: gpurent.PlanHourly, EffectiveAt: later,
		State: gpurent.PlanChangePending, RequestedBy: acc.ID}
	must(t, s.AddPlanChange(ctx, pend), "pending change")
	wantCode(t, s.AddPlanChange(ctx, &gpurent.PlanChange{InstanceID: in.ID, From: gpurent.PlanDaily, To: gpurent.PlanWeekly,
		EffectiveAt: later, State: gpurent.PlanChangePending, RequestedBy: acc.ID}), gpurent.CodeConflict, "a second pending change")

	due, err := s.DuePlanChanges(ctx, later.Add(-time.Second))
	must(t, err, "due before")
	if len(due) != 0 {
		t.Fatalf("due a second early: %+v", due)
	}
	due, err = s.DuePlanChanges(ctx, later)
	must(t, err, "due at")
	if len(due) != 1 || due[0].ID != pend.ID || due[0].To != gpurent.PlanHourly || !due[0].EffectiveAt.Equal(later) {
		t.Fatalf("due at its time: %+v", due)
	}
	moved, err := s.SetPlanChangeState(ctx, pend.ID, gpurent.PlanChangeApplied)
	must(t, err, "apply")
	if !moved {
		t.Fatal("apply: not moved")
	}
	if moved, err = s.SetPlanChangeState(ctx, pend.ID, gpurent.PlanChangeCanceled); err != nil || moved {
		t.Fatalf("cancel an applied change: moved %v, err %v", moved, err)
	}
	got, err = s.InstanceByID(ctx, in.ID)
	must(t, err, "read instance")
	if got.Plan != gpurent.PlanHourly {
		t.Fatalf("after applying the pending change: plan %s, want hourly", got.Plan)
	}

	again := &gpurent.PlanChange{InstanceID: in.ID, From: gpurent.PlanHourly, To: gpurent.PlanMonthly, EffectiveAt: later.Add(time.Hour),
		State: gpurent.PlanChangePending, RequestedBy: acc.ID}
	must(t, s.AddPlanChange(ctx, again), "another pending change")
	if moved, err := s.SetPlanChangeState(ctx, again.ID, gpurent.PlanChangeCanceled); err != nil || !moved {
		t.Fatalf("cancel: moved %v, err %v", moved, err)
	}
	hist, err := s.PlanChanges(ctx, in.ID)
	must(t, err, "history")
	if len(hist) != 2 || hist[0].ID != now.ID || hist[1].ID != pend.ID || hist[1].State != gpurent.PlanChangeApplied ||
		hist[0].From != gpurent.PlanHourly || hist[0].To != gpurent.PlanDaily {
		t.Fatalf("history %+v: want the two applied changes in order", hist)
	}
	got, err = s.InstanceByID(ctx, in.ID)
	must(t, err, "read instance")
	if got.Plan != gpurent.PlanHourly {
		t.Fatalf("a canceled change moved the plan to %s", got.Plan)
	}
}
