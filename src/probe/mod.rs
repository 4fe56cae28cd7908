//! Probes: one file each, listed in [`REGISTRY`]. A probe's hot loop only measures and records
//! integers into its thread's recorder; the runner owns everything else.

mod gtod;
mod pingpong;
mod response;
mod synthetic;
mod timer;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::recorder::Recorder;

pub use gtod::Gtod;
pub use pingpong::Pingpong;
pub use response::Response;
pub use synthetic::Synthetic;
pub use timer::Timer;

/// What one measuring thread gets from the runner.
pub struct ThreadCtx<'a> {
    pub rec: &'a mut Recorder,
    /// Thread number, 0-based.
    pub index: usize,
    /// CLOCK_MONOTONIC ns the run started at; time offsets are relative to it.
    pub start_ns: u64,
    /// Samples to take before stopping (u64::MAX: until told to stop).
    pub loops: u64,
    stop: &'a AtomicBool,
}

impl<'a> ThreadCtx<'a> {
    pub fn new(rec: &'a mut Recorder, index: usize, start_ns: u64, loops: u64, stop: &'a AtomicBool) -> Self {
        ThreadCtx { rec, index, start_ns, loops, stop }
    }

    /// True once the runner asked every thread to stop.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A measuring loop.
pub trait Probe: Send + Sync {
    /// Nominal time between two samples of one thread (0 when back-to-back); the sample log
    /// encodes deviations from it.
    fn step_ns(&self) -> u64;
    /// Runs until `ctx.loops` samples are taken or the runner says stop.
    fn run(&self, ctx: &mut ThreadCtx);
    /// Gets ready for `threads` threads before the run begins (connect to a peer, …). An error
    /// here ends the command before anything is stored.
    fn prepare(&self, _threads: usize) -> anyhow::Result<()> {
        Ok(())
    }
    /// What the probe learnt while running that belongs in the run's parameters.
    fn extras(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// What the registry says about a probe.
pub struct ProbeInfo {
    pub name: &'static str,
    pub help: &'static str,
    /// Emits generated samples rather than measuring this machine.
    pub synthetic: bool,
}

/// Every probe rtbench knows, in the order the study runs them.
pub static REGISTRY: &[ProbeInfo] = &[timer::INFO, gtod::INFO, pingpong::INFO, response::INFO, synthetic::INFO];

/// A probe's registry entry by name.
pub fn info(name: &str) -> Option<&'static ProbeInfo> {
    REGISTRY.iter().find(|p| p.name == name)
}
