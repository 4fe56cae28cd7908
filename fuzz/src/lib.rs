//! What each fuzz target does with its input, as functions: the libFuzzer targets in
//! `fuzz_targets/` call them, and rtbench's own tests (`tests/fuzz_replay.rs`) replay every
//! seed and every crash input in `corpus/` through them on stable Rust, so a target that stops
//! compiling or an input that crashes again fails the ordinary test run.

use std::sync::OnceLock;

/// The sample-log reader on a file holding `data`.
pub fn samplelog(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(&path, data).unwrap();
    let _ = rtbench::analyze::analyze(&path, true);
}

/// The importers (cyclictest's JSON and histogram, rtla's, sockperf's) and the statistics of
/// what they read.
pub fn cyclictest_import(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = rtbench::import::convert(&text) {
        for t in &c.threads {
            let _ = t.stats.summary();
        }
    }
}

/// The `--fail-if` parser.
pub fn fail_if(data: &[u8]) {
    let _ = rtbench::report::text::compare::parse_conditions(&String::from_utf8_lossy(data));
}

/// The echo server's packet header: what parses writes back the same.
pub fn packet(data: &[u8]) {
    if let Some(h) = rtbench::net::wire::read_header(data) {
        let mut buf = vec![0u8; rtbench::net::wire::HEADER];
        rtbench::net::wire::write_header(&mut buf, h);
        assert_eq!(rtbench::net::wire::read_header(&buf), Some(h));
    }
}

/// The duration, latency, size and CPU-list parsers, and every probe flag's.
pub fn flags(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let _ = rtbench::parse::duration(&s);
    let _ = rtbench::parse::positive_us(&s);
    let _ = rtbench::parse::latency_ns(&s, "us");
    let _ = rtbench::parse::message_size(&s);
    let _ = rtbench::sysinfo::parse_cpu_list(&s);
    for info in rtbench::probe::REGISTRY {
        let cmd = (info.flags.command)(clap::Command::new(info.name).no_binary_name(true));
        for arg in cmd.get_arguments() {
            let words = match arg.get_long() {
                Some(long) => vec![format!("--{long}"), s.to_string()],
                None => vec![s.to_string()],
            };
            if let Ok(m) = cmd.clone().try_get_matches_from(words) {
                let _ = (info.flags.read)(&m);
            }
        }
    }
}

/// A store of two synthetic runs made once by `rtbench` (a binary), one of its columns
/// altered as `data` says (its first byte picks the column, its second the value's type), then
/// opened, read and exported.
pub fn store_rows(data: &[u8], rtbench: &str) {
    let Some((&pick, value)) = data.split_first() else { return };
    let (table, column) = COLUMNS[pick as usize % COLUMNS.len()];
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    std::fs::write(&db, template(rtbench)).unwrap();
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
        let _ = rtbench::report::formats::export::render(
            &run,
            rtbench::report::formats::export::Format::Json,
            &rtbench::report::formats::export::ExportOptions { buckets: 100, raw: vec![], irq: vec![] },
        );
        let _ = rtbench::report::text::show::summary(&run);
    }
    let _ = store.raw_samples(1);
    let _ = store.envelope(1);
    let _ = store.cpu_activity(1);
}

/// The store every `store_rows` input alters a copy of.
fn template(rtbench: &str) -> &'static Vec<u8> {
    static T: OnceLock<Vec<u8>> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let ok = std::process::Command::new(rtbench)
            .args(["synthetic", "-t", "2", "-l", "500", "-q", "--db", db.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("{rtbench} makes the template store: {e}"));
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
