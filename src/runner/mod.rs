//! The one driver of every measuring run: a [`Session`] (signals, guards for each system
//! change, the wait), measuring threads, and [`Sink`]s that take the checkpoints. Set up, start
//! threads, checkpoint every second, stop on time, loop count or signal, save, restore.

pub mod cpuwatch;
mod flow;
mod live;
mod phase;
pub mod preempt;
pub mod rt;
pub mod segment;
mod setup;
pub mod sink;
mod threads;
mod watchdog;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

pub use live::LoadView;
pub use phase::{load_progress, start_load, stop_load, LoadStart};

use crate::config::RunConfig;
use crate::instrument::Ending;
use crate::model::{attribute, EnvPoint, LoadRecord, LoadReport, RunKind, RunParams, StealFinding};
use crate::session::{Outcome, Session};
use crate::store::samplelog::SampleLogWriter;
use crate::store::{RunHead, RunWriter, Store};
use crate::sys;
use flow::{Flow, Sinks, ThreadTotals};
use segment::{Extras, Segments};
use setup::Setup;
use sink::{Fed, LiveSink, SampleLogSink, Sink, StoreSink};
use threads::Threads;

const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
const LIVE_EVERY: Duration = Duration::from_millis(100);
/// How long the end of a run waits for a store that cannot take its last checkpoint.
const FINAL_CHECKPOINT_WAIT: Duration = Duration::from_secs(10);
/// How long the measuring threads get to end once told to stop, beyond one step of their
/// probe, and then each after the one before: a probe that ignores the stop must not hold the
/// command for ever (issue 29), yet threads on a machine emulated on fewer CPUs than it has
/// are slow to end (see `Threads::wait_finished`).
const STOP_GRACE: Duration = Duration::from_secs(5);

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
    let mut setup = setup::set_up(cfg, &mut session)?;
    let cpus: Vec<Option<usize>> = cfg.threads.iter().map(|t| t.cpu).collect();
    if let Some(armed) = cfg.probe.arm(&cpus, &setup.collector.cpus)? {
        session.hold(armed);
    }
    setup.warnings.extend(extras.notes);
    // Memory stays flat over a long run: the store holds the history, not the process.
    store.limit_page_cache(256);
    // Only a run stored in windows has segments, each a monitor's window.
    let kind = if extras.window.is_some() { RunKind::MonitorWindow } else { RunKind::Probe };
    let writer = match extras.resume {
        Some(id) => RunWriter::resume(store, id, head(cfg, &setup, kind))?,
        None => RunWriter::begin(store, head(cfg, &setup, kind))?,
    };
    // The segment being written: the one a failure marks.
    let current = std::cell::Cell::new(writer.id());
    let segments = extras.window.map(|_| Segments {
        keep: extras.keep,
        threads: cfg.threads.to_vec(),
        watched: !cfg.info.synthetic,
    });
    let windows = Windows { every: extras.window, segments, sinks: extras.sinks };
    let result = drive(cfg, &mut session, writer, &current, setup, windows);
    // The session ends here: every system change it holds is put back.
    drop(session);
    match result {
        Ok(ended) => Ok(ended),
        // Stored as failed already, with all it measured.
        Err(e) if e.is::<ProbeFailed>() => Err(e),
        Err(e) => {
            // Whatever was checkpointed stays; the run says why it ended, waiting for another
            // writer's lock as long as any store operation does (a checkpoint waits less).
            store.set_busy_timeout(crate::store::LOCK_WAIT);
            let _ = store.mark_failed(current.get(), &format!("{e:#}"));
            Err(e)
        }
    }
}

/// What the stored run begins with (and each window after it).
fn head(cfg: &RunConfig, setup: &Setup, kind: RunKind) -> RunHead {
    RunHead {
        label: cfg.storage.label.clone(),
        probe: cfg.info.name.to_string(),
        kind,
        metric: cfg.info.metric,
        params: RunParams::Measured(setup.params.clone()),
        load: load_header(cfg),
        command_line: cfg.storage.command_line.clone(),
        rt_priority: setup.grant.rt_priority(),
        warnings: setup.warnings.clone(),
        system: setup.system.clone(),
        envelope_ns: cfg.storage.envelope_ns,
    }
}

/// Measures: starts the threads, checkpoints until the run ends, stops the load and the
/// threads, and saves the end.
fn drive(
    cfg: &RunConfig,
    session: &mut Session,
    writer: RunWriter,
    current: &std::cell::Cell<i64>,
    setup: Setup,
    windows: Windows,
) -> Result<(i64, Outcome)> {
    let budget_ns = setup.system.budget_ns();
    let Setup { grant, mut warnings, mut params, samples, admit, instruments, collector, .. } = setup;
    // When the threads were told to stop (CLOCK_MONOTONIC ns), 0 while they measure.
    let stop = Arc::new(AtomicU64::new(0));
    let _stop_on_error = StopOnDrop(Arc::clone(&stop));
    let start_ns = sys::now_ns();
    let started = Instant::now();
    // What the instruments ask of the threads goes with them, and no further: a watch held here
    // would keep open what an instrument closes when the run ends (a trace marker, and so the
    // instance it writes to).
    let (threads, totals) = {
        let ask = instruments.threads();
        threads::spawn(cfg, &threads::Start { grant: &grant, admit: admit.as_ref(), stop: &stop, start_ns, ask: &ask })?
    };
    // The runner's own work (checkpoints, the store's fsync, reading /proc) happens on the
    // collector's CPUs; the measuring threads (which inherit nothing of it) were started before.
    let _housekeeping = enter_housekeeping(&collector, &mut params, &mut warnings);
    let every = windows.every;
    let mut run = flow(cfg, writer, samples, windows, totals, (started, start_ns));
    run.instruments = instruments;
    run.follow((budget_ns, cfg.storage.envelope_ns));
    let outcome = measure(cfg, session, &mut run, &threads, Rolls { every, current })?;
    stop_now(&stop);
    let load = end_load(session, &mut warnings);
    let bound = STOP_GRACE + Duration::from_nanos(cfg.probe.step_ns());
    join(&mut run, threads, bound, &mut warnings)?;
    params.ran = run.ran();
    end_instruments(cfg, &mut run, &mut params);
    wind_up(&mut run)?;
    warnings.extend(run.sinks.warnings());
    let watched = run.watch.is_some();
    let instruments = std::mem::take(&mut run.instruments);
    let writer = run.sinks.store.into_inner().into_writer();
    let end = End { outcome, started, watched, load, params, warnings, instruments };
    save(cfg, writer, end)
}

/// Pins the main thread where the collector runs, and records where the kernel then lets it run.
fn enter_housekeeping(
    plan: &rt::CollectorPlan,
    params: &mut crate::model::MeasuredParams,
    warnings: &mut Vec<String>,
) -> rt::Housekeeping {
    let (held, cpus, problem) = rt::Housekeeping::enter(plan);
    params.collector = Some(plan.record(cpus));
    if let Some(p) = problem {
        eprintln!("rtbench: WARNING: {p}");
        warnings.push(p);
    }
    held
}

/// The sinks a run feeds: the sample log, the store's writer, the caller's, the live view.
fn flow<'s>(
    cfg: &RunConfig,
    writer: RunWriter<'s>,
    samples: Option<SampleLogWriter>,
    windows: Windows,
    totals: Vec<ThreadTotals>,
    (started, start_ns): (Instant, u64),
) -> Flow<'s> {
    let log = match (samples, &cfg.output.samples) {
        (Some(mut log), Some(path)) => {
            log.offset(writer.shift_ns());
            Some(Fed::new(SampleLogSink { log, path: path.clone() }))
        }
        _ => None,
    };
    let store = Fed::new(StoreSink::new(writer, windows.segments));
    let mut observers: Vec<Fed<Box<dyn Sink + 's>>> =
        windows.sinks.into_iter().map(|s| Fed::new(s as Box<dyn Sink>)).collect();
    let live = live::Live::new(cfg.output.quiet);
    let collect_every = if live.is_some() { LIVE_EVERY } else { CHECKPOINT_EVERY };
    if let Some(live) = live {
        observers.push(Fed::new(Box::new(LiveSink(live))));
    }
    // Synthetic samples keep a clock of their own: nothing on a real CPU lines up with them.
    let cpus: Vec<u32> = cfg.threads.iter().filter_map(|t| t.cpu).map(|c| c as u32).collect();
    let watch = (!cfg.info.synthetic).then(|| cpuwatch::CpuWatch::start(&cpus, cfg.storage.envelope_ns));
    let sinks = Sinks { log, store, observers };
    let (envelope, windows) = (Vec::new(), Vec::new());
    let duration = cfg.duration;
    Flow {
        totals,
        sinks,
        envelope,
        started,
        duration,
        start_ns,
        watch,
        windows,
        collect_every,
        counted: 0,
        instruments: Default::default(),
        probe: cfg.probe.clone(),
        held: Vec::new(),
        settled: Default::default(),
    }
}

/// The instruments' last word: a window of the last moments is still taken (before the
/// samples held are settled), then each settles what it holds and records what it found.
fn end_instruments(cfg: &RunConfig, run: &mut Flow, params: &mut crate::model::MeasuredParams) {
    run.service(&|thread| cpu_of(cfg, thread));
    run.end_instruments();
    run.instruments.record(params);
}

/// How the store's windows roll while a run measures.
struct Rolls<'a> {
    every: Option<Duration>,
    /// The segment being written.
    current: &'a std::cell::Cell<i64>,
}

/// The measuring part of the run: until its time or its loops are done, an instrument asks it
/// to end, or a stop signal comes, service the instruments, drain samples, collect, checkpoint
/// and roll windows.
fn measure(cfg: &RunConfig, session: &Session, run: &mut Flow, threads: &Threads, rolls: Rolls) -> Result<Outcome> {
    let collect_every = run.collect_every;
    let (mut last_collect, mut last_checkpoint, mut window_from) = (Instant::now(), Instant::now(), run.started);
    let (watching, start_ns) = (run.watch.is_some(), run.start_ns);
    // Nothing is due between collections and the ends of envelope intervals (when the CPUs'
    // counters are read): the runner sleeps until then, or until a thread ends or a signal comes.
    let pace = || {
        if watching {
            envelope_pace(sys::now_ns().saturating_sub(start_ns), cfg.storage.envelope_ns).min(collect_every)
        } else {
            collect_every
        }
    };
    // An instrument that asks for it ends the run once its window is stored.
    let asked_to_end = std::cell::Cell::new(false);
    let gap = cfg.probe.sample_gap_ns().map(Duration::from_nanos);
    let mut watchdog = watchdog::Watchdog::new(gap, cfg.duration.or(rolls.every));
    let started = run.started;
    session.wait_paced(
        started,
        cfg.duration,
        pace,
        || threads.all_ended() || asked_to_end.get(),
        || {
            if run.service(&|thread| cpu_of(cfg, thread)) && !asked_to_end.replace(true) {
                // Seen at the next wake, not a second from now.
                sys::wake();
            }
            run.watch_tick();
            run.drain_samples();
            if due(last_collect, collect_every) {
                last_collect = Instant::now();
                run.collect();
                watchdog.check(run.counted)?;
            }
            if due(last_checkpoint, CHECKPOINT_EVERY) {
                last_checkpoint = Instant::now();
                run.checkpoint();
            }
            if let Some(every) = rolls.every.filter(|w| window_from.elapsed() >= *w) {
                last_checkpoint = Instant::now();
                if let Some(next) = roll(run) {
                    rolls.current.set(next);
                    // On the grid from the start, to the slot holding now: a roll late by more
                    // than a window leaves no empty window behind.
                    while window_from.elapsed() >= every {
                        window_from += every;
                    }
                }
            }
            Ok(())
        },
    )
}

/// Closes the window right after a checkpoint that reached every sink, so the segment it ends
/// holds every sample collected; a store that could not take it or roll tries again next
/// second (None).
fn roll(run: &mut Flow) -> Option<i64> {
    // The window's samples still in the threads' buffers are its own: taken first, not left
    // to the next window (the window's grid and the collections' are not the same clock, and
    // a window closed just before a collection was stored empty).
    run.collect();
    run.checkpoint();
    if !run.sinks.all_current() {
        return None;
    }
    run.close_window(true)
}

/// The CPU of measuring thread `thread`.
fn cpu_of(cfg: &RunConfig, thread: u32) -> Option<usize> {
    cfg.threads.iter().find(|t| t.index == thread as usize).and_then(|t| t.cpu)
}

/// Stops the load the session holds and says what it did; None when measuring idle.
fn end_load(session: &mut Session, warnings: &mut Vec<String>) -> Option<LoadReport> {
    let (report, load_warnings) = stop_load(session)?;
    for w in &load_warnings {
        eprintln!("rtbench: WARNING: {w}");
    }
    warnings.extend(load_warnings);
    Some(report)
}

/// Waits up to `bound` for every measuring thread, taking all it hands over; a thread's
/// placement problem is a warning of the run. A thread still running then fails the run (its
/// checkpoints stay) and is left behind: it ends with the process.
fn join(run: &mut Flow, threads: Threads, bound: Duration, warnings: &mut Vec<String>) -> Result<()> {
    let stuck = threads.wait_finished(bound, || run.drain_samples());
    if !stuck.is_empty() {
        anyhow::bail!("measuring threads {stuck:?} did not stop within {:.1} s of being told to", bound.as_secs_f64());
    }
    for (i, h) in threads.handles.into_iter().enumerate() {
        let (last, problem) = h.join().map_err(|_| anyhow::anyhow!("a measuring thread panicked"))?;
        if let Some(p) = problem.filter(|p| !warnings.contains(p)) {
            warnings.push(p);
        }
        if let Some(buf) = run.totals[i].collector.drain() {
            run.merge(i, buf);
        }
        run.merge(i, last);
    }
    run.progress();
    Ok(())
}

/// The last checkpoint, which holds the whole run: a store that is full or locked gets time
/// to take it before the run gives up on it. Then the last window closes.
fn wind_up(run: &mut Flow) -> Result<()> {
    // The threads have ended: the interval of their last samples closes now.
    run.watch_tick();
    if let Some(w) = run.watch.as_mut() {
        w.finish();
    }
    run.checkpoint();
    let deadline = Instant::now() + FINAL_CHECKPOINT_WAIT;
    while !run.sinks.all_current() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        run.retry_checkpoint();
    }
    if !run.sinks.all_current() {
        anyhow::bail!("{}", run.sinks.warnings().join("; "));
    }
    run.close_window(false);
    Ok(())
}

/// What the end of a run stores besides its last checkpoint.
struct End {
    outcome: Outcome,
    started: Instant,
    /// Whether the CPUs' activity was recorded, to line steal time up with the latencies.
    watched: bool,
    load: Option<LoadReport>,
    params: crate::model::MeasuredParams,
    warnings: Vec<String>,
    /// Still armed: what they traced speaks of the stored run.
    instruments: crate::instrument::Armed,
}

/// Stores the end of the run: what the hypervisor took, what the load did, the probe's
/// findings, and how it ended.
fn save(cfg: &RunConfig, writer: RunWriter, end: End) -> Result<(i64, Outcome)> {
    let End { outcome, started, watched, load, mut params, mut warnings, instruments } = end;
    let ending = Ending { store: writer.store(), id: writer.id(), budget_ns: writer.head().system.budget_ns() };
    let said = instruments.unseen(&ending)?;
    let (traced, unseen) = (said.is_some(), said.flatten());
    if watched {
        match steal(writer.store(), writer.id(), &cfg.threads) {
            Ok(findings) => {
                // Where an instrument's trace saw the time the kernel did not, it says what
                // steal could not.
                for finding in findings.iter().filter(|f| !traced || !f.explains_none()) {
                    let w = finding.warning();
                    eprintln!("rtbench: WARNING: {w}");
                    warnings.push(w);
                }
            }
            Err(e) => warnings.push(format!("steal time could not be lined up with the latencies: {e:#}")),
        }
    }
    for w in unseen.into_iter().chain(instruments.warnings()) {
        eprintln!("rtbench: WARNING: {w}");
        warnings.push(w);
    }
    if let Some(report) = load {
        writer.set_load(&LoadRecord::Measured(report))?;
    }
    let asked = params.probe.clone();
    cfg.probe.findings(&mut params.probe);
    let failed = cfg.probe.failure();
    if params.probe != asked || !instruments.is_empty() || !params.ran.is_empty() {
        writer.set_params(&RunParams::Measured(params))?;
    }
    if let Outcome::Interrupted(sig) = outcome {
        warnings.push(format!(
            "{} {sig} after {:.1} s: statistics cover the samples taken until then",
            crate::store::INTERRUPTED,
            started.elapsed().as_secs_f64()
        ));
    }
    if let Some(why) = &failed {
        warnings.push(format!("the run failed: {why}"));
    }
    let status = if failed.is_some() { crate::model::RunStatus::Failed } else { outcome.status() };
    let id = writer.finish(status, &warnings)?;
    match failed {
        Some(why) => Err(ProbeFailed { id, why }.into()),
        None => Ok((id, outcome)),
    }
}

/// A run in which the probe saw the kernel fail its test (`pi`: a deadlock): stored as failed,
/// with everything it measured and why.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub struct ProbeFailed {
    pub id: i64,
    pub why: String,
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

/// What is stored about the load when the run begins; replaced by what it did at the end.
fn load_header(cfg: &RunConfig) -> LoadRecord {
    match &cfg.load.spec {
        None => LoadRecord::idle(),
        Some(spec) => spec.planned(cfg.load.settle),
    }
}

/// Tells the measuring threads to stop, now, unless they were told before.
fn stop_now(stop: &AtomicU64) {
    let _ = stop.compare_exchange(0, sys::now_ns().max(1), Ordering::SeqCst, Ordering::SeqCst);
}

/// Tells the measuring threads to stop however `drive` is left, an error included.
struct StopOnDrop(Arc<AtomicU64>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        stop_now(&self.0);
    }
}
