-- Each customer account's balance, kept in the transaction that posts to it,
-- so that a post reads one row per account instead of summing the
-- customer's postings. The postings stay the truth: every balance here
-- equals the sum of its account's postings (the conformance suite checks
-- it after a random workload), and this backfill rebuilds them from the
-- log. Platform accounts (customer '') are not kept: every post moves one,
-- and one row updated by every post would serialise all customers; their
-- sums are read only by reports.
CREATE TABLE ledger_balances (
    customer    TEXT NOT NULL REFERENCES accounts (id),
    kind        TEXT NOT NULL,
    lot         TEXT NOT NULL,   -- '' except for credit lots (the grant's key)
    balance_fen BIGINT NOT NULL,
    expires_at  TIMESTAMPTZ,     -- credit lots: the expiry of the grant that made them
    PRIMARY KEY (customer, kind, lot)
);

INSERT INTO ledger_balances (customer, kind, lot, balance_fen, expires_at)
SELECT p.customer, p.kind, p.lot, CAST(SUM(p.amount_fen) AS BIGINT), g.expires_at
FROM ledger_posting p LEFT JOIN ledger_tx g ON p.lot <> '' AND g.key = p.lot
WHERE p.customer <> ''
GROUP BY p.customer, p.kind, p.lot, g.expires_at;
