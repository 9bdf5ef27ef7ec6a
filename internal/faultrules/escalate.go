package faultrules

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpurent/gpurent"
)

// Escalation windows.
const (
	// ResetRepeatWindow: a second reset-class fault of one GPU within it
	// makes the GPU an RMA candidate.
	ResetRepeatWindow = 7 * 24 * time.Hour
	// NodeRepeatWindow: a second NODE fault of one GPU within it sends the
	// GPU back to the vendor.
	NodeRepeatWindow = 30 * 24 * time.Hour
	// AppTenantsWindow and AppTenants: APP faults on one GPU from this many
	// different accounts within the window ask for a T2 benchmark.
	AppTenantsWindow = 24 * time.Hour
	AppTenants       = 3
)

// Escalate applies a GPU's history to the verdict of its latest fault and
// returns the verdict to act on and, when history changed or qualified it,
// a one-line reason (else ""):
//
//   - RESET or DRAIN+RESET when the GPU already had a RESET or DRAIN+RESET
//     fault within ResetRepeatWindow: RMA candidate (class RMA, the GPU is
//     delisted).
//   - NODE when the GPU already had a NODE fault within NodeRepeatWindow:
//     class RMA. The action stays ActNodeFailover: the host still has to
//     fail every instance over and be power-cycled now; the class says the
//     GPU is then delisted.
//   - APP when APP incidents on the GPU within AppTenantsWindow came from
//     at least AppTenants different accounts: the verdict stays APP and
//     the reason asks for a T2 benchmark when idle.
//
// history is the GPU's past incidents, without those of the fault being
// judged (escalate first, then open its incidents). Only incidents of
// gpuID count, by their class and StartedAt. A window includes both its edges:
// an incident that started exactly 7 days before now counts, one that
// started after now does not.
func Escalate(v Verdict, history []gpurent.Incident, gpuID string, now time.Time) (Verdict, string) {
	switch v.Class {
	case gpurent.FaultReset, gpurent.FaultDrainReset:
		if prev, ok := latest(history, gpuID, now.Add(-ResetRepeatWindow), now,
			gpurent.FaultReset, gpurent.FaultDrainReset); ok {
			v.Class = gpurent.FaultRMA
			v.Attribution = AttributionFor(gpurent.FaultRMA)
			v.Action = ActionFor(gpurent.FaultRMA)
			return v, fmt.Sprintf("RMA candidate: a second reset-class fault within 7 days (previous %s at %s: %s)",
				prev.ID, prev.StartedAt.UTC().Format(time.RFC3339), prev.Cause)
		}
	case gpurent.FaultNode:
		if prev, ok := latest(history, gpuID, now.Add(-NodeRepeatWindow), now, gpurent.FaultNode); ok {
			v.Class = gpurent.FaultRMA
			v.Attribution = AttributionFor(gpurent.FaultRMA)
			return v, fmt.Sprintf("RMA: a second node fault within 30 days (previous %s at %s: %s); fail the host over, then delist the GPU",
				prev.ID, prev.StartedAt.UTC().Format(time.RFC3339), prev.Cause)
		}
	case gpurent.FaultApp:
		accounts := map[string]bool{}
		from := now.Add(-AppTenantsWindow)
		for _, inc := range history {
			if counts(inc, gpuID, from, now) && inc.Class == gpurent.FaultApp && inc.AccountID != "" {
				accounts[inc.AccountID] = true
			}
		}
		if len(accounts) >= AppTenants {
			return v, fmt.Sprintf("T2 benchmark when idle: application faults from %d different accounts within 24 hours", len(accounts))
		}
	}
	return v, ""
}

// counts reports whether inc is an incident of gpuID that started in
// [from, to].
func counts(inc gpurent.Incident, gpuID string, from, to time.Time) bool {
	return inc.GPUID == gpuID && !inc.StartedAt.Before(from) && !inc.StartedAt.After(to)
}

// latest returns the most recent incident of gpuID of one of the classes
// that started in [from, to].
func latest(history []gpurent.Incident, gpuID string, from, to time.Time, classes ...gpurent.FaultClass) (gpurent.Incident, bool) {
	var found []gpurent.Incident
	for _, inc := range history {
		if !counts(inc, gpuID, from, to) {
			continue
		}
		for _, c := range classes {
			if inc.Class == c {
				found = append(found, inc)
				break
			}
		}
	}
	if len(found) == 0 {
		return gpurent.Incident{}, false
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].StartedAt.After(found[j].StartedAt) })
	return found[0], true
}
