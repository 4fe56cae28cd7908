//! The store's own tests: opening, migrating, merging, recovering.

use super::*;

/// Commands that open one new store at the same moment (two monitors of a fleet test, found
/// failing: "cannot enable WAL (database is locked)") each wait for the other's lock: every
/// one opens it.
#[test]
fn commands_that_open_a_new_store_at_once_all_open_it() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let path = dir.path().join(format!("s{round}.db"));
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            let opened: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        Store::open(&path).map(|_| ())
                    })
                })
                .collect();
            for o in opened {
                o.join().unwrap().unwrap_or_else(|e| panic!("round {round}: {e:#}"));
            }
        });
    }
}

/// A store at schema `version` holding one complete timer run labelled 'old'; the
/// connection is returned for more rows of that schema.
pub(crate) fn old_store(path: &Path, version: usize) -> Connection {
    let c = Connection::open(path).unwrap();
    for m in &schema::MIGRATIONS[..version] {
        c.execute_batch(m).unwrap();
    }
    c.pragma_update(None, "user_version", version as i64).unwrap();
    c.execute(
        "INSERT INTO runs (label, probe, params, load, command_line, tool_version, schema_version, start, status,
                           rt_priority, warnings, system, envelope_ns, host, pid, pid_start)
         VALUES ('old', 'timer', '{}', '{}', 'rtbench timer', '0.0.1', ?1, 'x', 'complete', 1, '[]', '{}', 1, 'h', 1, '1')",
        [version as i64],
    )
    .unwrap();
    c
}

#[test]
fn a_store_of_an_older_schema_is_migrated_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    old_store(&path, 1);
    let store = Store::open(&path).unwrap();
    let version: i64 = store.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.runs().unwrap()[0].label, "old");
    assert!(store.raw_samples(1).unwrap().is_empty(), "the new table exists and is empty");
}

/// `--split`: a thread's IRQ statistics and its raw samples' IRQ parts come back as
/// written, and a merge brings them along.
#[test]
fn a_split_run_keeps_its_irq_part_through_the_store_and_a_merge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = Store::open(&path).unwrap();
    let head = RunHead { command_line: "rtbench timer --split".into(), ..RunHead::for_test("timer") };
    let (mut stats, mut irq) = (Stats::default(), IrqSplit::default());
    for (lat, i) in [(50_000, Some(20_000)), (70_000, None), (30_000, Some(9_000))] {
        stats.record(lat);
        match i {
            Some(ns) => irq.stats.record(ns),
            None => irq.unmatched += 1,
        }
    }
    let threads = [ThreadResult { thread: 0, cpu: Some(1), stats, irq: Some(irq) }];
    let mut w = RunWriter::begin(&mut store, head).unwrap();
    w.keep_raw(0, &[(1000, 50_000), (2000, 70_000), (3000, 30_000)]);
    w.keep_irq(0, &[Some(20_000), None, Some(9_000)]);
    w.checkpoint(&Checkpoint::only(&threads)).unwrap();
    let id = w.finish(RunStatus::Complete, &[]).unwrap();
    let check = |store: &Store, id: i64| {
        let t = store.threads(id).unwrap().remove(0);
        let x = t.irq.expect("the thread's IRQ part");
        assert_eq!((x.stats.count, x.unmatched, x.stats.min, x.stats.max), (2, 1, 9_000, 20_000));
        assert_eq!(x.stats.sum, 29_000);
        assert_eq!(store.raw_irq(id).unwrap(), [(0, vec![Some(20_000), None, Some(9_000)])]);
    };
    check(&store, id);
    let mut other = Store::open(&dir.path().join("other.db")).unwrap();
    assert_eq!(other.merge(&path).unwrap(), (1, 0));
    check(&other, 1);
}
