-- Academic verification: applications, their audit trail, and the end of
-- an account's verified academic status.
ALTER TABLE accounts ADD COLUMN academic_until TEXT;

CREATE TABLE academic_applications (
    id             TEXT NOT NULL PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    method         TEXT NOT NULL CHECK (method IN ('email_domain', 'proof')),
    institution    TEXT NOT NULL,
    email          TEXT NOT NULL,
    proof          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected')),
    decided_by     TEXT NOT NULL,
    decided_at     TEXT,
    reason         TEXT NOT NULL,
    verified_until TEXT,
    created_at     TEXT NOT NULL
) STRICT;
CREATE INDEX academic_applications_account ON academic_applications (account_id, created_at);
CREATE INDEX academic_applications_state ON academic_applications (state, created_at);
-- One pending application per account.
CREATE UNIQUE INDEX academic_applications_one_pending ON academic_applications (account_id)
    WHERE state = 'pending';

CREATE TABLE academic_audit (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    application_id TEXT NOT NULL REFERENCES academic_applications (id),
    at             TEXT NOT NULL,
    actor          TEXT NOT NULL,
    action         TEXT NOT NULL,
    note           TEXT NOT NULL
) STRICT;
CREATE INDEX academic_audit_application ON academic_audit (application_id, seq);
