//! Runs the checked settings of a command line (`cli::validate` builds them): each arm runs and
//! prints. Nothing here sees a flag.

mod compare;
mod kernels;
mod load;
mod monitor;
mod net;
mod resume;
mod study;
mod sysbench;
pub mod task;
#[cfg(test)]
mod tests;
mod watch;
mod wcet;

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use crate::config::*;
use crate::report::formats::export::{self, ExportOptions, Format};
use crate::report::text::show;
use crate::report::{findings, Catalog, OpNote, ProbeNote, Run};
use crate::stats::Stats;
use crate::store::Store;
use task::*;

/// Every kind of system change a killed rtbench can leave behind, each put back by the next
/// command: one line per kind (its [`crate::restore::Change`] says how); the instruments' and
/// the probes' kinds come from their registries, between the shield and the rest.
const REPLAY: &[fn() -> Vec<String>] = &[
    crate::restore::replay::<crate::runner::preempt::Switched>,
    crate::restore::replay::<crate::vm::group::Guest>,
    crate::restore::replay::<crate::vm::perf::Tuned>,
];

/// Every replay in the order the next command runs them: the shield, the instruments' in the
/// order a run ends them (the registry's, reversed), the probes', then [`REPLAY`].
fn replays() -> Vec<fn() -> Vec<String>> {
    let instruments = crate::instrument::REGISTRY.iter().rev().flat_map(|i| i.replay.iter().copied());
    let probes = crate::probe::REGISTRY.iter().flat_map(|p| p.replay.iter().copied());
    std::iter::once(crate::restore::replay::<crate::shield::Shielded> as fn() -> Vec<String>)
        .chain(instruments)
        .chain(probes)
        .chain(REPLAY.iter().copied())
        .collect()
}

/// Puts back what a killed rtbench left changed: every command does this first, before its
/// flags are checked, as it always did.
pub fn put_back_abandoned() {
    for replay in replays() {
        for said in replay() {
            eprintln!("rtbench: {said}");
        }
    }
}

/// A probe's subcommand: its server, or a measuring run.
fn probe(task: ProbeTask) -> Result<i32> {
    match task {
        ProbeTask::Serve { spec, opts } => net::serve(&spec, &opts),
        ProbeTask::Measure(cfg) => measure(cfg),
    }
}

/// Runs what the command line asks, checked; returns the process exit code.
pub fn run(cmd: Task) -> Result<i32> {
    // Commands that read the store and print (no sockets, no measurement) end quietly when the
    // reader of their output goes away, like any Unix filter; the others keep ignoring SIGPIPE
    // so a closed socket is an error to handle, not death.
    if matches!(
        cmd,
        Task::Runs(_)
            | Task::Show(_)
            | Task::Export(_)
            | Task::Wcet(_)
            | Task::Analyze(_)
            | Task::Audit(_)
            | Task::Compare(_)
            | Task::Report(ReportConfig { findings: Some(_), .. })
            | Task::Completions(_)
    ) {
        crate::sys::default_sigpipe();
    }
    match cmd {
        Task::Probe(call) => probe(call),
        Task::Load(a) => load::run(a),
        Task::Study(a) => study::run(a),
        Task::Audit(a) => audit(a),
        Task::Report(a) => report(a),
        Task::Compare(a) => compare::run(a),
        Task::Import(a) => import(a),
        Task::Merge(a) => merge(a),
        Task::LoadChild(c) => load_child(c),
        Task::Analyze(a) => analyze(a),
        Task::Runs(a) => runs(a),
        Task::Wcet(a) => wcet::run(a),
        Task::Sysbench(a) => sysbench::run(a),
        Task::Monitor(a) => monitor::run(a),
        Task::Kernels(a) => kernels::run(a),
        Task::Watch(a) => watch::run(a),
        Task::Resume(a) => resume::run(a),
        Task::Show(a) => show_run(a),
        Task::Export(a) => export_run(a),
        Task::Completions(script) => {
            print!("{script}");
            Ok(0)
        }
        Task::Man(a) => man(a),
    }
}

/// `rtbench __man DIR`: writes the rendered man pages.
fn man(a: ManConfig) -> Result<i32> {
    std::fs::create_dir_all(&a.dir).map_err(|e| crate::error::InputError::Unwritable {
        path: a.dir.display().to_string(),
        reason: e.to_string(),
    })?;
    for page in &a.pages {
        let path = a.dir.join(&page.file);
        crate::config::write_atomic(&path, &page.roff)?;
    }
    println!("wrote {} man pages to {}", a.pages.len(), a.dir.display());
    Ok(0)
}

/// `rtbench audit`: the findings, as a table or JSON; 1 under --strict when one is bad.
fn audit(a: AuditConfig) -> Result<i32> {
    let findings = crate::audit::run(&a.cpus);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json!({ "cpus": a.cpus, "findings": findings }))?);
    } else {
        print!("{}", crate::audit::render(&findings));
    }
    let bad = findings.iter().any(|f| f.severity == crate::model::Severity::Bad);
    Ok(if a.strict && bad { 1 } else { 0 })
}

/// `rtbench report`: figures, tables and index.html from the store.
fn report(a: ReportConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let started = std::time::Instant::now();
    let runs = crate::report::select::runs(&store, &a.labels, &a.runs, &catalog().probes)?;
    let count = runs.len();
    let (latency, costs) = crate::report::select::split(runs);
    let mut found = findings::given(&a.caveats);
    // The fits the findings and the figures share, on every CPU before either needs one.
    crate::report::select::fit_all(&latency);
    found.extend(findings::compute(&latency, &costs, None));
    let labels = crate::report::select::labels(latency.iter().chain(&costs));
    findings::add_absent(&mut found, &store.absent(&labels)?, &latency);
    match a.findings {
        Some(Output::Json) => {
            println!("{}", serde_json::to_string_pretty(&findings::Document { findings: &found })?);
            return Ok(0);
        }
        Some(Output::Text) => {
            print!("{}", findings::text(&found));
            return Ok(0);
        }
        None => {}
    }
    let monitors = crate::report::select::monitors(&store, &a.labels, &a.runs)?;
    let files = crate::report::page::write(&a.output, &latency, &costs, &monitors, &catalog(), &found, &|| false)?;
    println!(
        "report: {} ({} runs, {} figures, index.html {} KB, {:.2} s)",
        files.index.display(),
        count,
        files.figures,
        files.html_bytes / 1024,
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// `rtbench import`: a cyclictest file as a stored run.
fn import(a: ImportConfig) -> Result<i32> {
    let mut store = writable_store(&a.db)?;
    let id = crate::import::import(&mut store, &a.file, &a.label, &a.load)?;
    println!("imported '{}' as run {id}", a.file.display());
    Ok(0)
}

/// `rtbench merge`: the runs of another store.
fn merge(a: MergeConfig) -> Result<i32> {
    Store::mergeable(&a.other)?;
    let mut store = writable_store(&a.db)?;
    let (added, skipped) = store.merge(&a.other)?;
    println!("merged {added} runs from '{}' ({skipped} already here)", a.other.display());
    Ok(0)
}

/// The hidden commands a load runs as.
fn load_child(c: LoadChild) -> Result<i32> {
    match c.worker {
        None => crate::load::supervisor::run(&c.dir, &c.spec, c.deadline_s)?,
        Some(index) => crate::load::run_worker(&c.dir, &c.spec, index, c.deadline_s)?,
    }
    Ok(0)
}

/// `rtbench analyze`: statistics of a raw sample log.
fn analyze(a: AnalyzeConfig) -> Result<i32> {
    let result = crate::analyze::analyze(&a.file, a.salvage)?;
    if let Some(at) = result.truncated_at {
        eprintln!("rtbench: WARNING: the log is cut off at byte {at}; only the complete blocks before it were read");
    }
    let mut total = Stats::default();
    for s in result.threads.values() {
        total.merge(s);
    }
    if a.json {
        let threads: Vec<_> = result
            .threads
            .iter()
            .map(|(t, s)| {
                let mut v = serde_json::to_value(s.summary()).unwrap_or_default();
                v["thread"] = (*t).into();
                v
            })
            .collect();
        let doc = json!({ "threads": threads, "total": total.summary() });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let run = Run {
            header: analyzed_header(&a.file),
            threads: result
                .threads
                .into_iter()
                .map(|(thread, stats)| crate::model::ThreadResult { thread, cpu: None, stats, irq: None })
                .collect(),
            total,
            breaches: Vec::new(),
            gaps: Vec::new(),
            noise: Vec::new(),
        };
        print!("{}", show::percentile_table(&run));
    }
    Ok(0)
}

/// `rtbench runs`: the stored runs.
fn runs(a: RunsConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let runs = store.runs()?;
    let counts: Vec<u64> =
        runs.iter().map(|r| store.threads(r.id).map(|t| t.iter().map(|x| x.stats.count).sum()).unwrap_or(0)).collect();
    if a.json {
        let list: Vec<_> = runs
            .iter()
            .zip(&counts)
            .map(|(r, n)| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                v["samples"] = (*n).into();
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else if runs.is_empty() {
        println!("no runs in {}", store.path().display());
    } else {
        print!("{}", show::runs_table(&runs, &counts));
    }
    Ok(0)
}

/// `rtbench show RUN`: summary, worst intervals, worst case and breaches of one run.
fn show_run(a: ShowConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let run = store.run(a.run)?;
    print!("{}", show::summary(&run));
    let envelope = store.envelope(a.run)?;
    print!("{}", show::worst_intervals_table(&run, &envelope, &store.cpu_activity(a.run)?));
    if run.without_distribution().is_none() {
        print!("{}", wcet::brief(&run, &envelope));
    }
    print!("{}", show::breaches(&run));
    print!("{}", show::timerlat_analysis(&run));
    Ok(0)
}

/// `rtbench export RUN`: one run in another format.
fn export_run(a: ExportConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let run = store.run(a.run)?;
    let format = a.format;
    let (raw, irq) = match format {
        Format::Samples => (store.raw_samples(a.run)?, store.raw_irq(a.run)?),
        _ => (Vec::new(), Vec::new()),
    };
    let text = export::render(&run, format, &ExportOptions { buckets: a.buckets, raw, irq })?;
    match &a.output {
        Some(path) => crate::config::write_atomic(path, text.as_bytes())?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(0)
}

/// What reports know of the measuring side: the probes in registry order, sysbench's operations
/// in its table order.
fn catalog() -> Catalog {
    let probes = crate::probe::REGISTRY.iter().map(|p| ProbeNote { name: p.name, help: p.help }).collect();
    let ops = crate::sysbench::ops()
        .iter()
        .map(|o| OpNote { name: o.name, group: o.group, bandwidth: o.bandwidth })
        .collect();
    Catalog { probes, ops }
}

/// Opens the store for a command that adds runs. Runs whose rtbench was killed are stored as
/// aborted first; commands that only read show them so without writing.
pub(crate) fn writable_store(path: &std::path::Path) -> Result<Store> {
    let mut store = Store::open(path)?;
    store.recover_abandoned()?;
    Ok(store)
}

/// A header for statistics that come from a file rather than the store.
fn analyzed_header(path: &std::path::Path) -> crate::model::RunHeader {
    crate::model::RunHeader {
        id: 0,
        label: path.display().to_string(),
        probe: String::new(),
        kind: crate::model::RunKind::Probe,
        status: crate::model::RunStatus::Complete,
        start: String::new(),
        end: None,
        params: crate::model::RunParams::Unknown(json!({})),
        load: crate::model::LoadRecord::idle(),
        system: crate::model::SystemSnapshot::default(),
        rt_priority: false,
        warnings: vec![],
        command_line: String::new(),
        tool_version: String::new(),
        envelope_ns: 0,
        metric: crate::model::Metric::LATENCY,
    }
}

/// One measuring run from its checked settings to summary, JSON and histogram files.
fn measure(cfg: RunConfig) -> Result<i32> {
    let mut store = writable_store(&cfg.storage.db)?;
    match crate::runner::run(&cfg, &mut store) {
        Ok((id, outcome)) => print_run(&cfg, &store, id, outcome),
        // What it measured, then why it failed (its summary's last line says it too).
        Err(e) => match e.downcast_ref::<crate::runner::ProbeFailed>() {
            Some(failed) => {
                print_run(&cfg, &store, failed.id, crate::session::Outcome::Complete)?;
                eprintln!("rtbench: FAILED: {}", failed.why);
                Ok(1)
            }
            None => Err(e),
        },
    }
}

/// What a measuring run writes and prints at its end (its JSON and histogram files when asked,
/// its summary); returns its exit code.
fn print_run(cfg: &RunConfig, store: &Store, id: i64, outcome: crate::session::Outcome) -> Result<i32> {
    let run = store.run(id)?;
    if let Some(path) = &cfg.output.json {
        let text = serde_json::to_string_pretty(&export::document(&run))? + "\n";
        crate::config::write_atomic(path, text.as_bytes())?;
    }
    if let Some(buckets) = cfg.output.histogram_buckets {
        let text =
            export::render(&run, Format::CyclictestHist, &ExportOptions { buckets, raw: Vec::new(), irq: Vec::new() })?;
        match &cfg.output.histfile {
            Some(path) => crate::config::write_atomic(path, text.as_bytes())?,
            None => print!("{text}"),
        }
    }
    print!("{}", show::summary(&run));
    print!("{}", show::worst_intervals_table(&run, &store.envelope(id)?, &store.cpu_activity(id)?));
    print!("{}", show::breaches(&run));
    println!("stored as run {id} in {}", store.path().display());
    Ok(outcome.exit_code())
}
