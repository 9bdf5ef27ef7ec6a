// Package ledger is the double-entry ledger of the wallet: accounts,
// transactions of postings in int64 fen, the operations that make them, and
// the balances derived from them. It is pure: no I/O, no clock, no
// randomness, no floats. It imports only the standard library and the root
// package (for error codes).
//
// # Accounts
//
// Each customer has a cash account (top-ups, never below zero), a
// receivable account (arrears, never above zero, moved below zero only by
// storage charges) and one account per credit lot: promo or SLA credit,
// each with its own expiry, never below zero. The platform has revenue,
// breakage (credit that expired unspent), clearing (money in flight from the
// payment provider), and promo_issued and sla_issued, the funding side of
// credit grants (negative: credit given so far). An Account is (Customer,
// Kind, Lot); Lot is the key of the grant that created the lot.
//
// # Transactions
//
// A Tx is the Request that made it plus postings that sum to zero. Every
// request carries an idempotency key ("topup:<payment id>",
// "debit:<line id>:<seq>", "sla:<incident id>", "expire:<lot id>"). Posting
// a key again with the same content (every request field but At, see
// Request.SameContent) answers the original transaction; with different
// content it is a gpurent.CodeConflict error.
//
// The operations (Request.Op):
//
//   - OpTopUp, after the payment is confirmed: clearing → receivable
//     (arrears are settled first) → cash.
//   - OpGrant: promo_issued or sla_issued → a new lot with an expiry.
//   - OpDebit: a usage charge, burnt from SLA lots, then promo lots (each by
//     earliest expiry, then lot id; only lots live at the request's time),
//     then cash, into revenue. A compute charge never takes cash below
//     zero: what the wallet cannot cover is the transaction's ShortfallFen,
//     and the caller stops the instance. A storage charge puts what is left
//     into receivable.
//   - OpExpire: what is left of an expired lot → breakage.
//   - OpSettle: cash → receivable, when a customer holds both.
//
// Operations are pure functions of one customer's Wallet: Wallet.Plan
// returns the transaction a request makes, and the same wallet and request
// always give the same transaction, so the burn order is stable under
// replay. Wallet.Apply folds a transaction in and enforces the invariants.
// Ledger is the whole book in memory (log, key index, wallets, platform
// balances); Ledger.Post is key check + Plan + Apply, and Replay rebuilds
// every balance from the log.
//
// Views: Wallet.SpendableFen (the wallet total: cash + live credit),
// CreditFen, ArrearsFen, DueExpiries; Ledger.Balance, Balances and SumFen
// (always zero); BurnRate sums instance and storage rates exactly, and
// Runway turns a balance and a rate into whole seconds.
//
// # Persisting it
//
// A store keeps the log append-only and derives balances; it never updates
// a balance in place as the truth:
//
//	ledger_tx(seq, key UNIQUE, op, customer, at, amount_fen, charge,
//	          credit, expires_at, lot)            -- the Request, one row
//	ledger_posting(tx_seq, customer, kind, lot, amount_fen)
//
// To post a request, in one database transaction: lock the customer (a row
// lock on the account in PostgreSQL; SQLite has one writer), look the key
// up — if it exists, compare with Request.SameContent and answer the
// original or a conflict — else load the wallet (sums of postings per
// (kind, lot) for the customer, lot expiries from the grant rows, lots with
// a non-zero sum only) into NewWallet, Plan, and insert the tx row and its
// postings; the unique key backs up the lookup against a racing writer.
// Never claim the key in a separate step. A materialised balance table may
// be kept as a cache in the same transaction; Replay over the log must
// reproduce it to the fen. Transactions of one customer are applied in the
// order they committed (the lock makes seq order that order); those of
// different customers commute, since platform accounts have no bound.
//
// Times are kept in UTC at microsecond precision, the precision PostgreSQL
// stores, so that a request read back compares equal to the one posted.
package ledger
