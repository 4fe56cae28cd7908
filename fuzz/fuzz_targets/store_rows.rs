//! A store whose rows were altered: reading it gives errors or values, never a panic. The input
//! picks a column of a real run and what to write into it.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// A store with one run (a synthetic run of two threads), made once.
fn template() -> &'static Vec<u8> {
    static T: OnceLock<Vec<u8>> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let exe = std::env::var("RTBENCH").unwrap_or_else(|_| "../target/release/rtbench".into());
        let ok = std::process::Command::new(exe)
            .args(["synthetic", "-t", "2", "-l", "500", "-q", "--db", db.to_str().unwrap()])
            .status()
            .expect("set RTBENCH to an rtbench binary");
        assert!(ok.success());
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;").unwrap();
        drop(c);
        std::fs::read(&db).unwrap()
    })
}

const COLUMNS: &[(&str, &str)] = &[
    ("runs", "params"),
    ("runs", "load"),
    ("runs", "system"),
    ("runs", "warnings"),
    ("runs", "status"),
    ("runs", "envelope_ns"),
    ("runs", "unit"),
    ("threads", "histogram"),
    ("threads", "count"),
    ("threads", "sum_ns"),
    ("threads", "sumsq_ns"),
    ("threads", "min_ns"),
    ("threads", "max_ns"),
    ("threads", "cpu"),
    ("envelope", "count"),
    ("envelope", "idx"),
    ("samples", "latency_ns"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, value)) = data.split_first() else { return };
    let (table, column) = COLUMNS[pick as usize % COLUMNS.len()];
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    std::fs::write(&db, template()).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        // Text, integer or blob, as the input's second byte says.
        let sql = format!("UPDATE {table} SET {column} = ?1");
        let _ = match value.first().map(|b| b % 3) {
            Some(0) => c.execute(&sql, [String::from_utf8_lossy(&value[1..]).into_owned()]),
            Some(1) => c.execute(
                &sql,
                [i64::from_le_bytes(
                    value[1..].iter().chain([0u8; 8].iter()).take(8).copied().collect::<Vec<_>>().try_into().unwrap(),
                )],
            ),
            _ => c.execute(&sql, [value.to_vec()]),
        };
    }
    let Ok(store) = rtbench::store::Store::open(&db) else { return };
    let _ = store.runs();
    if let Ok(run) = store.run(1) {
        let _ = run.total.summary();
        for t in &run.threads {
            let _ = t.stats.summary();
        }
        let _ = rtbench::report::export::render(
            &run,
            rtbench::report::export::Format::Json,
            &rtbench::report::export::ExportOptions { buckets: 100, raw: vec![] },
        );
        let _ = rtbench::report::show::summary(&run);
    }
    let _ = store.raw_samples(1);
    let _ = store.envelope(1);
    let _ = store.cpu_activity(1);
});
