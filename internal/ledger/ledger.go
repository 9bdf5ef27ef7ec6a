package ledger

import (
	"cmp"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// Ledger is the whole book in memory: the transaction log, the key index,
// every customer's wallet and the platform balances, all derived from the
// log. It is the reference implementation of what a store persists (see the
// package doc), and what Replay rebuilds to check a store's balances.
//
// A Ledger is not safe for concurrent use; wrap it in a mutex to share it.
type Ledger struct {
	log      []Tx
	byKey    map[string]int // key → index in log
	wallets  map[string]*Wallet
	platform map[Kind]int64
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{
		byKey:    make(map[string]int),
		wallets:  make(map[string]*Wallet),
		platform: make(map[Kind]int64),
	}
}

// Replay folds a transaction log, from empty, into a new ledger. The
// balances it derives are exactly the ones the log's postings imply; it
// stops at the first transaction that breaks an invariant.
func Replay(txs iter.Seq[Tx]) (*Ledger, error) {
	l := New()
	for tx := range txs {
		if err := l.Apply(tx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Post performs one operation: when r.Key was used before, it answers the
// original transaction (dup true) if the content is the same and a
// CodeConflict error if not; otherwise it plans the transaction on the
// customer's wallet, appends it with the next Seq and answers it.
func (l *Ledger) Post(r Request) (tx Tx, dup bool, err error) {
	r = r.normalized()
	if err := r.validate(false); err != nil {
		return Tx{}, false, err
	}
	if i, ok := l.byKey[r.Key]; ok {
		orig := l.log[i]
		if !orig.Request.SameContent(r) {
			return Tx{}, false, gpurent.Errorf(gpurent.CodeConflict,
				"ledger: key %q was already used for a different %s", r.Key, orig.Request.Op)
		}
		return orig.clone(), true, nil
	}
	w := l.wallets[r.Customer]
	if w == nil {
		w = emptyWallet(r.Customer)
	}
	tx, err = w.Plan(r)
	if err != nil {
		return Tx{}, false, err
	}
	tx.Seq = int64(len(l.log)) + 1
	err = checkShape(tx)
	if err == nil {
		err = l.apply(tx, w)
	}
	if err != nil {
		// The planner produced a transaction the invariants reject: a bug.
		return Tx{}, false, gpurent.WrapError(gpurent.CodeInternal, err, "ledger: planned transaction rejected")
	}
	return tx.clone(), false, nil
}

// Apply appends a transaction made elsewhere (read back from a store, or
// from another ledger) and folds it into the balances. The same transaction
// applied twice is a no-op; another transaction with a used key is a
// CodeConflict error; a transaction that breaks an invariant (see
// Wallet.Apply) is CodeInvalid. Nothing changes when it fails.
func (l *Ledger) Apply(tx Tx) error {
	tx.Request = tx.Request.normalized()
	if err := checkShape(tx); err != nil {
		return err
	}
	if i, ok := l.byKey[tx.Key()]; ok {
		if l.log[i].Equal(tx) {
			return nil
		}
		return gpurent.Errorf(gpurent.CodeConflict, "ledger: key %q was already used for another transaction", tx.Key())
	}
	w := l.wallets[tx.Request.Customer]
	if w == nil {
		w = emptyWallet(tx.Request.Customer)
	}
	return l.apply(tx.clone(), w)
}

// apply checks the platform side, folds the wallet side and appends. The
// transaction's shape was checked, its key is new, and w is its customer's
// wallet (possibly new).
func (l *Ledger) apply(tx Tx, w *Wallet) error {
	var plat [2]Posting // at most two platform postings per transaction
	n := 0
	for _, p := range tx.Postings {
		if p.Account.Kind.IsPlatform() {
			if n == len(plat) {
				return gpurent.Errorf(gpurent.CodeInvalid, "ledger transaction %q: too many platform postings", tx.Key())
			}
			if _, ok := addFen(l.platform[p.Account.Kind], p.AmountFen); !ok {
				return gpurent.Errorf(gpurent.CodeInvalid, "ledger transaction %q: %s would overflow", tx.Key(), p.Account)
			}
			plat[n] = p
			n++
		}
	}
	if err := w.apply(tx); err != nil {
		return err
	}
	for _, p := range plat[:n] {
		l.platform[p.Account.Kind] += p.AmountFen
	}
	l.wallets[w.customer] = w
	l.byKey[tx.Key()] = len(l.log)
	l.log = append(l.log, tx)
	return nil
}

// Lookup answers the transaction recorded under key.
func (l *Ledger) Lookup(key string) (Tx, bool) {
	i, ok := l.byKey[key]
	if !ok {
		return Tx{}, false
	}
	return l.log[i].clone(), true
}

// Len is the number of transactions in the log.
func (l *Ledger) Len() int { return len(l.log) }

// Log yields the transactions in the order they were appended.
func (l *Ledger) Log() iter.Seq[Tx] {
	return func(yield func(Tx) bool) {
		for _, tx := range l.log {
			if !yield(tx.clone()) {
				return
			}
		}
	}
}

// Wallet returns a copy of customer's wallet (empty when the ledger has
// never seen the customer).
func (l *Ledger) Wallet(customer string) *Wallet {
	if w := l.wallets[customer]; w != nil {
		return w.Clone()
	}
	return emptyWallet(customer)
}

// Customers lists the customers with a wallet, sorted.
func (l *Ledger) Customers() []string {
	out := make([]string, 0, len(l.wallets))
	for c := range l.wallets {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Balance is the balance of one account: the sum of its postings.
func (l *Ledger) Balance(a Account) int64 {
	if a.Kind.IsPlatform() {
		if a.Customer != "" || a.Lot != "" {
			return 0
		}
		return l.platform[a.Kind]
	}
	if w := l.wallets[a.Customer]; w != nil {
		return w.balance(a)
	}
	return 0
}

// AccountBalance is one account and its balance.
type AccountBalance struct {
	Account    Account
	BalanceFen int64
}

// Balances lists every account with a non-zero balance, sorted by customer
// (platform first), kind and lot.
func (l *Ledger) Balances() []AccountBalance {
	var out []AccountBalance
	for k, v := range l.platform {
		if v != 0 {
			out = append(out, AccountBalance{PlatformAccount(k), v})
		}
	}
	for c, w := range l.wallets {
		if w.cash != 0 {
			out = append(out, AccountBalance{CashAccount(c), w.cash})
		}
		if w.receivable != 0 {
			out = append(out, AccountBalance{ReceivableAccount(c), w.receivable})
		}
		for _, lot := range w.lots {
			out = append(out, AccountBalance{LotAccount(c, lot.Kind, lot.ID), lot.BalanceFen})
		}
	}
	slices.SortFunc(out, func(a, b AccountBalance) int {
		return cmp.Or(strings.Compare(a.Account.Customer, b.Account.Customer),
			strings.Compare(string(a.Account.Kind), string(b.Account.Kind)),
			strings.Compare(a.Account.Lot, b.Account.Lot))
	})
	return out
}

// SumFen is the sum of every balance in the ledger. It is zero for every
// ledger: each transaction sums to zero. (Checked arithmetic is not needed:
// every balance fits in an int64, and the true sum is zero.)
func (l *Ledger) SumFen() int64 {
	var s int64
	for _, b := range l.Balances() {
		s += b.BalanceFen
	}
	return s
}

// DueExpiries lists the expire requests due at t for every customer,
// sorted by customer and then burn order.
func (l *Ledger) DueExpiries(at time.Time) []Request {
	var out []Request
	for _, c := range l.Customers() {
		out = append(out, l.wallets[c].DueExpiries(at)...)
	}
	return out
}
