package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
)

// testLedgerBalancesKept runs a random ledger workload — top-ups, promo and
// SLA grants, compute and storage debits, expiries, settlements, replayed
// keys and posts rolled back with their transaction — from several
// goroutines over a few customers at once, then holds the balances the
// store keeps to the append-only log: each equals the sum of its account's
// postings, and replaying the log from empty rebuilds every balance
// (invariant 10).
func testLedgerBalancesKept(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	customers := make([]string, 4)
	for i := range customers {
		customers[i] = SeedAccount(t, s, fmt.Sprintf("kept-%d@example.com", i)).ID
	}
	const workers, ops = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			var posted []*gpurent.LedgerTx
			for i := range ops {
				c := customers[rng.IntN(len(customers))]
				key := fmt.Sprintf("kept:%d:%d", w, i)
				at := ledgerAt(0).Add(time.Duration(rng.IntN(48*60)) * time.Minute)
				var tx *gpurent.LedgerTx
				switch k := rng.IntN(10); {
				case k < 2:
					tx = topUp(c, key, 1+rng.Int64N(5_000))
				case k < 4:
					credit := ledger.KindPromo
					if rng.IntN(2) == 0 {
						credit = ledger.KindSLA
					}
					tx = &gpurent.LedgerTx{Op: string(ledger.OpGrant), Key: key, Customer: c, At: at,
						AmountFen: 1 + rng.Int64N(3_000), Credit: string(credit),
						ExpiresAt: at.Add(time.Duration(1+rng.IntN(24*60)) * time.Minute)}
				case k < 7:
					charge := ledger.ChargeCompute
					if rng.IntN(3) == 0 {
						charge = ledger.ChargeStorage
					}
					tx = &gpurent.LedgerTx{Op: string(ledger.OpDebit), Key: key, Customer: c, At: at,
						AmountFen: 1 + rng.Int64N(2_500), Charge: string(charge)}
				case k < 8:
					tx = &gpurent.LedgerTx{Op: string(ledger.OpSettle), Key: key, Customer: c, At: at}
				case k < 9:
					// Sweep an expired lot, if the customer has one (a
					// racing sweep of the same lot answers as the first).
					bal, err := s.LedgerBalances(ctx, c)
					if err != nil {
						errs <- err
						return
					}
					late := ledgerAt(0).Add(100 * time.Hour)
					for _, l := range bal.Lots {
						if !l.ExpiresAt.After(late) {
							tx = &gpurent.LedgerTx{Op: string(ledger.OpExpire), Key: ledger.ExpireKey(l.ID), Customer: c, At: late, Lot: l.ID}
							break
						}
					}
					if tx == nil {
						continue
					}
				default:
					if len(posted) == 0 {
						continue
					}
					// A replay of an earlier post, or one rolled back.
					again := *posted[rng.IntN(len(posted))]
					again.Postings = nil
					if rng.IntN(2) == 0 {
						tx = &again
						break
					}
					rolledBack := errors.New("rolled back on purpose")
					err := s.InTx(ctx, func(q gpurent.Queries) error {
						if _, err := q.PostLedger(ctx, topUp(c, key, 1+rng.Int64N(1_000))); err != nil {
							return err
						}
						return rolledBack
					})
					if !errors.Is(err, rolledBack) {
						errs <- fmt.Errorf("post rolled back: %v", err)
					}
					continue
				}
				if _, err := s.PostLedger(ctx, tx); err != nil {
					// A sweep may lose to a racing sweep made under another key
					// only if the lot is gone; any other error is a failure.
					if tx.Op == string(ledger.OpExpire) && gpurent.IsCode(err, gpurent.CodeNotFound) {
						continue
					}
					errs <- fmt.Errorf("%s %s: %w", tx.Op, tx.Key, err)
					continue
				}
				posted = append(posted, tx)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	checkBalancesAreSums(t, s, customers...)
	replayStore(t, s, customers...)
}

// checkBalancesAreSums sums each customer's postings from the stored log
// and compares every account with the balance the store keeps.
func checkBalancesAreSums(t *testing.T, s gpurent.Store, customers ...string) {
	t.Helper()
	ctx := t.Context()
	for _, c := range customers {
		sums := map[string]int64{} // by kind/lot
		before := int64(0)
		for {
			txs, err := s.LedgerTxs(ctx, c, before, 1000)
			must(t, err, "list ledger")
			for _, tx := range txs {
				for _, p := range tx.Postings {
					if p.Customer == c {
						sums[p.Kind+"/"+p.Lot] += p.AmountFen
					}
				}
				before = tx.Seq
			}
			if len(txs) < 1000 {
				break
			}
		}
		bal, err := s.LedgerBalances(ctx, c)
		must(t, err, "balances")
		kept := map[string]int64{}
		if bal.CashFen != 0 {
			kept[string(ledger.KindCash)+"/"] = bal.CashFen
		}
		if bal.ReceivableFen != 0 {
			kept[string(ledger.KindReceivable)+"/"] = bal.ReceivableFen
		}
		for _, l := range bal.Lots {
			kept[l.Kind+"/"+l.ID] = l.BalanceFen
		}
		for k, v := range sums {
			if v == 0 {
				delete(sums, k)
			}
		}
		same(t, c+": kept balances against the sums of postings", kept, sums)
	}
}
