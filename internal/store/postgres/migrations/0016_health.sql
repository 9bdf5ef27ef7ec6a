-- GPU health and incidents (issue #6): the health events agents report,
-- why a GPU has its health, each instance's failover choice, and the
-- incidents the health rules open and close with their timelines.

-- '' reads as auto: the service decides what an unset choice means.
ALTER TABLE instances ADD COLUMN failover TEXT NOT NULL DEFAULT '';
-- Why the GPU has its health ("Xid 79 at ...", "operator: fan noise");
-- '' for a healthy GPU, cleared when its health changes another way.
ALTER TABLE gpus ADD COLUMN health_reason TEXT NOT NULL DEFAULT '';

-- Health events as agents reported them, keyed by the agent's id so a
-- resent report stores nothing twice.
CREATE TABLE gpu_events (
    seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    id      TEXT NOT NULL UNIQUE,
    host_id TEXT NOT NULL REFERENCES hosts (id),
    gpu_id  TEXT NOT NULL, -- '' for a host-wide event
    at      TIMESTAMPTZ NOT NULL,
    kind    TEXT NOT NULL,
    xid     BIGINT NOT NULL,
    detail  TEXT NOT NULL
);
CREATE INDEX gpu_events_gpu ON gpu_events (gpu_id, at, seq);
CREATE INDEX gpu_events_host ON gpu_events (host_id, at, seq);

-- One fault as it touched one instance (or an idle GPU or host). ended_at
-- is NULL exactly while the incident is open.
CREATE TABLE incidents (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    id          TEXT NOT NULL UNIQUE,
    host_id     TEXT NOT NULL REFERENCES hosts (id),
    gpu_id      TEXT NOT NULL, -- '' for a host-wide incident
    instance_id TEXT NOT NULL, -- '' when no instance was touched
    account_id  TEXT NOT NULL, -- '' without an instance
    class       TEXT NOT NULL,
    attribution TEXT NOT NULL,
    cause       TEXT NOT NULL,
    state       TEXT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,
    credit_fen  BIGINT NOT NULL,
    credit_key  TEXT NOT NULL, -- the ledger key of the credit, '' before
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX incidents_instance ON incidents (instance_id, started_at, seq) WHERE instance_id <> '';
CREATE INDEX incidents_account ON incidents (account_id, started_at, seq) WHERE account_id <> '';
CREATE INDEX incidents_host ON incidents (host_id, started_at, seq);
CREATE INDEX incidents_gpu ON incidents (gpu_id, started_at, seq) WHERE gpu_id <> '';
-- The open ones, read by every health pass.
CREATE INDEX incidents_open ON incidents (started_at, seq) WHERE ended_at IS NULL;

-- An incident's timeline, append-only.
CREATE TABLE incident_entries (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    at          TIMESTAMPTZ NOT NULL,
    kind        TEXT NOT NULL,
    message     TEXT NOT NULL
);
CREATE INDEX incident_entries_incident ON incident_entries (incident_id, at, seq);
