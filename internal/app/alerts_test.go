package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/outbound"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

// TestRunwayAlerts: as the wallet drains, the customer gets an alert at
// 2 h of runway and at 30 min — each once, as an account event and on its
// webhook — and at 60 s the instances must stop; a top-up re-arms them.
func TestRunwayAlerts(t *testing.T) {
	ctx := context.Background()
	hooks := make(chan wallet.Alert, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a wallet.Alert
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &a); err != nil {
			t.Errorf("webhook body %q: %v", b, err)
		}
		hooks <- a
	}))
	defer receiver.Close()

	// The receiver is on loopback: only the test-only policy reaches it
	// (TestWebhookSSRF holds that nothing else does).
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-race",
		BcryptCost: 4, HostTimeout: time.Hour, Webhooks: outbound.Policy{AllowHTTP: true, TestOnlyAllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	registerHosts(t, s, "drain", "rtx4090-24g", 1)
	c := customers(t, s, 1)[0]
	in, err := c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "rtx4090-24g", GPUCount: 1, Image: "busybox"}, "")
	if err != nil {
		t.Fatal(err)
	}
	hosts, _ := s.Store.ListHosts(ctx)
	if _, err := s.Rental.ApplyReport(ctx, &hosts[0], agentproto.Report{Instances: []agentproto.ActualInstance{{
		InstanceID: in.ID, AllocationID: mustAllocation(t, s, in.ID), State: agentproto.StateRunning, StartedAt: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetWebhook(ctx, receiver.URL+"/hook"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetWebhook(ctx, "ftp://nope"); err == nil {
		t.Error("an ftp webhook was accepted")
	}
	// Drain the wallet to an exact balance with a debit (the customers
	// helper credited ¥1,000,000).
	spendable := func() int64 {
		v, err := s.Wallet.SpendableFen(ctx, in.AccountID)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	seq := 0
	drainTo := func(fen int64) {
		seq++
		if _, err := s.Store.PostLedger(ctx, &gpurent.LedgerTx{Op: "debit", Key: fmt.Sprintf("test:drain:%d", seq),
			Customer: in.AccountID, At: time.Now(), AmountFen: spendable() - fen, Charge: "compute"}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(kind string, stop bool) {
		t.Helper()
		must, err := s.Wallet.MustStop(ctx, in.AccountID)
		if err != nil || must != stop {
			t.Fatalf("at %d fen: must stop %v (%v), want %v", spendable(), must, err, stop)
		}
		if kind == "" {
			select {
			case a := <-hooks:
				t.Fatalf("an unexpected alert: %+v", a)
			case <-time.After(200 * time.Millisecond):
			}
			return
		}
		select {
		case a := <-hooks:
			if a.Kind != kind || a.AccountID != in.AccountID || a.BurnFenPerHour != 521 {
				t.Fatalf("webhook got %+v, want %s", a, kind)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no %s alert reached the webhook", kind)
		}
	}
	expect("", false) // plenty of runway
	drainTo(800)      // 800 / 521 h ≈ 1 h 32 min
	expect("runway_2h", false)
	expect("", false) // once per crossing
	drainTo(200)      // ≈ 23 min
	expect("runway_30m", false)
	drainTo(5) // ≈ 35 s
	expect("runway_stop", true)
	evs, err := c.AccountEvents(ctx)
	if err != nil || len(evs.Events) != 3 || evs.Events[0].Kind != "runway_stop" || evs.WebhookURL != receiver.URL+"/hook" {
		t.Fatalf("account events: %+v %v", evs, err)
	}
	// A top-up re-arms the alerts.
	if _, _, err := s.Wallet.Credit(ctx, &gpurent.Account{ID: "acc-ops", Role: gpurent.RoleOperator}, in.AccountID, 100_000, "top-up", "again"); err != nil {
		t.Fatal(err)
	}
	expect("", false)
	drainTo(800)
	expect("runway_2h", false)
}
