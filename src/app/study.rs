//! `rtbench study`: the seed study in one command. Every probe idle and under load, then the
//! Appendix III table and the report.

use std::time::Duration;

use anyhow::Result;

use super::task::StudyConfig;
use crate::config::{RunConfig, RunOptions};
use crate::net::transport::Transport;
use crate::probe::{InStudy, ProbeInfo, StudyEnv};
use crate::report::formats::junit::Errored;
use crate::report::select;
use crate::runner::preempt::PreemptSwitch;
use crate::session::{Outcome, Session};
use crate::store::Store;
use crate::units::clock as hms;

/// One cell of the study's matrix.
struct Cell {
    info: &'static ProbeInfo,
    load: String,
    duration: Duration,
}

/// The probes the registry puts in the study, in its order (the qualification checks unless
/// `no_qualify`), and those it cannot run here with the reason.
fn study_probes(no_qualify: bool) -> (Vec<&'static ProbeInfo>, Vec<(&'static str, String)>) {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    let asked = |p: &&ProbeInfo| p.in_study() && !(no_qualify && p.study == InStudy::Qualification);
    for info in crate::probe::REGISTRY.iter().filter(asked) {
        match (info.supported)() {
            Ok(()) => run.push(info),
            Err(why) => skipped.push((info.name, why)),
        }
    }
    (run, skipped)
}

fn cells(a: &StudyConfig, probes: &[&'static ProbeInfo]) -> Vec<Cell> {
    let mut out = Vec::new();
    let loaded = a.load.trim() != "none";
    for &info in probes {
        out.push(Cell { info, load: "none".into(), duration: a.duration });
        if loaded {
            out.push(Cell { info, load: a.load.clone(), duration: a.duration });
        }
    }
    if let Some(ext) = a.extended {
        for &info in probes {
            out.push(Cell { info, load: a.load.clone(), duration: ext });
        }
    }
    out
}

/// "timer idle", "gtod load paper".
fn cell_name(c: &Cell) -> String {
    format!("{} {}", c.info.name, crate::report::page::figures::load_name(&c.load))
}

/// The settings of one cell: the run defaults, the cell's length and load, the study's label.
fn cell_options(a: &StudyConfig, cell: &Cell, label: &str) -> RunOptions {
    RunOptions {
        duration: Some(cell.duration),
        quiet: a.quiet,
        // About 600 points per cell: a 1-minute cell draws as finely as a 24-hour one.
        envelope_interval: (cell.duration / 600).clamp(Duration::from_millis(10), Duration::from_secs(1)),
        load: cell.load.clone(),
        settle: a.settle,
        load_flags: a.load_flags.clone(),
        label: Some(label.to_string()),
        db: Some(a.db.clone()),
        shield: a.shield.clone(),
        instruments: a.instruments.clone(),
        ..RunOptions::default()
    }
}

pub fn run(a: StudyConfig) -> Result<i32> {
    super::compare::check_gate(a.gate.as_ref(), &a.db)?;
    if let Some(p) = &a.peer {
        check_peer(&crate::net::transport::address(Transport::Udp, Some(p)))?;
    }
    let label = a.label.clone();
    let (probes, skipped) = study_probes(a.no_qualify);
    for (name, why) in &skipped {
        println!("study: skipping {name}: {why}");
    }
    let cells = cells(&a, &probes);
    let models = a.preempt.clone();
    // One session for the whole study: a Ctrl-C between two cells stops it as cleanly as one
    // during a cell (each cell's run joins this session's signal handling).
    let mut session = Session::start()?;
    // One pass over the cells per preemption model asked for, each under its own label; the
    // model in force comes back when the session drops the switch, however the study ends.
    let passes: Vec<(String, Option<String>)> = match models {
        None => vec![(label.clone(), None)],
        Some(models) => match PreemptSwitch::open() {
            Ok(s) => {
                println!("preemption model now '{}'; the study runs under {}", s.original(), models.join(", "));
                session.hold(s);
                models.into_iter().map(|m| (super::task::preempt_label(&label, &m), Some(m))).collect()
            }
            Err(why) => {
                println!("study: skipping --preempt: {why}");
                vec![(label.clone(), None)]
            }
        },
    };
    // The network probes talk to --peer, or to an echo server of our own on loopback.
    let local = match &a.peer {
        Some(_) => None,
        None => Some(own_echo_server()?),
    };
    let peer = match (&a.peer, &local) {
        (Some(p), _) => crate::net::transport::address(Transport::Udp, Some(p)),
        (None, Some(server)) => server.local.clone(),
        (None, None) => unreachable!("a local server exists without --peer"),
    };
    let mut cells_run = || run_cells(&a, &mut session, &cells, &passes, &skipped, &peer);
    let (code, errored) = match local {
        // Stopped however the cells end, a panic included (issue 29).
        Some(server) => server.serve_during(&enter_server, cells_run),
        None => cells_run(),
    }?;
    let labels: Vec<&str> = passes.iter().map(|(label, _)| label.as_str()).collect();
    super::compare::gate_study(a.gate.as_ref(), &a.db, &labels, code, &errored)
}

/// How long the check of `--peer` waits for its answer, as long as a pingpong cell's hello does.
const PEER_CHECK_WAIT: Duration = Duration::from_secs(2);

/// Says hello to `--peer` before the first cell: a peer that does not answer ends the study now,
/// as bad input, not at its network cells after the others have run (issue 29).
fn check_peer(peer: &str) -> Result<()> {
    let token = crate::net::wire::random_token();
    match crate::net::transport::connect(Transport::Udp, peer, token, 1, PEER_CHECK_WAIT, false) {
        Ok(_) => Ok(()),
        Err(e) => Err(crate::invalid!("--peer: {e:#}")),
    }
}

/// The echo server of the study's own (and of a resumed run of one of its network cells): UDP on
/// loopback, on a port of the moment, saying where it runs. [`enter_server`] sets its thread up.
pub(super) fn own_echo_server() -> Result<crate::net::server::Server> {
    let server = crate::net::server::Server::bind(Transport::Udp, "127.0.0.1:0", None)?;
    let policy = crate::model::Policy::Fifo.shown(crate::config::DEFAULT_PRIORITY);
    Ok(server.placed(&format!("{}, {policy}", crate::model::placement(None))))
}

/// The study's echo server thread: at the runs' real-time priority, like `pingpong --serve`.
pub(super) fn enter_server() -> Box<dyn std::any::Any> {
    let entered = crate::runner::rt::enter_thread(None, crate::model::Policy::Fifo, crate::config::DEFAULT_PRIORITY);
    Box::new(entered.guard)
}

/// Switches the preemption model through the switch the session holds (a pass has a model only
/// when it does).
fn switch_model(session: &Session, model: &str) -> Result<()> {
    let switched = session.with(|switch: &mut PreemptSwitch| switch.set(model));
    switched.unwrap_or(Ok(())).map_err(|e| anyhow::anyhow!("could not switch the preemption model: {e}"))
}

/// A cell of one pass, checked and ready to run: its run's settings and the preemption model
/// of its pass.
struct Planned<'a> {
    cell: &'a Cell,
    cfg: RunConfig,
    model: Option<&'a str>,
}

fn run_cells(
    a: &StudyConfig,
    session: &mut Session,
    pass_cells: &[Cell],
    passes: &[(String, Option<String>)],
    skipped: &[(&str, String)],
    peer: &str,
) -> Result<(i32, Vec<Errored>)> {
    let planned = plan(a, pass_cells, passes, peer)?;
    if let Some(output) = &a.output {
        crate::config::check_writable(&output.with_extension("check"))?;
    }
    try_load(session, &planned)?;
    let mut store = super::writable_store(&a.db)?;
    // Kept with the runs, so every report of these labels says which cells are missing and why.
    for (label, _) in passes {
        for (probe, why) in skipped {
            store.note_absent(label, probe, why)?;
        }
    }
    let ran = run_planned(session, &mut store, &planned, a.settle)?;
    let mut done = ran.done;
    let stopped = ran.signal.or(session.signal());
    if let Some(sig) = stopped.filter(|_| done.is_empty()) {
        // Stopped before any cell stored a run (during the load's first-second check, say):
        // nothing to report, and an empty selection must not report the store's other runs.
        println!("study interrupted before any cell was stored: nothing to report");
        return Ok((128 + sig, Vec::new()));
    }
    if stopped.is_none() && !a.no_sysbench {
        done.extend(sysbench_cells(session, &mut store, passes)?);
    }
    report(a, &store, &done, passes)?;
    if !ran.failed.is_empty() {
        let failed: Vec<String> =
            ran.failed.iter().map(|(k, _)| format!("{} ({})", k + 1, cell_name(planned[*k].cell))).collect();
        println!("study: {} of {} cells failed: {}", failed.len(), planned.len(), failed.join(", "));
    }
    // A signal during the last cell's sysbench or the report ends the study as one during a
    // cell does: with 128 + the signal. Else a failed cell makes it 1: the report draws the
    // rest, but a script or CI job must not take an incomplete study for a complete one.
    let code = if ran.failed.is_empty() { 0 } else { 1 };
    let errored = ran.failed.into_iter().map(|(k, reason)| errored(&planned[k], reason)).collect();
    Ok((session.signal().or(stopped).map_or(code, |sig| 128 + sig), errored))
}

/// A failed cell as the gate's JUnit has it.
fn errored(p: &Planned, reason: String) -> Errored {
    let (probe, load) = (p.cell.info.name.to_string(), crate::report::page::figures::load_name(&p.cell.load));
    Errored { label: p.cfg.storage.label.clone(), probe, load, reason }
}

/// Every pass's cells with their run settings. Everything is checked before the first cell
/// runs: a bad load fails now, not in an hour.
fn plan<'a>(
    a: &StudyConfig,
    pass_cells: &'a [Cell],
    passes: &'a [(String, Option<String>)],
    peer: &str,
) -> Result<Vec<Planned<'a>>> {
    let env = StudyEnv { peer: peer.to_string() };
    let mut planned = Vec::new();
    for (label, model) in passes {
        for cell in pass_cells {
            let mut args = cell.info.defaults();
            args.study(&env);
            let mut cfg = RunConfig::new(cell.info, &args, &cell_options(a, cell, label))?;
            // Without --peer the network cells talk to the study's own echo server: stored, so
            // that resume starts it again.
            cfg.probe_params.set_own_peer(a.peer.is_none());
            planned.push(Planned { cell, cfg, model: model.as_deref() });
        }
    }
    Ok(planned)
}

/// Runs the study's load through its first second before the first cell: a generator that
/// fails at once (stress-ng given bad arguments) refuses the study now, not at its first loaded
/// cell after the idle ones.
fn try_load(session: &mut Session, planned: &[Planned]) -> Result<()> {
    let Some((spec, tmp)) = planned.iter().find_map(|p| Some((p.cfg.load.spec.as_ref()?, &p.cfg.load.tmpdir))) else {
        return Ok(());
    };
    let how = crate::runner::LoadStart { spec, tmp, deadline_s: 60, settle: Duration::ZERO, quiet: true };
    let started = crate::runner::start_load(session, &how);
    crate::runner::stop_load(session);
    started
}

/// What the cells left: the stored runs, the cells (indices) that failed and why, the signal
/// that ended the study early.
struct Ran {
    done: Vec<i64>,
    failed: Vec<(usize, String)>,
    signal: Option<i32>,
}

/// Runs the cells in order, switching the preemption model where a pass begins. A signal,
/// between two cells or during one, ends the study there and says which cells are missing. A
/// cell whose run fails is said and the study goes on: its run, if one was begun, stays stored
/// as `failed` with the reason.
fn run_planned(session: &Session, store: &mut Store, planned: &[Planned], settle: Duration) -> Result<Ran> {
    let mut ran = Ran { done: Vec::new(), failed: Vec::new(), signal: None };
    let mut model_now: Option<&str> = None;
    for (k, p) in planned.iter().enumerate() {
        if let Some(sig) = session.signal() {
            println!("study interrupted before cell {}; missing cells: {}", k + 1, names(&planned[k..]));
            ran.signal = Some(sig);
            return Ok(ran);
        }
        announce(planned, k, settle);
        if let Some(model) = p.model {
            if model_now != Some(model) {
                switch_model(session, model)?;
                println!("== preemption model '{model}' (label {})", p.cfg.storage.label);
                model_now = Some(model);
            }
        }
        let (id, outcome) = match crate::runner::run(&p.cfg, store) {
            Ok(ended) => ended,
            Err(e) => {
                println!("cell {} failed: {e:#}", k + 1);
                ran.failed.push((k, format!("{e:#}")));
                continue;
            }
        };
        ran.done.push(id);
        if let Outcome::Interrupted(sig) = outcome {
            println!("study interrupted: cell {} kept as run {id} (interrupted)", k + 1);
            if k + 1 < planned.len() {
                println!("missing cells: {}", names(&planned[k + 1..]));
            }
            ran.signal = Some(sig);
            return Ok(ran);
        }
    }
    Ok(ran)
}

/// "== cell 3 of 10: gtod idle for 0:01:00  (study time left …)"; a loaded cell's time counts
/// the load's settling and a second more.
fn announce(planned: &[Planned], k: usize, settle: Duration) {
    let per_cell_extra = settle + Duration::from_secs(1);
    let left: Duration = planned[k..]
        .iter()
        .map(|p| p.cell.duration + if p.cell.load == "none" { Duration::ZERO } else { per_cell_extra })
        .sum();
    let cell = planned[k].cell;
    println!(
        "== cell {} of {}: {} for {}  (study time left {})",
        k + 1,
        planned.len(),
        cell_name(cell),
        hms(cell.duration),
        hms(left)
    );
    let cfg = &planned[k].cfg;
    if cell.info.name == "pingpong" && cell.load != "none" {
        let shield = cfg.shield.as_deref().unwrap_or(&[]);
        let load: Vec<usize> = crate::sysinfo::online_cpus().into_iter().filter(|c| !shield.contains(c)).collect();
        let client = cfg.threads.first().and_then(|t| t.cpu);
        println!("   {}", shared_cpus(&load, client));
    }
}

/// Which CPUs a loaded ping-pong cell's load (unpinned, on `load`: the CPUs off the shield)
/// shares with each end: the client's measuring thread (on `client`, or unpinned) and the
/// study's echo server (unpinned). Under a hog, an end that shares the hog's CPU pays a
/// reschedule on every wake-up (issue 22), so the cell says where each end stood.
fn shared_cpus(load: &[usize], client: Option<usize>) -> String {
    let all = crate::units::format_cpu_list(load);
    let with_client = match client {
        Some(c) if load.contains(&c) => format!("CPU {c} with the client's measuring thread (pinned there)"),
        Some(c) => format!("no CPU with the client's measuring thread (pinned to CPU {c})"),
        None => format!("any of {all} with the client's measuring thread (unpinned)"),
    };
    format!("placement: the load runs unpinned on CPUs {all}; it shares {with_client} and any of {all} with the echo server (unpinned)")
}

/// "timer idle, timer load paper".
fn names(planned: &[Planned]) -> String {
    planned.iter().map(|p| cell_name(p.cell)).collect::<Vec<_>>().join(", ")
}

/// The last cell: the throughput price, idle, once per pass (under its preemption model).
fn sysbench_cells(session: &mut Session, store: &mut Store, passes: &[(String, Option<String>)]) -> Result<Vec<i64>> {
    let ops = crate::sysbench::ops();
    let all: Vec<&crate::sysbench::Op> = ops.iter().collect();
    let mut done = Vec::new();
    for (label, model) in passes {
        if let Some(model) = model.as_deref() {
            switch_model(session, model)?;
        }
        println!("== last cell: sysbench --quick, idle (label {label})");
        let cpu = Some(super::sysbench::default_cpu());
        let idle = crate::model::LoadRecord::idle();
        let pass =
            super::sysbench::Pass { method: crate::sysbench::Method::QUICK, cpu, label, load: &idle, fixed: None };
        let measured = super::sysbench::measure_into(session, store, &all, &pass)?;
        done.extend(&measured.ids);
        if session.signal().is_some() {
            break;
        }
    }
    Ok(done)
}

/// Appendix III of each pass on the terminal, then the report over every run the study stored.
fn report(a: &StudyConfig, store: &Store, done: &[i64], passes: &[(String, Option<String>)]) -> Result<()> {
    let runs = select::runs(store, &[], done, &super::catalog().probes)?;
    for (label, _) in passes {
        let these: Vec<_> = runs
            .iter()
            .filter(|r| r.label() == label && r.data.header.metric == crate::model::Metric::LATENCY)
            .collect();
        println!("\nAppendix III for label {label} (µs)");
        print!("{}", crate::report::page::tables::appendix_iii_text(&these));
    }
    let (latency, costs) = select::split(runs);
    // The answer in words, after the tables and before the report's path (issue 24).
    let baseline = a.gate.as_ref().map(|g| g.baseline.as_str());
    crate::report::select::fit_all(&latency);
    let mut findings = crate::report::findings::compute(&latency, &costs, baseline);
    let labels: Vec<&str> = passes.iter().map(|(label, _)| label.as_str()).collect();
    crate::report::findings::add_absent(&mut findings, &store.absent(&labels)?, &latency);
    print!("\n{}", crate::report::findings::text(&findings));
    // A study asked to stop still draws what it measured, within the 2 s a stop may take:
    // without the PNG copies (issue 29: 15 s of them after a SIGTERM).
    let stopping = || crate::session::signals::received().is_some();
    let Some(output) = &a.output else { return Ok(()) };
    let files = crate::report::page::write(output, &latency, &costs, &[], &super::catalog(), &findings, &stopping)?;
    if !crate::report::page::png::BUILT {
        println!(
            "report: {} ({} figures, as SVG only: built with --no-default-features)",
            files.index.display(),
            files.figures
        );
    } else if files.pngs < files.figures {
        println!(
            "report: {} ({} figures; {} without their PNG copy: stopped by a signal; `rtbench report` draws them)",
            files.index.display(),
            files.figures,
            files.figures - files.pngs
        );
    } else {
        println!("report: {} ({} figures)", files.index.display(), files.figures);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::shared_cpus;

    #[test]
    fn a_loaded_ping_pong_says_which_cpus_the_load_shares_with_each_end() {
        let pinned = shared_cpus(&[0, 1], Some(0));
        assert!(pinned.contains("on CPUs 0-1; it shares CPU 0 with the client's measuring thread"), "{pinned}");
        let shielded = shared_cpus(&[1], Some(0));
        assert!(shielded.contains("shares no CPU with the client's measuring thread (pinned to CPU 0)"), "{shielded}");
        assert!(shared_cpus(&[0, 1], None).contains("any of 0-1 with the client's measuring thread (unpinned)"));
    }
}
