-- Conversions of an instance between billing plans. An applied change set
-- instances.plan from its effective time; a pending one waits for the end
-- of a paid package period. At most one pending change per instance.
CREATE TABLE plan_changes (
    id           TEXT NOT NULL PRIMARY KEY,
    instance_id  TEXT NOT NULL REFERENCES instances (id),
    from_plan    TEXT NOT NULL,
    to_plan      TEXT NOT NULL,
    effective_at TEXT NOT NULL,
    state        TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX plan_changes_instance ON plan_changes (instance_id, effective_at);
CREATE UNIQUE INDEX plan_changes_one_pending ON plan_changes (instance_id) WHERE state = 'pending';
CREATE INDEX plan_changes_due ON plan_changes (effective_at) WHERE state = 'pending';
