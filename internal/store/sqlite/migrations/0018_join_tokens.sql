-- Per-host join tokens (issue #14): an operator makes a one-time token for
-- one host to join a zone (optionally under one name), or a reset issues
-- one to re-register an existing host. Only the secret's SHA-256 is kept.
-- used_at is set exactly once, by the registration that used the token.
CREATE TABLE join_tokens (
    id         TEXT NOT NULL PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    zone_id    TEXT NOT NULL REFERENCES zones (id),
    name       TEXT NOT NULL, -- '' admits any new host name
    host_id    TEXT NOT NULL, -- '' unless issued by a reset of that host
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    used_name  TEXT NOT NULL,
    revoked_at TEXT
) STRICT;
CREATE INDEX join_tokens_created ON join_tokens (created_at, id);
CREATE INDEX join_tokens_host ON join_tokens (host_id) WHERE host_id <> '';
