package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
)

// The ledger is persisted the way internal/ledger's package doc describes:
// ledger_tx holds each transaction's request (one row, key unique) and
// ledger_posting its postings, append-only: they are the truth. Each
// customer account's balance is also kept in ledger_balances, moved in the
// same statement (PostgreSQL) or savepoint (SQLite) that appends the
// postings, so a post reads one row per account instead of summing the
// customer's history. Platform accounts are not kept there (one row moved by
// every post would serialise all customers); LedgerPlatformBalances sums
// them.

const ledgerTxCols = `seq, key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at`

// MaxLedgerList is the most transactions LedgerTxs answers at once.
const MaxLedgerList = 1000

// toLedgerRequest is the ledger's view of a stored transaction's request.
func toLedgerRequest(t *gpurent.LedgerTx) ledger.Request {
	return ledger.Request{
		Op: ledger.Op(t.Op), Key: t.Key, Customer: t.Customer, At: t.At, AmountFen: t.AmountFen,
		Charge: ledger.Charge(t.Charge), Credit: ledger.Kind(t.Credit), ExpiresAt: t.ExpiresAt, Lot: t.Lot,
	}
}

// rowLock is the clause that locks the rows a SELECT reads until the
// transaction ends: PostgreSQL's FOR NO KEY UPDATE, which excludes every
// other post to the account but not an insert that merely refers to it (a
// foreign key's check takes FOR KEY SHARE), so a post never waits for, nor
// deadlocks with, a transaction inserting the account's usage. SQLite needs
// none: its write transactions begin IMMEDIATE on the one writer
// connection, so they never overlap.
func (s *Store) rowLock() string {
	if s.d.RowLock == "" {
		return ""
	}
	return " " + s.d.RowLock
}

// postAtomic runs a post so that its writes stay together or not at all.
// On PostgreSQL inside a transaction a post needs no savepoint: it reads,
// then writes everything in one statement, which is atomic by itself (and
// an error there aborts the surrounding transaction, so nothing half-done
// can commit). Elsewhere it is atomic (a transaction, or SQLite's cheap
// in-process savepoint around its three writes).
func (s *Store) postAtomic(ctx context.Context, fn func(st *Store) error) error {
	if s.tx != nil && s.d.StatementAtomicInTx {
		return fn(s)
	}
	return s.atomic(ctx, fn)
}

// PostLedger performs one ledger operation in one database transaction (see
// gpurent.Queries): lock the customer's account (PostgreSQL: FOR UPDATE;
// SQLite's single writer already serialises), read the key and the kept
// balances in one query, plan on them, then append the transaction and its
// postings and move the balances. The duplicate check is a lookup under the
// customer's lock, backed by the unique key: an insert that loses to a
// racing writer (another customer using the same key) inserts nothing and is
// answered from the row that won.
func (s *Store) PostLedger(ctx context.Context, tx *gpurent.LedgerTx) (bool, error) {
	if tx == nil {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "ledger transaction is required")
	}
	in := *tx
	in.At = normTime(in.At)
	if !in.ExpiresAt.IsZero() {
		in.ExpiresAt = normTime(in.ExpiresAt)
	}
	req := toLedgerRequest(&in)
	if req.Key == "" || req.Customer == "" || len(req.Key) > ledger.MaxKeyLen {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "ledger transaction needs a key (at most %d bytes) and a customer", ledger.MaxKeyLen)
	}
	var out gpurent.LedgerTx
	var dup bool
	err := s.postAtomic(ctx, func(st *Store) error {
		ok, err := st.exists(ctx, `SELECT 1 FROM accounts WHERE id = ?`+st.rowLock(), req.Customer)
		if err != nil {
			return st.dbErr(err, "lock account")
		}
		if !ok {
			return notFound("account", req.Customer)
		}
		answer := func(orig *gpurent.LedgerTx) error {
			if !toLedgerRequest(orig).SameContent(req) {
				return gpurent.Errorf(gpurent.CodeConflict,
					"ledger key %q was already used for a different %s", req.Key, orig.Op)
			}
			out, dup = *orig, true
			return nil
		}
		bal, used, err := st.balancesAndKey(ctx, req.Customer, req.Key)
		if err != nil {
			return err
		}
		if used {
			orig, err := st.LedgerTxByKey(ctx, req.Key)
			if err != nil {
				return err
			}
			return answer(orig)
		}
		if err := req.Validate(); err != nil {
			return err
		}
		lots := make([]ledger.Lot, 0, len(bal.Lots))
		for _, l := range bal.Lots {
			lots = append(lots, ledger.Lot{ID: l.ID, Kind: ledger.Kind(l.Kind), ExpiresAt: l.ExpiresAt, BalanceFen: l.BalanceFen})
		}
		w, err := ledger.NewWallet(req.Customer, bal.CashFen, bal.ReceivableFen, lots)
		if err != nil {
			return gpurent.WrapError(gpurent.CodeInternal, err, "ledger balances of %q break the invariants", req.Customer)
		}
		planned, err := w.Plan(req)
		if err != nil {
			return err
		}
		if err := w.Apply(planned); err != nil {
			return gpurent.WrapError(gpurent.CodeInternal, err, "planned ledger transaction rejected")
		}
		in.CreatedAt = nowOr(in.CreatedAt)
		in.Postings = make([]gpurent.LedgerPosting, len(planned.Postings))
		for i, p := range planned.Postings {
			in.Postings[i] = gpurent.LedgerPosting{Customer: p.Account.Customer, Kind: string(p.Account.Kind),
				Lot: p.Account.Lot, AmountFen: p.AmountFen}
		}
		// A lot's row is made by its grant and keeps the grant's expiry.
		expiry := func(p gpurent.LedgerPosting) any {
			if p.Lot == "" {
				return nil
			}
			if req.Op == ledger.OpGrant && p.Lot == in.Key {
				return st.ts(in.ExpiresAt)
			}
			for _, l := range bal.Lots {
				if l.ID == p.Lot {
					return st.ts(l.ExpiresAt)
				}
			}
			return nil
		}
		var seq int64
		if st.d.ModifyingCTEs {
			seq, err = st.appendPostgres(ctx, &in, expiry)
		} else {
			seq, err = st.appendShared(ctx, &in, expiry)
		}
		if errors.Is(err, sql.ErrNoRows) {
			orig, err := st.LedgerTxByKey(ctx, req.Key)
			if err != nil {
				return err
			}
			return answer(orig)
		}
		if err != nil {
			return err
		}
		in.Seq = seq
		out = in
		return nil
	})
	if err != nil {
		return false, err
	}
	*tx = out
	return dup, nil
}

// balancesAndKey reads the customer's kept balances and whether key was
// used, in one query (under the customer's lock).
func (s *Store) balancesAndKey(ctx context.Context, customer, key string) (*gpurent.LedgerBalances, bool, error) {
	rows, err := s.query(ctx, `SELECT kind, lot, balance_fen, expires_at FROM ledger_balances WHERE customer = ?
UNION ALL SELECT '', '', seq, NULL FROM ledger_tx WHERE key = ?`, customer, key)
	if err != nil {
		return nil, false, s.dbErr(err, "read ledger balances")
	}
	b, used, err := scanBalances(rows, customer)
	if err != nil {
		return nil, false, s.dbErr(err, "read ledger balances")
	}
	return b, used, nil
}

// scanBalances reads rows of (kind, lot, balance, expiry) into balances,
// closing rows. A row with an empty kind (no account has one) says the key
// asked about was used.
func scanBalances(rows *sql.Rows, customer string) (*gpurent.LedgerBalances, bool, error) {
	defer rows.Close()
	b := &gpurent.LedgerBalances{Customer: customer}
	used := false
	for rows.Next() {
		var kind, lot string
		var fen int64
		var expires *time.Time
		if err := rows.Scan(&kind, &lot, &fen, nullTimeCol{&expires}); err != nil {
			return nil, false, err
		}
		if kind == "" {
			used = true
		} else {
			addBalance(b, kind, lot, fen, expires)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	sortLots(b.Lots)
	return b, used, nil
}

// sortLots orders lots by expiry, then id.
func sortLots(lots []gpurent.LedgerLot) {
	slices.SortFunc(lots, func(x, y gpurent.LedgerLot) int {
		if c := x.ExpiresAt.Compare(y.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
}

// appendShared appends the transaction, its postings and the balance moves
// with three statements (SQLite, inside the post's savepoint). It answers
// sql.ErrNoRows when the key lost to a racing insert.
func (s *Store) appendShared(ctx context.Context, in *gpurent.LedgerTx, expiry func(gpurent.LedgerPosting) any) (int64, error) {
	var expires any
	if !in.ExpiresAt.IsZero() {
		expires = s.ts(in.ExpiresAt)
	}
	var seq int64
	err := s.writeRow(ctx, `INSERT INTO ledger_tx (key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING seq`,
		in.Key, in.Op, in.Customer, s.ts(in.At), in.AmountFen, in.Charge, in.Credit, expires, in.Lot,
		in.Actor, in.Note, s.ts(in.CreatedAt)).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	if err != nil {
		return 0, s.dbErr(err, "insert ledger transaction")
	}
	if len(in.Postings) == 0 {
		return seq, nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO ledger_posting (tx_seq, idx, customer, kind, lot, amount_fen) VALUES `)
	args := make([]any, 0, 6*len(in.Postings))
	for i, p := range in.Postings {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?)")
		args = append(args, seq, i, p.Customer, p.Kind, p.Lot, p.AmountFen)
	}
	if _, err := s.exec(ctx, q.String(), args...); err != nil {
		return 0, s.dbErr(err, "insert ledger postings")
	}
	q.Reset()
	args = args[:0]
	q.WriteString(`INSERT INTO ledger_balances (customer, kind, lot, balance_fen, expires_at) VALUES `)
	for _, p := range in.Postings {
		if p.Customer == "" {
			continue
		}
		if len(args) > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, p.Customer, p.Kind, p.Lot, p.AmountFen, expiry(p))
	}
	if len(args) == 0 {
		return seq, nil
	}
	q.WriteString(` ON CONFLICT (customer, kind, lot) DO UPDATE SET balance_fen = ledger_balances.balance_fen + excluded.balance_fen`)
	if _, err := s.exec(ctx, q.String(), args...); err != nil {
		return 0, s.dbErr(err, "move ledger balances")
	}
	return seq, nil
}

// appendPostgres appends the transaction, its postings and the balance
// moves in one statement: one round trip, atomic by itself, so a post
// inside a transaction needs no savepoint. It answers sql.ErrNoRows when
// the key lost to a racing insert (then nothing is written).
func (s *Store) appendPostgres(ctx context.Context, in *gpurent.LedgerTx, expiry func(gpurent.LedgerPosting) any) (int64, error) {
	var expires any
	if !in.ExpiresAt.IsZero() {
		expires = s.ts(in.ExpiresAt)
	}
	var q strings.Builder
	q.WriteString(`WITH t AS (INSERT INTO ledger_tx (key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING seq)`)
	args := []any{in.Key, in.Op, in.Customer, s.ts(in.At), in.AmountFen, in.Charge, in.Credit, expires, in.Lot,
		in.Actor, in.Note, s.ts(in.CreatedAt)}
	if len(in.Postings) > 0 {
		q.WriteString(`, p AS (INSERT INTO ledger_posting (tx_seq, idx, customer, kind, lot, amount_fen)
SELECT t.seq, v.idx, v.customer, v.kind, v.lot, v.amount_fen FROM t, (VALUES `)
		for i, p := range in.Postings {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT))")
			args = append(args, i, p.Customer, p.Kind, p.Lot, p.AmountFen)
		}
		q.WriteString(`) AS v (idx, customer, kind, lot, amount_fen))`)
		n := 0
		for _, p := range in.Postings {
			if p.Customer == "" {
				continue
			}
			if n == 0 {
				q.WriteString(`, b AS (INSERT INTO ledger_balances (customer, kind, lot, balance_fen, expires_at)
SELECT v.customer, v.kind, v.lot, v.amount_fen, v.expires_at FROM t, (VALUES `)
			} else {
				q.WriteString(", ")
			}
			n++
			q.WriteString("(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TIMESTAMPTZ))")
			args = append(args, p.Customer, p.Kind, p.Lot, p.AmountFen, expiry(p))
		}
		if n > 0 {
			q.WriteString(`) AS v (customer, kind, lot, amount_fen, expires_at)
ON CONFLICT (customer, kind, lot) DO UPDATE SET balance_fen = ledger_balances.balance_fen + excluded.balance_fen)`)
		}
	}
	q.WriteString(` SELECT seq FROM t`)
	var seq int64
	err := s.writeRow(ctx, q.String(), args...).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	if err != nil {
		return 0, s.dbErr(err, "append ledger transaction")
	}
	return seq, nil
}

func scanLedgerTx(r rowScanner) (*gpurent.LedgerTx, error) {
	var t gpurent.LedgerTx
	var expires *time.Time
	err := r.Scan(&t.Seq, &t.Key, &t.Op, &t.Customer, timeCol{&t.At}, &t.AmountFen, &t.Charge, &t.Credit,
		nullTimeCol{&expires}, &t.Lot, &t.Actor, &t.Note, timeCol{&t.CreatedAt})
	if expires != nil {
		t.ExpiresAt = *expires
	}
	return &t, err
}

// LedgerTxByKey returns the transaction with key, with its postings.
func (s *Store) LedgerTxByKey(ctx context.Context, key string) (*gpurent.LedgerTx, error) {
	t, err := scanLedgerTx(s.queryRow(ctx, `SELECT `+ledgerTxCols+` FROM ledger_tx WHERE key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("ledger transaction", key)
	}
	if err != nil {
		return nil, s.dbErr(err, "read ledger transaction")
	}
	txs := []gpurent.LedgerTx{*t}
	if err := s.loadPostings(ctx, txs); err != nil {
		return nil, err
	}
	return &txs[0], nil
}

// LedgerTxs lists a customer's transactions newest first.
func (s *Store) LedgerTxs(ctx context.Context, customer string, beforeSeq int64, limit int) ([]gpurent.LedgerTx, error) {
	if limit < 1 || limit > MaxLedgerList {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "list limit must be between 1 and %d", MaxLedgerList)
	}
	q := `SELECT ` + ledgerTxCols + ` FROM ledger_tx WHERE customer = ?`
	args := []any{customer}
	if beforeSeq > 0 {
		q += ` AND seq < ?`
		args = append(args, beforeSeq)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr(err, "list ledger transactions")
	}
	var out []gpurent.LedgerTx
	for rows.Next() {
		t, err := scanLedgerTx(rows)
		if err != nil {
			rows.Close()
			return nil, s.dbErr(err, "list ledger transactions")
		}
		out = append(out, *t)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, s.dbErr(err, "list ledger transactions")
	}
	if err := s.loadPostings(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// loadPostings fills each transaction's postings, in their stored order.
func (s *Store) loadPostings(ctx context.Context, txs []gpurent.LedgerTx) error {
	if len(txs) == 0 {
		return nil
	}
	idx := make(map[int64]int, len(txs))
	args := make([]any, len(txs))
	for i, t := range txs {
		idx[t.Seq] = i
		args[i] = t.Seq
	}
	rows, err := s.query(ctx, `SELECT tx_seq, customer, kind, lot, amount_fen FROM ledger_posting
WHERE tx_seq IN (`+placeholders(len(txs))+`) ORDER BY tx_seq, idx`, args...)
	if err != nil {
		return s.dbErr(err, "read ledger postings")
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var p gpurent.LedgerPosting
		if err := rows.Scan(&seq, &p.Customer, &p.Kind, &p.Lot, &p.AmountFen); err != nil {
			return s.dbErr(err, "read ledger postings")
		}
		i := idx[seq]
		txs[i].Postings = append(txs[i].Postings, p)
	}
	if err := rows.Err(); err != nil {
		return s.dbErr(err, "read ledger postings")
	}
	return nil
}

// LedgerBalances reads the customer's kept balances (each equal to the sum
// of its account's postings); a lot's expiry is the grant's that made it.
func (s *Store) LedgerBalances(ctx context.Context, customer string) (*gpurent.LedgerBalances, error) {
	rows, err := s.query(ctx, `SELECT kind, lot, balance_fen, expires_at FROM ledger_balances WHERE customer = ?`, customer)
	if err != nil {
		return nil, s.dbErr(err, "read ledger balances")
	}
	b, _, err := scanBalances(rows, customer)
	if err != nil {
		return nil, s.dbErr(err, "read ledger balances")
	}
	return b, nil
}

// LedgerPlatformBalances sums the platform accounts by kind.
func (s *Store) LedgerPlatformBalances(ctx context.Context) (map[string]int64, error) {
	rows, err := s.query(ctx, `SELECT kind, CAST(SUM(amount_fen) AS BIGINT) FROM ledger_posting
WHERE customer = '' GROUP BY kind`)
	if err != nil {
		return nil, s.dbErr(err, "sum platform postings")
	}
	defer rows.Close()
	out := make(map[string]int64)
	for rows.Next() {
		var kind string
		var sum int64
		if err := rows.Scan(&kind, &sum); err != nil {
			return nil, s.dbErr(err, "sum platform postings")
		}
		out[kind] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "sum platform postings")
	}
	return out, nil
}

// debitItem is one run debit of a PostRunDebits batch on its way in.
type debitItem struct {
	k       int // its index in the batch
	d       gpurent.RunDebit
	in      gpurent.LedgerTx // the normalised request (when d.Tx is set)
	req     ledger.Request
	dup     bool // its key was used before with the same content
	planned ledger.Tx
}

// PostRunDebits applies many runs' debits in one transaction (see
// gpurent.Queries) with a fixed number of statements whatever their
// number: lock the customers (PostgreSQL: FOR NO KEY UPDATE, in id order,
// which still lets inserts that merely refer to an account through); read
// their kept balances and which keys were used, and move the runs that are
// still where the caller saw them (a conditional multi-row UPDATE …
// RETURNING; on PostgreSQL one statement does both, see moveRunsPostgres);
// then plan each customer's debits one after the other on its wallet and
// append the transactions, their postings and the balance moves (one
// statement on PostgreSQL).
func (s *Store) PostRunDebits(ctx context.Context, debits []gpurent.RunDebit) ([]error, error) {
	res := make([]error, len(debits))
	items := make([]*debitItem, 0, len(debits))
	runs := make(map[string]bool, len(debits))
	keys := make(map[string]bool, len(debits))
	for k, d := range debits {
		it := &debitItem{k: k, d: d}
		if err := it.check(runs, keys); err != nil {
			res[k] = err
			continue
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return res, nil
	}
	if err := s.batch(ctx, func(st *Store) error { return st.postRunDebits(ctx, items, res) }); err != nil {
		return nil, err
	}
	for _, it := range items {
		if res[it.k] == nil && it.d.Tx != nil {
			*debits[it.k].Tx = it.in
		}
	}
	return res, nil
}

// check refuses a malformed debit, a second debit of one run and a second
// use of one key in the batch.
func (it *debitItem) check(runs, keys map[string]bool) error {
	d := it.d
	if d.RunID == "" || d.PrevFen < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "run debit: a run and a debited amount not below zero are required")
	}
	if runs[d.RunID] {
		return gpurent.Errorf(gpurent.CodeInvalid, "run %s is debited twice in one batch", d.RunID)
	}
	if d.Tx != nil {
		it.in = *d.Tx
		it.in.At = normTime(it.in.At)
		it.in.ExpiresAt = time.Time{}
		it.in.Postings = nil
		it.req = toLedgerRequest(&it.in)
		if it.req.Op != ledger.OpDebit || it.req.Key == "" || it.req.Customer == "" || len(it.req.Key) > ledger.MaxKeyLen {
			return gpurent.Errorf(gpurent.CodeInvalid, "run debit of %s: a debit with a key (at most %d bytes) and a customer is required",
				d.RunID, ledger.MaxKeyLen)
		}
		if err := it.req.Validate(); err != nil {
			return err
		}
		if keys[it.req.Key] {
			return gpurent.Errorf(gpurent.CodeInvalid, "ledger key %q is used twice in one batch", it.req.Key)
		}
		keys[it.req.Key] = true
	}
	runs[d.RunID] = true
	return nil
}

// debited is the run's debited amount after the item.
func (it *debitItem) debited() int64 {
	if it.d.Tx == nil {
		return it.d.PrevFen
	}
	return it.d.PrevFen + it.in.AmountFen
}

func (s *Store) postRunDebits(ctx context.Context, items []*debitItem, res []error) error {
	// Lock the customers, in id order.
	var customers []string
	for _, it := range items {
		if it.d.Tx != nil && !slices.Contains(customers, it.req.Customer) {
			customers = append(customers, it.req.Customer)
		}
	}
	slices.Sort(customers)
	found := map[string]bool{}
	if len(customers) > 0 {
		var err error
		if found, err = s.lockCustomers(ctx, customers); err != nil {
			return err
		}
		for _, it := range items {
			if it.d.Tx != nil && !found[it.req.Customer] {
				res[it.k] = notFound("account", it.req.Customer)
			}
		}
	}
	var bals map[string]*gpurent.LedgerBalances
	var moved map[string]bool
	var err error
	if s.d.ModifyingCTEs {
		bals, moved, err = s.moveRunsPostgres(ctx, found, items, res)
	} else {
		bals, moved, err = s.moveRunsShared(ctx, found, items, res)
	}
	if err != nil {
		return err
	}
	// Plan each customer's debits in order on its wallet.
	wallets := map[string]*ledger.Wallet{}
	var posts []*debitItem
	for _, it := range items {
		if res[it.k] != nil {
			continue
		}
		if !moved[it.d.RunID] {
			res[it.k] = gpurent.Errorf(gpurent.CodeConflict, "run %s was debited meanwhile", it.d.RunID)
			continue
		}
		if it.d.Tx == nil || it.dup {
			continue
		}
		c := it.req.Customer
		w := wallets[c]
		if w == nil {
			b := bals[c]
			lots := make([]ledger.Lot, 0, len(b.Lots))
			for _, l := range b.Lots {
				lots = append(lots, ledger.Lot{ID: l.ID, Kind: ledger.Kind(l.Kind), ExpiresAt: l.ExpiresAt, BalanceFen: l.BalanceFen})
			}
			if w, err = ledger.NewWallet(c, b.CashFen, b.ReceivableFen, lots); err != nil {
				return gpurent.WrapError(gpurent.CodeInternal, err, "ledger balances of %q break the invariants", c)
			}
			wallets[c] = w
		}
		// The run moved: a debit that cannot be planned must not leave it
		// so, so the whole batch fails.
		if it.planned, err = w.Plan(it.req); err != nil {
			return err
		}
		if err := w.Apply(it.planned); err != nil {
			return gpurent.WrapError(gpurent.CodeInternal, err, "planned ledger transaction rejected")
		}
		it.in.CreatedAt = nowOr(it.in.CreatedAt)
		it.in.Postings = make([]gpurent.LedgerPosting, len(it.planned.Postings))
		for i, p := range it.planned.Postings {
			it.in.Postings[i] = gpurent.LedgerPosting{Customer: p.Account.Customer, Kind: string(p.Account.Kind),
				Lot: p.Account.Lot, AmountFen: p.AmountFen}
		}
		posts = append(posts, it)
	}
	if len(posts) == 0 {
		return nil
	}
	return s.appendDebits(ctx, posts, bals)
}

// answerUsedKeys answers the items whose key was used before: a conflict
// when with other content, else a duplicate (the stored transaction).
func (s *Store) answerUsedKeys(ctx context.Context, items []*debitItem, res []error, used map[string]bool) error {
	for _, it := range items {
		if res[it.k] != nil || it.d.Tx == nil || !used[it.req.Key] {
			continue
		}
		orig, err := s.LedgerTxByKey(ctx, it.req.Key)
		if err != nil {
			return err
		}
		if !toLedgerRequest(orig).SameContent(it.req) {
			res[it.k] = gpurent.Errorf(gpurent.CodeConflict, "ledger key %q was already used for a different %s", it.req.Key, orig.Op)
			continue
		}
		it.in, it.dup = *orig, true
	}
	return nil
}

// moveRunsShared reads the customers' balances and which keys were used
// (one query), answers the items whose key was used, then moves the runs of
// the items still standing that are where the caller saw them.
func (s *Store) moveRunsShared(ctx context.Context, found map[string]bool, items []*debitItem,
	res []error) (map[string]*gpurent.LedgerBalances, map[string]bool, error) {
	bals, used, err := s.balancesAndKeys(ctx, found, items)
	if err != nil {
		return nil, nil, err
	}
	if err := s.answerUsedKeys(ctx, items, res, used); err != nil {
		return nil, nil, err
	}
	moved, err := s.moveRuns(ctx, items, res)
	return bals, moved, err
}

// moveRunsPostgres does what moveRunsShared does with one statement in the
// common case: it moves the runs of the items whose key (if any) is unused,
// and answers those moves, the keys that were used and the customers'
// balances, all read under the customers' locks taken by the statement
// before (a new snapshot). An item whose key was used is then answered
// (LedgerTxByKey), and the runs of the duplicates among them moved with a
// second statement: what moveRunsShared ends with, in another order.
func (s *Store) moveRunsPostgres(ctx context.Context, found map[string]bool, items []*debitItem,
	res []error) (map[string]*gpurent.LedgerBalances, map[string]bool, error) {
	bals := make(map[string]*gpurent.LedgerBalances, len(found))
	var cargs []any
	for c, ok := range found {
		if ok {
			bals[c] = &gpurent.LedgerBalances{Customer: c}
			cargs = append(cargs, c)
		}
	}
	moved := map[string]bool{}
	used := map[string]bool{}
	var q strings.Builder
	var args []any
	n := 0
	q.WriteString(`WITH v (id, prev, debited, settled, key) AS (VALUES `)
	for _, it := range items {
		if res[it.k] != nil {
			continue
		}
		if n > 0 {
			q.WriteString(", ")
		}
		n++
		q.WriteString("(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BOOLEAN), CAST(? AS TEXT))")
		var key any
		if it.d.Tx != nil {
			key = it.req.Key
		}
		args = append(args, it.d.RunID, it.d.PrevFen, it.debited(), it.d.Settle, key)
	}
	if n == 0 {
		return bals, moved, nil
	}
	q.WriteString(`), u AS (UPDATE usage_runs SET debited_fen = v.debited, settled = v.settled FROM v
WHERE usage_runs.id = v.id AND usage_runs.debited_fen = v.prev AND NOT usage_runs.settled
AND NOT EXISTS (SELECT 1 FROM ledger_tx t WHERE t.key = v.key) RETURNING usage_runs.id)
SELECT '', id, '', CAST(0 AS BIGINT), CAST(NULL AS TIMESTAMPTZ) FROM u
UNION ALL SELECT '', key, 'key', 0, NULL FROM ledger_tx WHERE key IN (SELECT key FROM v)`)
	if len(cargs) > 0 {
		q.WriteString(`
UNION ALL SELECT customer, kind, lot, balance_fen, expires_at FROM ledger_balances WHERE customer IN (` + placeholders(len(cargs)) + `)`)
		args = append(args, cargs...)
	}
	rows, err := s.writeRows(ctx, q.String(), args...)
	if err != nil {
		return nil, nil, s.dbErr(err, "record run debits")
	}
	for rows.Next() {
		var c, kind, lot string
		var fen int64
		var expires *time.Time
		if err := rows.Scan(&c, &kind, &lot, &fen, nullTimeCol{&expires}); err != nil {
			rows.Close()
			return nil, nil, s.dbErr(err, "record run debits")
		}
		switch {
		case c == "" && lot == "key":
			used[kind] = true
		case c == "":
			moved[kind] = true
		case bals[c] != nil:
			addBalance(bals[c], kind, lot, fen, expires)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, nil, s.dbErr(err, "record run debits")
	}
	for _, b := range bals {
		sortLots(b.Lots)
	}
	if len(used) == 0 {
		return bals, moved, nil
	}
	if err := s.answerUsedKeys(ctx, items, res, used); err != nil {
		return nil, nil, err
	}
	var dups []*debitItem
	for _, it := range items {
		if res[it.k] == nil && it.dup {
			dups = append(dups, it)
		}
	}
	if len(dups) == 0 {
		return bals, moved, nil
	}
	again, err := s.moveRuns(ctx, dups, res)
	if err != nil {
		return nil, nil, err
	}
	for id := range again {
		moved[id] = true
	}
	return bals, moved, nil
}

// moveRuns moves the runs of the items still standing (res nil) that are
// where the caller saw them, in one conditional UPDATE … RETURNING, and
// answers which moved.
func (s *Store) moveRuns(ctx context.Context, items []*debitItem, res []error) (map[string]bool, error) {
	var q strings.Builder
	var args []any
	n := 0
	q.WriteString(`WITH v (id, prev, debited, settled) AS (VALUES `)
	for _, it := range items {
		if res[it.k] != nil {
			continue
		}
		if n > 0 {
			q.WriteString(", ")
		}
		n++
		q.WriteString("(" + s.param("TEXT") + ", " + s.param("BIGINT") + ", " + s.param("BIGINT") + ", " + s.param("BOOLEAN") + ")")
		args = append(args, it.d.RunID, it.d.PrevFen, it.debited(), it.d.Settle)
	}
	moved := map[string]bool{}
	if n == 0 {
		return moved, nil
	}
	q.WriteString(`) UPDATE usage_runs SET debited_fen = v.debited, settled = v.settled FROM v
WHERE usage_runs.id = v.id AND usage_runs.debited_fen = v.prev AND NOT usage_runs.settled RETURNING usage_runs.id`)
	rows, err := s.writeRows(ctx, q.String(), args...)
	if err != nil {
		return nil, s.dbErr(err, "record run debits")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.dbErr(err, "record run debits")
		}
		moved[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "record run debits")
	}
	return moved, nil
}

// param is a placeholder, cast to typ where the dialect needs it to type a
// VALUES list (PostgreSQL).
func (s *Store) param(typ string) string {
	if s.d.CastValues {
		return "CAST(? AS " + typ + ")"
	}
	return "?"
}

// lockCustomers locks the accounts (PostgreSQL: FOR NO KEY UPDATE, in id
// order; SQLite's one writer serialises already) and answers which exist.
func (s *Store) lockCustomers(ctx context.Context, ids []string) (map[string]bool, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.writeRows(ctx, `SELECT id FROM accounts WHERE id IN (`+placeholders(len(ids))+`) ORDER BY id`+s.rowLock(), args...)
	if err != nil {
		return nil, s.dbErr(err, "lock accounts")
	}
	defer rows.Close()
	found := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.dbErr(err, "lock accounts")
		}
		found[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "lock accounts")
	}
	return found, nil
}

// balancesAndKeys reads the customers' kept balances and which of the
// items' keys were used, in one query (under the customers' locks).
func (s *Store) balancesAndKeys(ctx context.Context, customers map[string]bool, items []*debitItem) (map[string]*gpurent.LedgerBalances, map[string]bool, error) {
	bals := make(map[string]*gpurent.LedgerBalances, len(customers))
	var cargs, kargs []any
	for c := range customers {
		bals[c] = &gpurent.LedgerBalances{Customer: c}
		cargs = append(cargs, c)
	}
	for _, it := range items {
		if it.d.Tx != nil {
			kargs = append(kargs, it.req.Key)
		}
	}
	used := map[string]bool{}
	if len(cargs) == 0 {
		return bals, used, nil
	}
	rows, err := s.query(ctx, `SELECT customer, kind, lot, balance_fen, expires_at FROM ledger_balances WHERE customer IN (`+
		placeholders(len(cargs))+`) UNION ALL SELECT '', key, '', seq, NULL FROM ledger_tx WHERE key IN (`+placeholders(len(kargs))+`)`,
		append(cargs, kargs...)...)
	if err != nil {
		return nil, nil, s.dbErr(err, "read ledger balances")
	}
	defer rows.Close()
	for rows.Next() {
		var c, kind, lot string
		var fen int64
		var expires *time.Time
		if err := rows.Scan(&c, &kind, &lot, &fen, nullTimeCol{&expires}); err != nil {
			return nil, nil, s.dbErr(err, "read ledger balances")
		}
		b := bals[c]
		switch {
		case c == "":
			used[kind] = true // the key
		case b != nil:
			addBalance(b, kind, lot, fen, expires)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.dbErr(err, "read ledger balances")
	}
	for _, b := range bals {
		sortLots(b.Lots)
	}
	return bals, used, nil
}

// balanceMove is the net of a batch's postings into one customer account.
type balanceMove struct {
	customer, kind, lot string
	fen                 int64
	expires             any
}

// balanceMoves nets the posts' customer postings per account, in a fixed
// order; a lot keeps the expiry of the grant that made it.
func (s *Store) balanceMoves(posts []*debitItem, bals map[string]*gpurent.LedgerBalances) []balanceMove {
	var out []balanceMove
	at := map[[3]string]int{}
	for _, it := range posts {
		for _, p := range it.in.Postings {
			if p.Customer == "" {
				continue
			}
			k := [3]string{p.Customer, p.Kind, p.Lot}
			i, ok := at[k]
			if !ok {
				m := balanceMove{customer: p.Customer, kind: p.Kind, lot: p.Lot}
				if p.Lot != "" {
					for _, l := range bals[p.Customer].Lots {
						if l.ID == p.Lot {
							m.expires = s.ts(l.ExpiresAt)
						}
					}
				}
				i = len(out)
				at[k] = i
				out = append(out, m)
			}
			out[i].fen += p.AmountFen
		}
	}
	return out
}

// appendDebits appends the planned debits, their postings and the balance
// moves: one statement on PostgreSQL, three elsewhere. A key that lost to a
// racing insert fails the whole batch (the runs moved already).
func (s *Store) appendDebits(ctx context.Context, posts []*debitItem, bals map[string]*gpurent.LedgerBalances) error {
	pg := s.d.ModifyingCTEs
	var q strings.Builder
	var args []any
	if pg {
		q.WriteString(`WITH t AS (`)
	}
	q.WriteString(`INSERT INTO ledger_tx (key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at) VALUES `)
	for i, it := range posts {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(" + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TIMESTAMPTZ") + ", " +
			s.param("BIGINT") + ", " + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TIMESTAMPTZ") + ", " +
			s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TIMESTAMPTZ") + ")")
		in := &it.in
		args = append(args, in.Key, in.Op, in.Customer, s.ts(in.At), in.AmountFen, in.Charge, in.Credit, nil, in.Lot,
			in.Actor, in.Note, s.ts(in.CreatedAt))
	}
	q.WriteString(` ON CONFLICT (key) DO NOTHING RETURNING seq, key`)
	// postings joins each posting to its transaction: by key on PostgreSQL
	// (the seqs come from the same statement), by seq elsewhere.
	postings := func() {
		q.WriteString(`INSERT INTO ledger_posting (tx_seq, idx, customer, kind, lot, amount_fen) `)
		if pg {
			q.WriteString(`SELECT t.seq, v.idx, v.customer, v.kind, v.lot, v.amount_fen FROM t JOIN (`)
		}
		q.WriteString(`VALUES `)
		first := true
		for _, it := range posts {
			for i, p := range it.in.Postings {
				if !first {
					q.WriteString(", ")
				}
				first = false
				if pg {
					q.WriteString("(" + s.param("TEXT") + ", ")
					args = append(args, it.in.Key)
				} else {
					q.WriteString("(?, ")
					args = append(args, it.in.Seq)
				}
				q.WriteString(s.param("INTEGER") + ", " + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TEXT") + ", " +
					s.param("BIGINT") + ")")
				args = append(args, i, p.Customer, p.Kind, p.Lot, p.AmountFen)
			}
		}
		if pg {
			q.WriteString(`) AS v (key, idx, customer, kind, lot, amount_fen) ON v.key = t.key`)
		}
	}
	moves := s.balanceMoves(posts, bals)
	nPostings := 0 // a debit of an empty wallet has none
	for _, it := range posts {
		nPostings += len(it.in.Postings)
	}
	balances := func() {
		q.WriteString(`INSERT INTO ledger_balances (customer, kind, lot, balance_fen, expires_at) VALUES `)
		for i, m := range moves {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("TEXT") + ", " + s.param("BIGINT") + ", " +
				s.param("TIMESTAMPTZ") + ")")
			args = append(args, m.customer, m.kind, m.lot, m.fen, m.expires)
		}
		q.WriteString(` ON CONFLICT (customer, kind, lot) DO UPDATE SET balance_fen = ledger_balances.balance_fen + excluded.balance_fen`)
	}
	seqs := make(map[string]int64, len(posts))
	readSeqs := func(rows *sql.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var key string
			if err := rows.Scan(&seq, &key); err != nil {
				return err
			}
			seqs[key] = seq
		}
		return rows.Err()
	}
	lost := func() error {
		for _, it := range posts {
			seq, ok := seqs[it.in.Key]
			if !ok {
				return gpurent.Errorf(gpurent.CodeConflict, "ledger key %q was used by a concurrent post: retry", it.in.Key)
			}
			it.in.Seq = seq
		}
		return nil
	}
	if pg {
		if nPostings > 0 {
			q.WriteString(`), p AS (`)
			postings()
		}
		if len(moves) > 0 {
			q.WriteString(`), b AS (`)
			balances()
		}
		q.WriteString(`) SELECT seq, key FROM t`)
		rows, err := s.writeRows(ctx, q.String(), args...)
		if err != nil {
			return s.dbErr(err, "append ledger transactions")
		}
		if err := readSeqs(rows); err != nil {
			return s.dbErr(err, "append ledger transactions")
		}
		return lost()
	}
	rows, err := s.writeRows(ctx, q.String(), args...)
	if err != nil {
		return s.dbErr(err, "append ledger transactions")
	}
	if err := readSeqs(rows); err != nil {
		return s.dbErr(err, "append ledger transactions")
	}
	if err := lost(); err != nil {
		return err
	}
	if nPostings > 0 {
		q.Reset()
		args = args[:0]
		postings()
		if _, err := s.exec(ctx, q.String(), args...); err != nil {
			return s.dbErr(err, "insert ledger postings")
		}
	}
	if len(moves) == 0 {
		return nil
	}
	q.Reset()
	args = args[:0]
	balances()
	if _, err := s.exec(ctx, q.String(), args...); err != nil {
		return s.dbErr(err, "move ledger balances")
	}
	return nil
}

// addBalance puts one kept balance row into b: cash, receivable, or a
// credit lot with its expiry (empty lots are left out).
func addBalance(b *gpurent.LedgerBalances, kind, lot string, fen int64, expires *time.Time) {
	switch {
	case kind == string(ledger.KindCash):
		b.CashFen = fen
	case kind == string(ledger.KindReceivable):
		b.ReceivableFen = fen
	case fen != 0:
		l := gpurent.LedgerLot{ID: lot, Kind: kind, BalanceFen: fen}
		if expires != nil {
			l.ExpiresAt = *expires
		}
		b.Lots = append(b.Lots, l)
	}
}

// batch runs fn atomically: inside a PostgreSQL transaction each of its
// statements is atomic by itself and a failed one aborts the transaction,
// so no savepoint is needed; elsewhere it gets its own (sub)transaction.
func (s *Store) batch(ctx context.Context, fn func(st *Store) error) error {
	if s.tx != nil && s.d.StatementAtomicInTx {
		return fn(s)
	}
	return s.atomic(ctx, fn)
}
