//! `noise --classify`: every noise gap classified by what ran in it on its CPU, as rtla
//! osnoise does: an interrupt, a softirq, another task, or nothing the kernel saw (the
//! hypervisor, an SMI, the hardware).
//!
//! Small BPF programs on the raw tracepoints of IRQs, vectors, softirqs and switches ([`bpf`])
//! queue the measured CPUs' events, stamped on CLOCK_MONOTONIC as the noise thread's own reads
//! are. Where BPF cannot load, an ftrace instance of rtbench's own traces the breach tracer's
//! events on the `mono` clock instead, at a cost: here each traced interrupt delays the
//! measuring thread by ~2–4 µs. Either way a reader off those CPUs fills per-CPU stretches
//! ([`timeline`]); as the run goes, each gap is looked up once the reader has read past it
//! ([`flow`], [`gap`]).

#[doc(hidden)]
pub mod bench;
mod bpf;
mod flow;
mod gap;
mod record;
mod timeline;

use std::sync::{Arc, Mutex};

pub(crate) use flow::count;
pub use gap::Verdict;
pub use gap::UNTRACED_EDGES_NS;
pub use timeline::Timeline;

use crate::instrument::{Ask, InstrumentArgs, InstrumentFlags, InstrumentInfo, Offer, Request};
use crate::model::ClassifyRecord;
use crate::trace::context::describe;
use crate::trace::ftrace::instance::Instance;
use crate::trace::ftrace::journal::ClassifyTraced;
use crate::trace::ftrace::owned::Owned;
use crate::trace::stream::{Feed, Stream};
use crate::trace::Policies;

/// `noise --classify`, as the instruments' registry lists it.
pub const INFO: InstrumentInfo = InstrumentInfo {
    name: "classify",
    flag: "--classify",
    needs: Offer::BusyGaps,
    does: "classifies the noise probe's gaps",
    lacks: "are not gaps",
    root_why: Some("it traces the kernel with ftrace"),
    flags: InstrumentFlags::with_monitor::<ClassifyFlags, ClassifyStudyFlags, ClassifyMonitorFlags>(),
    replay: &[crate::restore::replay::<crate::trace::ClassifyTraced>],
    arm: flow::arm,
    skipped: |_, why, params| {
        let w = format!("--classify: the noise gaps' classes are unknown: {why}");
        params.classify = Some(ClassifyRecord { skipped: Some(why), ..Default::default() });
        w
    },
    resumed: |m| m.classify.as_ref().filter(|c| c.skipped.is_none()).map(|_| Request::plain("classify", Ask::Asked)),
};

/// `--classify`, on a command that runs a probe.
#[derive(clap::Args, Debug)]
pub struct ClassifyFlags {
    /// Classify every noise gap by what ran in it on its CPU, as rtla osnoise does: an IRQ, a
    /// softirq, another thread, or nothing the kernel saw (hardware, SMI or hypervisor; needs
    /// root)
    #[arg(long)]
    pub classify: bool,
}

impl InstrumentArgs for ClassifyFlags {
    fn request(self) -> Option<Request> {
        self.classify.then(|| Request::plain(INFO.name, Ask::Asked))
    }
}

/// The study classifies its noise cells' gaps wherever tracing works.
#[derive(clap::Args, Debug)]
pub struct ClassifyStudyFlags {
    /// Do not classify the noise cells' gaps by what ran in them (on by default where tracing
    /// is possible; see noise --classify)
    #[arg(long)]
    pub no_classify: bool,
}

impl InstrumentArgs for ClassifyStudyFlags {
    fn request(self) -> Option<Request> {
        crate::instrument::unless_off(INFO.name, self.no_classify)
    }
}

/// `monitor --noise --classify`: every window's gaps classified.
#[derive(clap::Args, Debug)]
pub struct ClassifyMonitorFlags {
    /// With --noise: classify every gap by what ran in it (see `noise --classify`; needs root),
    /// counted in the metrics by class
    #[arg(long, requires = "noise")]
    pub classify: bool,
}

impl InstrumentArgs for ClassifyMonitorFlags {
    fn request(self) -> Option<Request> {
        self.classify.then(|| Request::plain(INFO.name, Ask::Asked))
    }
}

/// Per-CPU buffer: the reader empties it every few milliseconds; a loaded CPU writes a few MB
/// of switches and interrupts a second.
const BUFFER_KB: u64 = 4096;

/// The classification's programs or instance, and its reader; dropped, they are gone.
pub struct ClassifyTracer {
    feed: Feed<Timeline>,
}

impl ClassifyTracer {
    /// Follows `cpus`, read on the collector's CPUs `on`; `Err` says why the gaps are not
    /// classified.
    pub fn arm(cpus: &[usize], on: &[usize]) -> Result<ClassifyTracer, String> {
        let feed = Feed::arm(|| bpf::start("rtbench-classify", cpus, on), || ClassifyTracer::instance(cpus, on))?;
        Ok(ClassifyTracer { feed })
    }

    fn instance(cpus: &[usize], on: &[usize]) -> Result<Stream<Timeline>, String> {
        let name = format!("rtbench-classify-{}", std::process::id());
        let owned = Owned::make(&name, ClassifyTraced, |root| Instance::create(root, &name, cpus, BUFFER_KB))?;
        // Dropping `owned` removes the instance again.
        Stream::start(owned, Timeline::new(cpus), "rtbench-classify", on)
    }

    /// What the reader has read.
    pub fn timeline(&self) -> Arc<Mutex<Timeline>> {
        self.feed.state()
    }

    /// Waits until the reader has read every event committed before `ns`, or gave up.
    pub fn catch_up(&self, ns: u64) {
        self.feed.catch_up(ns);
    }

    /// Where the events came from, as the run stores it.
    pub fn source(&self) -> String {
        self.feed.source("the IRQ, softirq and sched_switch tracepoints")
    }

    /// How the BPF programs' records travel (`ringbuf`, `queue`); none from ftrace.
    pub fn transport(&self) -> Option<String> {
        self.feed.transport()
    }
}

/// A gap's class and what ran in it, in words: made once per task (or handler) seen, not per
/// gap, when a total is first counted or a gap is kept among the longest.
pub struct Named {
    /// Empty for the hardware class.
    pub name: String,
    /// For tasks: pid and scheduling.
    pub detail: Option<String>,
}

impl Named {
    /// `v` in words; a real-time task's policy is looked up in `policies`.
    pub(crate) fn of(v: &Verdict, policies: &Policies) -> Named {
        match &v.key {
            Some(k) => Named { detail: describe(k, &|pid| policies.of(pid)), name: k.name.to_string() },
            None => Named { name: String::new(), detail: None },
        }
    }
}

/// Classifies the gap `[t0, t1)` of measuring thread `ours` on `cpu` from what has been read;
/// with it, the interfering events in it and their time.
pub(crate) fn classify(
    timeline: &Timeline,
    cpu: u32,
    ours: i32,
    t0: u64,
    t1: u64,
) -> (Verdict, crate::model::Interference) {
    gap::classify(timeline.stretches(cpu).into_iter().flatten(), ours, t0, t1)
}
