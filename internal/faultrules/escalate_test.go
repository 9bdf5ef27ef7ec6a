package faultrules

import (
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

const day = 24 * time.Hour

func inc(id, gpuID string, class gpurent.FaultClass, started time.Time, account string) gpurent.Incident {
	return gpurent.Incident{ID: id, GPUID: gpuID, Class: class, StartedAt: started, AccountID: account,
		Attribution: AttributionFor(class), Cause: "earlier fault", State: gpurent.IncidentResolved}
}

func verdict(c gpurent.FaultClass) Verdict {
	return Verdict{Class: c, Attribution: AttributionFor(c), Action: ActionFor(c), Cause: "now", Xid: 48}
}

func TestEscalateResetWithinSevenDays(t *testing.T) {
	now := t0.Add(30 * day)
	cases := []struct {
		name    string
		class   gpurent.FaultClass
		history []gpurent.Incident
		rma     bool
	}{
		{"no history", gpurent.FaultReset, nil, false},
		{"reset 7 days ago exactly", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultReset, now.Add(-7*day), "")}, true},
		{"reset 7 days and 1 ns ago", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultReset, now.Add(-7*day-1), "")}, false},
		{"drain reset yesterday", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultDrainReset, now.Add(-day), "")}, true},
		{"drain reset now after a reset", gpurent.FaultDrainReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultReset, now.Add(-day), "")}, true},
		{"reset on another GPU", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-b", gpurent.FaultReset, now.Add(-day), "")}, false},
		{"app yesterday", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultApp, now.Add(-day), "acc_1")}, false},
		{"node yesterday", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultNode, now.Add(-day), "")}, false},
		{"reset in the future", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultReset, now.Add(time.Second), "")}, false},
		{"reset at now", gpurent.FaultReset, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultReset, now, "")}, true},
		{"info is not escalated", gpurent.FaultInfo, []gpurent.Incident{inc("inc_1", "GPU-a", gpurent.FaultReset, now.Add(-day), "")}, false},
	}
	for _, c := range cases {
		v, why := Escalate(verdict(c.class), c.history, "GPU-a", now)
		if c.rma {
			if v.Class != gpurent.FaultRMA || v.Action != ActDelistGPU || v.Attribution != gpurent.AttrHost || !strings.Contains(why, "RMA candidate") || !strings.Contains(why, "inc_1") {
				t.Errorf("%s: %+v %q, want an RMA candidate", c.name, v, why)
			}
			if v.Cause != "now" || v.Xid != 48 {
				t.Errorf("%s: escalation lost the cause: %+v", c.name, v)
			}
		} else if v != verdict(c.class) || why != "" {
			t.Errorf("%s: %+v %q, want it unchanged", c.name, v, why)
		}
	}
}

func TestEscalateNodeWithinThirtyDays(t *testing.T) {
	now := t0.Add(60 * day)
	for _, c := range []struct {
		name    string
		history []gpurent.Incident
		rma     bool
	}{
		{"none", nil, false},
		{"30 days ago exactly", []gpurent.Incident{inc("inc_n", "GPU-a", gpurent.FaultNode, now.Add(-30*day), "")}, true},
		{"30 days and 1 ns ago", []gpurent.Incident{inc("inc_n", "GPU-a", gpurent.FaultNode, now.Add(-30*day-1), "")}, false},
		{"another GPU", []gpurent.Incident{inc("inc_n", "GPU-b", gpurent.FaultNode, now.Add(-day), "")}, false},
		{"a reset is not a node fault", []gpurent.Incident{inc("inc_n", "GPU-a", gpurent.FaultReset, now.Add(-day), "")}, false},
		{"latest of several", []gpurent.Incident{
			inc("inc_old", "GPU-a", gpurent.FaultNode, now.Add(-20*day), ""),
			inc("inc_n", "GPU-a", gpurent.FaultNode, now.Add(-2*day), "")}, true},
	} {
		v, why := Escalate(verdict(gpurent.FaultNode), c.history, "GPU-a", now)
		if c.rma {
			// the host still fails over now; the class delists the GPU
			if v.Class != gpurent.FaultRMA || v.Action != ActNodeFailover || v.Attribution != gpurent.AttrHost || !strings.Contains(why, "inc_n") {
				t.Errorf("%s: %+v %q, want RMA", c.name, v, why)
			}
		} else if v != verdict(gpurent.FaultNode) || why != "" {
			t.Errorf("%s: %+v %q, want it unchanged", c.name, v, why)
		}
	}
}

func TestEscalateAppFromThreeAccounts(t *testing.T) {
	now := t0.Add(10 * day)
	app := func(acc string, ago time.Duration) gpurent.Incident {
		return inc("inc_"+acc, "GPU-a", gpurent.FaultApp, now.Add(-ago), acc)
	}
	for _, c := range []struct {
		name    string
		history []gpurent.Incident
		t2      bool
	}{
		{"none", nil, false},
		{"three accounts", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour), app("c", 3*time.Hour)}, true},
		{"two accounts, four faults", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour), app("a", 3*time.Hour), app("b", 4*time.Hour)}, false},
		{"third exactly 24 h ago", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour), app("c", day)}, true},
		{"third 24 h and 1 ns ago", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour), app("c", day+1)}, false},
		{"third on another GPU", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour),
			inc("inc_c", "GPU-b", gpurent.FaultApp, now.Add(-time.Hour), "c")}, false},
		{"third not APP", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour),
			inc("inc_c", "GPU-a", gpurent.FaultReset, now.Add(-time.Hour), "c")}, false},
		{"no account does not count", []gpurent.Incident{app("a", time.Hour), app("b", 2*time.Hour), app("", 3*time.Hour)}, false},
	} {
		v, why := Escalate(verdict(gpurent.FaultApp), c.history, "GPU-a", now)
		if v != verdict(gpurent.FaultApp) {
			t.Errorf("%s: APP changed to %+v", c.name, v)
		}
		if got := strings.Contains(why, "T2 benchmark when idle"); got != c.t2 {
			t.Errorf("%s: reason %q, want T2 %v", c.name, why, c.t2)
		}
	}
}
