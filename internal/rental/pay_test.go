package rental_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// payEnv is an env whose rental service is gated and charged as the
// composition root wires it: the wallet's start gate, the package's
// periods collected by metering in the claim's transaction.
type payEnv struct{ *env }

func newPayEnv(t *testing.T, st gpurent.Store) *payEnv {
	t.Helper()
	return &payEnv{newEnvWith(t, st, rentaltest.Options{Unfunded: true})}
}

// topUp books a confirmed payment of fen for acc.
func (e *payEnv) topUp(acc *gpurent.Account, fen int64) {
	e.T.Helper()
	if _, err := e.St.PostLedger(e.Ctx, &gpurent.LedgerTx{Op: "topup", Key: "topup:" + gpurent.NewID("pay"), Customer: acc.ID,
		At: e.Clock.Now(), AmountFen: fen, Actor: "test", Note: "test top-up"}); err != nil {
		e.T.Fatalf("top up: %v", err)
	}
}

// cash is acc's cash balance.
func (e *payEnv) cash(acc *gpurent.Account) int64 {
	e.T.Helper()
	b, err := e.St.LedgerBalances(e.Ctx, acc.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	return b.CashFen
}

// packageDebits lists acc's posted package charges by key.
func (e *payEnv) packageDebits(acc *gpurent.Account) map[string]int64 {
	e.T.Helper()
	txs, err := e.St.LedgerTxs(e.Ctx, acc.ID, 0, 1000)
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]int64{}
	for _, tx := range txs {
		if tx.Op == "debit" && strings.HasPrefix(tx.Key, "package:") {
			var got int64
			for _, p := range tx.Postings {
				if p.Customer == acc.ID {
					got -= p.AmountFen
				}
			}
			out[tx.Key] = got
		}
	}
	return out
}

// ledgerBalances fails unless the whole ledger sums to zero.
func (e *payEnv) ledgerBalances(accs ...*gpurent.Account) {
	e.T.Helper()
	plat, err := e.St.LedgerPlatformBalances(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	var sum int64
	for _, v := range plat {
		sum += v
	}
	for _, a := range accs {
		b, err := e.St.LedgerBalances(e.Ctx, a.ID)
		if err != nil {
			e.T.Fatal(err)
		}
		sum += b.CashFen + b.ReceivableFen
		for _, l := range b.Lots {
			sum += l.BalanceFen
		}
		if b.CashFen < 0 {
			e.T.Errorf("cash of %s is %d, below zero", a.Email, b.CashFen)
		}
	}
	if sum != 0 {
		e.T.Errorf("the ledger sums to %d fen, want 0", sum)
	}
}

// heldAll counts the GPUs held on the hosts.
func (e *payEnv) heldAll(hosts []*gpurent.Host) int {
	n := 0
	for _, h := range hosts {
		n += rentaltest.Held(e.Host(h.ID))
	}
	return n
}

// live lists acc's instances not deleted.
func (e *payEnv) live(acc *gpurent.Account) []gpurent.Instance {
	e.T.Helper()
	list, err := e.St.ListInstances(e.Ctx, gpurent.InstanceFilter{AccountID: acc.ID, ActiveOnly: true})
	if err != nil {
		e.T.Fatal(err)
	}
	return list
}

// runningPackage rents alice one daily A100 package, paid with exactly
// its price (¥690), on a fresh host of two A100s, and reports it running.
func (e *payEnv) runningPackage() (*gpurent.Host, gpurent.Instance) {
	e.T.Helper()
	h := e.Register("node-1", zoneA, a100, 2)
	e.topUp(e.Alice, 69_000)
	in := e.MustRent(e.Alice, daily(a100, 1)).Instance
	e.Report(h.ID, rentaltest.Running(&in))
	return h, in
}

// stopReported stops in as its owner and reports it stopped on h.
func (e *payEnv) stopReported(h *gpurent.Host, in gpurent.Instance) {
	e.T.Helper()
	if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
		e.T.Fatal(err)
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateStopped})
}

// daily is a request for one daily package of n x typ.
func daily(typ string, n int) rental.RentRequest {
	r := rentaltest.Req(typ, n)
	r.Plan = gpurent.PlanDaily
	return r
}

// TestPackageRentRace: 50 concurrent daily-package rents of one account
// against a wallet that pays for exactly one: one succeeds, 49 are refused
// with payment_required, one period is charged in full, the ledger sums to
// zero, and the losers hold no GPU and left no instance. On PostgreSQL the
// rents really run at once, over the pool.
func TestPackageRentRace(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newPayEnv(t, st)
		var hosts []*gpurent.Host
		for i := range 7 {
			hosts = append(hosts, e.Register(fmt.Sprintf("node-%d", i), zoneA, a100, 8))
		}
		e.topUp(e.Alice, 69_000) // one A100 day: ¥18,000 × 1.15 / 30 = ¥690
		const n = 50
		errs := make([]error, n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				_, _, errs[i] = e.Rent.Rent(e.Ctx, e.Alice, daily(a100, 1))
			}()
		}
		close(gate)
		wg.Wait()
		won, refused := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case gpurent.IsCode(err, gpurent.CodePaymentRequired):
				refused++
			default:
				t.Errorf("rent: %v (code %s)", err, gpurent.ErrorCode(err))
			}
		}
		if won != 1 || refused != n-1 {
			t.Fatalf("%d rents succeeded and %d were refused payment_required, want 1 and %d", won, refused, n-1)
		}
		if got := e.live(e.Alice); len(got) != 1 {
			t.Fatalf("%d instances left, want the winner's only", len(got))
		}
		if got := e.heldAll(hosts); got != 1 {
			t.Errorf("%d GPUs held, want the winner's 1", got)
		}
		in := e.live(e.Alice)[0]
		if got := e.packageDebits(e.Alice); len(got) != 1 || got["package:"+in.ID+":1"] != 69_000 {
			t.Errorf("package debits %v, want the winner's first period in full", got)
		}
		if got := e.cash(e.Alice); got != 0 {
			t.Errorf("cash %d, want 0", got)
		}
		e.ledgerBalances(e.Alice, e.Bob, e.Op)
		// The billing pass finds the period paid: nothing more, nobody unpaid.
		if n, unpaid, err := e.Meter.ChargePackages(e.Ctx, e.Prices); err != nil || n != 0 || len(unpaid) != 0 {
			t.Fatalf("billing pass after the race: %d %v %v", n, unpaid, err)
		}
	})
}

// TestUnpaidPackagesReproduction is the report's case: ¥690 held five
// A100 daily packages (the funds check passed for each, the periods the
// wallet could not cover were posted as zero, their GPUs stayed reserved)
// and one of those was started with a ¥31.25 balance. Now one package is
// rented and paid, four are refused, and no unpaid package exists to start.
func TestUnpaidPackagesReproduction(t *testing.T) {
	e := newPayEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, a100, 8)
	e.topUp(e.Alice, 69_000)
	ok := 0
	for i := range 5 {
		_, _, err := e.Rent.Rent(e.Ctx, e.Alice, daily(a100, 1))
		if err == nil {
			ok++
			continue
		}
		rentaltest.WantCode(t, err, gpurent.CodePaymentRequired, fmt.Sprintf("package %d", i+1))
		rentaltest.WantMessage(t, err, "¥0.00", "¥690.00", "top up")
	}
	if ok != 1 {
		t.Fatalf("%d of five ¥690 packages rented on ¥690, want 1", ok)
	}
	if n := rentaltest.Held(e.Host(h.ID)); n != 1 {
		t.Fatalf("%d GPUs reserved, want 1", n)
	}
	_, unpaid, err := e.Meter.ChargePackages(e.Ctx, e.Prices)
	if err != nil || len(unpaid) != 0 {
		t.Fatalf("billing pass: %v %v", unpaid, err)
	}
	// A ¥31.25 top-up (one A100 hour) starts nothing unpaid: every
	// package of the account is paid for.
	e.topUp(e.Alice, 3125)
	for _, in := range e.live(e.Alice) {
		if got := e.packageDebits(e.Alice)["package:"+in.ID+":1"]; got != 69_000 {
			t.Errorf("instance %s: first period paid %d, want 69,000", in.ID, got)
		}
	}
	if got := e.cash(e.Alice); got != 3125 {
		t.Errorf("cash %d, want ¥31.25", got)
	}
	e.ledgerBalances(e.Alice)
}

// TestPackageRentIdempotent: a retried package rent with the same key
// answers the first instance and charges once.
func TestPackageRentIdempotent(t *testing.T) {
	e := newPayEnv(t, storetest.SQLite(t))
	e.Register("node-1", zoneA, a100, 8)
	e.topUp(e.Alice, 2*69_000)
	r := daily(a100, 1)
	r.IdempotencyKey = "rent-once"
	d1, created, err := e.Rent.Rent(e.Ctx, e.Alice, r)
	if err != nil || !created {
		t.Fatalf("first rent: %v %v", created, err)
	}
	d2, created, err := e.Rent.Rent(e.Ctx, e.Alice, r)
	if err != nil || created || d2.Instance.ID != d1.Instance.ID {
		t.Fatalf("retry: created %v, %v, instance %s want %s", created, err, d2.Instance.ID, d1.Instance.ID)
	}
	if got := e.packageDebits(e.Alice); len(got) != 1 {
		t.Errorf("package debits %v, want one", got)
	}
	if got := e.cash(e.Alice); got != 69_000 {
		t.Errorf("cash %d, want one period gone", got)
	}
}

// TestUnpaidRenewalReleasesGPUs: a day later the wallet cannot pay the
// second period: nothing is posted for it, the package lapses to the
// hourly plan, the instance is stopped and its GPUs released; start is
// refused until the wallet covers an hour, then it starts anew, billed by
// the hour.
func TestUnpaidRenewalReleasesGPUs(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newPayEnv(t, st)
		h, in := e.runningPackage()
		e.Clock.Advance(24*time.Hour + time.Minute)
		e.Heartbeat(h.ID)
		_, unpaid, err := e.Meter.ChargePackages(e.Ctx, e.Prices)
		if err != nil || len(unpaid) != 1 || unpaid[0] != in.ID {
			t.Fatalf("renewal pass: %v %v", unpaid, err)
		}
		if got := e.packageDebits(e.Alice); len(got) != 1 {
			t.Fatalf("package debits %v: the unpaid period was posted", got)
		}
		if got := e.Instance(in.ID); got.Plan != gpurent.PlanHourly {
			t.Fatalf("plan %s after the unpaid period, want hourly", got.Plan)
		}
		// The app stops it; once stopped its GPUs are free.
		if err := e.Rent.StopUnpaid(e.Ctx, in.ID); err != nil {
			t.Fatal(err)
		}
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateStopped})
		if got := e.Instance(in.ID); got.State != gpurent.StateStopped || got.AllocationID != "" {
			t.Fatalf("after the stop: %s, allocation %q; want stopped, none", got.State, got.AllocationID)
		}
		if n := rentaltest.Held(e.Host(h.ID)); n != 0 {
			t.Fatalf("%d GPUs still reserved for the unpaid package", n)
		}
		_, err = e.Rent.Start(e.Ctx, e.Alice, in.ID)
		rentaltest.WantCode(t, err, gpurent.CodePaymentRequired, "start with an empty wallet")
		if got := e.Instance(in.ID); got.State != gpurent.StateStopped || got.AllocationID != "" {
			t.Fatalf("a refused start changed the instance: %s, %q", got.State, got.AllocationID)
		}
		e.topUp(e.Alice, 3125)
		d, err := e.Rent.Start(e.Ctx, e.Alice, in.ID)
		if err != nil || d.Instance.State != gpurent.StateProvisioning || d.Instance.AllocationID == "" {
			t.Fatalf("start after the top-up: %+v %v", d, err)
		}
		e.ledgerBalances(e.Alice)
	})
}

// TestUnpaidRenewalWhileStopped: a package stopped with its GPUs reserved
// whose next period goes unpaid gives its GPUs back at once.
func TestUnpaidRenewalWhileStopped(t *testing.T) {
	e := newPayEnv(t, storetest.SQLite(t))
	h, in := e.runningPackage()
	e.stopReported(h, in)
	if n := rentaltest.Held(e.Host(h.ID)); n != 1 {
		t.Fatalf("%d GPUs held by the stopped paid package, want 1", n)
	}
	e.Clock.Advance(24 * time.Hour)
	_, unpaid, err := e.Meter.ChargePackages(e.Ctx, e.Prices)
	if err != nil || len(unpaid) != 1 {
		t.Fatalf("renewal pass: %v %v", unpaid, err)
	}
	if err := e.Rent.StopUnpaid(e.Ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if n := rentaltest.Held(e.Host(h.ID)); n != 0 {
		t.Fatalf("%d GPUs still reserved for the unpaid package", n)
	}
	if ev := e.LastEvent(in.ID); ev.Kind != "released" {
		t.Errorf("last event %+v, want released", ev)
	}
}

// TestStartCollectsDuePeriod: a stopped package whose next period began
// before any billing pass charged it pays that period as it starts, or the
// start is refused and nothing changes.
func TestStartCollectsDuePeriod(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newPayEnv(t, st)
		h, in := e.runningPackage()
		e.stopReported(h, in)
		e.Clock.Advance(24*time.Hour + time.Hour)
		e.Heartbeat(h.ID)
		_, err := e.Rent.Start(e.Ctx, e.Alice, in.ID)
		rentaltest.WantCode(t, err, gpurent.CodePaymentRequired, "start with the second day unpaid")
		rentaltest.WantMessage(t, err, "daily package's period 2", "¥690.00")
		if got := e.Instance(in.ID); got.State != gpurent.StateStopped {
			t.Fatalf("a refused start changed the instance: %s", got.State)
		}
		e.topUp(e.Alice, 69_000)
		if _, err := e.Rent.Start(e.Ctx, e.Alice, in.ID); err != nil {
			t.Fatalf("start after the top-up: %v", err)
		}
		if got := e.packageDebits(e.Alice); got["package:"+in.ID+":2"] != 69_000 {
			t.Errorf("package debits %v, want the second day collected by the start", got)
		}
		if got := e.cash(e.Alice); got != 0 {
			t.Errorf("cash %d, want 0", got)
		}
		e.ledgerBalances(e.Alice)
	})
}

// TestStartGateCountsBurn: the start gate keeps an hour of what the
// account's running hourly instances burn: ¥40 with one A100 hour
// (¥31.25) already running does not start a second.
func TestStartGateCountsBurn(t *testing.T) {
	e := newPayEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, a100, 2)
	e.topUp(e.Alice, 4000)
	first := e.MustRent(e.Alice, rentaltest.Req(a100, 1)).Instance
	e.Report(h.ID, rentaltest.Running(&first))
	_, _, err := e.Rent.Rent(e.Ctx, e.Alice, rentaltest.Req(a100, 1))
	rentaltest.WantCode(t, err, gpurent.CodePaymentRequired, "a second A100 hour on ¥40 with one running")
	rentaltest.WantMessage(t, err, "¥40.00", "¥31.25 is kept")
	if n := rentaltest.Held(e.Host(h.ID)); n != 1 {
		t.Errorf("%d GPUs held, want 1", n)
	}
	// A package cannot take what the running hour needs either.
	e.topUp(e.Alice, 65_000)
	_, _, err = e.Rent.Rent(e.Ctx, e.Alice, daily(a100, 1))
	rentaltest.WantCode(t, err, gpurent.CodePaymentRequired, "a day on ¥690 with an hour of ¥31.25 running")
	e.topUp(e.Alice, 3125)
	if _, _, err := e.Rent.Rent(e.Ctx, e.Alice, daily(a100, 1)); err != nil {
		t.Fatalf("a day on ¥721.25 with an hour running: %v", err)
	}
}
