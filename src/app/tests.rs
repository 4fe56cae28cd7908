//! What rides along a probe's run, shown through the runner as a command drives it.

use crate::config::{Ask, Rest, RunConfig, RunOptions};
use crate::instrument::noop::NoOpRecord;
use crate::instrument::Request;
use crate::store::{Store, RAW_IN_STORE};

/// The numbers after each word of the no-op instrument's warning, by word.
fn said<'a>(warning: &'a str, word: &str) -> &'a str {
    let mut words = warning.split_whitespace();
    words.find(|w| *w == word).and_then(|_| words.next()).unwrap_or_else(|| panic!("no {word} in {warning:?}"))
}

/// An instrument in the registry (the tests' no-op, registered as the real ones are) is armed,
/// follows the threads, holds every sample until it settles it, is settled at each checkpoint,
/// ended and recorded in a real run, though nothing in the runner names it.
#[test]
fn a_registered_instrument_rides_along_a_real_run_that_never_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let info = crate::probe::info("synthetic").unwrap();
    let loops = 30_000;
    let opts = RunOptions {
        threads: Some(2),
        loops: Some(loops),
        quiet: true,
        db: Some(dir.path().join("rtbench.db")),
        instruments: vec![Request::plain("noop", Ask::Asked)],
        ..RunOptions::default()
    };
    let cfg = RunConfig::new(info, &info.defaults(), &opts).unwrap();
    assert_eq!(cfg.instruments.iter().map(|p| p.info.name).collect::<Vec<_>>(), ["noop"]);
    let mut store = Store::open(&cfg.storage.db).unwrap();
    let (id, _) = crate::runner::run(&cfg, &mut store).unwrap();
    let run = store.run(id).unwrap();
    let w = run.header.warnings.iter().find(|w| w.starts_with("noop:")).expect("the instrument's record is stored");
    assert_eq!(said(w, "followed"), "2", "{w}");
    assert_eq!(said(w, "seen"), (2 * loops).to_string(), "it saw every sample: {w}");
    assert_eq!(said(w, "let_go"), said(w, "seen"), "and let every one go: {w}");
    assert_eq!(run.total.count, 2 * loops, "the run's statistics are the threads' own");
    assert!(said(w, "settlings").parse::<u64>().unwrap() >= 2, "{w}");
    assert!(said(w, "checkpoints").parse::<u64>().unwrap() >= 1, "{w}");
    assert_eq!(said(w, "ended"), "true", "{w}");
    // The samples reached the store only through the instrument that held them.
    let raw = store.raw_samples(id).unwrap();
    let kept: Vec<usize> = raw.iter().map(|(_, s)| s.len()).collect();
    assert_eq!(kept, [RAW_IN_STORE.min(loops) as usize; 2], "each thread's first samples are stored");
    // Its record: in the run's params under its name, with no field of the model's for it.
    let db = rusqlite::Connection::open(&cfg.storage.db).unwrap();
    let stored: String = db
        .query_row("SELECT json_extract(params, '$.instruments.noop') FROM runs WHERE id = ?1", [id], |r| r.get(0))
        .unwrap();
    let record: NoOpRecord = serde_json::from_str(&stored).unwrap();
    assert_eq!(record.seen, 2 * loops as usize, "{stored}");
    // Recorded as the run ended, before the last checkpoint (which the warning counts).
    assert!(record.checkpoints < said(w, "checkpoints").parse().unwrap(), "{stored}");
    // And `rtbench resume` of it, had it been stopped, asks for it again, from its registry line.
    db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?1", [id]).unwrap();
    let again =
        RunConfig::resumed(&store.header(id).unwrap(), Rest::Loops(10), true, cfg.storage.db.clone(), None).unwrap();
    assert_eq!(again.instruments.iter().map(|p| p.info.name).collect::<Vec<_>>(), ["noop"]);
}

/// Where the probe does not offer what an instrument needs, asking for it is refused before
/// anything runs, with the instrument's own words.
#[test]
fn an_instrument_the_probe_does_not_offer_is_refused_in_its_own_words() {
    let info = crate::probe::info("synthetic").unwrap();
    let opts = |name| RunOptions { instruments: vec![Request::plain(name, Ask::Asked)], ..RunOptions::default() };
    let split = RunConfig::new(info, &info.defaults(), &opts("split")).err().expect("refused").to_string();
    assert_eq!(split, "--split splits a timer wake-up, and synthetic samples are not one");
    let asked = RunOptions { instruments: vec![Request::plain("split", Ask::IfPossible)], ..RunOptions::default() };
    let cfg = RunConfig::new(info, &info.defaults(), &asked).unwrap();
    assert!(cfg.instruments.is_empty(), "wherever possible: left out where it does not apply");
}

/// `--main-affinity`: the collector's readers are armed for its CPUs, the main thread runs there
/// (as the kernel says at each checkpoint), and the stored run says where it ran.
#[rtbench_testkit::needs(two_cpus)]
#[test]
fn the_collector_runs_where_main_affinity_puts_it_and_the_run_says_so() {
    let online = crate::sysinfo::online_cpus();
    let (measured, main) = (online[1], online[0]);
    let dir = tempfile::tempdir().unwrap();
    let info = crate::probe::info("synthetic").unwrap();
    let opts = RunOptions {
        affinity: Some(measured.to_string()),
        main_affinity: Some(main.to_string()),
        loops: Some(2_000),
        quiet: true,
        db: Some(dir.path().join("rtbench.db")),
        instruments: vec![Request::plain("noop", Ask::Asked)],
        ..RunOptions::default()
    };
    let cfg = RunConfig::new(info, &info.defaults(), &opts).unwrap();
    let mut store = Store::open(&cfg.storage.db).unwrap();
    // On a thread of its own: the runner pins the thread it runs on.
    let (id, store) =
        std::thread::spawn(move || (crate::runner::run(&cfg, &mut store).unwrap().0, store)).join().unwrap();
    let run = store.run(id).unwrap();
    let w = run.header.warnings.iter().find(|w| w.starts_with("noop:")).expect("the instrument's record");
    assert_eq!(said(w, "collector"), main.to_string(), "readers are armed for CPU {main}: {w}");
    assert_eq!(said(w, "main_on"), main.to_string(), "the main thread ran on CPU {main}: {w}");
    let c = run.header.params.measured().and_then(|m| m.collector.clone()).expect("the run says where");
    assert_eq!((c.cpus, c.chosen, c.shared), (vec![main], crate::model::CollectorChoice::Asked, vec![]));
}
