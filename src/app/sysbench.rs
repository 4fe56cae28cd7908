//! `rtbench sysbench`: measures the operations asked for, each stored as its own run
//! (`sysbench.OP`) under the label and load, and prints them as LMbench's tables.

use std::fmt::Write;
use std::time::Duration;

use anyhow::Result;

use super::task::{SysbenchConfig, SysbenchMode, SysbenchRun};
use crate::load::LoadSpec;
use crate::model::{
    LoadRecord, MeasuredParams, Policy, ProbeParams, RunKind, RunParams, SysbenchOpParams, SysbenchTotalParams,
    ThreadResult,
};
use crate::runner::rt::Pinned;
use crate::runner::LoadStart;
use crate::session::Session;
use crate::stats::Stats;
use crate::store::{RunHead, RunWriter};
use crate::sysbench::{self as sb, Group, Method, Op};

/// The probe name of an operation's runs.
pub fn probe_name(op: &str) -> String {
    format!("sysbench.{op}")
}

pub fn run(a: SysbenchConfig) -> Result<i32> {
    let all = sb::ops();
    let a = match a {
        SysbenchConfig::List => {
            print!("{}", list(&all));
            return Ok(0);
        }
        SysbenchConfig::Measure(a) => a,
    };
    let chosen: Vec<&Op> = all.iter().filter(|o| a.ops.contains(&o.name)).collect();
    let spec = match &a.mode {
        SysbenchMode::Total { baseline, loads } => return total(&a, baseline, loads, &chosen),
        SysbenchMode::Once { load } => load,
    };
    let cpu = a.cpu;
    let flags = &a.load_flags;
    let mut store = super::writable_store(&a.db)?;
    let label = a.label.clone();
    let method = if a.quick { Method::QUICK } else { Method::FULL };
    // The load, the pinning and the signals are the session's: a Ctrl-C stops between two
    // operations and keeps those measured.
    let mut session = Session::start()?;
    let load_record = if spec.is_none() {
        LoadRecord::idle()
    } else {
        start_load(&mut session, spec, flags, a.settle)?;
        spec.planned(a.settle)
    };
    let pass = Pass { method, cpu, label: &label, load: &load_record, fixed: None };
    let done = measure_into(&mut session, &mut store, &chosen, &pass)?;
    if let Some((report, warnings)) = crate::runner::stop_load(&mut session) {
        for w in &warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
        for id in &done.ids {
            store.set_load(*id, &LoadRecord::Measured(report.clone()))?;
        }
    }
    print!("{}", tables(&done.results, &label, cpu));
    println!("stored {} operations as runs in {}", done.results.len(), store.path().display());
    if let Some(sig) = session.signal() {
        println!("interrupted by signal {sig}: the operations measured until then are stored");
        Ok(128 + sig)
    } else if done.failed.is_empty() {
        Ok(0)
    } else {
        Err(anyhow::anyhow!("{} could not be measured: {}", done.failed.len(), done.failed.join(", ")))
    }
}

/// Starts `spec` in `session` and lets it settle. Bounded: the load ends by itself a quarter
/// of an hour from now at the latest.
fn start_load(
    session: &mut Session,
    spec: &LoadSpec,
    flags: &crate::config::LoadFlags,
    settle: Duration,
) -> Result<()> {
    let tmp = crate::config::tmp_dir(flags)?;
    let how = LoadStart { spec, tmp: &tmp, deadline_s: 15 * 60, settle, quiet: false };
    crate::runner::start_load(session, &how)
}

/// Pins the calling thread (and the processes it forks) to `cpu` for as long as `session`
/// holds it; unpinned (None) leaves it where it is.
fn pin(session: &mut Session, cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = cpu else { return Ok(()) };
    let pinned = Pinned::to(cpu).map_err(|e| anyhow::anyhow!("cannot pin to CPU {cpu}: {e}"))?;
    session.hold(pinned);
    Ok(())
}

/// What every sysbench run is stored with besides its samples.
struct Context<'a> {
    label: &'a str,
    cpu: Option<usize>,
    load: &'a LoadRecord,
    system: &'a crate::model::SystemSnapshot,
    command_line: &'a str,
}

/// Stores one finished run of `values` as `probe` of `kind`, with the sysbench parameters `own`.
fn store_run(
    store: &mut crate::store::Store,
    cx: &Context,
    probe: &str,
    kind: RunKind,
    metric: crate::model::Metric,
    values: &[u64],
    own: ProbeParams,
) -> Result<i64> {
    let mut stats = Stats::default();
    for &v in values {
        stats.record(v);
    }
    let params = MeasuredParams {
        loops: Some(values.len() as u64),
        ..MeasuredParams::one_thread(cx.cpu, Policy::Other, 0, own)
    };
    let head = RunHead {
        label: cx.label.to_string(),
        probe: probe.to_string(),
        kind,
        metric,
        params: RunParams::Measured(params),
        load: cx.load.clone(),
        command_line: cx.command_line.to_string(),
        rt_priority: false,
        warnings: Vec::new(),
        system: cx.system.clone(),
        envelope_ns: 1_000_000_000,
    };
    RunWriter::whole(store, head, &[ThreadResult { thread: 0, cpu: cx.cpu.map(|c| c as u32), stats, irq: None }])
}

/// The probe name of `--total`'s runs: one per load, its one sample the pass's wall time.
pub const TOTAL: &str = "sysbench.total";

/// `--total`: every chosen operation once per load, the wall time of each pass stored.
fn total(a: &SysbenchRun, baseline: &str, loads: &[(String, LoadSpec)], chosen: &[&Op]) -> Result<i32> {
    let flags = &a.load_flags;
    let cpu = a.cpu;
    let mut store = super::writable_store(&a.db)?;
    let label = a.label.clone();
    let method = if a.quick { Method::QUICK } else { Method::FULL };
    let mut session = Session::start()?;
    // The same work in every pass and on every kernel, or the times say nothing: the baseline's
    // iteration counts when it has a --total of its own, else those sized now.
    let work = match baseline_work(&store, baseline)? {
        Some(w) => {
            println!("the work of each pass: the iteration counts of {baseline}'s --total");
            w
        }
        None => {
            println!("sizing the work of each pass on this machine (no --total of {baseline} yet)");
            pin(&mut session, cpu)?;
            let sized: std::io::Result<Iterations> =
                chosen.iter().map(|op| Ok((op.name.to_string(), sb::size_op(op, method.min_rep)?))).collect();
            session.release::<Pinned>();
            sized?
        }
    };
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    for (item, spec) in loads {
        if !spec.is_none() {
            start_load(&mut session, spec, flags, a.settle)?;
        }
        let record = if spec.is_none() { LoadRecord::idle() } else { LoadRecord::named(item) };
        println!("== sysbench under load {item}");
        let started = std::time::Instant::now();
        let pass = Pass { method, cpu, label: &label, load: &record, fixed: Some(&work) };
        let done = measure_into(&mut session, &mut store, chosen, &pass)?;
        let wall = started.elapsed();
        crate::runner::stop_load(&mut session);
        if let Some(sig) = session.signal() {
            // A pass cut short is no total: its operations are stored, its time is not.
            println!("interrupted by signal {sig} in the pass under {item}: its total is not stored");
            return Ok(128 + sig);
        }
        let counts: Iterations = done.results.iter().map(|(op, m)| (op.name.to_string(), m.iterations)).collect();
        let own = SysbenchTotalParams {
            load_item: item.clone(),
            baseline: baseline.to_string(),
            operations: done.results.len(),
            iterations: counts,
        };
        let system = crate::sysinfo::snapshot();
        let cx = Context { label: &label, cpu, load: &record, system: &system, command_line: &command_line };
        let (sample, own) = ([wall.as_nanos() as u64], ProbeParams::SysbenchTotal(own));
        store_run(&mut store, &cx, TOTAL, RunKind::SysbenchTotal, crate::model::Metric::LATENCY, &sample, own)?;
        rows.push((item.clone(), wall));
    }
    println!("\ntotal time of {} operations per load ({label}; baseline {baseline})", chosen.len());
    for (item, wall) in &rows {
        println!("  {item:<20} {:>9.2} s", wall.as_secs_f64());
    }
    Ok(0)
}

/// The iteration counts of the newest `--total` pass of `label`, if it has one.
fn baseline_work(store: &crate::store::Store, label: &str) -> Result<Option<Iterations>> {
    let newest = store.runs()?.into_iter().rev().find(|h| h.label == label && h.kind == RunKind::SysbenchTotal);
    Ok(newest.and_then(|h| h.sysbench_total()).map(|p| p.iterations))
}

pub use crate::sysbench::default_cpu;

/// Iterations per repetition of each operation, by name.
pub type Iterations = std::collections::BTreeMap<String, u64>;

/// What [`measure_into`] measured and stored.
pub struct Done<'o> {
    pub results: Vec<(&'o Op, sb::Measured)>,
    pub ids: Vec<i64>,
    /// Operations that could not be measured here (said on stderr).
    pub failed: Vec<&'static str>,
}

/// How one pass of sysbench measures and stores its operations.
pub struct Pass<'a> {
    pub method: Method,
    /// The CPU the pass is pinned to; None: unpinned.
    pub cpu: Option<usize>,
    pub label: &'a str,
    pub load: &'a LoadRecord,
    /// Iterations per repetition of each operation, where fixed (`--total`).
    pub fixed: Option<&'a Iterations>,
}

/// Measures `ops` pinned to the pass's CPU and stores each as a run of its label under its
/// load. A stop signal ends the pass after the operation it interrupted; those measured stay.
pub fn measure_into<'o>(
    session: &mut Session,
    store: &mut crate::store::Store,
    ops: &[&'o Op],
    pass: &Pass,
) -> Result<Done<'o>> {
    let system = crate::sysinfo::snapshot();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let cx =
        Context { label: pass.label, cpu: pass.cpu, load: pass.load, system: &system, command_line: &command_line };
    pin(session, pass.cpu)?;
    let mut done = Done { results: Vec::new(), ids: Vec::new(), failed: Vec::new() };
    for &op in ops {
        if session.signal().is_some() {
            break;
        }
        let measured = match sb::measure(op, pass.method, pass.fixed.and_then(|f| f.get(op.name).copied())) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("rtbench: sysbench {}: {e}", op.name);
                done.failed.push(op.name);
                continue;
            }
        };
        let own = SysbenchOpParams {
            op: op.name.into(),
            group: op.group.name().into(),
            iterations: measured.iterations,
            min_repetition_ms: pass.method.min_rep.as_secs_f64() * 1e3,
            image: measured.image.clone(),
        };
        let (probe, own) = (probe_name(op.name), ProbeParams::SysbenchOp(own));
        let id = store_run(store, &cx, &probe, RunKind::SysbenchOp, op.metric(), &measured.values, own)?;
        done.ids.push(id);
        done.results.push((op, measured));
    }
    session.release::<Pinned>();
    Ok(done)
}

fn list(all: &[Op]) -> String {
    let mut out = String::new();
    for g in Group::ALL {
        let _ = writeln!(out, "{} — {}", g.name(), g.title());
        for o in all.iter().filter(|o| o.group == g) {
            let _ = writeln!(out, "  {:<16} {}", o.name, o.help);
        }
    }
    out
}

/// LMbench's tables of `results`: a row per operation, and the process image a fork row
/// forked from (with its mark, if any) after it.
pub fn tables(results: &[(&Op, sb::Measured)], label: &str, cpu: Option<usize>) -> String {
    let mut out = String::new();
    for g in Group::ALL {
        let rows: Vec<&(&Op, sb::Measured)> = results.iter().filter(|(o, _)| o.group == g).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} — {label}, {}", g.title(), crate::model::placement(cpu));
        let image = if rows.iter().any(|(_, m)| m.image.is_some()) { "  process image" } else { "" };
        let _ = writeln!(
            out,
            "  {:<16} {:>12} {:>12} {:>12} {:>11}{image}",
            "operation", "median", "min", "max", "iterations"
        );
        for (op, m) in rows {
            let f = |v: u64| crate::model::op_shown(op.bandwidth, v as f64);
            let image = m.image.as_ref().map_or(String::new(), |i| format!("  {}", i.describe()));
            let _ = writeln!(
                out,
                "  {:<16} {:>12} {:>12} {:>12} {:>11}{image}",
                op.name,
                f(m.median()),
                f(m.min()),
                f(m.max()),
                m.iterations
            );
        }
    }
    out
}
