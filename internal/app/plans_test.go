package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestPlanConversion: through the CLI, a running hourly rental becomes a
// daily package at once (the day charged up front, its GPUs then reserved
// while stopped), and the way back waits for the paid day to end.
func TestPlanConversion(t *testing.T) {
	f := startDockerFleet(t, "plans", "rtx4090-24g", 2)
	u := f.u
	f.credit(t, 100_000, "seed")
	in := u.instance("rent", "--gpu", "rtx4090-24g", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	spendable := func() int64 {
		bal, err := f.s.Wallet.SpendableFen(context.Background(), f.acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		return bal
	}
	before := spendable()

	var res apiv1.ChangePlanResult
	if err := json.Unmarshal([]byte(u.must("plan", in.ID, "--to", "daily", "-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Change == nil || res.Change.State != "applied" || res.ChargedFen <= 0 {
		t.Fatalf("to daily: %+v", res)
	}
	eventually(t, "the day charged", func() bool { return before-spendable() >= res.ChargedFen })

	u.must("stop", in.ID, "--wait")
	if n := freeGPUs(t, u, "rtx4090-24g"); n != 1 {
		t.Errorf("free 4090s with the daily package stopped: %d, want 1 (its GPU stays reserved)", n)
	}
	out := u.must("plan", in.ID, "--to", "hourly")
	if !strings.Contains(out, "when the paid period ends") {
		t.Errorf("to hourly: %q", out)
	}
	shown := u.must("plan", in.ID)
	if !strings.Contains(shown, "daily") || !strings.Contains(shown, "pending") || !strings.Contains(shown, "daily → hourly") {
		t.Errorf("plan history:\n%s", shown)
	}
	if _, stderr, err := u.run("", "plan", in.ID, "--to", "yearly"); err == nil || !strings.Contains(err.Error()+stderr, "plan must be") {
		t.Errorf("a plan that does not exist: %v %q", err, stderr)
	}
}
