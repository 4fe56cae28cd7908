//! `noise --classify`: every noise gap classified by what ran in it on its CPU, as rtla
//! osnoise does: an interrupt, a softirq, another task, or nothing the kernel saw (the
//! hypervisor, an SMI, the hardware).
//!
//! An ftrace instance of rtbench's own traces the breach tracer's events (IRQs, vectors,
//! softirqs, switches, wake-ups) on the measured CPUs, on the `mono` clock: its timestamps and
//! the noise thread's `CLOCK_MONOTONIC` reads are the same clock. A reader off those CPUs
//! streams it as the split's does ([`crate::trace::stream`]) into per-CPU stretches
//! ([`timeline`]); the runner looks each gap up once the reader has read past it ([`gap`]).

mod gap;
mod timeline;

use std::sync::{Arc, Mutex};

pub use gap::UNTRACED_EDGES_NS;
pub use timeline::Timeline;

use super::context::describe;
use super::instance::Instance;
use super::journal::ClassifyTraced;
use super::owned::Owned;
use super::stream::{lock, Stream};
use crate::model::NoiseClass;

/// Per-CPU buffer: the reader empties it every few milliseconds; a loaded CPU writes a few MB
/// of switches and interrupts a second.
const BUFFER_KB: u64 = 4096;

/// The classification's instance and its reader; held by the session.
pub struct ClassifyTracer {
    stream: Stream<Timeline>,
    /// Events of the breach tracer's list this kernel lacks.
    pub missing: Vec<String>,
}

impl ClassifyTracer {
    /// Traces `cpus`; `Err` says why the gaps are not classified.
    pub fn arm(cpus: &[usize]) -> Result<ClassifyTracer, String> {
        if !crate::sys::is_root() {
            return Err("tracing needs root".into());
        }
        let name = format!("rtbench-classify-{}", std::process::id());
        let owned = Owned::make(&name, ClassifyTraced, |root| Instance::create(root, &name, cpus, BUFFER_KB))?;
        // Dropping `owned` removes the instance again.
        let missing = owned.instance.missing.clone();
        let stream = Stream::start(owned, Timeline::new(cpus), "rtbench-classify", cpus)?;
        Ok(ClassifyTracer { stream, missing })
    }

    /// What the reader has read.
    pub fn timeline(&self) -> Arc<Mutex<Timeline>> {
        self.stream.state()
    }

    pub fn lost_events(&self) -> u64 {
        lock(&self.stream.state()).lost_events
    }
}

impl crate::restore::Guard for ClassifyTracer {
    fn name(&self) -> &'static str {
        "classify tracer"
    }
}

/// A gap's class and what ran in it, in words.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Named {
    pub class: NoiseClass,
    /// Empty for the hardware class.
    pub name: String,
    /// For tasks: pid and scheduling.
    pub detail: Option<String>,
}

/// Classifies the gap `[t0, t1)` of measuring thread `ours` on `cpu` from what has been read.
pub fn classify(timeline: &Timeline, cpu: u32, ours: i32, t0: u64, t1: u64) -> Named {
    let v = gap::classify(timeline.stretches(cpu).into_iter().flatten(), ours, t0, t1);
    match v.key {
        Some(k) => Named { class: v.class, detail: describe(&k, &super::policy_of), name: k.name },
        None => Named { class: v.class, name: String::new(), detail: None },
    }
}
