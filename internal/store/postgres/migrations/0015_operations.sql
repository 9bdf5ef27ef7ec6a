-- Instance operations: upgrade, migrate, and a start moved to another host
-- or queued until GPUs free up. Each step is recorded before it is acted
-- on; finished_at stays NULL while the operation is active.
CREATE TABLE operations (
    seq                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    id                 TEXT NOT NULL UNIQUE,
    instance_id        TEXT NOT NULL REFERENCES instances (id),
    account_id         TEXT NOT NULL REFERENCES accounts (id),
    kind               TEXT NOT NULL,
    step               TEXT NOT NULL,
    from_allocation_id TEXT NOT NULL, -- '' for a stopped instance holding no GPUs
    from_host_id       TEXT NOT NULL,
    to_allocation_id   TEXT NOT NULL, -- '' while queued
    to_host_id         TEXT NOT NULL,
    to_type_id         TEXT NOT NULL,
    to_count           BIGINT NOT NULL,
    to_cpu_milli       BIGINT NOT NULL,
    to_memory_mib      BIGINT NOT NULL,
    to_zone_id         TEXT NOT NULL,
    was_running        BOOLEAN NOT NULL,
    token              TEXT NOT NULL,
    passes             BIGINT NOT NULL,
    bytes_moved        BIGINT NOT NULL,
    message            TEXT NOT NULL,
    idempotency_key    TEXT NOT NULL,
    request_hash       TEXT NOT NULL,
    step_deadline      TIMESTAMPTZ, -- NULL when the step has no deadline
    version            BIGINT NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    finished_at        TIMESTAMPTZ
);
-- At most one active operation per instance: the database decides.
CREATE UNIQUE INDEX operations_one_active ON operations (instance_id) WHERE finished_at IS NULL;
CREATE UNIQUE INDEX operations_idempotency ON operations (account_id, idempotency_key)
    WHERE idempotency_key <> '';
CREATE INDEX operations_instance ON operations (instance_id, created_at, seq);
-- Operations touching a host: (host, finished_at) seeks straight to the
-- active ones (finished_at IS NULL), read on every agent poll, and also
-- serves a host's whole history.
CREATE INDEX operations_from_host ON operations (from_host_id, finished_at);
CREATE INDEX operations_to_host ON operations (to_host_id, finished_at);
