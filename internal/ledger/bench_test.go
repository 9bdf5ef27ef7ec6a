package ledger

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// benchWallet is a ledger with one customer holding plenty of cash and a
// few promo and SLA lots, so debits walk the burn order.
func benchLedger(b *testing.B) *Ledger {
	l := New()
	post := func(r Request) {
		if _, _, err := l.Post(r); err != nil {
			b.Fatal(err)
		}
	}
	post(topUp("topup:bench", cust, MaxAmountFen, at(0)))
	for i := range 4 {
		post(grant(fmt.Sprintf("promo:%d", i), cust, KindPromo, 1<<40, at(0), at(24*(i+1))))
	}
	post(grant("sla:bench", cust, KindSLA, 1<<40, at(0), at(0).Add(DefaultSLACreditTTL)))
	return l
}

// BenchmarkPostDebit measures Ledger.Post of one compute debit: key check,
// plan over the burn order, invariant checks and append.
func BenchmarkPostDebit(b *testing.B) {
	l := benchLedger(b)
	keys := make([]string, 0, 1<<20)
	for i := range cap(keys) {
		keys = append(keys, fmt.Sprintf("debit:line-%d:1", i))
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i == len(keys) {
			b.StopTimer()
			l = benchLedger(b)
			i = 0
			b.StartTimer()
		}
		if _, _, err := l.Post(debit(keys[i], cust, ChargeCompute, 521, at(1))); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPlanDebit measures the pure operation alone: Wallet.Plan of a
// debit on a wallet with five lots.
func BenchmarkPlanDebit(b *testing.B) {
	w := benchLedger(b).Wallet(cust)
	r := debit("debit:line:1", cust, ChargeCompute, 521, at(1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Plan(r); err != nil {
			b.Fatal(err)
		}
	}
}

// replayLog builds a log of n transactions over 1,000 customers: top-ups,
// promo and SLA grants, compute and storage debits (some into arrears or
// short) and expiries, in the proportions of a busy day.
func replayLog(b *testing.B, n int) []Tx {
	l := New()
	const customers = 1000
	now := at(0)
	for i := 0; l.Len() < n; i++ {
		c := fmt.Sprintf("acc-%04d", i%customers)
		if i%customers == 0 {
			now = now.Add(time.Minute)
		}
		var r Request
		switch k := i / customers % 50; {
		case k == 0:
			r = topUp(fmt.Sprintf("topup:%d", i), c, 50_000, now)
		case k == 1:
			r = grant(fmt.Sprintf("promo:%d", i), c, KindPromo, 2_000, now, now.Add(30*time.Minute))
		case k == 2:
			r = grant(fmt.Sprintf("sla:%d", i), c, KindSLA, 1_000, now, now.Add(time.Hour))
		case k%7 == 0:
			r = debit(fmt.Sprintf("debit:vol-%d:%d", i%customers, i), c, ChargeStorage, 40, now)
		default:
			r = debit(fmt.Sprintf("debit:gpu-%d:%d", i%customers, i), c, ChargeCompute, 521, now)
		}
		if _, _, err := l.Post(r); err != nil {
			b.Fatal(err)
		}
		if i%customers == customers-1 {
			for _, e := range l.DueExpiries(now) {
				if _, _, err := l.Post(e); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return slices.Collect(l.Log())[:n]
}

// BenchmarkReplay1M measures rebuilding every balance from a log of
// 1,000,000 transactions, from empty.
func BenchmarkReplay1M(b *testing.B) {
	const n = 1_000_000
	txs := replayLog(b, n)
	b.ReportAllocs()
	for b.Loop() {
		l, err := Replay(slices.Values(txs))
		if err != nil {
			b.Fatal(err)
		}
		if l.Len() != n || l.SumFen() != 0 {
			b.Fatalf("replayed %d transactions summing to %d", l.Len(), l.SumFen())
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tx/s")
}
