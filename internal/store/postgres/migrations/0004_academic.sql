-- Academic verification: applications, their audit trail, and the end of
-- an account's verified academic status.
ALTER TABLE accounts ADD COLUMN academic_until TIMESTAMPTZ;

CREATE TABLE academic_applications (
    id             TEXT NOT NULL PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    method         TEXT NOT NULL CHECK (method IN ('email_domain', 'proof')),
    institution    TEXT NOT NULL,
    email          TEXT NOT NULL,
    proof          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected')),
    decided_by     TEXT NOT NULL,
    decided_at     TIMESTAMPTZ,
    reason         TEXT NOT NULL,
    verified_until TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX academic_applications_account ON academic_applications (account_id, created_at);
CREATE INDEX academic_applications_state ON academic_applications (state, created_at);
-- One pending application per account.
CREATE UNIQUE INDEX academic_applications_one_pending ON academic_applications (account_id)
    WHERE state = 'pending';

CREATE TABLE academic_audit (
    seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    application_id TEXT NOT NULL REFERENCES academic_applications (id),
    at             TIMESTAMPTZ NOT NULL,
    actor          TEXT NOT NULL,
    action         TEXT NOT NULL,
    note           TEXT NOT NULL
);
CREATE INDEX academic_audit_application ON academic_audit (application_id, seq);
