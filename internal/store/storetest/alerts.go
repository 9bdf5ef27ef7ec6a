package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func testRunwayAlerts(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	acc := SeedAccount(t, s, "alerts@example.com")
	if u, err := s.WebhookURL(ctx, acc.ID); err != nil || u != "" {
		t.Fatalf("new webhook: %q %v", u, err)
	}
	if err := s.SetWebhookURL(ctx, acc.ID, "https://hooks.example/gpurent"); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.WebhookURL(ctx, acc.ID); u != "https://hooks.example/gpurent" {
		t.Errorf("webhook: %q", u)
	}
	if err := s.SetWebhookURL(ctx, "acc-none", "x"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("unknown account: %v", err)
	}
	if ok, err := s.SetRunwayAlert(ctx, acc.ID, "", "2h"); err != nil || !ok {
		t.Fatalf("first alert: %v %v", ok, err)
	}
	if ok, err := s.SetRunwayAlert(ctx, acc.ID, "", "2h"); err != nil || ok {
		t.Errorf("the same crossing twice moved the level: %v %v", ok, err)
	}
	if lvl, err := s.RunwayAlert(ctx, acc.ID); err != nil || lvl != "2h" {
		t.Errorf("level: %q %v", lvl, err)
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, kind := range []string{"runway_2h", "runway_30m", "stopped_empty_wallet"} {
		if err := s.AddAccountEvent(ctx, &gpurent.AccountEvent{AccountID: acc.ID, At: t0.Add(time.Duration(i) * time.Minute),
			Kind: kind, Message: kind}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.ListAccountEvents(ctx, acc.ID, 2)
	if err != nil || len(evs) != 2 || evs[0].Kind != "stopped_empty_wallet" || evs[1].Kind != "runway_30m" || !evs[1].At.Equal(t0.Add(time.Minute)) {
		t.Errorf("events, newest first: %+v %v", evs, err)
	}

	// Arrears: when they began, and the release notices.
	if since, notice, err := s.Arrears(ctx, acc.ID); err != nil || since != nil || notice != "" {
		t.Fatalf("new account's arrears: %v %q %v", since, notice, err)
	}
	began := t0.Add(time.Hour)
	if err := s.SetArrears(ctx, acc.ID, &began); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SetArrearsNotice(ctx, acc.ID, "", "72h"); err != nil || !ok {
		t.Fatalf("notice: %v %v", ok, err)
	}
	if ok, err := s.SetArrearsNotice(ctx, acc.ID, "", "72h"); err != nil || ok {
		t.Errorf("the same notice twice: %v %v", ok, err)
	}
	if since, notice, err := s.Arrears(ctx, acc.ID); err != nil || since == nil || !since.Equal(began) || notice != "72h" {
		t.Errorf("arrears: %v %q %v", since, notice, err)
	}
	if err := s.SetArrears(ctx, acc.ID, nil); err != nil {
		t.Fatal(err)
	}
	if since, notice, err := s.Arrears(ctx, acc.ID); err != nil || since != nil || notice != "" {
		t.Errorf("paid: %v %q %v", since, notice, err)
	}
	if err := s.SetArrears(ctx, "acc-none", nil); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("unknown account: %v", err)
	}
}
