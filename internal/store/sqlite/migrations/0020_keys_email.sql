-- Issue 14, domain findings.
--
-- SSH keys: one public key may be registered on several accounts (public
-- keys are public: a squatter who registers someone's key must not lock
-- its owner out). A key is unique per account; the gateway resolves the
-- login by the instance named in the user name and the key, and admits
-- only the instance owner's registration of it.
CREATE TABLE ssh_keys_new (
    id           TEXT NOT NULL PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    name         TEXT NOT NULL,
    public_key   TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    UNIQUE (account_id, fingerprint)
);
INSERT INTO ssh_keys_new SELECT id, account_id, name, public_key, fingerprint, created_at, last_used_at FROM ssh_keys;
DROP TABLE ssh_keys;
ALTER TABLE ssh_keys_new RENAME TO ssh_keys;
CREATE INDEX ssh_keys_account ON ssh_keys (account_id, created_at);
CREATE INDEX ssh_keys_fingerprint ON ssh_keys (fingerprint, created_at);

-- Verify: a customer's verify never delists, degrades or attributes by
-- itself; a FAIL it confirms flags the card for a run on the idle card
-- (after the rental ends), whose result alone decides.
CREATE TABLE idle_run_flags (
    gpu_id     TEXT NOT NULL PRIMARY KEY REFERENCES gpus (id),
    host_id    TEXT NOT NULL,
    job_id     TEXT NOT NULL, -- the verify job that flagged the card
    reason     TEXT NOT NULL,
    flagged_at TEXT NOT NULL
);
CREATE INDEX idle_run_flags_host ON idle_run_flags (host_id);

-- E-mail verification: the addresses an account proved it receives mail
-- at (a single-use, expiring link; the token is a tokens row of kind
-- email_verify). Academic applications by university e-mail count only
-- for a verified address.
CREATE TABLE email_verifications (
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    email       TEXT NOT NULL,
    verified_at TEXT NOT NULL,
    PRIMARY KEY (account_id, email)
);
