//! The one driver of every measuring run: a [`Session`] (signals, guards for each system
//! change, the wait), measuring threads, and [`Sink`]s that take the checkpoints. Set up, start
//! threads, checkpoint every second, stop on time, loop count or signal, save, restore.

pub mod cpuwatch;
mod flow;
mod live;
pub mod preempt;
pub mod rt;
pub mod segment;
pub mod session;
pub mod signals;
pub mod sink;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

pub use live::LoadView;
pub use session::{Guard, Session};

use crate::config::RunConfig;
use crate::load::{CpuSample, LoadSession};
use crate::model::{
    attribute, BreachRecord, EnvPoint, LoadPlan, LoadRecord, LoadReport, RunParams, RunStatus, StealFinding,
};
use crate::probe::ThreadCtx;
use crate::recorder;
use crate::recorder::samplelog::SampleLogWriter;
use crate::stats::Stats;
use crate::store::{NewRun, Store};
use crate::sys;
use flow::{Flow, ThreadTotals};
use segment::{Extras, Header, Segments};
use sink::{Fed, LiveSink, SampleLogSink, StoreSink};

const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
const LIVE_EVERY: Duration = Duration::from_millis(100);
/// How long the end of a run waits for a store that cannot take its last checkpoint.
const FINAL_CHECKPOINT_WAIT: Duration = Duration::from_secs(10);

/// How a run, or any wait of a session, ended: its time or work was done, or a signal came.
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

/// Runs `cfg` to the end and stores it. Returns the run id and how it ended.
pub fn run(cfg: &RunConfig, store: &mut Store) -> Result<(i64, Outcome)> {
    run_with(cfg, store, Extras::default())
}

/// [`run`] with windows and sinks of the caller's. Returns the id of the last segment.
pub fn run_with(cfg: &RunConfig, store: &mut Store, extras: Extras) -> Result<(i64, Outcome)> {
    // A peer that cannot be reached fails here, before any file is written.
    cfg.probe.prepare(cfg.threads.len())?;
    // From here on a Ctrl-C is a request to stop and save, even during the load's settling.
    let mut session = Session::start()?;
    // Raised before the load starts, so the load's processes begin on the other CPUs.
    let mut shield_record = None;
    let mut shield_tasks = None;
    if let Some(cpus) = &cfg.shield {
        let shield = crate::shield::Shield::raise(cpus)?;
        shield_tasks = Some((shield.tasks_file(), shield.cpus().to_vec()));
        shield_record = Some(shield.record.clone());
        session.hold(shield);
    }
    // Armed before the load starts and the threads measure; removed when it drops at the end.
    let mut breach_skipped = None;
    let mut tracer = cfg.breach.and_then(|b| {
        let mut cpus: Vec<usize> = cfg.threads.iter().filter_map(|t| t.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        crate::trace::Tracer::arm(b, &cpus)
            .map_err(|why| {
                breach_skipped = Some(BreachRecord {
                    threshold_ns: b.threshold_ns,
                    max: b.max,
                    skipped: Some(why),
                    ..BreachRecord::default()
                })
            })
            .ok()
    });
    let samples = match &cfg.samples {
        Some(path) => Some(SampleLogWriter::create(path, cfg.probe.step_ns()).map_err(|e| {
            crate::error::InputError::Unwritable { path: path.display().to_string(), reason: e.to_string() }
        })?),
        None => None,
    };
    let load = start_load(cfg)?;
    let grant = rt::acquire(&mut session, cfg.policy, cfg.priority, cfg.mlock);
    let mut warnings = if cfg.info.synthetic {
        vec!["synthetic samples from a seeded generator, not a measurement of this machine".to_string()]
    } else {
        grant.warnings.clone()
    };
    warnings.extend(shield_record.as_ref().and_then(|r| r.warning()));
    if let Some(why) = breach_skipped.as_ref().and_then(|r| r.skipped.as_ref()) {
        warnings.push(format!("--breach: the run goes untraced: {why}"));
    }
    if !cfg.info.synthetic {
        for w in &warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
    }
    let mut params = cfg.params();
    params.shield = shield_record;
    params.breach = breach_skipped;
    let mut system = crate::sysinfo::snapshot();
    system.cpu_dma_latency_held = Some(grant.dma_latency_held);
    if !cfg.info.synthetic {
        let mut cpus: Vec<usize> = cfg.threads.iter().filter_map(|t| t.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        system.audit = Some(crate::audit::run(&cpus));
    }
    // Memory stays flat over a long run: the store holds the history, not the process.
    store.limit_page_cache(256);
    let id = store.begin(&NewRun {
        label: &cfg.label,
        probe: cfg.info.name,
        kind: if extras.window.is_some() { crate::model::RunKind::MonitorWindow } else { crate::model::RunKind::Probe },
        metric: cfg.info.metric,
        params: &RunParams::Measured(params.clone()),
        load: &load_header(cfg),
        command_line: &cfg.command_line,
        rt_priority: grant.rt_priority(),
        warnings: &warnings,
        system: &system,
        envelope_ns: cfg.envelope_ns,
    })?;
    let segments = extras.window.map(|_| Segments {
        header: Header {
            label: cfg.label.clone(),
            probe: cfg.info.name,
            metric: cfg.info.metric,
            params: RunParams::Measured(params.clone()),
            load: load_header(cfg),
            command_line: cfg.command_line.clone(),
            rt_priority: grant.rt_priority(),
            warnings: warnings.clone(),
            system: system.clone(),
            envelope_ns: cfg.envelope_ns,
        },
        keep: extras.keep,
        threads: cfg.threads.clone(),
        watched: !cfg.info.synthetic,
    });
    let windows = Windows { every: extras.window, segments, sinks: extras.sinks };
    // The segment being written: the one a failure marks.
    let current = std::cell::Cell::new(id);
    let result = drive(
        cfg,
        &session,
        store,
        &current,
        &grant,
        warnings,
        samples,
        load,
        shield_tasks,
        params,
        tracer.as_mut(),
        windows,
    );
    // The session ends here: every system change it holds is put back.
    drop(tracer);
    drop(session);
    match result {
        Ok(ended) => Ok(ended),
        Err(e) => {
            // Whatever was checkpointed stays; the run says why it ended.
            let _ = store.mark_failed(current.get(), &format!("{e:#}"));
            Err(e)
        }
    }
}

/// Starts the threads, checkpoints into the sinks until the run ends, and saves the end.
#[allow(clippy::too_many_arguments)]
fn drive(
    cfg: &RunConfig,
    session: &Session,
    store: &mut Store,
    current: &std::cell::Cell<i64>,
    grant: &rt::Grant,
    mut warnings: Vec<String>,
    samples: Option<SampleLogWriter>,
    load: Option<LoadSession>,
    shield: Option<(std::path::PathBuf, Vec<usize>)>,
    mut params: crate::model::MeasuredParams,
    mut tracer: Option<&mut crate::trace::Tracer>,
    windows: Windows,
) -> Result<(i64, Outcome)> {
    let mut id = current.get();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_error = StopOnDrop(Arc::clone(&stop));
    let before = CpuSample::read();
    let start_ns = sys::now_ns();
    let started = Instant::now();
    let mut totals = Vec::new();
    let mut handles = Vec::new();
    // Threads done measuring; they may still be handing over their last samples.
    let ended = Arc::new(AtomicUsize::new(0));
    for plan in &cfg.threads {
        let raw = if cfg.samples.is_some() { recorder::Raw::All } else { recorder::Raw::First(sink::RAW_IN_STORE) };
        let (mut rec, collector) = recorder::pair(cfg.envelope_ns, raw);
        if let Some(t) = tracer.as_deref() {
            rec.watch_breaches(t.threshold_ns(), t.sink(), plan.index as u32);
        }
        totals.push(ThreadTotals { index: plan.index, cpu: plan.cpu, stats: Stats::default(), last: 0, collector });
        let stop = Arc::clone(&stop);
        let ended = Arc::clone(&ended);
        let probe = Arc::clone(&cfg.probe);
        let (policy, priority, loops, plan) = (grant.policy, grant.priority, cfg.loops.unwrap_or(u64::MAX), *plan);
        // A thread on a shielded CPU enters the shield's cpuset first: only there may it pin.
        let admit =
            shield.as_ref().filter(|(_, cpus)| plan.cpu.is_some_and(|c| cpus.contains(&c))).map(|s| s.0.clone());
        handles.push(std::thread::Builder::new().name(format!("rtbench-{}", plan.index)).spawn(move || {
            if let Some(Err(e)) = admit.map(|file| crate::shield::enter(&file)) {
                let said = format!("thread {} measured nothing: it could not enter the shield: {e}", plan.index);
                ended.fetch_add(1, Ordering::SeqCst);
                sys::wake();
                return (rec.finish(), Some(said));
            }
            let entered = rt::enter_thread(plan.cpu, policy, priority);
            // A thread that cannot be on its CPU measures nothing rather than the wrong CPU;
            // the run goes on with the others.
            if let Some(why) = entered.unpinned {
                let said = format!("thread {} measured nothing: {why}", plan.index);
                ended.fetch_add(1, Ordering::SeqCst);
                sys::wake();
                return (rec.finish(), Some(said));
            }
            let mut ctx = ThreadCtx::new(&mut rec, plan.index, start_ns, loops, &stop);
            probe.run(&mut ctx);
            // The runner sleeps until something is due: an ended thread is.
            ended.fetch_add(1, Ordering::SeqCst);
            sys::wake();
            (rec.finish(), entered.problem)
        })?);
    }
    // The runner's own work (checkpoints, the store's fsync, reading /proc) happens off the
    // measured CPUs when there are others; the measuring threads were started before this.
    let _housekeeping = rt::Housekeeping::avoid(&cfg.threads.iter().map(|t| t.cpu).collect::<Vec<_>>());

    // The sample log is flushed before the store's checkpoint names the samples it holds.
    let mut sinks: Vec<Fed> = Vec::new();
    if let (Some(log), Some(path)) = (samples, &cfg.samples) {
        sinks.push(Fed::new(SampleLogSink { log, path: path.clone() }));
    }
    let store_at = sinks.len();
    let mut store_sink = StoreSink::new(store, id);
    store_sink.segments = windows.segments;
    sinks.push(Fed::new(store_sink));
    sinks.extend(windows.sinks.into_iter().map(Fed::new));
    let mut window_from = started;
    let live = live::Live::new(cfg.quiet);
    let collect_every = if live.is_some() { LIVE_EVERY } else { CHECKPOINT_EVERY };
    if let Some(live) = live {
        sinks.push(Fed::new(LiveSink(live)));
    }
    // Synthetic samples keep a clock of their own: nothing on a real CPU lines up with them.
    let cpus: Vec<u32> = cfg.threads.iter().filter_map(|t| t.cpu).map(|c| c as u32).collect();
    let watch = (!cfg.info.synthetic).then(|| cpuwatch::CpuWatch::start(&cpus, cfg.envelope_ns));
    let run_watching = watch.is_some();
    let mut run = Flow {
        totals,
        sinks,
        envelope: Vec::new(),
        started,
        duration: cfg.duration,
        start_ns,
        watch,
        breaches: Vec::new(),
    };
    let mut last_collect = Instant::now();
    let mut last_checkpoint = Instant::now();
    // Nothing is due between collections and the ends of envelope intervals (when the CPUs'
    // counters are read): the runner sleeps until then, or until a thread ends or a signal comes.
    let pace = || {
        if run_watching {
            envelope_pace(sys::now_ns().saturating_sub(start_ns), cfg.envelope_ns).min(collect_every)
        } else {
            collect_every
        }
    };
    let cpu_of = |thread: u32| cfg.threads.iter().find(|t| t.index == thread as usize).and_then(|t| t.cpu);
    // `--breach-stop` ends the run once its window is stored.
    let breach_stop = std::cell::Cell::new(false);
    let outcome = session.wait_paced(
        started,
        cfg.duration,
        pace,
        || ended.load(Ordering::SeqCst) == handles.len() || breach_stop.get(),
        || {
            if let Some(t) = tracer.as_deref_mut() {
                run.take_breach(t, &cpu_of);
                if t.stop && !breach_stop.replace(true) {
                    // Seen at the next wake, not a second from now.
                    sys::wake();
                }
            }
            run.watch_tick();
            run.drain_samples();
            if due(last_collect, collect_every) {
                last_collect = Instant::now();
                run.collect();
            }
            if due(last_checkpoint, CHECKPOINT_EVERY) {
                last_checkpoint = Instant::now();
                run.checkpoint();
            }
            // A window closes right after a checkpoint that reached every sink, so the segment
            // it ends holds every sample collected; a store that could not take it or roll
            // tries again next second.
            if let Some(every) = windows.every.filter(|w| window_from.elapsed() >= *w) {
                last_checkpoint = Instant::now();
                run.checkpoint();
                if run.sinks.iter().all(|s| s.current()) {
                    if let Some(next) = run.close_window(store_at, true) {
                        id = next;
                        current.set(next);
                        // On the grid from the start, to the slot holding now: a roll late by
                        // more than a window leaves no empty window behind.
                        while window_from.elapsed() >= every {
                            window_from += every;
                        }
                    }
                }
            }
            Ok(())
        },
    )?;

    stop.store(true, Ordering::SeqCst);
    let after = CpuSample::read();
    let mut load_report = None;
    if let Some(session) = load {
        let spec = session.spec.clone();
        let generators = session.stop();
        let (report, load_warnings) = crate::load::session_report(&spec, generators, &before, &after);
        for w in &load_warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
        warnings.extend(load_warnings);
        load_report = Some(LoadReport { settle_s: Some(cfg.settle.as_secs_f64()), ..report });
    }
    // A thread may be waiting to hand over raw samples: keep draining until every one is done.
    while !handles.iter().all(|h| h.is_finished()) {
        run.drain_samples();
        std::thread::sleep(Duration::from_millis(1));
    }
    for (i, h) in handles.into_iter().enumerate() {
        let (last, problem) = h.join().map_err(|_| anyhow::anyhow!("a measuring thread panicked"))?;
        if let Some(p) = problem {
            if !warnings.contains(&p) {
                warnings.push(p);
            }
        }
        if let Some(buf) = run.totals[i].collector.drain() {
            run.merge(i, buf);
        }
        run.merge(i, last);
    }
    run.progress();
    // A breach of the last moments is still taken.
    if let Some(t) = tracer {
        run.take_breach(t, &cpu_of);
        params.breach = Some(t.record());
    }
    // The threads have ended: the interval of their last samples closes now.
    run.watch_tick();
    if let Some(w) = run.watch.as_mut() {
        w.finish();
    }
    run.checkpoint();
    // The last checkpoint holds the whole run: a store that is full or locked gets time to
    // take it before the run gives up on it.
    let deadline = Instant::now() + FINAL_CHECKPOINT_WAIT;
    while !run.sinks.iter().all(|s| s.current()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        run.retry_checkpoint();
    }
    if !run.sinks.iter().all(|s| s.current()) {
        anyhow::bail!("{}", run.sinks.iter().filter_map(|s| s.warning()).collect::<Vec<_>>().join("; "));
    }
    run.close_window(store_at, false);
    warnings.extend(run.sinks.iter().filter_map(|s| s.warning()));
    let watched = run.watch.is_some();
    drop(run);
    if watched {
        match steal(store, id, &cfg.threads) {
            Ok(findings) => {
                for finding in findings {
                    let w = finding.warning();
                    eprintln!("rtbench: WARNING: {w}");
                    warnings.push(w);
                }
            }
            Err(e) => warnings.push(format!("steal time could not be lined up with the latencies: {e:#}")),
        }
    }
    if let Some(report) = load_report {
        store.set_load(id, &LoadRecord::Measured(report))?;
    }
    let findings = cfg.probe.findings();
    if !findings.is_empty() || params.breach.is_some() {
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
    Ok((id, outcome))
}

/// The windows of a run, as `drive` takes them from [`Extras`].
struct Windows {
    every: Option<Duration>,
    segments: Option<Segments>,
    sinks: Vec<Box<dyn sink::Sink + Send>>,
}

/// What steal time did on each measured CPU over a stored run (or a monitor's window), from
/// what the store holds of it: the runner keeps no history, so its memory stays flat however
/// long the run.
pub(super) fn steal(store: &Store, id: i64, threads: &[crate::config::ThreadPlan]) -> Result<Vec<StealFinding>> {
    let envelope = store.envelope(id)?;
    let activity = store.cpu_activity(id)?;
    let per_thread: Vec<(Option<u32>, Vec<EnvPoint>)> = threads
        .iter()
        .map(|t| {
            let points = envelope.iter().filter(|(i, _)| *i == t.index as u32).map(|(_, p)| *p).collect();
            (t.cpu.map(|c| c as u32), points)
        })
        .collect();
    let borrowed: Vec<(Option<u32>, &[EnvPoint])> = per_thread.iter().map(|(c, p)| (*c, p.as_slice())).collect();
    Ok(attribute(&borrowed, &activity))
}

/// Whether a step taken every `every` is due again since `last`. The runner wakes at envelope
/// boundaries, not exactly `every` after the last step: a wake-up a little early counts.
fn due(last: Instant, every: Duration) -> bool {
    last.elapsed() + every / 10 >= every
}

/// From time offset `t_ns`, how long until just after the current envelope interval ends.
fn envelope_pace(t_ns: u64, interval_ns: u64) -> Duration {
    // Read a little after the boundary, so the counters cover the whole interval.
    const LATE_NS: u64 = 1_000_000;
    let interval = interval_ns.max(1);
    Duration::from_nanos(interval - t_ns % interval + LATE_NS)
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
