package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestSpendLimits: a customer caps its daily spending; once its debits
// reach the cap, new rentals are refused, and with stop-running its running
// instances are marked for stopping.
func TestSpendLimits(t *testing.T) {
	ctx := context.Background()
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-race",
		BcryptCost: 4, HostTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	registerHosts(t, s, "cap", "rtx4090-24g", 1)
	c := customers(t, s, 1)[0]
	in, err := c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "rtx4090-24g", GPUCount: 1, Image: "busybox"}, "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.SetSpendLimits(ctx, apiv1.SetSpendLimitsRequest{DailyFen: 1000, StopRunning: true})
	if err != nil || l.DailyFen != 1000 || l.Reached != "" {
		t.Fatalf("limits: %+v %v", l, err)
	}
	// The instance ran and was debited ¥10.00: the cap is reached.
	if _, err := s.Store.PostLedger(ctx, &gpurent.LedgerTx{Op: "debit", Key: "usage:test:1000", Customer: in.AccountID,
		At: time.Now(), AmountFen: 1000, Charge: "compute"}); err != nil {
		t.Fatal(err)
	}
	if l, err = c.SpendLimits(ctx); err != nil || l.Reached != "daily" || l.SpentTodayFen != 1000 {
		t.Fatalf("after the debit: %+v %v", l, err)
	}
	_, err = c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "rtx4090-24g", GPUCount: 1, Image: "busybox"}, "")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code() != gpurent.CodePaymentRequired || !strings.Contains(apiErr.Problem.Detail, "daily spend limit") {
		t.Fatalf("renting past the cap: %v", err)
	}
	// Its running instance is marked for stopping.
	hosts, err := s.Store.ListHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host := &hosts[0]
	if _, err := s.Metering.Ingest(ctx, host, []agentproto.RunEvent{{ID: "r1", Kind: agentproto.RunStarted,
		InstanceID: in.ID, AllocationID: mustAllocation(t, s, in.ID), StartedAt: time.Now().Add(-time.Minute)}}, nil); err != nil {
		t.Fatal(err)
	}
	stop, err := s.Metering.OverLimit(ctx)
	if err != nil || len(stop) != 1 || stop[0] != in.ID {
		t.Fatalf("instances to stop at the cap: %v %v", stop, err)
	}
	// Without stop-running, the running instance goes on.
	if _, err := c.SetSpendLimits(ctx, apiv1.SetSpendLimitsRequest{DailyFen: 1000}); err != nil {
		t.Fatal(err)
	}
	if stop, err := s.Metering.OverLimit(ctx); err != nil || len(stop) != 0 {
		t.Errorf("stop-running off, yet: %v %v", stop, err)
	}
	if _, err := c.SetSpendLimits(ctx, apiv1.SetSpendLimitsRequest{DailyFen: -5}); err == nil {
		t.Error("a negative cap was accepted")
	}
}

func mustAllocation(t *testing.T, s *Server, instanceID string) string {
	t.Helper()
	a, err := s.Store.OpenAllocation(context.Background(), instanceID)
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}
