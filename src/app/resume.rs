//! `rtbench resume RUN`: an interrupted or aborted run continues into the same run, with the
//! parameters it was made with, through the same runner as any run.

use anyhow::Result;

use crate::config::{Peer, Rest, ResumeConfig, RunConfig};
use crate::runner::segment::Extras;
use crate::store::Store;

pub fn run(a: ResumeConfig) -> Result<i32> {
    // Everything is checked before anything is written: a run that cannot be resumed leaves
    // the store as it was.
    let store = Store::open(&a.db)?;
    let h = store.header(a.run)?;
    let fewest = store.threads(a.run)?.iter().map(|t| t.stats.count).min().unwrap_or(0);
    let measured_s = store.measured_s(a.run)?;
    let rest = crate::config::rest(&h, measured_s, fewest, a.duration)?;
    let peer = crate::config::peer(&h, a.peer.as_deref())?;
    // A study's network cell talked to the study's own echo server: the next part gets one
    // again, serving for as long as it measures.
    let own = match peer {
        Peer::Own => Some(super::study::own_echo_server()?),
        _ => None,
    };
    let addr = match (&peer, &own) {
        (Peer::Given(addr), _) => Some(addr.clone()),
        (_, Some(server)) => Some(server.local.clone()),
        _ => None,
    };
    let mut cfg = RunConfig::resumed(&h, rest, a.quiet, a.db.clone(), addr.as_deref())?;
    let resumes = store.gaps(a.run)?.len();
    let mut notes = crate::config::notes(&h);
    notes.extend(crate::config::peer_note(&h, resumes, &cfg, &peer));
    notes.extend(crate::config::sample_log(&h, resumes, &mut cfg)?);
    drop(store);
    if h.command_line.split_whitespace().nth(1) == Some("study") {
        eprintln!("rtbench: run {} is a cell of a study: it is resumed as its own run, not the study", h.id);
    }
    let more = match rest {
        Rest::For(d) => format!("for {}", crate::units::span(d.as_secs_f64())),
        Rest::Loops(n) => format!("for {n} more samples per thread"),
        Rest::Unbounded => "until stopped".into(),
    };
    let with = match (&peer, &addr) {
        (Peer::Own, Some(addr)) => format!(", its own echo server again on {addr}"),
        (Peer::Given(addr), _) => format!(", peer {addr}"),
        _ => String::new(),
    };
    eprintln!(
        "rtbench: resuming run {} ({}, label {}; {} measured{with}) {more}",
        h.id,
        h.probe,
        h.label,
        crate::units::span(measured_s)
    );
    for note in &notes {
        eprintln!("rtbench: WARNING: {note}");
    }
    let resume = || -> Result<i32> {
        let mut store = super::writable_store(&a.db)?;
        let extras = Extras { resume: Some(a.run), notes, ..Extras::default() };
        let (id, outcome) = crate::runner::run_with(&cfg, &mut store, extras)?;
        super::print_run(&cfg, &store, id, outcome)
    };
    match own {
        // Stopped however the part ends, as the study's is.
        Some(server) => server.serve_during(&super::study::enter_server, resume),
        None => resume(),
    }
}
