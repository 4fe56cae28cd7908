//! What rides along a probe's run, shown through the runner as a command drives it.

use crate::config::{Ask, RunConfig, RunOptions};
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
