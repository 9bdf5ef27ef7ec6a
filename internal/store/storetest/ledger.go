package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
)

// ledgerAt is a fixed instant for ledger requests, in a zone that is not
// UTC and with nanoseconds, so that normalisation shows.
func ledgerAt(hour int) time.Time {
	return time.Date(2026, 11, 2, hour, 0, 0, 987654321, time.FixedZone("CST", 8*3600))
}

func topUp(customer, key string, fen int64) *gpurent.LedgerTx {
	return &gpurent.LedgerTx{Op: string(ledger.OpTopUp), Key: key, Customer: customer, At: ledgerAt(1), AmountFen: fen}
}

func debit(customer, key string, fen int64, at time.Time) *gpurent.LedgerTx {
	return &gpurent.LedgerTx{Op: string(ledger.OpDebit), Key: key, Customer: customer, At: at, AmountFen: fen,
		Charge: string(ledger.ChargeCompute)}
}

// replayStore rebuilds the in-memory ledger from every customer's stored
// log, oldest first, and checks it against the store's sums.
func replayStore(t *testing.T, s gpurent.Store, customers ...string) {
	t.Helper()
	ctx := t.Context()
	var all []gpurent.LedgerTx
	for _, c := range customers {
		txs, err := s.LedgerTxs(ctx, c, 0, 1000)
		must(t, err, "list ledger")
		all = append(all, txs...)
	}
	slices.SortFunc(all, func(a, b gpurent.LedgerTx) int { return int(a.Seq - b.Seq) })
	book := ledger.New()
	for _, st := range all {
		tx := ledger.Tx{Seq: st.Seq, Request: ledger.Request{Op: ledger.Op(st.Op), Key: st.Key, Customer: st.Customer,
			At: st.At, AmountFen: st.AmountFen, Charge: ledger.Charge(st.Charge), Credit: ledger.Kind(st.Credit),
			ExpiresAt: st.ExpiresAt, Lot: st.Lot}}
		for _, p := range st.Postings {
			tx.Postings = append(tx.Postings, ledger.Posting{
				Account: ledger.Account{Customer: p.Customer, Kind: ledger.Kind(p.Kind), Lot: p.Lot}, AmountFen: p.AmountFen})
		}
		must(t, book.Apply(tx), "replay "+st.Key)
	}
	if book.SumFen() != 0 {
		t.Fatalf("replayed ledger sums to %d", book.SumFen())
	}
	for _, c := range customers {
		b, err := s.LedgerBalances(ctx, c)
		must(t, err, "balances")
		w := book.Wallet(c)
		if b.CashFen != w.CashFen() || b.ReceivableFen != w.ReceivableFen() {
			t.Fatalf("%s: store cash %d receivable %d, replay %d %d", c, b.CashFen, b.ReceivableFen, w.CashFen(), w.ReceivableFen())
		}
		var lots []gpurent.LedgerLot
		for _, l := range w.Lots() {
			lots = append(lots, gpurent.LedgerLot{ID: l.ID, Kind: string(l.Kind), ExpiresAt: l.ExpiresAt, BalanceFen: l.BalanceFen})
		}
		got := slices.Clone(b.Lots)
		byID := func(a, b gpurent.LedgerLot) int {
			if a.ID < b.ID {
				return -1
			}
			if a.ID > b.ID {
				return 1
			}
			return 0
		}
		slices.SortFunc(got, byID)
		slices.SortFunc(lots, byID)
		same(t, c+" lots", got, lots)
	}
	plat, err := s.LedgerPlatformBalances(ctx)
	must(t, err, "platform balances")
	for _, k := range ledger.Kinds() {
		if k.IsPlatform() && plat[string(k)] != book.Balance(ledger.PlatformAccount(k)) {
			t.Fatalf("platform %s: store %d, replay %d", k, plat[string(k)], book.Balance(ledger.PlatformAccount(k)))
		}
	}
}

func testLedgerPost(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := SeedAccount(t, s, "ledger@example.com")
	b := SeedAccount(t, s, "other@example.com")

	// A customer with nothing posted has zero balances.
	bal, err := s.LedgerBalances(ctx, a.ID)
	must(t, err, "empty balances")
	same(t, "empty balances", *bal, gpurent.LedgerBalances{Customer: a.ID})
	_, err = s.LedgerTxByKey(ctx, "nope")
	wantCode(t, err, gpurent.CodeNotFound, "unknown key")

	// A top-up: clearing → cash, with its audit fields.
	tx := topUp(a.ID, "credit:1", 10_000)
	tx.Actor, tx.Note = "acc-operator", "wire transfer 42"
	dup, err := s.PostLedger(ctx, tx)
	must(t, err, "top up")
	if dup || tx.Seq == 0 || tx.CreatedAt.IsZero() || tx.At.Location() != time.UTC || !tx.At.Equal(ledgerAt(1).Truncate(time.Microsecond)) {
		t.Fatalf("top up stored as %+v (dup %v)", tx, dup)
	}
	same(t, "top-up postings", tx.Postings, []gpurent.LedgerPosting{
		{Kind: "clearing", AmountFen: -10_000}, {Customer: a.ID, Kind: "cash", AmountFen: 10_000}})
	got, err := s.LedgerTxByKey(ctx, "credit:1")
	must(t, err, "by key")
	same(t, "read back", *got, *tx)

	// The same key and content, even later, answers the original.
	again := topUp(a.ID, "credit:1", 10_000)
	again.At = ledgerAt(5)
	again.Note = "a retry's note is not kept"
	dup, err = s.PostLedger(ctx, again)
	must(t, err, "same key again")
	if !dup {
		t.Fatal("same key and content: dup false")
	}
	same(t, "duplicate answers the original", *again, *tx)
	// The same key with other content is a conflict and writes nothing.
	wantCode(t, func() error { _, err := s.PostLedger(ctx, topUp(a.ID, "credit:1", 9_999)); return err }(),
		gpurent.CodeConflict, "same key, other amount")
	wantCode(t, func() error { _, err := s.PostLedger(ctx, topUp(b.ID, "credit:1", 10_000)); return err }(),
		gpurent.CodeConflict, "same key, other customer")

	// Bad requests: unknown customer, malformed op.
	wantCode(t, func() error { _, err := s.PostLedger(ctx, topUp("acc-missing", "k2", 1)); return err }(),
		gpurent.CodeNotFound, "unknown customer")
	wantCode(t, func() error { _, err := s.PostLedger(ctx, topUp(a.ID, "k3", 0)); return err }(),
		gpurent.CodeInvalid, "zero amount")
	wantCode(t, func() error {
		_, err := s.PostLedger(ctx, &gpurent.LedgerTx{Op: "steal", Key: "k4", Customer: a.ID, At: ledgerAt(1)})
		return err
	}(),
		gpurent.CodeInvalid, "unknown op")

	// A promo grant makes a lot with its expiry; a debit burns it first.
	grant := &gpurent.LedgerTx{Op: string(ledger.OpGrant), Key: "promo:welcome:" + a.ID, Customer: a.ID, At: ledgerAt(1),
		AmountFen: 500, Credit: string(ledger.KindPromo), ExpiresAt: ledgerAt(10)}
	_, err = s.PostLedger(ctx, grant)
	must(t, err, "grant")
	bal, err = s.LedgerBalances(ctx, a.ID)
	must(t, err, "balances")
	same(t, "after grant", *bal, gpurent.LedgerBalances{Customer: a.ID, CashFen: 10_000, Lots: []gpurent.LedgerLot{
		{ID: grant.Key, Kind: "promo", ExpiresAt: ledgerAt(10).UTC().Truncate(time.Microsecond), BalanceFen: 500}}})
	d := debit(a.ID, "debit:line1:1", 700, ledgerAt(2))
	_, err = s.PostLedger(ctx, d)
	must(t, err, "debit")
	same(t, "debit burns promo then cash", d.Postings, []gpurent.LedgerPosting{
		{Customer: a.ID, Kind: "promo", Lot: grant.Key, AmountFen: -500},
		{Customer: a.ID, Kind: "cash", AmountFen: -200},
		{Kind: "revenue", AmountFen: 700}})
	// A compute debit never takes cash below zero: the rest is a shortfall.
	d = debit(a.ID, "debit:line1:2", 20_000, ledgerAt(3))
	_, err = s.PostLedger(ctx, d)
	must(t, err, "debit past the balance")
	if d.Postings[len(d.Postings)-1].AmountFen != 9_800 {
		t.Fatalf("debit past the balance collected %+v, want 9800", d.Postings)
	}
	bal, err = s.LedgerBalances(ctx, a.ID)
	must(t, err, "balances")
	if bal.CashFen != 0 || len(bal.Lots) != 0 {
		t.Fatalf("after draining: %+v", bal)
	}
	// Storage goes into arrears; a top-up settles them first.
	st := &gpurent.LedgerTx{Op: string(ledger.OpDebit), Key: "debit:vol:1", Customer: a.ID, At: ledgerAt(4),
		AmountFen: 30, Charge: string(ledger.ChargeStorage)}
	_, err = s.PostLedger(ctx, st)
	must(t, err, "storage debit")
	tu := topUp(a.ID, "credit:2", 100)
	_, err = s.PostLedger(ctx, tu)
	must(t, err, "top up in arrears")
	same(t, "top-up settles arrears", tu.Postings, []gpurent.LedgerPosting{
		{Kind: "clearing", AmountFen: -100}, {Customer: a.ID, Kind: "receivable", AmountFen: 30},
		{Customer: a.ID, Kind: "cash", AmountFen: 70}})

	// Listing: newest first, paged by seq.
	list, err := s.LedgerTxs(ctx, a.ID, 0, 3)
	must(t, err, "list")
	if len(list) != 3 || list[0].Key != "credit:2" || list[1].Key != "debit:vol:1" || list[2].Key != "debit:line1:2" {
		t.Fatalf("list newest first: %+v", list)
	}
	same(t, "listed postings", list[0].Postings, tu.Postings)
	rest, err := s.LedgerTxs(ctx, a.ID, list[2].Seq, 1000)
	must(t, err, "list page 2")
	if len(rest) != 3 || rest[2].Key != "credit:1" {
		t.Fatalf("second page: %+v", rest)
	}
	if none, err := s.LedgerTxs(ctx, b.ID, 0, 10); err != nil || len(none) != 0 {
		t.Fatalf("other customer's list: %v %v", none, err)
	}
	_, err = s.LedgerTxs(ctx, a.ID, 0, 0)
	wantCode(t, err, gpurent.CodeInvalid, "limit 0")

	replayStore(t, s, a.ID, b.ID)
}

// testLedgerPostInTx: a post inside InTx commits and rolls back with the
// transaction around it.
func testLedgerPostInTx(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := SeedAccount(t, s, "intx@example.com")
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		if _, err := q.PostLedger(ctx, topUp(a.ID, "rolled-back", 100)); err != nil {
			return err
		}
		return gpurent.Errorf(gpurent.CodeConflict, "abort")
	})
	wantCode(t, err, gpurent.CodeConflict, "aborted tx")
	_, err = s.LedgerTxByKey(ctx, "rolled-back")
	wantCode(t, err, gpurent.CodeNotFound, "rolled-back post")
	must(t, s.InTx(ctx, func(q gpurent.Queries) error {
		if _, err := q.PostLedger(ctx, topUp(a.ID, "kept", 100)); err != nil {
			return err
		}
		// A duplicate inside the same transaction answers the original.
		dup, err := q.PostLedger(ctx, topUp(a.ID, "kept", 100))
		if err == nil && !dup {
			t.Error("duplicate inside the transaction not recognised")
		}
		// A conflict inside a transaction does not spoil it.
		if _, err := q.PostLedger(ctx, topUp(a.ID, "kept", 5)); !gpurent.IsCode(err, gpurent.CodeConflict) {
			t.Errorf("conflict inside the transaction: %v", err)
		}
		_, err = q.PostLedger(ctx, topUp(a.ID, "kept-2", 1))
		return err
	}), "committed tx")
	bal, err := s.LedgerBalances(ctx, a.ID)
	must(t, err, "balances")
	if bal.CashFen != 101 {
		t.Fatalf("cash %d, want 101", bal.CashFen)
	}
}

// testLedgerConcurrentDebits has many goroutines debit one wallet at once,
// each debit alone affordable, together far more than the balance, and
// replays duplicate keys at the same time. The wallet must never overspend:
// what was collected equals exactly what was paid in, cash ends at zero,
// every duplicate answers its original, and the log replays to the store's
// sums.
func testLedgerConcurrentDebits(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := SeedAccount(t, s, "race-ledger@example.com")
	b := SeedAccount(t, s, "race-other@example.com")
	_, err := s.PostLedger(ctx, topUp(a.ID, "seed", 1_000))
	must(t, err, "seed")
	_, err = s.PostLedger(ctx, topUp(b.ID, "seed-b", 1_000))
	must(t, err, "seed b")
	const workers = 40
	txs := make([]*gpurent.LedgerTx, workers)
	dups := make([]*gpurent.LedgerTx, workers)
	errs := make([]error, 2*workers)
	dupFlags := make([]bool, 2*workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		cust := a.ID
		if i%4 == 3 {
			cust = b.ID
		}
		txs[i] = debit(cust, fmt.Sprintf("debit:race:%d", i), 75, ledgerAt(2))
		dups[i] = debit(cust, fmt.Sprintf("debit:race:%d", i), 75, ledgerAt(3))
		wg.Go(func() {
			<-start
			dupFlags[i], errs[i] = s.PostLedger(ctx, txs[i])
		})
		wg.Go(func() {
			<-start
			dupFlags[workers+i], errs[workers+i] = s.PostLedger(ctx, dups[i])
		})
	}
	close(start)
	wg.Wait()
	collected := map[string]int64{}
	for i := range workers {
		must(t, errs[i], "debit")
		must(t, errs[workers+i], "duplicate debit")
		if dupFlags[i] == dupFlags[workers+i] {
			t.Fatalf("key %d: exactly one of the two posts must be the original (dup %v, %v)", i, dupFlags[i], dupFlags[workers+i])
		}
		if !txs[i].At.Equal(dups[i].At) || txs[i].Seq != dups[i].Seq || !slices.Equal(txs[i].Postings, dups[i].Postings) {
			t.Fatalf("key %d: duplicate answered %+v, original %+v", i, dups[i], txs[i])
		}
		for _, p := range txs[i].Postings {
			if p.Kind == "revenue" {
				collected[txs[i].Customer] += p.AmountFen
			}
		}
	}
	if collected[a.ID] != 1_000 || collected[b.ID] != 750 {
		t.Fatalf("collected %v, want %s:1000 %s:750 (30 debits of 75 against 1000; 10 against 1000)", collected, a.ID, b.ID)
	}
	for cust, cash := range map[string]int64{a.ID: 0, b.ID: 250} {
		bal, err := s.LedgerBalances(ctx, cust)
		must(t, err, "balances")
		if bal.CashFen != cash {
			t.Fatalf("%s: cash %d, want %d", cust, bal.CashFen, cash)
		}
	}
	replayStore(t, s, a.ID, b.ID)
}

func testVouchers(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := SeedAccount(t, s, "v-a@example.com")
	b := SeedAccount(t, s, "v-b@example.com")
	c := SeedAccount(t, s, "v-c@example.com")
	v := &gpurent.Voucher{Code: "ABCD2345EFGH", Kind: gpurent.VoucherPromo, AmountFen: 5_000,
		ExpiresAt: ledgerAt(10), MaxRedemptions: 2, CreatedBy: "acc-op"}
	must(t, s.CreateVoucher(ctx, v), "create voucher")
	if v.ID == "" || v.CreatedAt.IsZero() || v.ExpiresAt.Location() != time.UTC {
		t.Fatalf("voucher stored as %+v", v)
	}
	got, err := s.VoucherByCode(ctx, v.Code)
	must(t, err, "voucher by code")
	same(t, "voucher round trip", *got, *v)
	later := &gpurent.Voucher{Code: "ZZZZ2345EFGH", Kind: gpurent.VoucherCash, AmountFen: 100,
		ExpiresAt: ledgerAt(10), MaxRedemptions: 1, CreatedBy: "acc-op", CreatedAt: v.CreatedAt.Add(time.Second)}
	must(t, s.CreateVoucher(ctx, later), "create a later voucher")
	list, err := s.ListVouchers(ctx, 10)
	must(t, err, "list vouchers")
	if len(list) != 2 || list[0].Code != later.Code || list[1].Code != v.Code {
		t.Fatalf("vouchers, newest first: %+v", list)
	}
	if one, err := s.ListVouchers(ctx, 1); err != nil || len(one) != 1 || one[0].Code != later.Code {
		t.Fatalf("one voucher: %+v %v", one, err)
	}
	wantCode(t, s.CreateVoucher(ctx, &gpurent.Voucher{Code: v.Code, Kind: gpurent.VoucherCash, AmountFen: 1,
		ExpiresAt: ledgerAt(10), MaxRedemptions: 1}), gpurent.CodeConflict, "same code")
	for _, bad := range []gpurent.Voucher{
		{Kind: gpurent.VoucherCash, AmountFen: 1, ExpiresAt: ledgerAt(10), MaxRedemptions: 1, Code: ""},
		{Code: "X1", Kind: "gift", AmountFen: 1, ExpiresAt: ledgerAt(10), MaxRedemptions: 1},
		{Code: "X2", Kind: gpurent.VoucherCash, AmountFen: 0, ExpiresAt: ledgerAt(10), MaxRedemptions: 1},
		{Code: "X3", Kind: gpurent.VoucherCash, AmountFen: 1, MaxRedemptions: 1},
		{Code: "X4", Kind: gpurent.VoucherCash, AmountFen: 1, ExpiresAt: ledgerAt(10)},
	} {
		wantCode(t, s.CreateVoucher(ctx, &bad), gpurent.CodeInvalid, "bad voucher "+bad.Code)
	}
	_, err = s.VoucherByCode(ctx, "NOPE")
	wantCode(t, err, gpurent.CodeNotFound, "unknown code")

	redeem := func(acc string, at time.Time) (*gpurent.Voucher, error) {
		return s.RedeemVoucher(ctx, &gpurent.VoucherRedemption{Code: v.Code, AccountID: acc, RedeemedAt: at,
			LedgerKey: "voucher:" + v.ID + ":" + acc})
	}
	_, err = redeem(a.ID, ledgerAt(10))
	wantCode(t, err, gpurent.CodeInvalid, "at expiry")
	r := &gpurent.VoucherRedemption{Code: v.Code, AccountID: a.ID, RedeemedAt: ledgerAt(2), LedgerKey: "voucher:a"}
	got, err = s.RedeemVoucher(ctx, r)
	must(t, err, "redeem a")
	if got.Redemptions != 1 || r.VoucherID != v.ID {
		t.Fatalf("after first redemption: %+v %+v", got, r)
	}
	_, err = redeem(a.ID, ledgerAt(3))
	wantCode(t, err, gpurent.CodeConflict, "same account twice")
	rec, err := s.VoucherRedemption(ctx, v.ID, a.ID)
	must(t, err, "redemption")
	same(t, "redemption record", *rec, gpurent.VoucherRedemption{VoucherID: v.ID, Code: v.Code, AccountID: a.ID,
		RedeemedAt: ledgerAt(2).UTC().Truncate(time.Microsecond), LedgerKey: "voucher:a"})
	_, err = s.VoucherRedemption(ctx, v.ID, b.ID)
	wantCode(t, err, gpurent.CodeNotFound, "no redemption")
	_, err = redeem(b.ID, ledgerAt(3))
	must(t, err, "redeem b")
	_, err = redeem(c.ID, ledgerAt(3))
	wantCode(t, err, gpurent.CodeConflict, "past max redemptions")
	_, err = s.RedeemVoucher(ctx, &gpurent.VoucherRedemption{Code: "NOPE", AccountID: c.ID, LedgerKey: "k"})
	wantCode(t, err, gpurent.CodeNotFound, "unknown code")
	got, err = s.VoucherByCode(ctx, v.Code)
	must(t, err, "voucher")
	if got.Redemptions != 2 {
		t.Fatalf("redemptions %d, want 2", got.Redemptions)
	}

	// Racing redeemers of a single-use voucher: exactly one wins.
	one := &gpurent.Voucher{Code: "SINGLE", Kind: gpurent.VoucherCash, AmountFen: 100, ExpiresAt: ledgerAt(10), MaxRedemptions: 1}
	must(t, s.CreateVoucher(ctx, one), "single-use voucher")
	accs := []string{a.ID, b.ID, c.ID, a.ID, b.ID, c.ID}
	errs := make([]error, len(accs))
	var wg sync.WaitGroup
	for i, acc := range accs {
		wg.Go(func() {
			_, errs[i] = s.RedeemVoucher(ctx, &gpurent.VoucherRedemption{Code: one.Code, AccountID: acc,
				RedeemedAt: ledgerAt(2), LedgerKey: fmt.Sprintf("k%d", i)})
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else if !gpurent.IsCode(err, gpurent.CodeConflict) {
			t.Fatalf("racing redeem: %v", err)
		}
	}
	got, err = s.VoucherByCode(ctx, one.Code)
	must(t, err, "single-use voucher")
	if wins != 1 || got.Redemptions != 1 {
		t.Fatalf("single-use voucher: %d wins, %d redemptions", wins, got.Redemptions)
	}
}

func testPayments(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := SeedAccount(t, s, "pay@example.com")
	p := &gpurent.Payment{Provider: "fake", PaymentID: "fp-1", AccountID: a.ID, AmountFen: 50_000,
		PayURL: "http://127.0.0.1/pay/fp-1", CreatedAt: ledgerAt(1)}
	must(t, s.CreatePayment(ctx, p), "create payment")
	if p.ID == "" || p.State != gpurent.PaymentPending {
		t.Fatalf("payment stored as %+v", p)
	}
	got, err := s.PaymentByProviderID(ctx, "fake", "fp-1")
	must(t, err, "read payment")
	same(t, "payment round trip", *got, *p)
	wantCode(t, s.CreatePayment(ctx, &gpurent.Payment{Provider: "fake", PaymentID: "fp-1", AccountID: a.ID,
		AmountFen: 1}), gpurent.CodeConflict, "same provider payment id")
	must(t, s.CreatePayment(ctx, &gpurent.Payment{Provider: "other", PaymentID: "fp-1", AccountID: a.ID,
		AmountFen: 1}), "same id at another provider")
	wantCode(t, s.CreatePayment(ctx, &gpurent.Payment{Provider: "fake", PaymentID: "fp-2", AccountID: a.ID}),
		gpurent.CodeInvalid, "no amount")
	_, err = s.PaymentByProviderID(ctx, "fake", "nope")
	wantCode(t, err, gpurent.CodeNotFound, "unknown payment")

	// Another amount does not move it.
	got, moved, err := s.SettlePayment(ctx, "fake", "fp-1", gpurent.PaymentConfirmed, 49_999, ledgerAt(2))
	must(t, err, "settle with another amount")
	if moved || got.State != gpurent.PaymentPending {
		t.Fatalf("another amount moved it: %+v", got)
	}
	// Racing confirmations: exactly one moves it.
	var wg sync.WaitGroup
	moves := make([]bool, 8)
	errs := make([]error, 8)
	for i := range moves {
		wg.Go(func() {
			_, moves[i], errs[i] = s.SettlePayment(ctx, "fake", "fp-1", gpurent.PaymentConfirmed, 50_000, ledgerAt(2))
		})
	}
	wg.Wait()
	n := 0
	for i := range moves {
		must(t, errs[i], "settle")
		if moves[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d confirmations moved the payment, want 1", n)
	}
	got, err = s.PaymentByProviderID(ctx, "fake", "fp-1")
	must(t, err, "read payment")
	if got.State != gpurent.PaymentConfirmed || got.ConfirmedAt == nil || !got.ConfirmedAt.Equal(ledgerAt(2).Truncate(time.Microsecond)) {
		t.Fatalf("confirmed payment: %+v", got)
	}
	// A confirmed payment never fails afterwards.
	got, moved, err = s.SettlePayment(ctx, "fake", "fp-1", gpurent.PaymentFailed, 50_000, ledgerAt(3))
	must(t, err, "fail after confirm")
	if moved || got.State != gpurent.PaymentConfirmed {
		t.Fatalf("confirmed payment moved to %s", got.State)
	}
	_, _, err = s.SettlePayment(ctx, "fake", "nope", gpurent.PaymentConfirmed, 1, ledgerAt(3))
	wantCode(t, err, gpurent.CodeNotFound, "settle unknown")
	_, _, err = s.SettlePayment(ctx, "fake", "fp-1", gpurent.PaymentPending, 1, ledgerAt(3))
	wantCode(t, err, gpurent.CodeInvalid, "settle to pending")
}
