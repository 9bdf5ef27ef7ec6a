-- Metering: the run events agents report (kept forever under their id, so
-- a retry is recognised) and the runs they describe.
CREATE TABLE usage_events (
    id            TEXT NOT NULL PRIMARY KEY,
    host_id       TEXT NOT NULL REFERENCES hosts (id),
    kind          TEXT NOT NULL CHECK (kind IN ('run_started', 'run_ended')),
    instance_id   TEXT NOT NULL,
    allocation_id TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    payload_hash  TEXT NOT NULL,
    received_at   TEXT NOT NULL
) STRICT;

CREATE TABLE usage_runs (
    id            TEXT NOT NULL PRIMARY KEY,
    instance_id   TEXT NOT NULL REFERENCES instances (id),
    allocation_id TEXT NOT NULL REFERENCES allocations (id),
    host_id       TEXT NOT NULL REFERENCES hosts (id),
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    type_id       TEXT NOT NULL,
    gpu_count     INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    end_reason    TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    debited_fen   INTEGER NOT NULL DEFAULT 0, -- posted to the ledger so far
    settled       INTEGER NOT NULL DEFAULT 0 -- ended and fully debited
) STRICT;
CREATE INDEX usage_runs_instance ON usage_runs (instance_id, started_at);
CREATE INDEX usage_runs_open ON usage_runs (host_id) WHERE ended_at IS NULL;
CREATE INDEX usage_runs_unsettled ON usage_runs (started_at) WHERE NOT settled;
