//! The store's schema and its migrations. `PRAGMA user_version` holds how many have been applied.

/// Migrations in order; index + 1 is the schema version each one produces.
pub const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    label          TEXT NOT NULL,
    probe          TEXT NOT NULL,
    params         TEXT NOT NULL,            -- JSON object
    load           TEXT NOT NULL,            -- JSON object
    command_line   TEXT NOT NULL,
    tool_version   TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    start          TEXT NOT NULL,            -- RFC 3339 UTC
    end            TEXT,
    status         TEXT NOT NULL CHECK (status IN ('running','complete','interrupted','aborted','failed')),
    rt_priority    INTEGER NOT NULL,
    warnings       TEXT NOT NULL,            -- JSON array of strings
    system         TEXT NOT NULL,            -- JSON object
    envelope_ns    INTEGER NOT NULL,
    host           TEXT NOT NULL,
    pid            INTEGER NOT NULL,
    pid_start      TEXT NOT NULL,            -- start time of pid, to tell a reused pid apart
    checkpoint     TEXT                      -- time of the last checkpoint
);
CREATE INDEX runs_label ON runs(label);
CREATE TABLE threads (
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread    INTEGER NOT NULL,
    cpu       INTEGER,
    count     INTEGER NOT NULL,
    overruns  INTEGER NOT NULL,
    min_ns    INTEGER NOT NULL,
    max_ns    INTEGER NOT NULL,
    sum_ns    TEXT NOT NULL,                 -- exact u128 as decimal
    sumsq_ns  TEXT NOT NULL,                 -- exact u128 as decimal
    histogram BLOB NOT NULL,                 -- HdrHistogram V2 encoding
    PRIMARY KEY (run_id, thread)
);
CREATE TABLE envelope (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread  INTEGER NOT NULL,
    idx     INTEGER NOT NULL,                -- interval number since start
    min_ns  INTEGER NOT NULL,
    max_ns  INTEGER NOT NULL,
    sum_ns  INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (run_id, thread, idx)
) WITHOUT ROWID;
"#,
    r#"
-- v2: the first raw samples of each thread, so short runs can be drawn sample by sample.
CREATE TABLE samples (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread     INTEGER NOT NULL,
    seq        INTEGER NOT NULL,             -- 0-based order within the thread
    t_ns       INTEGER NOT NULL,             -- time offset from the run's start
    latency_ns INTEGER NOT NULL,
    PRIMARY KEY (run_id, thread, seq)
) WITHOUT ROWID;
"#,
    r#"
-- v3: what a run's samples measure, so results other than latencies can be stored beside them.
ALTER TABLE runs ADD COLUMN unit TEXT NOT NULL DEFAULT 'ns';
ALTER TABLE runs ADD COLUMN better TEXT NOT NULL DEFAULT 'smaller' CHECK (better IN ('smaller','bigger'));
"#,
    r#"
-- v4: what happened on each measured CPU per envelope interval besides our threads.
CREATE TABLE cpu_activity (
    run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    cpu              INTEGER NOT NULL,
    idx              INTEGER NOT NULL,       -- envelope interval number since start
    steal_ns         INTEGER NOT NULL,
    irq_ns           INTEGER NOT NULL,
    softirq_ns       INTEGER NOT NULL,
    interrupts       INTEGER NOT NULL,
    context_switches INTEGER,                -- NULL where the kernel keeps no schedstats
    PRIMARY KEY (run_id, cpu, idx)
) WITHOUT ROWID;
"#,
    r#"
-- v5: latency breaches traced with --breach: the verdict, and the whole record (causes and
-- the trace window) as JSON.
CREATE TABLE breaches (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    latency_ns INTEGER NOT NULL,
    verdict    TEXT NOT NULL,
    breach     TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"#,
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;
