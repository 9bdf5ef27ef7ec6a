-- gpurent schema, PostgreSQL. Times are timestamptz (microsecond precision).
-- Keep the numbering identical to the SQLite migrations.

CREATE TABLE accounts (
    id            TEXT NOT NULL PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE, -- stored lower-case
    name          TEXT NOT NULL,
    role          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    balance_fen   BIGINT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE tokens (
    id         TEXT NOT NULL PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ
);
CREATE INDEX tokens_account ON tokens (account_id);

CREATE TABLE gpu_types (
    id                 TEXT NOT NULL PRIMARY KEY,
    name               TEXT NOT NULL,
    memory_gb          BIGINT NOT NULL,
    mem_bandwidth_gbs  BIGINT NOT NULL,
    fp32_tflops        DOUBLE PRECISION NOT NULL,
    bf16_tflops        DOUBLE PRECISION NOT NULL,
    fp8_tflops         DOUBLE PRECISION NOT NULL,
    nvlink_gbs         BIGINT NOT NULL,
    peer_to_peer       BOOLEAN NOT NULL,
    tdp_watts          BIGINT NOT NULL,
    pcie_gen           BIGINT NOT NULL,
    cpu_milli_per_gpu  BIGINT NOT NULL,
    memory_mib_per_gpu BIGINT NOT NULL,
    price_hourly_fen   BIGINT NOT NULL,
    price_daily_fen    BIGINT NOT NULL,
    price_weekly_fen   BIGINT NOT NULL,
    price_monthly_fen  BIGINT NOT NULL
);

CREATE TABLE zones (
    id        TEXT NOT NULL PRIMARY KEY,
    name      TEXT NOT NULL,
    region    TEXT NOT NULL,
    probe_url TEXT NOT NULL
);

-- zone_id and gpus.type_id are soft references to the catalog: an agent that
-- reports an unknown SKU must still be able to report its inventory.
CREATE TABLE hosts (
    id               TEXT NOT NULL PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    zone_id          TEXT NOT NULL,
    state            TEXT NOT NULL,
    cpu_milli        BIGINT NOT NULL,
    memory_mib       BIGINT NOT NULL,
    disk_gib         BIGINT NOT NULL,
    runtime          TEXT NOT NULL,
    agent_version    TEXT NOT NULL,
    agent_token_hash TEXT NOT NULL,
    generation       BIGINT NOT NULL,
    last_seen_at     TIMESTAMPTZ,
    registered_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX hosts_agent_token_hash ON hosts (agent_token_hash);

CREATE TABLE gpus (
    id         TEXT NOT NULL PRIMARY KEY, -- device UUID
    host_id    TEXT NOT NULL REFERENCES hosts (id),
    gpu_index  BIGINT NOT NULL,
    type_id    TEXT NOT NULL,
    memory_mib BIGINT NOT NULL,
    health     TEXT NOT NULL,
    topo_group TEXT NOT NULL,
    numa_node  BIGINT NOT NULL
);
CREATE INDEX gpus_host ON gpus (host_id, gpu_index);

CREATE TABLE instances (
    id              TEXT NOT NULL PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    name            TEXT NOT NULL,
    image           TEXT NOT NULL,
    type_id         TEXT NOT NULL,
    gpu_count       BIGINT NOT NULL,
    zone_id         TEXT NOT NULL,
    host_id         TEXT NOT NULL, -- '' before the first placement
    state           TEXT NOT NULL,
    state_reason    TEXT NOT NULL,
    plan            TEXT NOT NULL,
    cpu_milli       BIGINT NOT NULL,
    memory_mib      BIGINT NOT NULL,
    volume_id       TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    version         BIGINT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
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
    size_gib    BIGINT NOT NULL,
    name        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    deleted_at  TIMESTAMPTZ
);
CREATE INDEX volumes_instance ON volumes (instance_id);

CREATE TABLE allocations (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    id           TEXT NOT NULL UNIQUE,
    instance_id  TEXT NOT NULL REFERENCES instances (id),
    host_id      TEXT NOT NULL REFERENCES hosts (id),
    started_at   TIMESTAMPTZ NOT NULL,
    ended_at     TIMESTAMPTZ,
    start_reason TEXT NOT NULL,
    end_reason   TEXT NOT NULL
);
CREATE INDEX allocations_instance ON allocations (instance_id, started_at);
CREATE INDEX allocations_open ON allocations (instance_id) WHERE ended_at IS NULL;

-- The key rule: a GPU is held by at most one open allocation. The database
-- decides, through this partial unique index, never a prior read.
CREATE TABLE allocation_gpus (
    allocation_id TEXT NOT NULL REFERENCES allocations (id),
    gpu_id        TEXT NOT NULL REFERENCES gpus (id),
    released_at   TIMESTAMPTZ,
    PRIMARY KEY (allocation_id, gpu_id)
);
CREATE UNIQUE INDEX allocation_gpus_open ON allocation_gpus (gpu_id) WHERE released_at IS NULL;

CREATE TABLE events (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    id          TEXT NOT NULL UNIQUE,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    at          TIMESTAMPTZ NOT NULL,
    kind        TEXT NOT NULL,
    message     TEXT NOT NULL
);
CREATE INDEX events_instance ON events (instance_id, at, seq);

CREATE TABLE idempotency_records (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    key          TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       BIGINT NOT NULL,
    body         BYTEA NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, key)
);
