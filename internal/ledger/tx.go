package ledger

import (
	"slices"

	"github.com/gpurent/gpurent"
)

// Tx is one transaction: the request that made it and its postings, which
// sum to zero. A debit that collects nothing has no postings; it is still
// recorded, so that its key is spent and a retry answers the same shortfall.
type Tx struct {
	// Seq is the transaction's position in its store's log. The ledger
	// does not interpret it beyond Ledger.Post numbering its own log 1, 2, ...
	Seq      int64
	Request  Request
	Postings []Posting
}

// Key is the transaction's idempotency key.
func (t Tx) Key() string { return t.Request.Key }

// SumFen is the sum of the postings; zero for every valid transaction.
func (t Tx) SumFen() int64 {
	var s int64
	for _, p := range t.Postings {
		s += p.AmountFen
	}
	return s
}

// CollectedFen is what a debit took from the customer: its revenue posting.
// Zero for other operations.
func (t Tx) CollectedFen() int64 {
	if t.Request.Op != OpDebit {
		return 0
	}
	for _, p := range t.Postings {
		if p.Account.Kind == KindRevenue {
			return p.AmountFen
		}
	}
	return 0
}

// ShortfallFen is the part of a compute debit that the wallet could not
// cover. When it is above zero the caller stops the instance; the line's
// next live debit (floor(exact so far) − already debited) asks for it again
// after a top-up. Zero for storage debits (they go to arrears instead) and
// for other operations.
func (t Tx) ShortfallFen() int64 {
	if t.Request.Op != OpDebit {
		return 0
	}
	return t.Request.AmountFen - t.CollectedFen()
}

// Equal reports whether t and o record the same transaction: same content,
// same effective time and the same postings in the same order. Seq is not
// compared.
func (t Tx) Equal(o Tx) bool {
	return t.Request.SameContent(o.Request) && t.Request.At.Equal(o.Request.At) &&
		slices.Equal(t.Postings, o.Postings)
}

func (t Tx) clone() Tx {
	t.Postings = slices.Clone(t.Postings)
	return t
}

// checkShape checks what can be checked of a transaction without the
// wallet: the request is valid, postings are non-zero, well-formed, touch
// only this customer's and platform accounts, each account at most once,
// sum to zero, and have the shape the operation allows. The request must be
// normalized.
func checkShape(t Tx) error {
	r := t.Request
	if err := r.Validate(); err != nil {
		return err
	}
	bad := func(why string) error {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger transaction %q (%s): %s", r.Key, r.Op, why)
	}
	var sum int64
	for i, p := range t.Postings {
		a := p.Account
		if !a.valid() {
			return bad("malformed account " + a.String())
		}
		if a.Kind.IsCustomer() && a.Customer != r.Customer {
			return bad("posts to another customer's account " + a.String())
		}
		if p.AmountFen == 0 || p.AmountFen > MaxAmountFen || p.AmountFen < -MaxAmountFen {
			return bad("posting amount out of range on " + a.String())
		}
		for _, q := range t.Postings[:i] {
			if q.Account == a {
				return bad("posts twice to " + a.String())
			}
		}
		var ok bool
		if sum, ok = addFen(sum, p.AmountFen); !ok {
			return bad("postings overflow")
		}
	}
	if sum != 0 {
		return bad("postings do not sum to zero")
	}
	// Per operation: which accounts may appear and with which sign.
	var revenue int64
	for _, p := range t.Postings {
		k, amt := p.Account.Kind, p.AmountFen
		ok := false
		switch r.Op {
		case OpTopUp:
			ok = (k == KindClearing && amt == -r.AmountFen) ||
				((k == KindCash || k == KindReceivable) && amt > 0)
		case OpGrant:
			ok = (k == r.Credit && p.Account.Lot == r.Key && amt == r.AmountFen) ||
				(k == issuedKind(r.Credit) && amt == -r.AmountFen)
		case OpDebit:
			switch {
			case k == KindRevenue:
				ok, revenue = amt > 0 && amt <= r.AmountFen, amt
			case k == KindReceivable:
				ok = amt < 0 && r.Charge == ChargeStorage
			case k == KindCash || k.IsCredit():
				ok = amt < 0
			}
		case OpExpire:
			ok = (k.IsCredit() && p.Account.Lot == r.Lot && amt < 0) || (k == KindBreakage && amt > 0)
		case OpSettle:
			ok = (k == KindCash && amt < 0) || (k == KindReceivable && amt > 0)
		}
		if !ok {
			return bad("posting not allowed for this operation on " + p.Account.String())
		}
	}
	n := len(t.Postings)
	switch r.Op {
	case OpTopUp:
		if n < 2 || n > 3 {
			return bad("a top-up moves clearing into cash and receivable")
		}
		found := false
		for _, p := range t.Postings {
			found = found || p.Account.Kind == KindClearing
		}
		if !found {
			return bad("a top-up takes its amount from clearing")
		}
	case OpGrant:
		if n != 2 {
			return bad("a grant has exactly two postings")
		}
	case OpDebit:
		if r.Charge == ChargeStorage && revenue != r.AmountFen {
			return bad("a storage debit collects its whole amount")
		}
		if n > 0 && revenue == 0 {
			return bad("a debit credits revenue")
		}
	case OpExpire, OpSettle:
		if n != 0 && n != 2 {
			return bad("moves one amount between two accounts")
		}
	}
	return nil
}
