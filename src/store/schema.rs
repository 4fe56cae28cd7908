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
    r#"
-- v6: what kind of run each is, where readers told it by the probe name ('sysbench.total',
-- 'sysbench.OP') and by the parameter every monitor window carries. Older runs get the kind
-- those told; a row whose params are not JSON is no window.
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'probe'
    CHECK (kind IN ('probe','sysbench-op','sysbench-total','monitor-window'));
UPDATE runs SET kind = CASE
    WHEN probe = 'sysbench.total' THEN 'sysbench-total'
    WHEN substr(probe, 1, 9) = 'sysbench.' THEN 'sysbench-op'
    WHEN (CASE WHEN json_valid(params) THEN json_extract(params, '$.monitor_window_s') END) IS NOT NULL
        THEN 'monitor-window'
    ELSE 'probe'
END;
"#,
    r#"
-- v7: --split: per thread, the IRQ latency of the samples matched with their timer's expiry
-- (the thread's own statistics' shape: count is how many were matched) and how many had none;
-- per raw sample, its IRQ latency.
CREATE TABLE irq (
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread    INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    unmatched INTEGER NOT NULL,
    min_ns    INTEGER NOT NULL,
    max_ns    INTEGER NOT NULL,
    sum_ns    TEXT NOT NULL,                 -- exact u128 as decimal
    sumsq_ns  TEXT NOT NULL,                 -- exact u128 as decimal
    histogram BLOB NOT NULL,                 -- HdrHistogram V2 encoding
    PRIMARY KEY (run_id, thread)
) WITHOUT ROWID;
ALTER TABLE samples ADD COLUMN irq_ns INTEGER;  -- NULL: the run was not split, or no expiry matched
"#,
    r#"
-- v8: rtbench resume: the spans a resumed run did not measure, from its last checkpoint before
-- it stopped to the moment it measured again; wall times as the run's start and end, and where
-- they lie on the run's time axis (ns from its start, as the samples' offsets).
CREATE TABLE gaps (
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,               -- 0-based, in time order
    start    TEXT NOT NULL,                  -- RFC 3339 UTC
    end      TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns   INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"#,
    r#"
-- v9: noise --classify: per thread and envelope interval, the gaps of each class (what ran in
-- them: irq, softirq, thread, hardware, unknown) and their total length.
CREATE TABLE noise_classes (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread  INTEGER NOT NULL,
    idx     INTEGER NOT NULL,                -- envelope interval number since start
    class   TEXT NOT NULL CHECK (class IN ('irq','softirq','thread','hardware','unknown')),
    count   INTEGER NOT NULL,
    ns      INTEGER NOT NULL,
    PRIMARY KEY (run_id, thread, idx, class)
) WITHOUT ROWID;
"#,
    r#"
-- v10: the probes a study could not run under a label, and why (the kernel has no timerlat
-- tracer, say); the latest reason per label and probe. A report says so where the label has
-- no run of that probe.
CREATE TABLE absent (
    label  TEXT NOT NULL,
    probe  TEXT NOT NULL,
    reason TEXT NOT NULL,
    at     TEXT NOT NULL,                    -- RFC 3339 UTC, when the study said so
    PRIMARY KEY (label, probe)
) WITHOUT ROWID;
"#,
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::Store;
    use super::SCHEMA_VERSION;
    use crate::model::ProbeParams;
    use crate::model::RunKind::{self, *};

    /// The runs of the v5 fixture in order, and the kind the readers of then told each by.
    const OLD_RUNS: [(&str, RunKind); 8] = [
        ("synthetic", Probe),
        ("timer", Probe), // imported from cyclictest
        ("sysbench.null-call", SysbenchOp),
        ("sysbench.null-call", SysbenchOp), // the operation of the --total pass below
        ("sysbench.total", SysbenchTotal),
        ("timer", MonitorWindow),
        ("timer", MonitorWindow),
        ("timer", MonitorWindow),
    ];

    /// A store file as the rtbench before run kinds wrote it (see the fixture's header).
    fn old_store(dir: &Path) -> PathBuf {
        let path = dir.join("old.db");
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(include_str!("../../tests/fixtures/store-v5.sql")).unwrap();
        path
    }

    fn kinds(store: &Store) -> Vec<(String, RunKind)> {
        store.runs().unwrap().into_iter().map(|h| (h.probe, h.kind)).collect()
    }

    fn want() -> Vec<(String, RunKind)> {
        OLD_RUNS.iter().map(|(p, k)| (p.to_string(), *k)).collect()
    }

    #[test]
    fn an_old_store_is_migrated_and_each_run_gets_the_kind_its_name_or_window_parameter_told() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&old_store(dir.path())).unwrap();
        assert_eq!(kinds(&store), want());
        let windows: Vec<i64> = store.window_maxima("old").unwrap().iter().map(|w| w.run).collect();
        assert_eq!(windows, [6, 7, 8], "the monitor's windows, not the imported timer run of the label");
        // The typed parameters read what the old writers stored.
        let op = store.header(4).unwrap().sysbench_op().expect("an operation's parameters");
        let total = store.header(5).unwrap().sysbench_total().expect("a pass's parameters");
        assert_eq!((op.op.as_str(), total.baseline.as_str(), total.load_item.as_str()), ("null-call", "old", "none"));
        assert_eq!(total.iterations.get("null-call"), Some(&op.iterations), "the pass did the work its operation did");
        assert!(store.header(5).unwrap().sysbench_op().is_none(), "a pass is no operation");
        // And the new writers store them as the old ones did, key for key.
        let stored = |id| serde_json::to_string(&store.header(id).unwrap().params.measured().unwrap().probe).unwrap();
        let written = |part: ProbeParams| serde_json::to_string(&part).unwrap();
        assert_eq!(written(ProbeParams::SysbenchOp(op)), stored(4));
        assert_eq!(written(ProbeParams::SysbenchTotal(total)), stored(5));
    }

    #[test]
    fn retention_of_a_migrated_store_deletes_its_windows_and_not_a_run_of_the_same_label_and_probe() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&old_store(dir.path())).unwrap();
        assert_eq!(store.delete_ended_before("old", "timer", std::time::Duration::ZERO).unwrap(), 3);
        let ids: Vec<i64> = store.runs().unwrap().iter().map(|h| h.id).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn merge_of_an_old_store_brings_every_run_with_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let old = old_store(dir.path());
        let mut store = Store::open(&dir.path().join("new.db")).unwrap();
        assert_eq!(store.merge(&old).unwrap(), (8, 0));
        assert_eq!(kinds(&store), want());
        // As merge always has: opening the other store to check it migrates that file too.
        let theirs = rusqlite::Connection::open(&old).unwrap();
        let version: i64 = theirs.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    #[test]
    fn every_kind_is_admitted_by_the_schema_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        for kind in RunKind::ALL {
            let id = store
                .begin(&crate::store::RunHead {
                    kind,
                    command_line: "rtbench".into(),
                    rt_priority: false,
                    ..crate::store::RunHead::for_test("p")
                })
                .unwrap();
            assert_eq!(store.header(id).unwrap().kind, kind);
        }
    }

    /// v7 (`--split`): a store of v6 keeps its runs and raw samples, which read as not split.
    #[test]
    fn a_v6_store_is_migrated_and_its_runs_read_as_not_split() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v6.db");
        {
            let c = crate::store::tests::old_store(&path, 6);
            c.execute("INSERT INTO samples VALUES (1, 0, 0, 1000, 52000), (1, 0, 1, 2000, 48000)", []).unwrap();
        }
        let store = Store::open(&path).unwrap();
        let c = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(store.raw_samples(1).unwrap(), [(0, vec![(1000, 52_000), (2000, 48_000)])]);
        assert_eq!(store.raw_irq(1).unwrap(), [(0, vec![None, None])], "the old samples have no IRQ part");
        let irq_rows: i64 = c.query_row("SELECT count(*) FROM irq", [], |r| r.get(0)).unwrap();
        assert_eq!(irq_rows, 0);
    }

    /// v8 (`rtbench resume`): a store of v7 keeps its runs, which have no gaps.
    #[test]
    fn a_v7_store_is_migrated_and_its_runs_have_no_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v7.db");
        drop(crate::store::tests::old_store(&path, 7));
        let store = Store::open(&path).unwrap();
        assert_eq!(store.runs().unwrap()[0].label, "old");
        assert!(store.gaps(1).unwrap().is_empty());
        assert!(store.run(1).unwrap().gaps.is_empty());
    }
}
