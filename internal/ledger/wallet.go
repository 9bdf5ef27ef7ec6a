package ledger

import (
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// Lot is one live credit lot of a customer: promo or SLA credit with an
// expiry. Its ID is the key of the grant that created it. A lot whose
// balance reached zero is gone from the wallet.
type Lot struct {
	ID         string
	Kind       Kind // KindPromo or KindSLA
	ExpiresAt  time.Time
	BalanceFen int64
}

// liveAt reports whether the lot may be spent at t: expiry is half-open, a
// lot expiring at 10:00 is no longer spendable at 10:00.
func (l Lot) liveAt(t time.Time) bool { return t.Before(l.ExpiresAt) }

// burnsBefore is the burn order: SLA credit before promo credit, each by
// earliest expiry, then by lot id. It is a total order (lot ids are unique),
// so the burn order never depends on how the lots were loaded.
func burnsBefore(a, b Lot) int {
	if a.Kind != b.Kind {
		if a.Kind == KindSLA {
			return -1
		}
		return 1
	}
	if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Wallet is one customer's side of the ledger: cash, receivable and live
// credit lots, as derived from the postings. The operations are pure
// functions of a Wallet (Plan); Apply folds a transaction into it. A store
// builds it from sums of its postings with NewWallet.
//
// A Wallet is a value owned by one goroutine; it is not safe for concurrent
// use.
type Wallet struct {
	customer   string
	cash       int64
	receivable int64
	lots       []Lot // balance > 0, in burn order
}

// NewWallet builds a wallet from balances: cash (>= 0), receivable (<= 0)
// and the customer's credit lots. Lots with a zero balance are dropped; lots
// may come in any order. It answers CodeInvalid for impossible balances.
func NewWallet(customer string, cashFen, receivableFen int64, lots []Lot) (*Wallet, error) {
	if err := checkName("customer", customer); err != nil {
		return nil, err
	}
	if cashFen < 0 || receivableFen > 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid,
			"ledger wallet %q: cash must be >= 0 and receivable <= 0", customer)
	}
	w := &Wallet{customer: customer, cash: cashFen, receivable: receivableFen}
	for _, l := range lots {
		if l.BalanceFen == 0 {
			continue
		}
		if err := checkName("lot", l.ID); err != nil {
			return nil, err
		}
		if l.BalanceFen < 0 || !l.Kind.IsCredit() || l.ExpiresAt.IsZero() {
			return nil, gpurent.Errorf(gpurent.CodeInvalid,
				"ledger wallet %q: lot %q must be promo or SLA credit with an expiry and a balance >= 0", customer, l.ID)
		}
		if w.lotIndex(l.ID) >= 0 {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "ledger wallet %q: lot %q listed twice", customer, l.ID)
		}
		l.ExpiresAt = normTime(l.ExpiresAt)
		w.lots = append(w.lots, l)
	}
	slices.SortFunc(w.lots, burnsBefore)
	return w, nil
}

func emptyWallet(customer string) *Wallet { return &Wallet{customer: customer} }

// Customer is the wallet's customer id.
func (w *Wallet) Customer() string { return w.customer }

// CashFen is the cash balance (>= 0).
func (w *Wallet) CashFen() int64 { return w.cash }

// ReceivableFen is the receivable balance (<= 0; negative means arrears).
func (w *Wallet) ReceivableFen() int64 { return w.receivable }

// ArrearsFen is what the customer owes (>= 0). No instance may start while
// it is above zero.
func (w *Wallet) ArrearsFen() int64 { return -w.receivable }

// InArrears reports whether the customer owes anything.
func (w *Wallet) InArrears() bool { return w.receivable < 0 }

// Lots returns the live-or-unswept credit lots in burn order.
func (w *Wallet) Lots() []Lot { return slices.Clone(w.lots) }

// CreditFen is the credit spendable at t: lots not yet expired at t.
func (w *Wallet) CreditFen(at time.Time) int64 {
	var s int64
	for _, l := range w.lots {
		if l.liveAt(at) {
			s += l.BalanceFen
		}
	}
	return s
}

// SpendableFen is the wallet total at t: cash plus live credit. It is what a
// compute debit can take, and the balance the start gate and runway use.
func (w *Wallet) SpendableFen(at time.Time) int64 { return w.cash + w.CreditFen(at) }

// Runway is how many whole seconds the spendable balance at t lasts at burn
// rate r (see Runway).
func (w *Wallet) Runway(at time.Time, r Rate) int64 { return Runway(w.SpendableFen(at), r) }

// DueExpiries lists the expire requests for every lot that has expired at
// t and still holds credit, in burn order, keyed ExpireKey(lot).
func (w *Wallet) DueExpiries(at time.Time) []Request {
	var out []Request
	for _, l := range w.lots {
		if !l.liveAt(at) {
			out = append(out, Request{Op: OpExpire, Key: ExpireKey(l.ID), Customer: w.customer, At: at, Lot: l.ID})
		}
	}
	return out
}

// Clone returns an independent copy of w.
func (w *Wallet) Clone() *Wallet {
	c := *w
	c.lots = slices.Clone(w.lots)
	return &c
}

func (w *Wallet) lotIndex(id string) int {
	for i := range w.lots {
		if w.lots[i].ID == id {
			return i
		}
	}
	return -1
}

// Plan computes the transaction that request r makes on this wallet. It is
// a pure function: it reads w and changes nothing. The same wallet and
// request always give the same transaction (Seq left zero). It answers
// CodeInvalid for a malformed request or one for another customer,
// CodeNotFound when an expire names no live lot. Plan does not know which
// keys were used before: the caller (Ledger.Post, or a store) checks the key
// first.
func (w *Wallet) Plan(r Request) (Tx, error) {
	r = r.normalized()
	if err := r.Validate(); err != nil {
		return Tx{}, err
	}
	if r.Customer != w.customer {
		return Tx{}, gpurent.Errorf(gpurent.CodeInvalid,
			"ledger request %q is for customer %q, not %q", r.Key, r.Customer, w.customer)
	}
	c := r.Customer
	tx := Tx{Request: r}
	post := func(a Account, amt int64) {
		if amt != 0 {
			tx.Postings = append(tx.Postings, Posting{Account: a, AmountFen: amt})
		}
	}
	switch r.Op {
	case OpTopUp:
		settle := min(r.AmountFen, w.ArrearsFen())
		tx.Postings = make([]Posting, 0, 3)
		post(PlatformAccount(KindClearing), -r.AmountFen)
		post(ReceivableAccount(c), settle)
		post(CashAccount(c), r.AmountFen-settle)
	case OpGrant:
		tx.Postings = make([]Posting, 0, 2)
		post(LotAccount(c, r.Credit, r.Key), r.AmountFen)
		post(PlatformAccount(issuedKind(r.Credit)), -r.AmountFen)
	case OpDebit:
		rest := r.AmountFen
		tx.Postings = make([]Posting, 0, len(w.lots)+3)
		for _, l := range w.lots {
			if rest == 0 {
				break
			}
			if !l.liveAt(r.At) {
				continue
			}
			take := min(rest, l.BalanceFen)
			post(LotAccount(c, l.Kind, l.ID), -take)
			rest -= take
		}
		take := min(rest, w.cash)
		post(CashAccount(c), -take)
		rest -= take
		if r.Charge == ChargeStorage {
			post(ReceivableAccount(c), -rest)
			rest = 0
		}
		post(PlatformAccount(KindRevenue), r.AmountFen-rest)
	case OpExpire:
		i := w.lotIndex(r.Lot)
		if i < 0 {
			return Tx{}, gpurent.Errorf(gpurent.CodeNotFound,
				"ledger: customer %q has no credit left in lot %q", c, r.Lot)
		}
		l := w.lots[i]
		if l.liveAt(r.At) {
			return Tx{}, gpurent.Errorf(gpurent.CodeInvalid,
				"ledger: lot %q expires at %s, not yet at %s", l.ID, l.ExpiresAt.Format(time.RFC3339), r.At.Format(time.RFC3339))
		}
		post(LotAccount(c, l.Kind, l.ID), -l.BalanceFen)
		post(PlatformAccount(KindBreakage), l.BalanceFen)
	case OpSettle:
		settle := min(w.cash, w.ArrearsFen())
		post(CashAccount(c), -settle)
		post(ReceivableAccount(c), settle)
	}
	return tx, nil
}

// Apply folds a transaction into the wallet: every posting to one of this
// customer's accounts. It checks the transaction's shape and that the
// result keeps the invariants — cash and every lot >= 0, receivable <= 0, a
// grant creates a new lot, a debit spends only lots live at its time, an
// expiry empties an expired lot — and changes nothing when they fail
// (CodeInvalid). Platform postings are left to the caller (Ledger).
func (w *Wallet) Apply(tx Tx) error {
	tx.Request = tx.Request.normalized()
	if err := checkShape(tx); err != nil {
		return err
	}
	return w.apply(tx)
}

// apply is Apply for a transaction whose shape was checked.
func (w *Wallet) apply(tx Tx) error {
	r := tx.Request
	if r.Customer != w.customer {
		return gpurent.Errorf(gpurent.CodeInvalid,
			"ledger transaction %q is for customer %q, not %q", r.Key, r.Customer, w.customer)
	}
	bad := func(why string) error {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger transaction %q (%s): %s", r.Key, r.Op, why)
	}
	// Check every posting against the current state first.
	cash, recv := w.cash, w.receivable
	for _, p := range tx.Postings {
		a := p.Account
		var ok bool
		switch a.Kind {
		case KindCash:
			if cash, ok = addFen(cash, p.AmountFen); !ok || cash < 0 {
				return bad("cash would go below zero or overflow")
			}
		case KindReceivable:
			if recv, ok = addFen(recv, p.AmountFen); !ok || recv > 0 {
				return bad("receivable would go above zero or overflow")
			}
		case KindPromo, KindSLA:
			i := w.lotIndex(a.Lot)
			if r.Op == OpGrant {
				if i >= 0 {
					return bad("lot " + a.Lot + " already exists")
				}
				continue
			}
			if i < 0 {
				return bad("no credit left in lot " + a.Lot)
			}
			l := w.lots[i]
			switch {
			case l.Kind != a.Kind:
				return bad("lot " + a.Lot + " is " + string(l.Kind) + " credit")
			case l.BalanceFen+p.AmountFen < 0:
				return bad("lot " + a.Lot + " would go below zero")
			case r.Op == OpDebit && !l.liveAt(r.At):
				return bad("spends lot " + a.Lot + " after it expired")
			case r.Op == OpExpire && (l.liveAt(r.At) || l.BalanceFen+p.AmountFen != 0):
				return bad("an expiry empties a lot that has expired")
			}
		}
	}
	// Then change it.
	w.cash, w.receivable = cash, recv
	for _, p := range tx.Postings {
		a := p.Account
		if !a.Kind.IsCredit() {
			continue
		}
		if r.Op == OpGrant {
			l := Lot{ID: a.Lot, Kind: a.Kind, ExpiresAt: r.ExpiresAt, BalanceFen: p.AmountFen}
			i, _ := slices.BinarySearchFunc(w.lots, l, burnsBefore)
			w.lots = slices.Insert(w.lots, i, l)
			continue
		}
		i := w.lotIndex(a.Lot)
		w.lots[i].BalanceFen += p.AmountFen
		if w.lots[i].BalanceFen == 0 {
			w.lots = slices.Delete(w.lots, i, i+1)
		}
	}
	return nil
}

// balance is the balance of one of this customer's accounts.
func (w *Wallet) balance(a Account) int64 {
	switch a.Kind {
	case KindCash:
		return w.cash
	case KindReceivable:
		return w.receivable
	case KindPromo, KindSLA:
		if i := w.lotIndex(a.Lot); i >= 0 && w.lots[i].Kind == a.Kind {
			return w.lots[i].BalanceFen
		}
	}
	return 0
}

// addFen adds two amounts, reporting false on int64 overflow.
func addFen(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// mulDivFloor returns floor(a*b/c) for a, b >= 0 and c > 0, and false when
// the result does not fit in an int64.
func mulDivFloor(a, b, c int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > 1<<63-1 {
		return 0, false
	}
	return int64(q), true
}
