package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// TestWalletExhaustion: a real container runs while its wallet drains; at
// 60 s of runway the instance is stopped gracefully, its volume survives,
// and nothing is charged after the stop.
func TestWalletExhaustion(t *testing.T) {
	f := startDockerFleet(t, "drain", "rtx4090-24g", 8)
	s, u, acc, image := f.s, f.u, f.acc, f.image
	cli := dockertest.Client(t)
	ctx := context.Background()
	// One hour of a 4090 (¥5.21) passes the start gate.
	f.credit(t, 600, "seed")
	in := u.instance("rent", "--gpu", "rtx4090-24g", "--count", "1", "--image", image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	name := dockertest.InstanceContainer(t, dockertest.Client(t), in.ID)
	dockertest.MustExec(t, cli, name, "sh", "-c", "echo survives > /root/data/f")

	// The wallet drains to 5 fen: 5 / 521 fen per hour is 34 s of runway.
	spendable, err := s.Wallet.SpendableFen(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.PostLedger(ctx, &gpurent.LedgerTx{Op: "debit", Key: "test:drain", Customer: acc.ID, At: time.Now(),
		AmountFen: spendable - 5, Charge: "compute", Note: "drained by the test"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the instance stopped for an empty wallet", func() bool { return u.instance("show", in.ID).State == "stopped" })
	if st := dockertest.Inspect(t, cli, name).State; st.Running {
		t.Fatal("the container still runs")
	}
	shown := u.instance("show", in.ID)
	if shown.StateReason != "" && !strings.Contains(shown.StateReason, "balance") {
		t.Errorf("state reason: %q", shown.StateReason)
	}
	found := false
	for _, e := range shown.Events {
		found = found || strings.Contains(e.Message, "balance ran out")
	}
	if !found {
		t.Errorf("no event says why it stopped: %+v", shown.Events)
	}
	// The run is settled; nothing more is charged afterwards.
	eventually(t, "the run settled", func() bool {
		runs, err := s.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
		return err == nil && len(runs) == 1 && runs[0].Settled
	})
	before, err := s.Store.LedgerTxs(ctx, acc.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // five more billing passes
	after, err := s.Store.LedgerTxs(ctx, acc.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("charged after the stop: %d ledger entries, then %d", len(before), len(after))
	}
	bal, err := s.Store.LedgerBalances(ctx, acc.ID)
	if err != nil || bal.CashFen < 0 {
		t.Errorf("cash %d (%v): never negative", bal.CashFen, err)
	}
	evs, _, err := s.Wallet.Events(ctx, acc, 10)
	if err != nil {
		t.Fatal(err)
	}
	kinds := fmt.Sprint(evs)
	if !strings.Contains(kinds, "runway_stop") {
		t.Errorf("account events: %s", kinds)
	}
	// Topped up, it starts again with its data.
	f.credit(t, 100_000, "again")
	if got := u.instance("start", in.ID, "--wait"); got.State != "running" {
		t.Fatalf("start after the top-up: %+v", got)
	}
	if out := dockertest.MustExec(t, cli, name, "cat", "/root/data/f"); strings.TrimSpace(out) != "survives" {
		t.Errorf("volume after the stop: %q", out)
	}
}
