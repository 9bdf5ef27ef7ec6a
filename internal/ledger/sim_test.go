package ledger

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// chooser is where a simulation takes its choices from: a seeded PRNG in
// the property tests, the fuzzer's bytes in the fuzz test.
type chooser interface {
	// intn returns a choice in [0, n), n > 0.
	intn(n int) int
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser takes two bytes per choice and reports when it ran dry.
type byteChooser struct {
	b   []byte
	dry bool
}

func (c *byteChooser) intn(n int) int {
	if len(c.b) < 2 {
		c.dry = true
		return 0
	}
	v := int(c.b[0])<<8 | int(c.b[1])
	c.b = c.b[2:]
	return v % n
}

var simStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// modelLot and modelWallet are an independent, deliberately naive model of
// the ledger's effect on balances, to check the real one against.
type modelLot struct {
	id   string
	kind Kind
	exp  time.Time
	bal  int64
}

type modelWallet struct {
	cash, recv int64
	lots       map[string]*modelLot
}

type model struct {
	wallets  map[string]*modelWallet
	platform map[Kind]int64
}

func newModel() *model {
	return &model{wallets: map[string]*modelWallet{}, platform: map[Kind]int64{}}
}

func (m *model) wallet(c string) *modelWallet {
	w := m.wallets[c]
	if w == nil {
		w = &modelWallet{lots: map[string]*modelLot{}}
		m.wallets[c] = w
	}
	return w
}

// do applies r to the model and answers the amount a debit collected.
func (m *model) do(r Request) int64 {
	w := m.wallet(r.Customer)
	switch r.Op {
	case OpTopUp:
		s := min(r.AmountFen, -w.recv)
		w.recv += s
		w.cash += r.AmountFen - s
		m.platform[KindClearing] -= r.AmountFen
	case OpGrant:
		w.lots[r.Key] = &modelLot{id: r.Key, kind: r.Credit, exp: r.ExpiresAt, bal: r.AmountFen}
		m.platform[issuedKind(r.Credit)] -= r.AmountFen
	case OpDebit:
		var live []*modelLot
		for _, l := range w.lots {
			if l.bal > 0 && r.At.Before(l.exp) {
				live = append(live, l)
			}
		}
		rank := map[Kind]int{KindSLA: 0, KindPromo: 1}
		slices.SortFunc(live, func(a, b *modelLot) int {
			return cmp.Or(cmp.Compare(rank[a.kind], rank[b.kind]), a.exp.Compare(b.exp), strings.Compare(a.id, b.id))
		})
		rest := r.AmountFen
		for _, l := range live {
			take := min(rest, l.bal)
			l.bal -= take
			rest -= take
		}
		take := min(rest, w.cash)
		w.cash -= take
		rest -= take
		if r.Charge == ChargeStorage {
			w.recv -= rest
			rest = 0
		}
		m.platform[KindRevenue] += r.AmountFen - rest
		return r.AmountFen - rest
	case OpExpire:
		l := w.lots[r.Lot]
		m.platform[KindBreakage] += l.bal
		l.bal = 0
	case OpSettle:
		s := min(w.cash, -w.recv)
		w.cash -= s
		w.recv += s
	}
	return 0
}

// balances lists the model's non-zero balances in Ledger.Balances order.
func (m *model) balances() []AccountBalance {
	var out []AccountBalance
	for k, v := range m.platform {
		if v != 0 {
			out = append(out, AccountBalance{PlatformAccount(k), v})
		}
	}
	for c, w := range m.wallets {
		if w.cash != 0 {
			out = append(out, AccountBalance{CashAccount(c), w.cash})
		}
		if w.recv != 0 {
			out = append(out, AccountBalance{ReceivableAccount(c), w.recv})
		}
		for _, l := range w.lots {
			if l.bal != 0 {
				out = append(out, AccountBalance{LotAccount(c, l.kind, l.id), l.bal})
			}
		}
	}
	slices.SortFunc(out, func(a, b AccountBalance) int {
		return cmp.Or(strings.Compare(a.Account.Customer, b.Account.Customer),
			strings.Compare(string(a.Account.Kind), string(b.Account.Kind)),
			strings.Compare(a.Account.Lot, b.Account.Lot))
	})
	return out
}

// sim drives a ledger with random operations and checks every invariant
// after each one against the model.
type sim struct {
	t      testing.TB
	ch     chooser
	l      *Ledger
	m      *model
	now    time.Time
	seq    int
	posted []Request // first-time requests, in order
}

func newSim(t testing.TB, ch chooser) *sim {
	return &sim{t: t, ch: ch, l: New(), m: newModel(), now: simStart}
}

var simCustomers = []string{"acc-a", "acc-b", "acc-c"}

func (s *sim) key(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s:%d", prefix, s.seq)
}

// amount picks a small amount most of the time and a large one sometimes,
// so that wallets run dry as well as hold plenty.
func (s *sim) amount() int64 {
	if s.ch.intn(8) == 0 {
		return int64(1 + s.ch.intn(1_000_000))
	}
	return int64(1 + s.ch.intn(5_000))
}

// step performs one random operation and checks the ledger.
func (s *sim) step() {
	t := s.t
	t.Helper()
	c := simCustomers[s.ch.intn(len(simCustomers))]
	s.now = s.now.Add(time.Duration(s.ch.intn(4*3600)) * time.Second)
	r := Request{Customer: c, At: s.now}
	switch op := s.ch.intn(20); {
	case op < 3:
		r.Op, r.Key, r.AmountFen = OpTopUp, s.key("topup"), s.amount()
	case op < 5:
		r.Op, r.Key, r.AmountFen, r.Credit = OpGrant, s.key("promo"), s.amount(), KindPromo
		// Few distinct expiries, so that ties are broken by lot id.
		r.ExpiresAt = s.now.Add(time.Duration(1+s.ch.intn(4)) * 6 * time.Hour)
	case op < 6:
		r.Op, r.Key, r.AmountFen, r.Credit = OpGrant, s.key("sla"), s.amount(), KindSLA
		r.ExpiresAt = s.now.Add(time.Duration(1+s.ch.intn(4)) * 6 * time.Hour)
	case op < 11:
		r.Op, r.Key, r.AmountFen, r.Charge = OpDebit, s.key("debit:gpu"), s.amount(), ChargeCompute
	case op < 13:
		r.Op, r.Key, r.AmountFen, r.Charge = OpDebit, s.key("debit:vol"), s.amount(), ChargeStorage
	case op < 15:
		due := s.l.DueExpiries(s.now)
		if len(due) == 0 {
			return
		}
		r = due[s.ch.intn(len(due))]
	case op < 16:
		r.Op, r.Key = OpSettle, s.key("settle")
	case op < 18:
		s.duplicate()
		return
	case op < 19:
		s.conflict()
		return
	default:
		s.invalid(r)
		return
	}
	s.post(r)
}

func (s *sim) post(r Request) {
	t := s.t
	t.Helper()
	before := s.l.Wallet(r.Customer)
	tx, dup, err := s.l.Post(r)
	if err != nil {
		t.Fatalf("post %+v: %v", r, err)
	}
	if dup {
		t.Fatalf("post %+v: fresh key reported as duplicate", r)
	}
	s.posted = append(s.posted, r)
	collected := s.m.do(r.normalized())
	if tx.SumFen() != 0 {
		t.Fatalf("tx %q sums to %d", r.Key, tx.SumFen())
	}
	if int(tx.Seq) != s.l.Len() {
		t.Fatalf("tx %q has seq %d, log has %d", r.Key, tx.Seq, s.l.Len())
	}
	if r.Op == OpDebit {
		if tx.CollectedFen() != collected {
			t.Fatalf("debit %q collected %d, model says %d", r.Key, tx.CollectedFen(), collected)
		}
		if r.Charge == ChargeCompute {
			want := min(r.AmountFen, before.SpendableFen(r.At))
			if tx.CollectedFen() != want || tx.ShortfallFen() != r.AmountFen-want {
				t.Fatalf("compute debit %q of %d with %d spendable: collected %d, shortfall %d",
					r.Key, r.AmountFen, before.SpendableFen(r.At), tx.CollectedFen(), tx.ShortfallFen())
			}
		} else if tx.ShortfallFen() != 0 {
			t.Fatalf("storage debit %q has shortfall %d", r.Key, tx.ShortfallFen())
		}
	}
	for _, p := range tx.Postings {
		if p.Account.Kind == KindReceivable && p.AmountFen < 0 && (r.Op != OpDebit || r.Charge != ChargeStorage) {
			t.Fatalf("tx %q (%s %s) moved receivable below zero", r.Key, r.Op, r.Charge)
		}
	}
	s.check()
}

// duplicate re-posts an earlier request, at a later time: the original
// transaction must come back and nothing change.
func (s *sim) duplicate() {
	t := s.t
	t.Helper()
	if len(s.posted) == 0 {
		return
	}
	r := s.posted[s.ch.intn(len(s.posted))]
	orig, ok := s.l.Lookup(r.Key)
	if !ok {
		t.Fatalf("posted key %q not found", r.Key)
	}
	n := s.l.Len()
	r.At = s.now
	tx, dup, err := s.l.Post(r)
	if err != nil || !dup || !tx.Equal(orig) || tx.Seq != orig.Seq {
		t.Fatalf("duplicate %q: dup=%v err=%v tx=%+v, want original %+v", r.Key, dup, err, tx, orig)
	}
	if s.l.Len() != n {
		t.Fatalf("duplicate %q appended to the log", r.Key)
	}
	s.check()
}

// conflict re-posts an earlier key with different content.
func (s *sim) conflict() {
	t := s.t
	t.Helper()
	if len(s.posted) == 0 {
		return
	}
	r := s.posted[s.ch.intn(len(s.posted))]
	switch r.Op {
	case OpTopUp, OpGrant, OpDebit:
		r.AmountFen++
	case OpExpire, OpSettle:
		r.Customer = "acc-other"
	}
	n := s.l.Len()
	if _, _, err := s.l.Post(r); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Fatalf("same key %q, different content: err %v, want conflict", r.Key, err)
	}
	if s.l.Len() != n {
		t.Fatalf("conflicting %q appended to the log", r.Key)
	}
	s.check()
}

// invalid posts a malformed request, which must change nothing.
func (s *sim) invalid(r Request) {
	t := s.t
	t.Helper()
	r.Key = s.key("bad")
	switch s.ch.intn(4) {
	case 0:
		r.Op, r.AmountFen = OpTopUp, -int64(s.ch.intn(100))
	case 1:
		r.Op, r.AmountFen, r.Charge = OpDebit, 10, "gpu"
	case 2:
		r.Op, r.AmountFen, r.Credit, r.ExpiresAt = OpGrant, 10, KindPromo, r.At
	case 3:
		r.Op, r.Lot = OpExpire, "promo:never"
	}
	n := s.l.Len()
	_, _, err := s.l.Post(r)
	if code := gpurent.ErrorCode(err); code != gpurent.CodeInvalid && code != gpurent.CodeNotFound {
		t.Fatalf("malformed %+v: err %v, want invalid or not found", r, err)
	}
	if s.l.Len() != n {
		t.Fatalf("malformed %q appended to the log", r.Key)
	}
}

// check holds the invariants over the whole ledger.
func (s *sim) check() {
	t := s.t
	t.Helper()
	if sum := s.l.SumFen(); sum != 0 {
		t.Fatalf("ledger sums to %d", sum)
	}
	for _, c := range s.l.Customers() {
		w := s.l.Wallet(c)
		if w.CashFen() < 0 || w.ReceivableFen() > 0 {
			t.Fatalf("%s: cash %d, receivable %d", c, w.CashFen(), w.ReceivableFen())
		}
		for _, lot := range w.Lots() {
			if lot.BalanceFen <= 0 {
				t.Fatalf("%s: lot %s holds %d", c, lot.ID, lot.BalanceFen)
			}
		}
	}
	for _, b := range s.l.Balances() {
		if b.BalanceFen < 0 && b.Account.Kind.IsCustomer() && b.Account.Kind != KindReceivable {
			t.Fatalf("%s is %d", b.Account, b.BalanceFen)
		}
	}
	if got, want := s.l.Balances(), s.m.balances(); !slices.Equal(got, want) {
		t.Fatalf("balances differ from the model:\n got %v\nwant %v", got, want)
	}
}

// finish checks replay from empty and re-execution from empty.
func (s *sim) finish() {
	t := s.t
	t.Helper()
	replayed, err := Replay(s.l.Log())
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if got, want := replayed.Balances(), s.l.Balances(); !slices.Equal(got, want) {
		t.Fatalf("replayed balances differ:\n got %v\nwant %v", got, want)
	}
	for _, c := range s.l.Customers() {
		if got, want := replayed.Wallet(c).Lots(), s.l.Wallet(c).Lots(); !slices.EqualFunc(got, want, lotEqual) {
			t.Fatalf("%s: replayed lots %v, want %v", c, got, want)
		}
	}
	// Applying the log a second time is a no-op.
	for tx := range s.l.Log() {
		if err := replayed.Apply(tx); err != nil {
			t.Fatalf("re-apply %q: %v", tx.Key(), err)
		}
	}
	if replayed.Len() != s.l.Len() {
		t.Fatalf("re-applying the log grew it from %d to %d", s.l.Len(), replayed.Len())
	}
	// Re-executing the same requests gives the same transactions: the
	// burn order is deterministic.
	again := New()
	orig := slices.Collect(s.l.Log())
	for i, r := range s.posted {
		tx, _, err := again.Post(r)
		if err != nil {
			t.Fatalf("re-execute %q: %v", r.Key, err)
		}
		if !tx.Equal(orig[i]) {
			t.Fatalf("re-executed %q differs:\n got %+v\nwant %+v", r.Key, tx, orig[i])
		}
	}
}

func lotEqual(a, b Lot) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.ExpiresAt.Equal(b.ExpiresAt) && a.BalanceFen == b.BalanceFen
}
