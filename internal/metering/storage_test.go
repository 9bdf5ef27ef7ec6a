package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

// TestChargeStorage: a 100 GiB volume (50 free) costs 50 fen a day, for
// every day it existed, once; with no money the account falls into
// arrears, and arrears stop new spending.
func TestChargeStorage(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, b.open(t))
			loc, _ := rating.LoadBillingZone()
			created := time.Date(2026, 11, 26, 10, 0, 0, 0, loc)
			vol := &gpurent.Volume{InstanceID: w.in.ID, AccountID: w.in.AccountID, HostID: w.host.ID, SizeGiB: 100, Name: "v", CreatedAt: created}
			if err := w.st.CreateVolume(ctx, vol); err != nil {
				t.Fatal(err)
			}
			small := &gpurent.Volume{InstanceID: w.in.ID, AccountID: w.in.AccountID, HostID: w.host.ID, SizeGiB: 20, Name: "s", CreatedAt: created}
			if err := w.st.CreateVolume(ctx, small); err != nil {
				t.Fatal(err)
			}
			w.now = time.Date(2026, 11, 29, 12, 0, 0, 0, loc)
			n, err := w.svc.ChargeStorage(ctx)
			if err != nil || n != 3 { // the 26th, 27th and 28th; the small volume is free
				t.Fatalf("charged %d days (%v), want 3", n, err)
			}
			if n, err := w.svc.ChargeStorage(ctx); err != nil || n != 0 {
				t.Fatalf("charged again: %d %v", n, err)
			}
			bal, err := w.st.LedgerBalances(ctx, w.in.AccountID)
			if err != nil || bal.CashFen != 0 || bal.ReceivableFen != -150 {
				t.Fatalf("balances: %+v %v; want 150 fen of arrears", bal, err)
			}
			ws := wallet.New(wallet.Config{Store: w.st, Now: func() time.Time { return w.now }})
			if err := ws.CheckSpend(ctx, w.in.AccountID); !gpurent.IsCode(err, gpurent.CodePaymentRequired) {
				t.Errorf("spending while in arrears: %v", err)
			}
			// Deleted on the 29th: the 29th is charged (it existed then), not
			// the 30th.
			if err := w.st.MarkVolumeDeleted(ctx, vol.ID, time.Date(2026, 11, 29, 15, 0, 0, 0, loc)); err != nil {
				t.Fatal(err)
			}
			w.now = time.Date(2026, 12, 2, 1, 0, 0, 0, loc)
			if n, err := w.svc.ChargeStorage(ctx); err != nil || n != 1 {
				t.Fatalf("after the delete: charged %d (%v), want 1", n, err)
			}
		})
	}
}

// arrearsOf is a wallet whose one account is past its release time and
// an instance service that records the releases.
type arrearsOf struct {
	account  string
	released []string
}

func (a *arrearsOf) ReviewArrears(_ context.Context, acc string) (bool, error) {
	return acc == a.account, nil
}
func (a *arrearsOf) MustStop(context.Context, string) (bool, error)  { return false, nil }
func (a *arrearsOf) CheckFunds(context.Context, string, int64) error { return nil }
func (a *arrearsOf) ReserveFen(context.Context, gpurent.Queries, string, string) (int64, error) {
	return 0, nil
}
func (a *arrearsOf) StopUnpaid(context.Context, string) error      { return nil }
func (a *arrearsOf) ReleaseIdleGPUs(context.Context, string) error { return nil }
func (a *arrearsOf) ReleaseUnpaid(_ context.Context, id string) error {
	a.released = append(a.released, id)
	return nil
}

// TestReleaseForArrears: accounts past their release time have their
// stopped instances released; running ones are not touched.
func TestReleaseForArrears(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	w := newWorld(t, st)
	arrears := &arrearsOf{account: w.in.AccountID}
	svc := metering.New(metering.Config{Store: st, Now: func() time.Time { return w.now }, Wallet: arrears, Instances: arrears})
	stopped := &gpurent.Instance{AccountID: w.in.AccountID, Name: "stopped", Image: "busybox", TypeID: "h100-80g-sxm",
		GPUCount: 1, State: gpurent.StateStopped, Plan: gpurent.PlanHourly}
	if err := st.CreateInstance(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateVolume(ctx, &gpurent.Volume{InstanceID: stopped.ID, AccountID: w.in.AccountID, HostID: w.host.ID, SizeGiB: 80, Name: "v"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.ReleaseForArrears(ctx); err != nil {
		t.Fatal(err)
	}
	released := arrears.released
	if len(released) != 1 || released[0] != stopped.ID {
		t.Errorf("released %v, want only the stopped instance %s", released, stopped.ID)
	}
}
