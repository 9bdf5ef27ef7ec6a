package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
)

// The ledger is persisted the way internal/ledger's package doc describes:
// ledger_tx holds each transaction's request (one row, key unique) and
// ledger_posting its postings; balances are SUMs over the postings, read
// inside the write transaction that posts.

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
// transaction ends: PostgreSQL's FOR UPDATE. SQLite needs none: its write
// transactions begin IMMEDIATE on the one writer connection, so they never
// overlap.
func (s *Store) rowLock() string {
	if s.d.Name == "postgres" {
		return " FOR UPDATE"
	}
	return ""
}

// PostLedger performs one ledger operation in one database transaction (see
// gpurent.Queries). The duplicate check is a lookup under the customer's
// lock, backed by the unique key: an insert that loses to a racing writer
// (another customer using the same key) inserts nothing and is answered
// from the row that won.
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
	err := s.atomic(ctx, func(st *Store) error {
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
		orig, err := st.LedgerTxByKey(ctx, req.Key)
		if err == nil {
			return answer(orig)
		}
		if !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return err
		}
		if err := req.Validate(); err != nil {
			return err
		}
		bal, err := st.LedgerBalances(ctx, req.Customer)
		if err != nil {
			return err
		}
		lots := make([]ledger.Lot, len(bal.Lots))
		for i, l := range bal.Lots {
			lots[i] = ledger.Lot{ID: l.ID, Kind: ledger.Kind(l.Kind), ExpiresAt: l.ExpiresAt, BalanceFen: l.BalanceFen}
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
		var expires any
		if !in.ExpiresAt.IsZero() {
			expires = st.ts(in.ExpiresAt)
		}
		var seq int64
		err = st.writeRow(ctx, `INSERT INTO ledger_tx (key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING seq`,
			in.Key, in.Op, in.Customer, st.ts(in.At), in.AmountFen, in.Charge, in.Credit, expires, in.Lot,
			in.Actor, in.Note, st.ts(in.CreatedAt)).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			orig, err := st.LedgerTxByKey(ctx, req.Key)
			if err != nil {
				return err
			}
			return answer(orig)
		}
		if err != nil {
			return st.dbErr(err, "insert ledger transaction")
		}
		in.Seq = seq
		in.Postings = make([]gpurent.LedgerPosting, len(planned.Postings))
		for i, p := range planned.Postings {
			in.Postings[i] = gpurent.LedgerPosting{Customer: p.Account.Customer, Kind: string(p.Account.Kind),
				Lot: p.Account.Lot, AmountFen: p.AmountFen}
			if _, err := st.exec(ctx, `INSERT INTO ledger_posting (tx_seq, idx, customer, kind, lot, amount_fen) VALUES (?, ?, ?, ?, ?, ?)`,
				seq, i, p.Account.Customer, string(p.Account.Kind), p.Account.Lot, p.AmountFen); err != nil {
				return st.dbErr(err, "insert ledger posting")
			}
		}
		out = in
		return nil
	})
	if err != nil {
		return false, err
	}
	*tx = out
	return dup, nil
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

// LedgerBalances sums the customer's postings per account; a lot's expiry
// comes from the grant that made it.
func (s *Store) LedgerBalances(ctx context.Context, customer string) (*gpurent.LedgerBalances, error) {
	rows, err := s.query(ctx, `SELECT p.kind, p.lot, CAST(SUM(p.amount_fen) AS BIGINT), g.expires_at
FROM ledger_posting p LEFT JOIN ledger_tx g ON p.lot <> '' AND g.key = p.lot
WHERE p.customer = ? GROUP BY p.kind, p.lot, g.expires_at ORDER BY g.expires_at, p.lot`, customer)
	if err != nil {
		return nil, s.dbErr(err, "sum ledger postings")
	}
	defer rows.Close()
	b := &gpurent.LedgerBalances{Customer: customer}
	for rows.Next() {
		var kind, lot string
		var sum int64
		var expires *time.Time
		if err := rows.Scan(&kind, &lot, &sum, nullTimeCol{&expires}); err != nil {
			return nil, s.dbErr(err, "sum ledger postings")
		}
		switch {
		case kind == string(ledger.KindCash):
			b.CashFen = sum
		case kind == string(ledger.KindReceivable):
			b.ReceivableFen = sum
		case sum != 0:
			l := gpurent.LedgerLot{ID: lot, Kind: kind, BalanceFen: sum}
			if expires != nil {
				l.ExpiresAt = *expires
			}
			b.Lots = append(b.Lots, l)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "sum ledger postings")
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
