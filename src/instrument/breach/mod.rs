//! `--breach US`: an ftrace instance of rtbench's own on the measured CPUs, armed for the whole
//! run. A measuring thread whose sample crosses the threshold writes a marker into the trace
//! and raises a flag ([`BreachSink`]); the runner then stops the buffer, keeps the window
//! around the breach with what delayed the thread ([`attribute`]), and traces on, up to
//! `--breach-max` windows.

mod attribute;
mod terms;

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::instrument::{
    Ask, Ending, Instrument, InstrumentArgs, InstrumentFlags, InstrumentInfo, Offer, Request, Service, Serviced,
    Settings, ThreadAsk,
};
use crate::model::{Breach, BreachRecord, MeasuredParams, TraceEvent};
use crate::recorder::BreachWatch;

/// `--breach`, as the instruments' registry lists it.
pub const INFO: InstrumentInfo = InstrumentInfo {
    name: "breach",
    flag: "--breach",
    needs: Offer::KernelSamples,
    does: "traces the kernel",
    lacks: "come from no kernel",
    root_why: Some("it traces the kernel with ftrace"),
    // The same flags in the study: it traces only where a threshold is given.
    flags: InstrumentFlags::of::<BreachFlags, BreachFlags>(),
    replay: &[crate::restore::replay::<crate::trace::Traced>],
    arm: |a| match a.settings.get::<BreachOptions>() {
        Some(b) => Tracer::arm(*b, a.cpus).map(|t| Box::new(t) as Box<dyn Instrument>),
        None => Err("no threshold was given".into()),
    },
    skipped: |a, why, params| {
        let (w, b) = (format!("--breach: the run goes untraced: {why}"), options(&a.settings));
        params.breach =
            Some(BreachRecord { threshold_ns: b.threshold_ns, max: b.max, skipped: Some(why), ..Default::default() });
        w
    },
    resumed: |m| {
        let b = m.breach.as_ref().filter(|b| b.skipped.is_none())?;
        let settings = Settings::new(BreachOptions { threshold_ns: b.threshold_ns, max: b.max, stop: false });
        Some(Request { name: "breach", ask: Ask::Asked, settings })
    },
};

/// The breach tracer's settings, as the run asked for it (none: no threshold, no window).
fn options(settings: &Settings) -> BreachOptions {
    settings.get::<BreachOptions>().copied().unwrap_or(BreachOptions { threshold_ns: 0, max: 0, stop: false })
}

/// `--breach`: trace the system and name what delayed a sample over a threshold.
#[derive(clap::Args, Debug)]
pub struct BreachFlags {
    /// Trace the measured CPUs with ftrace and, for every sample over this latency (a bare
    /// number is µs), store the window around it and name what delayed the thread (needs root;
    /// measuring goes on)
    #[arg(long, value_parser = |s: &str| crate::parse::latency_ns(s, "us"), value_name = "US")]
    pub breach: Option<u64>,
    /// The most breach windows stored per run
    #[arg(long, value_parser = crate::parse::positive, default_value = "10", value_name = "N", requires = "breach")]
    pub breach_max: u64,
    /// End the run after the first breach window is stored
    #[arg(long, requires = "breach")]
    pub breach_stop: bool,
}

impl InstrumentArgs for BreachFlags {
    fn request(self) -> Option<Request> {
        let max = self.breach_max.min(u32::MAX as u64) as u32;
        let options = |threshold_ns| BreachOptions { threshold_ns, max, stop: self.breach_stop };
        let settings = Settings::new(options(self.breach?));
        Some(Request { name: INFO.name, ask: Ask::Asked, settings })
    }
}
use crate::trace::ftrace::owned::Owned;
use crate::trace::ftrace::{instance, parse};
use crate::trace::policy_of;

/// `--breach`: the threshold over which a sample's window is traced and kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreachOptions {
    pub threshold_ns: u64,
    /// The most windows stored.
    pub max: u32,
    /// End the run after the first stored window.
    pub stop: bool,
}

/// The most events a stored window keeps.
const WINDOW_EVENTS: usize = 5_000;

/// The measuring threads' side: one compare in the hot loop, and on a breach a marker and a
/// flag. One breach at a time: while the runner takes a window, others are only counted.
pub struct BreachSink {
    armed: AtomicBool,
    pending: AtomicBool,
    thread: AtomicU32,
    t_ns: AtomicU64,
    latency_ns: AtomicU64,
    untraced: AtomicU64,
    marker: File,
}

impl BreachWatch for BreachSink {
    fn breached(&self, thread: u32, t_ns: u64, latency_ns: u64) {
        if self.armed.compare_exchange(true, false, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            self.untraced.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.thread.store(thread, Ordering::Relaxed);
        self.t_ns.store(t_ns, Ordering::Relaxed);
        self.latency_ns.store(latency_ns, Ordering::Relaxed);
        // Formatted on the stack: no allocation on a measuring thread.
        let mut buf = [0u8; 96];
        let len = {
            let mut w = &mut buf[..];
            let _ = write!(w, "rtbench breach thread={thread} t={t_ns} latency={latency_ns}");
            96 - w.len()
        };
        let _ = (&self.marker).write(&buf[..len]);
        self.pending.store(true, Ordering::Release);
        crate::sys::wake();
    }
}

/// The runner's side: the instance, its journal, and the windows taken.
pub struct Tracer {
    opts: BreachOptions,
    /// Dropped before the instance: the marker must be closed before the kernel lets the
    /// instance go.
    sink: Option<Arc<BreachSink>>,
    owned: Owned,
    traced: u32,
    /// Set once `--breach-stop` has its window.
    pub stop: bool,
}

impl Tracer {
    /// Sets up tracing of `cpus`; `Err` says why the run goes untraced.
    pub fn arm(opts: BreachOptions, cpus: &[usize]) -> Result<Tracer, String> {
        if !crate::sys::is_root() {
            return Err("tracing needs root".into());
        }
        let name = format!("rtbench-{}", std::process::id());
        let kb = instance::buffer_kb(opts.threshold_ns);
        let owned = Owned::make(&name, |t| t, |root| instance::Instance::create(root, &name, cpus, kb))?;
        // Dropping `owned` removes the instance again.
        let marker = owned.instance.marker().map_err(|e| format!("cannot set up the trace instance: {e}"))?;
        let sink = BreachSink {
            armed: AtomicBool::new(true),
            pending: AtomicBool::new(false),
            thread: AtomicU32::new(0),
            t_ns: AtomicU64::new(0),
            latency_ns: AtomicU64::new(0),
            untraced: AtomicU64::new(0),
            marker,
        };
        Ok(Tracer { opts, sink: Some(Arc::new(sink)), owned, traced: 0, stop: false })
    }

    pub fn threshold_ns(&self) -> u64 {
        self.opts.threshold_ns
    }

    /// What the measuring threads call on a breach.
    pub fn sink(&self) -> Arc<dyn BreachWatch> {
        Arc::clone(self.sink.as_ref().expect("the sink lives as long as the tracer")) as Arc<dyn BreachWatch>
    }

    /// Takes the window of a pending breach, if there is one. `start_ns` is the run's start on
    /// CLOCK_MONOTONIC, `cpu_of` the CPU each thread is pinned to.
    pub fn service(&mut self, start_ns: u64, cpu_of: &dyn Fn(u32) -> Option<usize>) -> Option<Breach> {
        let sink = self.sink.as_ref()?;
        if !sink.pending.load(Ordering::Acquire) {
            return None;
        }
        let (thread, t_ns, latency_ns) = (
            sink.thread.load(Ordering::Relaxed),
            sink.t_ns.load(Ordering::Relaxed),
            sink.latency_ns.load(Ordering::Relaxed),
        );
        let t0 = start_ns + t_ns;
        let t1 = t0 + latency_ns;
        // Some of what follows the sample belongs in the window too.
        let post = (self.opts.threshold_ns / 2).clamp(200_000, 5_000_000);
        let now = crate::sys::now_ns();
        if now < t1 + post {
            std::thread::sleep(std::time::Duration::from_nanos(t1 + post - now));
        }
        let _ = self.owned.instance.set_on(false);
        let text = self.owned.instance.read();
        let _ = self.owned.instance.clear();
        sink.pending.store(false, Ordering::Release);
        let breach = match text {
            Ok(text) => {
                self.traced += 1;
                let around = Around { seq: self.traced, thread, cpu: cpu_of(thread), t_ns, t0, t1 };
                Some(window(&text, &around, (t0.saturating_sub(self.opts.threshold_ns), t1 + post)))
            }
            Err(_) => {
                sink.untraced.fetch_add(1, Ordering::Relaxed);
                None
            }
        };
        if self.opts.stop && breach.is_some() {
            self.stop = true;
        } else if self.traced < self.opts.max {
            let _ = self.owned.instance.set_on(true);
            sink.armed.store(true, Ordering::Release);
        }
        breach
    }

    /// What tracing did, for the run's parameters.
    pub fn record(&self) -> BreachRecord {
        BreachRecord {
            threshold_ns: self.opts.threshold_ns,
            max: self.opts.max,
            traced: self.traced,
            untraced: self.sink.as_ref().map_or(0, |s| s.untraced.load(Ordering::Relaxed)),
            events_missing: self.owned.instance.missing.clone(),
            skipped: None,
        }
    }
}

impl Instrument for Tracer {
    fn info(&self) -> &'static InstrumentInfo {
        &INFO
    }

    fn threads(&self) -> ThreadAsk {
        ThreadAsk { every_sample: false, watch: Some((self.threshold_ns(), self.sink())) }
    }

    fn service(&mut self, run: &Service) -> Serviced {
        let window = Tracer::service(self, run.start_ns, run.cpu_of);
        Serviced { window, stop: self.stop }
    }

    fn record(&self, params: &mut MeasuredParams) {
        params.breach = Some(Tracer::record(self));
    }

    /// Whether the largest latencies fell in time the kernel did not see, from the breaches
    /// traced; said only when they did.
    fn unseen(&self, end: &Ending) -> anyhow::Result<Option<Option<String>>> {
        let record = Tracer::record(self);
        let breaches = end.store.breaches(end.id)?;
        let unseen = crate::model::breach_unseen(&breaches, record.threshold_ns, end.budget_ns);
        let Some(w) = unseen.and_then(|u| u.warning()) else { return Ok(None) };
        Ok(Some(Some(match record.untraced {
            0 => w,
            n => format!(
                "{w}; {n} more samples above the --breach threshold ({} µs) were not traced, and may be either",
                crate::units::fmt_ns_as_us(record.threshold_ns as f64)
            ),
        })))
    }
}

/// The sample a breach window is taken around.
#[derive(Clone, Copy)]
struct Around {
    seq: u32,
    thread: u32,
    /// The CPU the thread is pinned to, if it is.
    cpu: Option<usize>,
    /// The sample's offset from the run's start.
    t_ns: u64,
    /// When the thread was due and when it ran, on CLOCK_MONOTONIC.
    t0: u64,
    t1: u64,
}

/// The stored breach: the events of `[from, to]` around the sample and what delayed the thread
/// in its `[t0, t1]`.
fn window(text: &str, s: &Around, (from, to): (u64, u64)) -> Breach {
    let Around { seq, thread, cpu, t_ns, t0, t1 } = *s;
    let events: Vec<parse::Event> = text.lines().filter_map(parse::line).collect();
    let tag = format!("rtbench breach thread={thread} t={t_ns} ");
    let marker = events.iter().find(|e| e.name == "tracing_mark_write" && e.detail.starts_with(&tag));
    let cpu = marker.map(|m| m.cpu).or(cpu.map(|c| c as u32));
    let ours = marker.map_or(-1, |m| m.pid);
    let on_cpu = |e: &&parse::Event| Some(e.cpu) == cpu;
    let timerlat_analysis = cpu.and_then(|c| terms::breakdown(&events, c, t0, t1, ours));
    // Where the timer's interrupt began: a task's time before it is the interrupt's delay.
    let irq_at = timerlat_analysis.as_ref().map(|a| t0 + a.irq_handler_delay_ns);
    let mut a = attribute::attribute(&events, (cpu.unwrap_or(u32::MAX), ours), (t0, t1), irq_at, &policy_of);
    if events.iter().find(on_cpu).is_none_or(|e| e.ts_ns > t0) {
        a.verdict = format!("{} (the trace buffer no longer held the start of the delay)", a.verdict);
    }
    let window = events
        .iter()
        .filter(|e| e.ts_ns >= from && e.ts_ns <= to)
        .take(WINDOW_EVENTS)
        .map(|e| TraceEvent {
            cpu: e.cpu,
            at_ns: e.ts_ns as i64 - t0 as i64,
            task: e.comm.to_string(),
            pid: e.pid,
            event: e.name.to_string(),
            detail: e.detail.to_string(),
        })
        .collect();
    let (latency_ns, verdict, causes) = (t1 - t0, a.verdict, a.causes);
    Breach { seq, thread, cpu, t_ns, mono_ns: t0, latency_ns, irq_ns: None, verdict, causes, window, timerlat_analysis }
}
