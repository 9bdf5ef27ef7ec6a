-- gpurent schema, SQLite. Times are TEXT in UTC, fixed width
-- (2006-01-02T15:04:05.000000Z), so text order is time order. Keep the
-- numbering identical to the PostgreSQL migrations.

CREATE TABLE accounts (
    id            TEXT NOT NULL PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE, -- stored lower-case
    name          TEXT NOT NULL,
    role          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    balance_fen   INTEGER NOT NULL,
    created_at    TEXT NOT NULL
) STRICT;

CREATE TABLE tokens (
    id         TEXT NOT NULL PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    expires_at TEXT
) STRICT;
CREATE INDEX tokens_account ON tokens (account_id);

CREATE TABLE gpu_types (
    id                 TEXT NOT NULL PRIMARY KEY,
    name               TEXT NOT NULL,
    memory_gb          INTEGER NOT NULL,
    mem_bandwidth_gbs  INTEGER NOT NULL,
    fp32_tflops        REAL NOT NULL,
    bf16_tflops        REAL NOT NULL,
    fp8_tflops         REAL NOT NULL,
    nvlink_gbs         INTEGER NOT NULL,
    peer_to_peer       INTEGER NOT NULL,
    tdp_watts          INTEGER NOT NULL,
    pcie_gen           INTEGER NOT NULL,
    cpu_milli_per_gpu  INTEGER NOT NULL,
    memory_mib_per_gpu INTEGER NOT NULL,
    price_hourly_fen   INTEGER NOT NULL,
    price_daily_fen    INTEGER NOT NULL,
    price_weekly_fen   INTEGER NOT NULL,
    price_monthly_fen  INTEGER NOT NULL
) STRICT;

CREATE TABLE zones (
    id        TEXT NOT NULL PRIMARY KEY,
    name      TEXT NOT NULL,
    region    TEXT NOT NULL,
    probe_url TEXT NOT NULL
) STRICT;

-- zone_id and gpus.type_id are soft references to the catalog: an agent that
-- reports an unknown SKU must still be able to report its inventory.
CREATE TABLE hosts (
    id               TEXT NOT NULL PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    zone_id          TEXT NOT NULL,
    state            TEXT NOT NULL,
    cpu_milli        INTEGER NOT NULL,
    memory_mib       INTEGER NOT NULL,
    disk_gib         INTEGER NOT NULL,
    runtime          TEXT NOT NULL,
    agent_version    TEXT NOT NULL,
    agent_token_hash TEXT NOT NULL,
    generation       INTEGER NOT NULL,
    last_seen_at     TEXT,
    registered_at    TEXT NOT NULL
) STRICT;
CREATE INDEX hosts_agent_token_hash ON hosts (agent_token_hash);

CREATE TABLE gpus (
    id         TEXT NOT NULL PRIMARY KEY, -- device UUID
    host_id    TEXT NOT NULL REFERENCES hosts (id),
    gpu_index  INTEGER NOT NULL,
    type_id    TEXT NOT NULL,
    memory_mib INTEGER NOT NULL,
    health     TEXT NOT NULL,
    topo_group TEXT NOT NULL,
    numa_node  INTEGER NOT NULL
) STRICT;
CREATE INDEX gpus_host ON gpus (host_id, gpu_index);

CREATE TABLE instances (
    id              TEXT NOT NULL PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    name            TEXT NOT NULL,
    image           TEXT NOT NULL,
    type_id         TEXT NOT NULL,
    gpu_count       INTEGER NOT NULL,
    zone_id         TEXT NOT NULL,
    host_id         TEXT NOT NULL, -- '' before the first placement
    state           TEXT NOT NULL,
    state_reason    TEXT NOT NULL,
    plan            TEXT NOT NULL,
    cpu_milli       INTEGER NOT NULL,
    memory_mib      INTEGER NOT NULL,
    volume_id       TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX instances_idempotency ON instances (account_id, idempotency_key)
    WHERE idempotency_key <> '';
CREATE INDEX instances_account ON instances (account_id, created_at, id);
CREATE INDEX instances_host ON instances (host_id);
CREATE INDEX instances_created ON instances (created_at, id);

CREATE TABLE volumes (
    id          TEXT NOT NULL PRIMARY KEY,
    instance_id TEXT NOT NULL,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    host_id     TEXT NOT NULL,
    size_gib    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    deleted_at  TEXT
) STRICT;
CREATE INDEX volumes_instance ON volumes (instance_id);

CREATE TABLE allocations (
    seq          INTEGER PRIMARY KEY, -- insertion order
    id           TEXT NOT NULL UNIQUE,
    instance_id  TEXT NOT NULL REFERENCES instances (id),
    host_id      TEXT NOT NULL REFERENCES hosts (id),
    started_at   TEXT NOT NULL,
    ended_at     TEXT,
    start_reason TEXT NOT NULL,
    end_reason   TEXT NOT NULL
) STRICT;
CREATE INDEX allocations_instance ON allocations (instance_id, started_at);
CREATE INDEX allocations_open ON allocations (instance_id) WHERE ended_at IS NULL;

-- The key rule: a GPU is held by at most one open allocation. The database
-- decides, through this partial unique index, never a prior read.
CREATE TABLE allocation_gpus (
    allocation_id TEXT NOT NULL REFERENCES allocations (id),
    gpu_id        TEXT NOT NULL REFERENCES gpus (id),
    released_at   TEXT,
    PRIMARY KEY (allocation_id, gpu_id)
) STRICT;
CREATE UNIQUE INDEX allocation_gpus_open ON allocation_gpus (gpu_id) WHERE released_at IS NULL;

CREATE TABLE events (
    seq         INTEGER PRIMARY KEY, -- insertion order
    id          TEXT NOT NULL UNIQUE,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    message     TEXT NOT NULL
) STRICT;
CREATE INDEX events_instance ON events (instance_id, at, seq);

CREATE TABLE idempotency_records (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    key          TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (account_id, key)
) STRICT;
