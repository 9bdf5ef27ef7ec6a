-- Compute transparency (issue #7): benchmark jobs and the GPUs they test,
-- the holds that take those GPUs out of placement while a job runs, the
-- jobs' raw records and per-probe summaries, each GPU's certification and
-- the operator's certification settings; and the share of the list price
-- allocations and their usage runs are billed at.

-- One run of the benchmark suite on one host's GPUs. ended_at is NULL
-- exactly while the job is open (queued or running).
CREATE TABLE bench_jobs (
    seq          INTEGER PRIMARY KEY, -- insertion order
    id           TEXT NOT NULL UNIQUE,
    host_id      TEXT NOT NULL REFERENCES hosts (id),
    gpu_type     TEXT NOT NULL,
    reason       TEXT NOT NULL,
    tier         TEXT NOT NULL,
    instance_id  TEXT NOT NULL, -- '' unless a verify job
    account_id   TEXT NOT NULL, -- '' unless a verify job
    requested_by TEXT NOT NULL, -- '' when the schedule started it
    state        TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'canceled')),
    error        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    started_at   TEXT,
    ended_at     TEXT,
    CHECK ((ended_at IS NULL) = (state IN ('queued', 'running')))
) STRICT;
CREATE INDEX bench_jobs_created ON bench_jobs (created_at, seq);
CREATE INDEX bench_jobs_host ON bench_jobs (host_id, created_at, seq);
CREATE INDEX bench_jobs_instance ON bench_jobs (instance_id, created_at, seq) WHERE instance_id <> '';
CREATE INDEX bench_jobs_account ON bench_jobs (account_id, created_at, seq) WHERE account_id <> '';
-- The open ones, read by every scheduling pass and agent poll.
CREATE INDEX bench_jobs_open ON bench_jobs (host_id, created_at, seq) WHERE ended_at IS NULL;

-- The GPUs each job tests (held or not).
CREATE TABLE bench_job_gpus (
    job_id TEXT NOT NULL REFERENCES bench_jobs (id),
    gpu_id TEXT NOT NULL REFERENCES gpus (id),
    PRIMARY KEY (job_id, gpu_id)
) STRICT;
CREATE INDEX bench_job_gpus_gpu ON bench_job_gpus (gpu_id, job_id);

-- A job that holds its GPUs (every reason but verify) takes them out of
-- placement until it ends. A GPU is held by at most one open job: the
-- database decides, through this partial unique index. (An open allocation
-- and an open hold on one GPU are kept apart by both writers locking the
-- GPU's row before they look at the other's table.)
CREATE TABLE bench_holds (
    job_id      TEXT NOT NULL REFERENCES bench_jobs (id),
    gpu_id      TEXT NOT NULL REFERENCES gpus (id),
    released_at TEXT,
    PRIMARY KEY (job_id, gpu_id)
) STRICT;
CREATE UNIQUE INDEX bench_holds_open ON bench_holds (gpu_id) WHERE released_at IS NULL;

-- A job's raw record lines (the suite's JSON lines), in the order given.
CREATE TABLE bench_records (
    job_id TEXT NOT NULL REFERENCES bench_jobs (id),
    seq    INTEGER NOT NULL,
    line   BLOB NOT NULL,
    PRIMARY KEY (job_id, seq)
) STRICT;

-- The statistics of one GPU (or GPU set) on one probe in one job, with
-- its verdict then.
CREATE TABLE bench_summaries (
    seq              INTEGER PRIMARY KEY, -- insertion order
    job_id           TEXT NOT NULL REFERENCES bench_jobs (id),
    gpu_key          TEXT NOT NULL,
    host_id          TEXT NOT NULL,
    gpu_type         TEXT NOT NULL,
    probe            TEXT NOT NULL,
    gpus             INTEGER NOT NULL,
    setup            TEXT NOT NULL,
    unit             TEXT NOT NULL,
    runs             INTEGER NOT NULL,
    failed           INTEGER NOT NULL,
    median           REAL NOT NULL,
    min_value        REAL NOT NULL,
    max_value        REAL NOT NULL,
    spread           REAL NOT NULL,
    mad              REAL NOT NULL,
    max_temp_c       REAL NOT NULL,
    min_sm_clock_mhz REAL NOT NULL,
    mean_power_w     REAL NOT NULL,
    throttle_reasons TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    provisional      INTEGER NOT NULL,
    fleet_median     REAL NOT NULL,
    fleet_ratio      REAL NOT NULL,
    spec_ratio       REAL NOT NULL,
    note             TEXT NOT NULL,
    synthetic        INTEGER NOT NULL,
    at               TEXT NOT NULL
) STRICT;
-- One summary per GPU set, probe and setup in a job.
CREATE UNIQUE INDEX bench_summaries_job ON bench_summaries (job_id, gpu_key, probe, setup);
CREATE INDEX bench_summaries_gpu ON bench_summaries (gpu_key, probe, at, seq);
CREATE INDEX bench_summaries_type ON bench_summaries (gpu_type, at, seq);
CREATE INDEX bench_summaries_at ON bench_summaries (at, seq);

-- The newest summary per GPU key and probe of a done job that was not a
-- verify job: what the fleet view and certification read, kept as each
-- such job finishes so that reading it never scans the history.
CREATE TABLE bench_latest (
    gpu_key     TEXT NOT NULL,
    probe       TEXT NOT NULL,
    gpu_type    TEXT NOT NULL,
    at          TEXT NOT NULL,
    summary_seq INTEGER NOT NULL REFERENCES bench_summaries (seq),
    PRIMARY KEY (gpu_key, probe)
) STRICT;
CREATE INDEX bench_latest_type ON bench_latest (gpu_type);

-- Each GPU's certification: one row per GPU, replaced as it is judged.
CREATE TABLE gpu_certs (
    gpu_id         TEXT NOT NULL PRIMARY KEY REFERENCES gpus (id),
    host_id        TEXT NOT NULL,
    type_id        TEXT NOT NULL,
    state          TEXT NOT NULL,
    ratio_permille INTEGER NOT NULL CHECK (ratio_permille >= 0),
    price_permille INTEGER NOT NULL CHECK (price_permille BETWEEN 0 AND 1000),
    reason         TEXT NOT NULL,
    last_job_id    TEXT NOT NULL, -- '' before any judged job
    last_run_at    TEXT,
    updated_at     TEXT NOT NULL
) STRICT;
CREATE INDEX gpu_certs_host ON gpu_certs (host_id);

-- The operator's certification schedule and policy: at most one row; the
-- defaults apply until it is written.
CREATE TABLE cert_settings (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    policy     TEXT NOT NULL,
    every_ns   INTEGER NOT NULL CHECK (every_ns >= 0), -- 0: schedule off
    tier       TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

-- The share of the list price, in permille (0: full price).
ALTER TABLE allocations ADD COLUMN price_permille INTEGER NOT NULL DEFAULT 0
    CHECK (price_permille BETWEEN 0 AND 1000);
ALTER TABLE usage_runs ADD COLUMN price_permille INTEGER NOT NULL DEFAULT 0
    CHECK (price_permille BETWEEN 0 AND 1000);
