package wallet_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

// TestReviewArrears: storage arrears start a 15-day clock; notices go out
// 72 h and 24 h before the release, once each; at 15 days the account's
// stopped instances must be released; paying the arrears stops the clock.
func TestReviewArrears(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	acc := storetest.SeedAccount(t, st, "owes@example.com")
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	sent := 0
	ws := wallet.New(wallet.Config{Store: st, Now: func() time.Time { return now },
		Notify: func(context.Context, string, []byte) { sent++ }})
	if err := st.SetWebhookURL(ctx, acc.ID, "http://127.0.0.1:9/hook"); err != nil {
		t.Fatal(err)
	}
	if rel, err := ws.ReviewArrears(ctx, acc.ID); err != nil || rel {
		t.Fatalf("no arrears: %v %v", rel, err)
	}
	if _, err := st.PostLedger(ctx, &gpurent.LedgerTx{Op: "debit", Charge: "storage", Key: "storage:v:2026-10-31",
		Customer: acc.ID, At: now, AmountFen: 150}); err != nil {
		t.Fatal(err)
	}
	step := func(at time.Time, wantRelease bool, wantEvents int) {
		t.Helper()
		now = at
		rel, err := ws.ReviewArrears(ctx, acc.ID)
		if err != nil || rel != wantRelease {
			t.Fatalf("at %s: release %v (%v), want %v", at, rel, err, wantRelease)
		}
		evs, err := st.ListAccountEvents(ctx, acc.ID, 10)
		if err != nil || len(evs) != wantEvents {
			t.Fatalf("at %s: %d events (%v), want %d: %+v", at, len(evs), err, wantEvents, evs)
		}
	}
	t0 := now
	step(t0, false, 0)                                // the clock starts
	step(t0.Add(11*24*time.Hour), false, 0)           // 4 days before: nothing yet
	step(t0.Add(12*24*time.Hour+time.Hour), false, 1) // within 72 h
	step(t0.Add(12*24*time.Hour+2*time.Hour), false, 1)
	step(t0.Add(14*24*time.Hour+time.Hour), false, 2) // within 24 h
	step(t0.Add(15*24*time.Hour), true, 2)            // release
	if sent != 2 {
		t.Errorf("%d webhooks, want 2", sent)
	}
	// Paying the arrears stops the clock.
	if _, err := st.PostLedger(ctx, &gpurent.LedgerTx{Op: "topup", Key: "pay", Customer: acc.ID, At: now, AmountFen: 1000}); err != nil {
		t.Fatal(err)
	}
	step(now.Add(time.Hour), false, 2)
	if since, notice, err := st.Arrears(ctx, acc.ID); err != nil || since != nil || notice != "" {
		t.Errorf("after paying: since %v notice %q %v", since, notice, err)
	}
}
