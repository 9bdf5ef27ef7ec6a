package ledger

import (
	"slices"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func at(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }

// mustPost posts r on l and fails the test on an error or a duplicate.
func mustPost(t *testing.T, l *Ledger, r Request) Tx {
	t.Helper()
	tx, dup, err := l.Post(r)
	if err != nil {
		t.Fatalf("post %s %q: %v", r.Op, r.Key, err)
	}
	if dup {
		t.Fatalf("post %s %q: unexpected duplicate", r.Op, r.Key)
	}
	return tx
}

func topUp(key, c string, fen int64, when time.Time) Request {
	return Request{Op: OpTopUp, Key: key, Customer: c, At: when, AmountFen: fen}
}

func grant(key, c string, kind Kind, fen int64, when, expires time.Time) Request {
	return Request{Op: OpGrant, Key: key, Customer: c, At: when, AmountFen: fen, Credit: kind, ExpiresAt: expires}
}

func debit(key, c string, ch Charge, fen int64, when time.Time) Request {
	return Request{Op: OpDebit, Key: key, Customer: c, At: when, AmountFen: fen, Charge: ch}
}

func p(a Account, fen int64) Posting { return Posting{Account: a, AmountFen: fen} }

func wantPostings(t *testing.T, tx Tx, want ...Posting) {
	t.Helper()
	if !slices.Equal(tx.Postings, want) {
		t.Fatalf("%s %q postings:\n got %v\nwant %v", tx.Request.Op, tx.Key(), tx.Postings, want)
	}
}

func wantBalance(t *testing.T, l *Ledger, a Account, fen int64) {
	t.Helper()
	if got := l.Balance(a); got != fen {
		t.Errorf("balance of %s = %d, want %d", a, got, fen)
	}
}

const cust = "acc-1"

// TestBurnOrder burns one debit across SLA lots, promo lots of different
// expiry (and a tie broken by lot id) and cash, to the fen.
func TestBurnOrder(t *testing.T) {
	l := New()
	mustPost(t, l, topUp("topup:pay-1", cust, 10_000, at(0)))
	mustPost(t, l, grant("promo:late", cust, KindPromo, 300, at(0), at(72)))
	mustPost(t, l, grant("promo:b-early", cust, KindPromo, 200, at(0), at(24)))
	mustPost(t, l, grant("promo:a-early", cust, KindPromo, 100, at(0), at(24)))
	mustPost(t, l, grant("sla:inc-2", cust, KindSLA, 50, at(0), at(48)))
	mustPost(t, l, grant("sla:inc-1", cust, KindSLA, 40, at(0), at(2160)))
	w := l.Wallet(cust)
	if got := w.SpendableFen(at(1)); got != 10_690 {
		t.Fatalf("spendable %d, want 10690", got)
	}
	var ids []string
	for _, lot := range w.Lots() {
		ids = append(ids, lot.ID)
	}
	if want := []string{"sla:inc-2", "sla:inc-1", "promo:a-early", "promo:b-early", "promo:late"}; !slices.Equal(ids, want) {
		t.Fatalf("burn order %v, want %v", ids, want)
	}

	tests := []struct {
		name   string
		charge Charge
		fen    int64
		want   []Posting
	}{
		{"first SLA lot only", ChargeCompute, 30, []Posting{
			p(LotAccount(cust, KindSLA, "sla:inc-2"), -30),
			p(PlatformAccount(KindRevenue), 30),
		}},
		{"both SLA lots then the earliest promo lot, ties by id", ChargeCompute, 120, []Posting{
			p(LotAccount(cust, KindSLA, "sla:inc-2"), -20),
			p(LotAccount(cust, KindSLA, "sla:inc-1"), -40),
			p(LotAccount(cust, KindPromo, "promo:a-early"), -60),
			p(PlatformAccount(KindRevenue), 120),
		}},
		{"rest of promo in expiry order then cash", ChargeStorage, 1_000, []Posting{
			p(LotAccount(cust, KindPromo, "promo:a-early"), -40),
			p(LotAccount(cust, KindPromo, "promo:b-early"), -200),
			p(LotAccount(cust, KindPromo, "promo:late"), -300),
			p(CashAccount(cust), -460),
			p(PlatformAccount(KindRevenue), 1_000),
		}},
		{"cash only", ChargeCompute, 9_540, []Posting{
			p(CashAccount(cust), -9_540),
			p(PlatformAccount(KindRevenue), 9_540),
		}},
		{"compute with an empty wallet collects nothing", ChargeCompute, 25, nil},
		{"storage with an empty wallet goes to arrears", ChargeStorage, 25, []Posting{
			p(ReceivableAccount(cust), -25),
			p(PlatformAccount(KindRevenue), 25),
		}},
	}
	for i, tc := range tests {
		tx := mustPost(t, l, debit("debit:line-1:"+string(rune('a'+i)), cust, tc.charge, tc.fen, at(1)))
		wantPostings(t, tx, tc.want...)
	}
	w = l.Wallet(cust)
	if w.CashFen() != 0 || w.ArrearsFen() != 25 || len(w.Lots()) != 0 || !w.InArrears() {
		t.Fatalf("after burning: cash %d arrears %d lots %v", w.CashFen(), w.ArrearsFen(), w.Lots())
	}
	wantBalance(t, l, PlatformAccount(KindRevenue), 10_715)
	wantBalance(t, l, PlatformAccount(KindPromoIssued), -600)
	wantBalance(t, l, PlatformAccount(KindSLAIssued), -90)
	wantBalance(t, l, PlatformAccount(KindClearing), -10_000)
	if l.SumFen() != 0 {
		t.Fatalf("ledger sums to %d", l.SumFen())
	}
}

// TestComputeShortfall: a compute debit takes what the wallet holds and
// reports the rest; cash never goes below zero.
func TestComputeShortfall(t *testing.T) {
	l := New()
	mustPost(t, l, topUp("topup:pay-1", cust, 70, at(0)))
	mustPost(t, l, grant("promo:p", cust, KindPromo, 20, at(0), at(10)))
	tx := mustPost(t, l, debit("debit:gpu:1", cust, ChargeCompute, 521, at(1)))
	wantPostings(t, tx,
		p(LotAccount(cust, KindPromo, "promo:p"), -20),
		p(CashAccount(cust), -70),
		p(PlatformAccount(KindRevenue), 90))
	if tx.CollectedFen() != 90 || tx.ShortfallFen() != 431 {
		t.Fatalf("collected %d shortfall %d, want 90 and 431", tx.CollectedFen(), tx.ShortfallFen())
	}
	tx = mustPost(t, l, debit("debit:gpu:2", cust, ChargeCompute, 431, at(1)))
	if len(tx.Postings) != 0 || tx.ShortfallFen() != 431 {
		t.Fatalf("debit of an empty wallet: %+v", tx)
	}
	// A retry answers the same shortfall.
	again, dup, err := l.Post(debit("debit:gpu:2", cust, ChargeCompute, 431, at(5)))
	if err != nil || !dup || again.ShortfallFen() != 431 || again.Seq != tx.Seq {
		t.Fatalf("retry: %+v dup=%v err=%v", again, dup, err)
	}
	wantBalance(t, l, CashAccount(cust), 0)
	wantBalance(t, l, ReceivableAccount(cust), 0)
}

// TestExpiry: expired lots are no longer spent, and sweeping them moves
// what is left to breakage.
func TestExpiry(t *testing.T) {
	l := New()
	mustPost(t, l, topUp("topup:pay-1", cust, 1_000, at(0)))
	mustPost(t, l, grant("promo:short", cust, KindPromo, 500, at(0), at(2)))
	mustPost(t, l, grant("sla:inc-9", cust, KindSLA, 300, at(0), at(2)))
	mustPost(t, l, grant("promo:long", cust, KindPromo, 400, at(0), at(48)))
	tx := mustPost(t, l, debit("debit:l:1", cust, ChargeCompute, 350, at(1)))
	wantPostings(t, tx,
		p(LotAccount(cust, KindSLA, "sla:inc-9"), -300),
		p(LotAccount(cust, KindPromo, "promo:short"), -50),
		p(PlatformAccount(KindRevenue), 350))

	// At the expiry instant the lot is dead (half-open) but not yet swept:
	// a debit skips it.
	tx = mustPost(t, l, debit("debit:l:2", cust, ChargeCompute, 100, at(2)))
	wantPostings(t, tx,
		p(LotAccount(cust, KindPromo, "promo:long"), -100),
		p(PlatformAccount(KindRevenue), 100))
	if got := l.Wallet(cust).SpendableFen(at(2)); got != 1_300 {
		t.Fatalf("spendable at expiry %d, want 1300", got)
	}

	// Not due yet.
	_, _, err := l.Post(Request{Op: OpExpire, Key: ExpireKey("promo:long"), Customer: cust, At: at(3), Lot: "promo:long"})
	if !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("early expiry: %v, want invalid", err)
	}
	// Emptied lots and unknown lots are not found.
	_, _, err = l.Post(Request{Op: OpExpire, Key: ExpireKey("sla:inc-9"), Customer: cust, At: at(3), Lot: "sla:inc-9"})
	if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("expiry of an empty lot: %v, want not found", err)
	}

	due := l.DueExpiries(at(3))
	if len(due) != 1 || due[0].Lot != "promo:short" || due[0].Key != "expire:promo:short" {
		t.Fatalf("due expiries %+v", due)
	}
	tx = mustPost(t, l, due[0])
	wantPostings(t, tx,
		p(LotAccount(cust, KindPromo, "promo:short"), -450),
		p(PlatformAccount(KindBreakage), 450))
	if len(l.DueExpiries(at(3))) != 0 {
		t.Fatal("lot still due after its expiry")
	}
	// The sweeper retrying later gets the original.
	retry := due[0]
	retry.At = at(30)
	if again, dup, err := l.Post(retry); err != nil || !dup || !again.Equal(tx) {
		t.Fatalf("expiry retry: %+v dup=%v err=%v", again, dup, err)
	}
	wantBalance(t, l, PlatformAccount(KindBreakage), 450)
	wantBalance(t, l, PlatformAccount(KindRevenue), 450)
	wantBalance(t, l, CashAccount(cust), 1_000)
	wantBalance(t, l, LotAccount(cust, KindPromo, "promo:long"), 300)
}

// TestArrears: storage goes into arrears, a later top-up settles them
// first, and OpSettle pays them from cash.
func TestArrears(t *testing.T) {
	l := New()
	mustPost(t, l, topUp("topup:pay-1", cust, 100, at(0)))
	tx := mustPost(t, l, debit("debit:vol:1", cust, ChargeStorage, 180, at(1)))
	wantPostings(t, tx,
		p(CashAccount(cust), -100),
		p(ReceivableAccount(cust), -80),
		p(PlatformAccount(KindRevenue), 180))
	if tx.ShortfallFen() != 0 {
		t.Fatalf("storage shortfall %d", tx.ShortfallFen())
	}
	mustPost(t, l, debit("debit:vol:2", cust, ChargeStorage, 40, at(2)))
	wantBalance(t, l, ReceivableAccount(cust), -120)

	// A top-up smaller than the arrears goes all to them.
	tx = mustPost(t, l, topUp("topup:pay-2", cust, 50, at(3)))
	wantPostings(t, tx,
		p(PlatformAccount(KindClearing), -50),
		p(ReceivableAccount(cust), 50))
	// A bigger one settles the rest and leaves cash.
	tx = mustPost(t, l, topUp("topup:pay-3", cust, 1_000, at(4)))
	wantPostings(t, tx,
		p(PlatformAccount(KindClearing), -1_000),
		p(ReceivableAccount(cust), 70),
		p(CashAccount(cust), 930))
	w := l.Wallet(cust)
	if w.InArrears() || w.CashFen() != 930 {
		t.Fatalf("after top-ups: cash %d arrears %d", w.CashFen(), w.ArrearsFen())
	}
	// Credit never pays arrears: storage beyond cash goes to arrears even
	// with an expired lot around.
	mustPost(t, l, grant("promo:x", cust, KindPromo, 500, at(4), at(5)))
	mustPost(t, l, debit("debit:vol:3", cust, ChargeStorage, 1_000, at(6)))
	wantBalance(t, l, ReceivableAccount(cust), -70)

	// Settle with nothing in cash settles nothing; with cash, as much as
	// both allow.
	tx = mustPost(t, l, Request{Op: OpSettle, Key: "settle:1", Customer: cust, At: at(6)})
	wantPostings(t, tx)
	w2, err := NewWallet(cust, 40, -70, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err = w2.Plan(Request{Op: OpSettle, Key: "settle:2", Customer: cust, At: at(6)})
	if err != nil {
		t.Fatal(err)
	}
	wantPostings(t, tx, p(CashAccount(cust), -40), p(ReceivableAccount(cust), 40))
	if err := w2.Apply(tx); err != nil || w2.CashFen() != 0 || w2.ArrearsFen() != 30 {
		t.Fatalf("apply settle: %v cash %d arrears %d", err, w2.CashFen(), w2.ArrearsFen())
	}
}

// TestIdempotency: same key same content is the original, whatever the
// time; same key other content is a conflict.
func TestIdempotency(t *testing.T) {
	l := New()
	orig := mustPost(t, l, topUp("topup:pay-1", cust, 500, at(0)))
	again, dup, err := l.Post(topUp("topup:pay-1", cust, 500, at(9)))
	if err != nil || !dup || !again.Equal(orig) || again.Seq != orig.Seq || l.Len() != 1 {
		t.Fatalf("same content: %+v dup=%v err=%v", again, dup, err)
	}
	g := grant("sla:inc-1", cust, KindSLA, 100, at(0), at(0).Add(DefaultSLACreditTTL))
	og := mustPost(t, l, g)
	// Retried after the lot expired: still the original.
	g.At = at(0).Add(DefaultSLACreditTTL + time.Hour)
	if again, dup, err := l.Post(g); err != nil || !dup || !again.Equal(og) {
		t.Fatalf("late grant retry: %+v dup=%v err=%v", again, dup, err)
	}
	// Nanoseconds beyond the microsecond are not content.
	g.ExpiresAt = g.ExpiresAt.Add(999 * time.Nanosecond)
	if _, dup, err := l.Post(g); err != nil || !dup {
		t.Fatalf("sub-microsecond expiry: dup=%v err=%v", dup, err)
	}
	// Another time zone is the same instant.
	shanghai := time.FixedZone("CST", 8*3600)
	if _, dup, err := l.Post(topUp("topup:pay-1", cust, 500, at(0).In(shanghai))); err != nil || !dup {
		t.Fatalf("other zone: dup=%v err=%v", dup, err)
	}
	conflicts := []Request{
		topUp("topup:pay-1", cust, 501, at(0)),
		topUp("topup:pay-1", "acc-2", 500, at(0)),
		debit("topup:pay-1", cust, ChargeCompute, 500, at(0)),
		grant("sla:inc-1", cust, KindSLA, 100, at(0), at(1)),
		grant("sla:inc-1", cust, KindPromo, 100, at(0), at(0).Add(DefaultSLACreditTTL)),
	}
	for _, r := range conflicts {
		if _, _, err := l.Post(r); !gpurent.IsCode(err, gpurent.CodeConflict) {
			t.Errorf("%+v: %v, want conflict", r, err)
		}
	}
	if l.Len() != 2 {
		t.Fatalf("log has %d transactions, want 2", l.Len())
	}
}

// TestInvalidRequests: malformed requests are invalid and change nothing.
func TestInvalidRequests(t *testing.T) {
	long := string(make([]byte, MaxKeyLen+1))
	tests := []struct {
		name string
		r    Request
	}{
		{"no key", topUp("", cust, 1, at(0))},
		{"long key", topUp(long, cust, 1, at(0))},
		{"no customer", topUp("k", "", 1, at(0))},
		{"no time", topUp("k", cust, 1, time.Time{})},
		{"zero amount", topUp("k", cust, 0, at(0))},
		{"negative amount", debit("k", cust, ChargeCompute, -5, at(0))},
		{"huge amount", topUp("k", cust, MaxAmountFen+1, at(0))},
		{"unknown op", Request{Op: "refund", Key: "k", Customer: cust, At: at(0), AmountFen: 1}},
		{"unknown charge", debit("k", cust, "gpu", 1, at(0))},
		{"debit without charge", debit("k", cust, "", 1, at(0))},
		{"grant of cash", grant("k", cust, KindCash, 1, at(0), at(1))},
		{"grant expiring at once", grant("k", cust, KindPromo, 1, at(0), at(0))},
		{"grant without expiry", grant("k", cust, KindSLA, 1, at(0), time.Time{})},
		{"top-up with a charge class", Request{Op: OpTopUp, Key: "k", Customer: cust, At: at(0), AmountFen: 1, Charge: ChargeStorage}},
		{"settle with an amount", Request{Op: OpSettle, Key: "k", Customer: cust, At: at(0), AmountFen: 1}},
		{"expire without lot", Request{Op: OpExpire, Key: "k", Customer: cust, At: at(0)}},
		{"debit with a lot", Request{Op: OpDebit, Key: "k", Customer: cust, At: at(0), AmountFen: 1, Charge: ChargeCompute, Lot: "x"}},
	}
	l := New()
	for _, tc := range tests {
		if _, _, err := l.Post(tc.r); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", tc.name, err)
		}
	}
	if l.Len() != 0 || len(l.Balances()) != 0 {
		t.Fatalf("invalid requests changed the ledger: %d transactions", l.Len())
	}
	w := l.Wallet(cust)
	if _, err := w.Plan(topUp("k", "acc-2", 1, at(0))); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("plan for another customer's wallet: %v", err)
	}
}

// TestApplyRejects: a transaction from a store that breaks an invariant is
// rejected and changes nothing.
func TestApplyRejects(t *testing.T) {
	base := New()
	mustPost(t, base, topUp("topup:pay-1", cust, 100, at(0)))
	mustPost(t, base, grant("promo:p", cust, KindPromo, 50, at(0), at(2)))
	rev := PlatformAccount(KindRevenue)
	cash := CashAccount(cust)
	lot := LotAccount(cust, KindPromo, "promo:p")
	dr := debit("debit:x", cust, ChargeCompute, 500, at(1))
	tests := []struct {
		name string
		tx   Tx
		code gpurent.Code
	}{
		{"does not sum to zero", Tx{Request: dr, Postings: []Posting{p(cash, -10), p(rev, 11)}}, gpurent.CodeInvalid},
		{"cash below zero", Tx{Request: dr, Postings: []Posting{p(cash, -150), p(rev, 150)}}, gpurent.CodeInvalid},
		{"compute into arrears", Tx{Request: dr, Postings: []Posting{p(ReceivableAccount(cust), -10), p(rev, 10)}}, gpurent.CodeInvalid},
		{"spends an expired lot", Tx{Request: debit("debit:x", cust, ChargeCompute, 10, at(3)), Postings: []Posting{p(lot, -10), p(rev, 10)}}, gpurent.CodeInvalid},
		{"lot below zero", Tx{Request: dr, Postings: []Posting{p(lot, -60), p(rev, 60)}}, gpurent.CodeInvalid},
		{"lot of the wrong kind", Tx{Request: dr, Postings: []Posting{p(LotAccount(cust, KindSLA, "promo:p"), -10), p(rev, 10)}}, gpurent.CodeInvalid},
		{"another customer's cash", Tx{Request: dr, Postings: []Posting{p(CashAccount("acc-2"), -10), p(rev, 10)}}, gpurent.CodeInvalid},
		{"same account twice", Tx{Request: dr, Postings: []Posting{p(cash, -5), p(cash, -5), p(rev, 10)}}, gpurent.CodeInvalid},
		{"collects more than charged", Tx{Request: debit("debit:x", cust, ChargeCompute, 5, at(1)), Postings: []Posting{p(cash, -10), p(rev, 10)}}, gpurent.CodeInvalid},
		{"storage not collected in full", Tx{Request: debit("debit:x", cust, ChargeStorage, 50, at(1)), Postings: []Posting{p(cash, -10), p(rev, 10)}}, gpurent.CodeInvalid},
		{"zero posting", Tx{Request: dr, Postings: []Posting{p(cash, 0)}}, gpurent.CodeInvalid},
		{"malformed account", Tx{Request: dr, Postings: []Posting{p(Account{Customer: cust, Kind: KindRevenue}, 10), p(cash, -10)}}, gpurent.CodeInvalid},
		{"grant lot is not its key", Tx{Request: grant("promo:q", cust, KindPromo, 10, at(0), at(5)),
			Postings: []Posting{p(LotAccount(cust, KindPromo, "promo:other"), 10), p(PlatformAccount(KindPromoIssued), -10)}}, gpurent.CodeInvalid},
		{"grant funded by revenue", Tx{Request: grant("promo:q", cust, KindPromo, 10, at(0), at(5)),
			Postings: []Posting{p(LotAccount(cust, KindPromo, "promo:q"), 10), p(rev, -10)}}, gpurent.CodeInvalid},
		{"top-up not from clearing", Tx{Request: topUp("topup:pay-2", cust, 10, at(0)),
			Postings: []Posting{p(cash, 10), p(rev, -10)}}, gpurent.CodeInvalid},
		{"expiry of a live lot", Tx{Request: Request{Op: OpExpire, Key: "expire:promo:p", Customer: cust, At: at(1), Lot: "promo:p"},
			Postings: []Posting{p(lot, -50), p(PlatformAccount(KindBreakage), 50)}}, gpurent.CodeInvalid},
		{"partial expiry", Tx{Request: Request{Op: OpExpire, Key: "expire:promo:p", Customer: cust, At: at(3), Lot: "promo:p"},
			Postings: []Posting{p(lot, -20), p(PlatformAccount(KindBreakage), 20)}}, gpurent.CodeInvalid},
		{"used key, other transaction", Tx{Request: topUp("topup:pay-1", cust, 100, at(0)),
			Postings: []Posting{p(PlatformAccount(KindClearing), -100), p(ReceivableAccount(cust), 100)}}, gpurent.CodeConflict},
		{"used key, other content", Tx{Request: topUp("topup:pay-1", cust, 90, at(0)),
			Postings: []Posting{p(PlatformAccount(KindClearing), -90), p(cash, 90)}}, gpurent.CodeConflict},
	}
	want := base.Balances()
	for _, tc := range tests {
		l, err := Replay(base.Log())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(tc.tx); !gpurent.IsCode(err, tc.code) {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
		if !slices.Equal(l.Balances(), want) || l.Len() != base.Len() {
			t.Errorf("%s: the rejected transaction changed the ledger", tc.name)
		}
	}
}

// TestWalletFromStore: a wallet rebuilt from balances, lots in any order,
// plans exactly what the ledger plans.
func TestWalletFromStore(t *testing.T) {
	l := New()
	mustPost(t, l, topUp("topup:pay-1", cust, 300, at(0)))
	mustPost(t, l, grant("promo:b", cust, KindPromo, 70, at(0), at(9)))
	mustPost(t, l, grant("promo:a", cust, KindPromo, 60, at(0), at(9)))
	mustPost(t, l, grant("sla:s", cust, KindSLA, 10, at(0), at(30)))
	mustPost(t, l, grant("promo:c", cust, KindPromo, 50, at(0), at(3)))
	lots := []Lot{
		{ID: "promo:b", Kind: KindPromo, ExpiresAt: at(9), BalanceFen: 70},
		{ID: "gone", Kind: KindPromo, ExpiresAt: at(1), BalanceFen: 0},
		{ID: "sla:s", Kind: KindSLA, ExpiresAt: at(30), BalanceFen: 10},
		{ID: "promo:c", Kind: KindPromo, ExpiresAt: at(3), BalanceFen: 50},
		{ID: "promo:a", Kind: KindPromo, ExpiresAt: at(9).In(time.FixedZone("CST", 8*3600)), BalanceFen: 60},
	}
	w, err := NewWallet(cust, 300, 0, lots)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(w.Lots(), l.Wallet(cust).Lots(), lotEqual) {
		t.Fatalf("lots %v, want %v", w.Lots(), l.Wallet(cust).Lots())
	}
	r := debit("debit:l:1", cust, ChargeCompute, 400, at(4))
	got, err := w.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want := mustPost(t, l, r)
	if !got.Equal(want) {
		t.Fatalf("store plan %v, ledger %v", got.Postings, want.Postings)
	}
	wantPostings(t, got,
		p(LotAccount(cust, KindSLA, "sla:s"), -10),
		p(LotAccount(cust, KindPromo, "promo:a"), -60),
		p(LotAccount(cust, KindPromo, "promo:b"), -70),
		p(CashAccount(cust), -260),
		p(PlatformAccount(KindRevenue), 400))

	bad := [][]Lot{
		{{ID: "x", Kind: KindCash, ExpiresAt: at(1), BalanceFen: 1}},
		{{ID: "x", Kind: KindPromo, BalanceFen: 1}},
		{{ID: "x", Kind: KindPromo, ExpiresAt: at(1), BalanceFen: -1}},
		{{ID: "x", Kind: KindPromo, ExpiresAt: at(1), BalanceFen: 1}, {ID: "x", Kind: KindSLA, ExpiresAt: at(1), BalanceFen: 1}},
	}
	for _, lots := range bad {
		if _, err := NewWallet(cust, 0, 0, lots); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("NewWallet(%v): %v, want invalid", lots, err)
		}
	}
	if _, err := NewWallet(cust, -1, 0, nil); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("negative cash: %v", err)
	}
	if _, err := NewWallet(cust, 0, 1, nil); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("positive receivable: %v", err)
	}
}

func TestAccountString(t *testing.T) {
	for a, want := range map[Account]string{
		PlatformAccount(KindRevenue):          "revenue",
		CashAccount("acc-1"):                  "cash/acc-1",
		LotAccount("acc-1", KindSLA, "sla:9"): "sla/acc-1/sla:9",
	} {
		if a.String() != want {
			t.Errorf("%#v.String() = %q, want %q", a, a.String(), want)
		}
	}
	for _, k := range Kinds() {
		if k.IsCustomer() == k.IsPlatform() {
			t.Errorf("kind %s is both or neither customer and platform", k)
		}
	}
}
