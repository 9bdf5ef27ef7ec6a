-- Reaching instances: where the SSH gateway finds each host's agent, the
-- accounts' SSH keys (a key's fingerprint names one account), and the audit
-- log of access sessions.
ALTER TABLE hosts ADD COLUMN access_addr TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN access_host_key TEXT NOT NULL DEFAULT '';

CREATE TABLE ssh_keys (
    id           TEXT NOT NULL PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    name         TEXT NOT NULL,
    public_key   TEXT NOT NULL,
    fingerprint  TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ
);
CREATE INDEX ssh_keys_account ON ssh_keys (account_id, created_at);

CREATE TABLE access_sessions (
    id          TEXT NOT NULL PRIMARY KEY,
    account_id  TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    kind        TEXT NOT NULL,
    detail      TEXT NOT NULL,
    client_addr TEXT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,
    exit_status BIGINT,
    bytes_in    BIGINT NOT NULL DEFAULT 0,
    bytes_out   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX access_sessions_account ON access_sessions (account_id, started_at);
CREATE INDEX access_sessions_instance ON access_sessions (instance_id, started_at);
