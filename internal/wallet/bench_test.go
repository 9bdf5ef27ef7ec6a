package wallet_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// BenchmarkPostDebit measures Store.PostLedger for live debits: one
// transaction each (lock, key lookup, wallet sum, plan, insert), spread
// over 20 customers and run from parallel goroutines. Every customer's
// wallet already holds 200 transactions, so the sum is not over an empty book.
func BenchmarkPostDebit(b *testing.B) {
	for name, open := range map[string]func(testing.TB) gpurent.Store{
		"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		b.Run(name, func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
			const customers = 20
			ids := make([]string, customers)
			for i := range ids {
				ids[i] = storetest.SeedAccount(b, s, fmt.Sprintf("b%d@example.com", i)).ID
				err := s.InTx(ctx, func(q gpurent.Queries) error {
					if _, err := q.PostLedger(ctx, &gpurent.LedgerTx{Op: string(ledger.OpTopUp), Key: "seed:" + ids[i],
						Customer: ids[i], At: at, AmountFen: 1 << 40}); err != nil {
						return err
					}
					for j := range 199 {
						if _, err := q.PostLedger(ctx, &gpurent.LedgerTx{Op: string(ledger.OpDebit),
							Key: fmt.Sprintf("pre:%s:%d", ids[i], j), Customer: ids[i], At: at, AmountFen: 1,
							Charge: string(ledger.ChargeCompute)}); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			var n atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					c := ids[i%customers]
					if _, err := s.PostLedger(ctx, &gpurent.LedgerTx{Op: string(ledger.OpDebit),
						Key: fmt.Sprintf("debit:%d", i), Customer: c, At: at, AmountFen: 3,
						Charge: string(ledger.ChargeCompute)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
