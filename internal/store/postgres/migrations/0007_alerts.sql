-- Runway alerts: where a customer wants them sent, the last level sent
-- (so each is sent once per crossing), and the account's event history.
ALTER TABLE accounts ADD COLUMN webhook_url TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN runway_alert TEXT NOT NULL DEFAULT '';

CREATE TABLE account_events (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    at         TIMESTAMPTZ NOT NULL,
    kind       TEXT NOT NULL,
    message    TEXT NOT NULL
);
CREATE INDEX account_events_account ON account_events (account_id, seq);
