-- The wallet: an append-only double-entry ledger (transactions and their
-- postings; balances are sums), vouchers and their redemptions, and
-- payments from payment providers. accounts.balance_fen stays for
-- compatibility but is no longer read: the ledger is the truth.

-- One row per ledger transaction: the request that made it. key is the
-- idempotency key; its uniqueness decides duplicates.
CREATE TABLE ledger_tx (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        TEXT NOT NULL UNIQUE,
    op         TEXT NOT NULL CHECK (op IN ('topup', 'grant', 'debit', 'expire', 'settle')),
    customer   TEXT NOT NULL REFERENCES accounts (id),
    at         TIMESTAMPTZ NOT NULL,
    amount_fen BIGINT NOT NULL,
    charge     TEXT NOT NULL,
    credit     TEXT NOT NULL,
    expires_at TIMESTAMPTZ,        -- grants: the expiry of the lot they make
    lot        TEXT NOT NULL,
    actor      TEXT NOT NULL,
    note       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX ledger_tx_customer ON ledger_tx (customer, seq);

-- The postings of each transaction, idx keeping their planned order.
-- customer is '' for platform accounts, lot '' except for credit lots (the
-- key of the grant that made the lot). A transaction posts to an account
-- at most once.
CREATE TABLE ledger_posting (
    tx_seq     BIGINT NOT NULL REFERENCES ledger_tx (seq),
    idx        BIGINT NOT NULL,
    customer   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    lot        TEXT NOT NULL,
    amount_fen BIGINT NOT NULL CHECK (amount_fen <> 0),
    PRIMARY KEY (tx_seq, idx),
    UNIQUE (tx_seq, customer, kind, lot)
);
CREATE INDEX ledger_posting_account ON ledger_posting (customer, kind, lot);

CREATE TABLE vouchers (
    id              TEXT NOT NULL PRIMARY KEY,
    code            TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL CHECK (kind IN ('cash', 'promo')),
    amount_fen      BIGINT NOT NULL CHECK (amount_fen > 0),
    expires_at      TIMESTAMPTZ NOT NULL,
    max_redemptions BIGINT NOT NULL CHECK (max_redemptions > 0),
    redemptions     BIGINT NOT NULL CHECK (redemptions >= 0 AND redemptions <= max_redemptions),
    created_by      TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);

-- Who redeemed which voucher, when: once per account.
CREATE TABLE voucher_redemptions (
    voucher_id  TEXT NOT NULL REFERENCES vouchers (id),
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    redeemed_at TIMESTAMPTZ NOT NULL,
    ledger_key  TEXT NOT NULL,
    PRIMARY KEY (voucher_id, account_id)
);
CREATE INDEX voucher_redemptions_account ON voucher_redemptions (account_id);

CREATE TABLE payments (
    id           TEXT NOT NULL PRIMARY KEY,
    provider     TEXT NOT NULL,
    payment_id   TEXT NOT NULL,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    amount_fen   BIGINT NOT NULL CHECK (amount_fen > 0),
    state        TEXT NOT NULL CHECK (state IN ('pending', 'confirmed', 'failed')),
    pay_url      TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    confirmed_at TIMESTAMPTZ,
    UNIQUE (provider, payment_id)
);
CREATE INDEX payments_account ON payments (account_id, created_at);
