package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestChargePackages: a monthly package of 2 x H100 costs 2 x ¥20,000 up
// front, once per 30-day period; a wallet that cannot pay names the
// instance for stopping.
func TestChargePackages(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	w.topUp(t, 5_000_000)
	book := defaultBook(t)
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	pkg := &gpurent.Instance{AccountID: w.in.AccountID, Name: "pkg", Image: "busybox", TypeID: "h100-80g-sxm", GPUCount: 2,
		State: gpurent.StateRunning, Plan: gpurent.PlanMonthly, CreatedAt: created}
	if err := w.st.CreateInstance(ctx, pkg); err != nil {
		t.Fatal(err)
	}
	w.now = created.Add(time.Hour)
	n, unpaid, err := w.svc.ChargePackages(ctx, book)
	if err != nil || n != 1 || len(unpaid) != 0 {
		t.Fatalf("first period: %d %v %v", n, unpaid, err)
	}
	if n, _, err := w.svc.ChargePackages(ctx, book); err != nil || n != 0 {
		t.Fatalf("charged twice: %d %v", n, err)
	}
	if got := w.cash(t); got != 5_000_000-4_000_000 {
		t.Errorf("cash %d after the first month, want 1,000,000", got)
	}
	// The second period begins on day 31; the wallet holds ¥10,000 of
	// ¥40,000: nothing is posted for it (never a short or zero charge),
	// the package lapses to the hourly plan from that period's start and
	// the instance is named for stopping.
	w.now = created.Add(30*24*time.Hour + time.Minute)
	n, unpaid, err = w.svc.ChargePackages(ctx, book)
	if err != nil || n != 0 || len(unpaid) != 1 || unpaid[0] != pkg.ID {
		t.Fatalf("second period: %d %v %v", n, unpaid, err)
	}
	if got := w.cash(t); got != 1_000_000 {
		t.Errorf("cash %d, want 1,000,000 (an unpaid period is not posted)", got)
	}
	in, err := w.st.InstanceByID(ctx, pkg.ID)
	if err != nil || in.Plan != gpurent.PlanHourly {
		t.Fatalf("plan after the unpaid period: %+v %v", in, err)
	}
	changes, err := w.st.PlanChanges(ctx, pkg.ID)
	if err != nil || len(changes) != 1 || !changes[0].EffectiveAt.Equal(created.Add(30*24*time.Hour)) ||
		changes[0].State != gpurent.PlanChangeApplied || changes[0].To != gpurent.PlanHourly {
		t.Fatalf("the lapse: %+v %v", changes, err)
	}
	if _, err := w.st.LedgerTxByKey(ctx, "package:"+pkg.ID+":2"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("period 2 posted: %v", err)
	}
	// Nothing is left to collect or to list again.
	if n, unpaid, err := w.svc.ChargePackages(ctx, book); err != nil || n != 0 || len(unpaid) != 0 {
		t.Fatalf("after the lapse: %d %v %v", n, unpaid, err)
	}
}
