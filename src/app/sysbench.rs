//! `rtbench sysbench`: measures the operations asked for, each stored as its own run
//! (`sysbench.OP`) under the label and load, and prints them as LMbench's tables.

use std::fmt::Write;
use std::time::Duration;

use anyhow::Result;

use crate::cli::SysbenchArgs;
use crate::load::{LoadSession, LoadSpec};
use crate::model::{
    probe_part, LoadPlan, LoadRecord, LoadReport, MeasuredParams, Policy, RunKind, RunParams, RunStatus,
    SysbenchOpParams, SysbenchTotalParams, ThreadResult,
};
use crate::stats::Stats;
use crate::store::{self, NewRun};
use crate::sysbench::{self as sb, Group, Method, Op};

/// The probe name of an operation's runs.
pub fn probe_name(op: &str) -> String {
    format!("sysbench.{op}")
}

pub fn run(a: SysbenchArgs) -> Result<i32> {
    let all = sb::ops();
    if a.list {
        print!("{}", list(&all));
        return Ok(0);
    }
    let chosen = choose(&all, a.only.as_deref())?;
    if a.total {
        return total(&a, &chosen);
    }
    if a.baseline.is_some() {
        return Err(crate::invalid!("--baseline is for --total's % row; compare labels with rtbench compare"));
    }
    let cpu = pick_cpu(a.cpu)?;
    let flags = a.load.load_args.flags();
    let spec = LoadSpec::parse(&a.load.load, crate::config::load_options(&flags))?;
    let mut store = super::writable_store(&store::default_path(a.db.db.as_deref()))?;
    let label = a.label.clone().unwrap_or_else(crate::sysinfo::kernel_release);
    let method = if a.quick { Method::QUICK } else { Method::FULL };
    // What the load does is read over the measurement only, after its settling.
    let load = start_load(&spec, &flags, a.load.settle)?.map(|s| (s, crate::load::CpuSample::read()));
    let load_record = match &load {
        None => LoadRecord::idle(),
        Some(_) => LoadRecord::Planned(LoadPlan {
            profile: spec.profile.clone(),
            generators: spec.generators.iter().map(|g| g.name.clone()).collect(),
            settle_s: a.load.settle.as_secs_f64(),
        }),
    };
    let done = measure_into(&mut store, &chosen, method, cpu, &label, &load_record, None)?;
    if let Some((session, before)) = load {
        let after = crate::load::CpuSample::read();
        let (report, warnings) = crate::load::session_report(&spec, session.stop(), &before, &after);
        for w in &warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
        let report = LoadReport { settle_s: Some(a.load.settle.as_secs_f64()), ..report };
        for id in &done.ids {
            store.set_load(*id, &LoadRecord::Measured(report.clone()))?;
        }
    }
    print!("{}", tables(&done.results, &label));
    println!("stored {} operations as runs in {}", done.results.len(), store.path().display());
    if done.failed.is_empty() {
        Ok(0)
    } else {
        Err(anyhow::anyhow!("{} could not be measured: {}", done.failed.len(), done.failed.join(", ")))
    }
}

/// `--cpu`, checked, or the last online CPU.
fn pick_cpu(given: Option<usize>) -> Result<usize> {
    let online = crate::sysinfo::online_cpus();
    match given {
        Some(c) if !online.contains(&c) => Err(crate::invalid!(
            "--cpu {c} is not an online CPU (online: {})",
            crate::sysinfo::format_cpu_list(&online)
        )),
        Some(c) => Ok(c),
        None => Ok(default_cpu()),
    }
}

/// Starts `spec` and lets it settle; `None` when it is no load. Bounded: the load ends by
/// itself a quarter of an hour from now at the latest.
fn start_load(spec: &LoadSpec, flags: &crate::config::LoadFlags, settle: Duration) -> Result<Option<LoadSession>> {
    if spec.is_none() {
        return Ok(None);
    }
    let session = LoadSession::start(spec, &crate::config::tmp_dir(flags)?, 15 * 60)?;
    eprintln!("rtbench: load '{}' started; settling for {:.0} s", spec.profile, settle.as_secs_f64());
    std::thread::sleep(settle);
    Ok(Some(session))
}

/// Runs `f` with the calling thread (and the processes it forks) on `cpu` alone, as the seeds
/// ran LMbench; the thread's affinity comes back afterwards.
fn pinned<T>(cpu: usize, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let before = crate::sys::affinity().ok();
    crate::sys::set_affinity(&[cpu]).map_err(|e| anyhow::anyhow!("cannot pin to CPU {cpu}: {e}"))?;
    let result = f();
    if let Some(cpus) = before {
        let _ = crate::sys::set_affinity(&cpus);
    }
    result
}

/// What every sysbench run is stored with besides its samples.
struct Context<'a> {
    label: &'a str,
    cpu: usize,
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
    own: serde_json::Map<String, serde_json::Value>,
) -> Result<i64> {
    let mut stats = Stats::default();
    for &v in values {
        stats.record(v);
    }
    let params = MeasuredParams {
        threads: 1,
        cpus: vec![Some(cx.cpu)],
        policy: Policy::Other,
        priority: 0,
        mlock: false,
        loops: Some(values.len() as u64),
        duration_s: None,
        envelope_interval_ns: 1_000_000_000,
        samples_file: None,
        shield: None,
        breach: None,
        probe: own,
    };
    let id = store.begin(&NewRun {
        label: cx.label,
        probe,
        kind,
        metric,
        params: &RunParams::Measured(params),
        load: cx.load,
        command_line: cx.command_line,
        rt_priority: false,
        warnings: &[],
        system: cx.system,
        envelope_ns: 1_000_000_000,
    })?;
    store.checkpoint(id, &[ThreadResult { thread: 0, cpu: Some(cx.cpu as u32), stats }], &[], &[], &[])?;
    store.finish(id, RunStatus::Complete, &[])?;
    Ok(id)
}

/// The probe name of `--total`'s runs: one per load, its one sample the pass's wall time.
pub const TOTAL: &str = "sysbench.total";

/// `--total`: every chosen operation once per load, the wall time of each pass stored.
fn total(a: &SysbenchArgs, chosen: &[&Op]) -> Result<i32> {
    let baseline = a.baseline.clone().ok_or_else(|| {
        crate::invalid!("--total needs --baseline LABEL: the label its % row compares against (this label itself on a first kernel)")
    })?;
    let flags = a.load.load_args.flags();
    let mut loads = Vec::new();
    for item in a.loads.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(crate::invalid!("--loads '{}' has an empty entry", a.loads));
        }
        loads.push((item.to_string(), LoadSpec::parse(&item.replace('+', ","), crate::config::load_options(&flags))?));
    }
    let cpu = pick_cpu(a.cpu)?;
    let mut store = super::writable_store(&store::default_path(a.db.db.as_deref()))?;
    let label = a.label.clone().unwrap_or_else(crate::sysinfo::kernel_release);
    let method = if a.quick { Method::QUICK } else { Method::FULL };
    // The same work in every pass and on every kernel, or the times say nothing: the baseline's
    // iteration counts when it has a --total of its own, else those sized now.
    let work = match baseline_work(&store, &baseline)? {
        Some(w) => {
            println!("the work of each pass: the iteration counts of {baseline}'s --total");
            w
        }
        None => {
            println!("sizing the work of each pass on this machine (no --total of {baseline} yet)");
            pinned(cpu, || {
                Ok(chosen
                    .iter()
                    .map(|op| Ok((op.name.to_string(), sb::size_op(op, method.min_rep)?)))
                    .collect::<std::io::Result<Iterations>>()?)
            })?
        }
    };
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    for (item, spec) in &loads {
        let session = start_load(spec, &flags, a.load.settle)?;
        let record = if spec.is_none() { LoadRecord::idle() } else { LoadRecord::named(item) };
        println!("== sysbench under load {item}");
        let started = std::time::Instant::now();
        let done = measure_into(&mut store, chosen, method, cpu, &label, &record, Some(&work))?;
        let wall = started.elapsed();
        if let Some(s) = session {
            s.stop();
        }
        let counts: Iterations = done.results.iter().map(|(op, m)| (op.name.to_string(), m.iterations)).collect();
        let own = SysbenchTotalParams {
            load_item: item.clone(),
            baseline: baseline.clone(),
            operations: done.results.len(),
            iterations: counts,
        };
        let system = crate::sysinfo::snapshot();
        let cx = Context { label: &label, cpu, load: &record, system: &system, command_line: &command_line };
        let (sample, own) = ([wall.as_nanos() as u64], probe_part(&own)?);
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

/// The CPU sysbench pins to unless told: the last online one.
pub fn default_cpu() -> usize {
    *crate::sysinfo::online_cpus().last().unwrap_or(&0)
}

/// Iterations per repetition of each operation, by name.
pub type Iterations = std::collections::BTreeMap<String, u64>;

/// What [`measure_into`] measured and stored.
pub struct Done<'o> {
    pub results: Vec<(&'o Op, sb::Measured)>,
    pub ids: Vec<i64>,
    /// Operations that could not be measured here (said on stderr).
    pub failed: Vec<&'static str>,
}

/// Measures `ops` pinned to `cpu` and stores each as a run of `label` under `load`, with
/// `fixed` iterations per repetition where given.
pub fn measure_into<'o>(
    store: &mut crate::store::Store,
    ops: &[&'o Op],
    method: Method,
    cpu: usize,
    label: &str,
    load: &LoadRecord,
    fixed: Option<&Iterations>,
) -> Result<Done<'o>> {
    let system = crate::sysinfo::snapshot();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let cx = Context { label, cpu, load, system: &system, command_line: &command_line };
    pinned(cpu, || {
        let mut done = Done { results: Vec::new(), ids: Vec::new(), failed: Vec::new() };
        for &op in ops {
            let measured = match sb::measure(op, method, fixed.and_then(|f| f.get(op.name).copied())) {
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
                min_repetition_ms: method.min_rep.as_secs_f64() * 1e3,
            };
            let (probe, own) = (probe_name(op.name), probe_part(&own)?);
            let id = store_run(store, &cx, &probe, RunKind::SysbenchOp, op.metric(), &measured.values, own)?;
            done.ids.push(id);
            done.results.push((op, measured));
        }
        Ok(done)
    })
}

/// The operations `--only` names (groups or operations), in table order.
fn choose<'a>(all: &'a [Op], only: Option<&str>) -> Result<Vec<&'a Op>> {
    let Some(only) = only else { return Ok(all.iter().collect()) };
    let mut names: Vec<&str> = only.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    names.dedup();
    if names.is_empty() {
        return Err(crate::invalid!("--only '{only}' names nothing; try --list"));
    }
    for n in &names {
        if !all.iter().any(|o| o.name == *n || o.group.name() == *n) {
            return Err(crate::invalid!(
                "--only: unknown group or operation '{n}'; rtbench sysbench --list names them"
            ));
        }
    }
    Ok(all.iter().filter(|o| names.iter().any(|n| o.name == *n || o.group.name() == *n)).collect())
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

pub fn tables(results: &[(&Op, sb::Measured)], label: &str) -> String {
    let mut out = String::new();
    for g in Group::ALL {
        let rows: Vec<&(&Op, sb::Measured)> = results.iter().filter(|(o, _)| o.group == g).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} — {label}", g.title());
        let _ =
            writeln!(out, "  {:<16} {:>12} {:>12} {:>12} {:>11}", "operation", "median", "min", "max", "iterations");
        for (op, m) in rows {
            let f = |v: u64| sb::shown(op.bandwidth, v as f64);
            let _ = writeln!(
                out,
                "  {:<16} {:>12} {:>12} {:>12} {:>11}",
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
