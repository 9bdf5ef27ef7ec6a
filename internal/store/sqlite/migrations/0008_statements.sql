-- Final monthly statements: once stored, never changed.
CREATE TABLE statements (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    month        TEXT NOT NULL, -- 2026-11
    total_fen    INTEGER NOT NULL,
    lines        TEXT NOT NULL, -- JSON, as shown
    finalized_at TEXT NOT NULL,
    PRIMARY KEY (account_id, month)
) STRICT;
