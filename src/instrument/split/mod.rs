//! `--split`: every timer sample split into how late the timer interrupt ran (IRQ latency) and
//! how much later the thread ran (scheduling latency), as `rtla timerlat` reports them, but
//! from two tracepoints every kernel has, not the timerlat tracer.
//!
//! A small BPF program on the raw tracepoint `hrtimer_expire_entry` ([`bpf`]) keeps the
//! expiries of rtbench's threads' sleeps, finding the sleeper from the timer itself. Where BPF
//! cannot load, an ftrace instance of rtbench's own (beside the breach tracer's) traces
//! `hrtimer_start` and `hrtimer_expire_entry` on the measured CPUs instead, at a cost: each
//! traced expiry delays the woken thread by ~2 µs here. Either way a reader thread off those
//! CPUs polls without blocking: a blocked reader would be woken from the measured CPUs by an
//! interrupt per event, the very kind of interference the run measures. As the run goes, the
//! samples wait for their expiries ([`flow`]) and are paired with them ([`pair`]).

pub mod aggregate;
mod bpf;
mod btf;
mod expiry;
mod flow;
pub mod pair;

use std::io;
use std::sync::{Arc, Mutex};

pub use expiry::{Expiry, Seen};

/// What `--split-mode` and `--breach` ask of the split (the breach threshold is the breach
/// tracer's, read when the split is armed beside it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitOptions {
    /// The mode asked for; none: chosen by the rate.
    pub mode: Option<aggregate::Mode>,
    /// The breach threshold: in the aggregate mode the kernel hands on the expiries at least
    /// this late one by one (below the bound too), so a breach's sample keeps its IRQ part
    /// whenever that part is itself over the threshold, and is known to be under it otherwise.
    pub breach_ns: Option<u64>,
}

use crate::instrument::{Ask, InstrumentArgs, InstrumentFlags, InstrumentInfo, Offer, Request, Settings};
use crate::model::SplitRecord;
use crate::trace::ftrace::instance::Instance;
use crate::trace::ftrace::journal::SplitTraced;
use crate::trace::ftrace::owned::Owned;
pub use crate::trace::stream::lock;
use crate::trace::stream::{Feed, Stream};

/// `--split`, as the instruments' registry lists it.
pub const INFO: InstrumentInfo = InstrumentInfo {
    name: "split",
    flag: "--split",
    needs: Offer::TimerExpiry,
    does: "splits a timer wake-up",
    lacks: "are not one",
    root_why: Some("it traces the kernel's timers with ftrace"),
    flags: InstrumentFlags::with_monitor::<SplitFlags, SplitStudyFlags, SplitMonitorFlags>(),
    replay: &[crate::restore::replay::<SplitTraced>],
    arm: flow::arm,
    skipped: |_, why, params| {
        let w = format!("--split: the run is not split: {why}");
        params.split = Some(SplitRecord { skipped: Some(why), ..Default::default() });
        w
    },
    resumed: |m| m.split.as_ref().filter(|s| s.skipped.is_none()).map(|_| Request::plain("split", Ask::Asked)),
};

/// `--split` and its mode, on a command that runs a probe.
#[derive(clap::Args, Debug)]
pub struct SplitFlags {
    /// Split every timer sample into how late the timer interrupt ran (IRQ latency) and how much
    /// later the thread ran, from hrtimer trace events (needs root; not the timerlat tracer)
    #[arg(long)]
    pub split: bool,
    /// How --split takes the expiries in: a record per sample, or histograms counted in the
    /// kernel with records only past 1 ms, as rtla does [default: auto, per sample up to 10 %
    /// of a housekeeping CPU at the run's rate]
    #[arg(long, value_enum, value_name = "MODE", requires = "split")]
    pub split_mode: Option<SplitMode>,
}

impl InstrumentArgs for SplitFlags {
    fn request(self) -> Option<Request> {
        let options = SplitOptions { mode: self.split_mode.and_then(SplitMode::mode), breach_ns: None };
        self.split.then(|| Request { settings: Settings::new(options), ..Request::plain(INFO.name, Ask::Asked) })
    }
}

/// The study splits its timer cells wherever tracing works.
#[derive(clap::Args, Debug)]
pub struct SplitStudyFlags {
    /// Do not split the timer cells' samples into IRQ and scheduling latency (on by default
    /// where tracing is possible; see a probe's --split)
    #[arg(long)]
    pub no_split: bool,
}

impl InstrumentArgs for SplitStudyFlags {
    fn request(self) -> Option<Request> {
        crate::instrument::unless_off(INFO.name, self.no_split)
    }
}

/// `monitor --split`: every window's wake-ups split.
#[derive(clap::Args, Debug)]
pub struct SplitMonitorFlags {
    /// Split every wake-up into IRQ and scheduling latency (see `timer --split`; needs root)
    #[arg(long, conflicts_with = "noise")]
    pub split: bool,
}

impl InstrumentArgs for SplitMonitorFlags {
    fn request(self) -> Option<Request> {
        self.split.then(|| Request::plain(INFO.name, Ask::Asked))
    }
}

/// `--split-mode`: how the split takes the expiries in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitMode {
    /// Per sample up to 10 % of a housekeeping CPU at the run's rate, then aggregated
    Auto,
    /// A record per sample, paired with it
    PerSample,
    /// Histograms counted in the kernel; records only for expiries past their bound
    Aggregate,
}

impl SplitMode {
    /// The mode asked for; none when it is left to the rate.
    pub fn mode(self) -> Option<aggregate::Mode> {
        match self {
            SplitMode::Auto => None,
            SplitMode::PerSample => Some(aggregate::Mode::PerSample),
            SplitMode::Aggregate => Some(aggregate::Mode::Aggregate),
        }
    }
}

/// Per-CPU buffer: at 10 kHz, two events of ~50 bytes per sample, a second's worth is 1 MB; the
/// reader empties it every few milliseconds.
const BUFFER_KB: u64 = 2048;
const EVENTS: [&str; 2] = ["timer/hrtimer_start", "timer/hrtimer_expire_entry"];
/// Only sleepers' timers: the tick and the others are not the threads'.
const SLEEPERS: &str = "function.function == hrtimer_wakeup";

/// The split's programs or instance, and its reader; dropped, they are gone.
pub struct SplitTracer {
    feed: Feed<Seen>,
    /// The threads' histograms in the kernel, when the program loaded.
    hist: Option<Arc<aggregate::Hist>>,
}

impl SplitTracer {
    /// Follows the sleeps on `cpus`, read on the collector's CPUs `on`; `Err` says why the run
    /// is not split.
    pub fn arm(cpus: &[usize], on: &[usize]) -> Result<SplitTracer, String> {
        let mut hist = None;
        let feed = Feed::arm(|| bpf::start("rtbench-split", on, &mut hist), || SplitTracer::instance(cpus, on))?;
        let hist = hist.filter(|_| feed.bpf());
        Ok(SplitTracer { feed, hist })
    }

    fn instance(cpus: &[usize], on: &[usize]) -> Result<Stream<Seen>, String> {
        let name = format!("rtbench-split-{}", std::process::id());
        let owned =
            Owned::make(&name, SplitTraced, |root| Instance::create_with(root, &name, cpus, BUFFER_KB, events))?;
        // Dropping `owned` removes the instance again.
        Stream::start(owned, Seen::default(), "rtbench-split", on)
    }

    /// Keeps the expiries of these threads only, and asks an ftrace instance for their timers
    /// only.
    pub fn follow(&self, pids: &[i32]) {
        if let Feed::Ftrace(stream, _) = &self.feed {
            let pids_filter = pids.iter().map(|p| format!("common_pid == {p}")).collect::<Vec<_>>().join(" || ");
            let both = format!("{SLEEPERS} && ({pids_filter})");
            // A kernel that refuses a filter traces more, and the reader drops what is not ours.
            let instance = &stream.owned.instance;
            if !pids.is_empty() && instance.filter(EVENTS[0], &both).is_err() {
                let _ = instance.filter(EVENTS[0], &pids_filter);
            }
        }
        lock(&self.seen()).follow(pids);
    }

    /// What the reader has read, for the runner's pairing.
    pub fn seen(&self) -> Arc<Mutex<Seen>> {
        self.feed.state()
    }

    /// The threads' histograms in the kernel; None from an ftrace instance.
    pub fn hist(&self) -> Option<Arc<aggregate::Hist>> {
        self.hist.clone()
    }

    /// What the split came to, for the run's parameters.
    pub fn record(&self) -> SplitRecord {
        let source = self.feed.source("the hrtimer tracepoints");
        let seen = self.seen();
        let (lost_events, read, missed) = {
            let s = lock(&seen);
            (s.lost_events, s.records, s.missed)
        };
        let (transport, records) = (self.feed.transport(), self.feed.bpf().then_some(read));
        SplitRecord {
            lost_events,
            skipped: None,
            source: Some(source),
            transport,
            records,
            missed,
            ..Default::default()
        }
    }
}

fn events(inst: &mut Instance) -> io::Result<()> {
    for e in EVENTS {
        inst.enable(e).map_err(|err| io::Error::new(err.kind(), format!("the {e} event is not available: {err}")))?;
        // A kernel that cannot filter on a symbol traces every timer; the matching still holds.
        let _ = inst.filter(e, SLEEPERS);
    }
    Ok(())
}
