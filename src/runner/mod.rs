//! The one driver of every measuring run: set up, start threads, checkpoint every second, stop
//! on time, loop count or signal, save, restore, summarise.

mod live;
pub mod rt;
pub mod signals;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::RunConfig;
use crate::load::{CpuSample, LoadSession};
use crate::model::{EnvPoint, LoadPlan, LoadRecord, LoadReport, RunParams, RunStatus, ThreadResult};
use crate::probe::ThreadCtx;
use crate::recorder::samplelog::SampleLogWriter;
use crate::recorder::{self, Buffer, Collector};
use crate::stats::Stats;
use crate::store::{NewRun, RawBatch, Store};
use crate::sys;

const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// Raw samples per thread kept in the store: a run this short is drawn sample by sample.
pub const RAW_IN_STORE: u64 = 2_000;
const LIVE_EVERY: Duration = Duration::from_millis(100);

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Interrupted(i32),
}

impl Outcome {
    pub fn status(self) -> RunStatus {
        match self {
            Outcome::Complete => RunStatus::Complete,
            Outcome::Interrupted(_) => RunStatus::Interrupted,
        }
    }

    /// 0, or 128 + the signal, as a shell reports it.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Complete => 0,
            Outcome::Interrupted(sig) => 128 + sig,
        }
    }
}

/// The runner's cumulative view of one thread.
struct ThreadTotals {
    index: usize,
    cpu: Option<usize>,
    stats: Stats,
    last: u64,
    collector: Collector,
    /// Raw samples taken for the store so far, and those not yet written.
    raw_kept: u64,
    raw_pending: Vec<(u64, u64)>,
}

/// Runs `cfg` to the end and stores it. Returns the run id and how it ended.
pub fn run(cfg: &RunConfig, store: &mut Store) -> Result<(i64, Outcome)> {
    // A peer that cannot be reached fails here, before any file is written.
    cfg.probe.prepare(cfg.threads.len())?;
    // From here on a Ctrl-C is a request to stop and save, even during the load's settling.
    let _signals = signals::Installed::new().context("could not install signal handlers")?;
    let mut samples = match &cfg.samples {
        Some(path) => Some(SampleLogWriter::create(path, cfg.probe.step_ns()).map_err(|e| {
            crate::error::InputError::Unwritable { path: path.display().to_string(), reason: e.to_string() }
        })?),
        None => None,
    };
    let load = start_load(cfg)?;
    let rt = rt::RtSetup::acquire(cfg.policy, cfg.priority, cfg.mlock);
    let warnings = if cfg.info.synthetic {
        vec!["synthetic samples from a seeded generator, not a measurement of this machine".to_string()]
    } else {
        for w in &rt.warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
        rt.warnings.clone()
    };
    let mut system = crate::sysinfo::snapshot();
    system.cpu_dma_latency_held = Some(rt.dma_latency_held());
    let params = RunParams::Measured(cfg.params());
    let id = store.begin(&NewRun {
        label: &cfg.label,
        probe: cfg.info.name,
        metric: cfg.info.metric,
        params: &params,
        load: &load_header(cfg),
        command_line: &cfg.command_line,
        rt_priority: rt.rt_priority(),
        warnings: &warnings,
        system: &system,
        envelope_ns: cfg.envelope_ns,
    })?;
    let result = drive(cfg, store, id, &rt, warnings, samples.as_mut(), load);
    drop(rt);
    match result {
        Ok(outcome) => Ok((id, outcome)),
        Err(e) => {
            // Whatever was checkpointed stays; the run says why it ended.
            let _ = store.mark_failed(id, &format!("{e:#}"));
            Err(e)
        }
    }
}

/// Starts the threads, checkpoints until the run ends, and saves the end.
fn drive(
    cfg: &RunConfig,
    store: &mut Store,
    id: i64,
    rt: &rt::RtSetup,
    mut warnings: Vec<String>,
    mut samples: Option<&mut SampleLogWriter>,
    load: Option<LoadSession>,
) -> Result<Outcome> {
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_error = StopOnDrop(Arc::clone(&stop));
    let before = CpuSample::read();
    let start_ns = sys::now_ns();
    let started = Instant::now();
    let mut totals = Vec::new();
    let mut handles = Vec::new();
    for plan in &cfg.threads {
        let raw = if cfg.samples.is_some() { recorder::Raw::All } else { recorder::Raw::First(RAW_IN_STORE) };
        let (mut rec, collector) = recorder::pair(cfg.envelope_ns, raw);
        totals.push(ThreadTotals {
            index: plan.index,
            cpu: plan.cpu,
            stats: Stats::default(),
            last: 0,
            collector,
            raw_kept: 0,
            raw_pending: Vec::new(),
        });
        let stop = Arc::clone(&stop);
        let probe = Arc::clone(&cfg.probe);
        let (policy, priority, loops, plan) = (rt.policy, rt.priority, cfg.loops.unwrap_or(u64::MAX), *plan);
        handles.push(std::thread::Builder::new().name(format!("rtbench-{}", plan.index)).spawn(move || {
            let problem = rt::enter_thread(plan.cpu, policy, priority);
            let mut ctx = ThreadCtx::new(&mut rec, plan.index, start_ns, loops, &stop);
            probe.run(&mut ctx);
            (rec.finish(), problem)
        })?);
    }

    let mut live = live::Live::new(cfg.quiet);
    let collect_every = if live.is_some() { LIVE_EVERY } else { CHECKPOINT_EVERY };
    let mut last_collect = Instant::now();
    let mut last_checkpoint = Instant::now();
    let mut pending_env: Vec<(u32, EnvPoint)> = Vec::new();
    let mut outcome = Outcome::Complete;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        drain_samples(&mut totals, samples.as_deref_mut())?;
        if let Some(sig) = signals::received() {
            outcome = Outcome::Interrupted(sig);
            break;
        }
        if cfg.duration.is_some_and(|d| started.elapsed() >= d) || handles.iter().all(|h| h.is_finished()) {
            break;
        }
        if last_collect.elapsed() >= collect_every {
            last_collect = Instant::now();
            collect(&mut totals, &mut pending_env, samples.as_deref_mut())?;
            if let Some(live) = live.as_mut() {
                live.draw(&rows(&totals), started.elapsed(), cfg.duration);
            }
        }
        if last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
            last_checkpoint = Instant::now();
            checkpoint(store, id, &mut totals, &mut pending_env, samples.as_deref_mut())?;
        }
    }

    stop.store(true, Ordering::SeqCst);
    let after = CpuSample::read();
    if let Some(session) = load {
        let spec = session.spec.clone();
        let generators = session.stop();
        let (report, load_warnings) = crate::load::session_report(&spec, generators, &before, &after);
        for w in &load_warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
        warnings.extend(load_warnings);
        let report = LoadReport { settle_s: Some(cfg.settle.as_secs_f64()), ..report };
        store.set_load(id, &LoadRecord::Measured(report))?;
    }
    // A thread may be waiting to hand over raw samples: keep draining until every one is done.
    while !handles.iter().all(|h| h.is_finished()) {
        drain_samples(&mut totals, samples.as_deref_mut())?;
        std::thread::sleep(Duration::from_millis(1));
    }
    for (t, h) in totals.iter_mut().zip(handles) {
        let (last, problem) = h.join().map_err(|_| anyhow::anyhow!("a measuring thread panicked"))?;
        if let Some(p) = problem {
            if !warnings.contains(&p) {
                warnings.push(p);
            }
        }
        if let Some(buf) = t.collector.drain() {
            merge(t, buf, &mut pending_env, samples.as_deref_mut())?;
        }
        merge(t, last, &mut pending_env, samples.as_deref_mut())?;
    }
    if let Some(live) = live.as_mut() {
        live.draw(&rows(&totals), started.elapsed(), cfg.duration);
    }
    checkpoint(store, id, &mut totals, &mut pending_env, samples)?;
    let findings = cfg.probe.findings();
    if !findings.is_empty() {
        let mut params = cfg.params();
        params.probe.extend(findings);
        store.set_params(id, &RunParams::Measured(params))?;
    }
    if let Outcome::Interrupted(sig) = outcome {
        warnings.push(format!(
            "interrupted by signal {sig} after {:.1} s: statistics cover the samples taken until then",
            started.elapsed().as_secs_f64()
        ));
    }
    store.finish(id, outcome.status(), &warnings)?;
    Ok(outcome)
}

/// Starts the configured load and lets it settle; `None` when measuring idle.
fn start_load(cfg: &RunConfig) -> Result<Option<LoadSession>> {
    let Some(spec) = &cfg.load else { return Ok(None) };
    // Bounded: every load process ends by itself a minute after the run was due to end.
    let deadline = cfg.duration.map_or(0, |d| (d + cfg.settle).as_secs() + 60);
    let session = LoadSession::start(spec, &cfg.tmpdir, deadline)?;
    if !cfg.quiet {
        eprintln!("rtbench: load '{}' started; settling for {:.0} s", spec.profile, cfg.settle.as_secs_f64());
    }
    std::thread::sleep(cfg.settle);
    Ok(Some(session))
}

/// What is stored about the load when the run begins; replaced by what it did at the end.
fn load_header(cfg: &RunConfig) -> LoadRecord {
    match &cfg.load {
        None => LoadRecord::idle(),
        Some(spec) => LoadRecord::Planned(LoadPlan {
            profile: spec.profile.clone(),
            generators: spec.generators.iter().map(|g| g.name.clone()).collect(),
            settle_s: cfg.settle.as_secs_f64(),
        }),
    }
}

/// Tells the measuring threads to stop however `drive` is left, an error included.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn rows(totals: &[ThreadTotals]) -> Vec<live::Row<'_>> {
    totals.iter().map(|t| live::Row { thread: t.index, cpu: t.cpu, stats: &t.stats, last_ns: t.last }).collect()
}

/// Swaps every thread's buffer out and merges it, without waiting for a sleeping thread.
fn collect(
    totals: &mut [ThreadTotals],
    env: &mut Vec<(u32, EnvPoint)>,
    mut samples: Option<&mut SampleLogWriter>,
) -> Result<()> {
    for t in totals.iter_mut() {
        t.collector.request();
    }
    for t in totals.iter_mut() {
        if let Some(buf) = t.collector.take(Duration::from_millis(5)) {
            merge(t, buf, env, samples.as_deref_mut())?;
        }
    }
    Ok(())
}

/// Takes the raw samples every thread has handed over so far: all of them to the sample log,
/// the first `RAW_IN_STORE` of each thread to the store at the next checkpoint.
fn drain_samples(totals: &mut [ThreadTotals], mut samples: Option<&mut SampleLogWriter>) -> Result<()> {
    for t in totals.iter_mut() {
        drain_thread_samples(t, samples.as_deref_mut())?;
    }
    Ok(())
}

fn drain_thread_samples(t: &mut ThreadTotals, mut samples: Option<&mut SampleLogWriter>) -> Result<()> {
    let thread = t.index as u32;
    let (kept, pending) = (&mut t.raw_kept, &mut t.raw_pending);
    t.collector
        .drain_samples(|chunk| {
            if let Some(log) = samples.as_deref_mut() {
                log.append(thread, chunk)?;
            }
            let take = (RAW_IN_STORE.saturating_sub(*kept) as usize).min(chunk.len());
            pending.extend_from_slice(&chunk[..take]);
            *kept += take as u64;
            Ok(())
        })
        .context("could not write the sample log")
}

fn merge(
    t: &mut ThreadTotals,
    buf: Box<Buffer>,
    env: &mut Vec<(u32, EnvPoint)>,
    samples: Option<&mut SampleLogWriter>,
) -> Result<()> {
    t.stats.merge(&buf.stats);
    if buf.stats.count > 0 {
        t.last = buf.last;
    }
    env.extend(buf.envelope.iter().map(|p| (t.index as u32, *p)));
    drain_thread_samples(t, samples)?;
    t.collector.recycle(buf);
    Ok(())
}

fn checkpoint(
    store: &mut Store,
    id: i64,
    totals: &mut [ThreadTotals],
    env: &mut Vec<(u32, EnvPoint)>,
    samples: Option<&mut SampleLogWriter>,
) -> Result<()> {
    if let Some(log) = samples {
        log.flush().context("could not write the sample log")?;
    }
    let threads: Vec<ThreadResult> = totals
        .iter()
        .map(|t| ThreadResult { thread: t.index as u32, cpu: t.cpu.map(|c| c as u32), stats: t.stats.clone() })
        .collect();
    let raw: Vec<RawBatch> = totals
        .iter()
        .map(|t| RawBatch {
            thread: t.index as u32,
            first_seq: t.raw_kept - t.raw_pending.len() as u64,
            samples: &t.raw_pending,
        })
        .collect();
    store.checkpoint(id, &threads, env, &raw)?;
    env.clear();
    for t in totals.iter_mut() {
        t.raw_pending.clear();
    }
    Ok(())
}
