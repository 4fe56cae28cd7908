//! Probes: one file each, declaring everything about itself in a [`ProbeInfo`], listed in
//! [`REGISTRY`]. A probe's hot loop only measures and records integers into its thread's
//! recorder; the runner owns everything else.

mod deadline;
mod flags;
mod gtod;
mod ipc;
mod migrate;
pub mod noise;
mod pi;
pub mod pingpong;
mod response;
mod resume;
mod synthetic;
pub mod timer;
mod timerlat;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::model::{IrqSplit, Metric, ProbeParams};
use crate::net::transport::Transport;
use crate::recorder::Recorder;
use crate::restore::Guard;

pub use flags::{FlagSet, ProbeArgs, ProbeFlags, Session};
pub use resume::Resume;

/// What one measuring thread gets from the runner.
pub struct ThreadCtx<'a> {
    pub rec: &'a mut Recorder,
    /// Thread number, 0-based.
    pub index: usize,
    /// CLOCK_MONOTONIC ns the run started at; time offsets are relative to it.
    pub start_ns: u64,
    /// Samples to take before stopping (u64::MAX: until told to stop).
    pub loops: u64,
    /// When the runner told the threads to stop (CLOCK_MONOTONIC ns), 0 until it has.
    stop: &'a AtomicU64,
}

impl<'a> ThreadCtx<'a> {
    pub fn new(rec: &'a mut Recorder, index: usize, start_ns: u64, loops: u64, stop: &'a AtomicU64) -> Self {
        ThreadCtx { rec, index, start_ns, loops, stop }
    }

    /// When the runner told the threads to stop, once it has: for a thread that notices the
    /// stop late (it sleeps long between reads), where the run's time ended.
    pub fn stopped_at_ns(&self) -> Option<u64> {
        Some(self.stop.load(Ordering::SeqCst)).filter(|&ns| ns > 0)
    }

    /// True once the runner asked every thread to stop.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) != 0
    }
}

/// A measuring loop.
pub trait Probe: Send + Sync {
    /// Nominal time between two samples of one thread (0 when back-to-back); the sample log
    /// encodes deviations from it.
    fn step_ns(&self) -> u64;
    /// The longest a thread that measures goes between two samples, for the runner's watchdog;
    /// `None` when a sample is an event that may not come for a long time.
    fn sample_gap_ns(&self) -> Option<u64> {
        Some(self.step_ns())
    }
    /// Runs until `ctx.loops` samples are taken or the runner says stop.
    fn run(&self, ctx: &mut ThreadCtx);
    /// Whether the threads take the samples themselves (they run at the run's real-time
    /// policy) or only read what a kernel thread measured on their CPU (`timerlat`): such
    /// readers run at SCHED_OTHER, so the kernel's measuring thread never waits for them.
    fn measures_itself(&self) -> bool {
        true
    }
    /// Gets ready for `threads` threads before the run begins (connect to a peer, …). An error
    /// here ends the command before anything is stored.
    fn prepare(&self, _threads: usize) -> Result<()> {
        Ok(())
    }
    /// Sets up what the probe reads once the session holds the run, on the measured CPUs (each
    /// thread's, `None` for an unpinned one); what it returns is held until the run ends and
    /// put back then; `collector` is where the run's own work goes (empty: anywhere). Only a probe
    /// that reads a kernel instrument (`timerlat`) has anything.
    fn arm(&self, _cpus: &[Option<usize>], _collector: &[usize]) -> Result<Option<Box<dyn Guard>>> {
        Ok(None)
    }
    /// Thread `i`'s IRQ latencies, when the probe measures them itself (`timerlat`); `samples`
    /// is the thread's count.
    fn irq(&self, _i: usize, _samples: u64) -> Option<IrqSplit> {
        None
    }
    /// Whether the runner pins each measuring thread to its planned CPU; a probe whose threads
    /// must stay free of it says no (a SCHED_DEADLINE thread needs its root domain's CPUs).
    fn pins_threads(&self) -> bool {
        true
    }
    /// Sets up measuring thread `index` further, on the thread itself, once the runner has
    /// placed it and before the runner records how it runs (`deadline` puts it under
    /// SCHED_DEADLINE). Err: why the thread measures nothing.
    fn set_up_thread(&self, _index: usize) -> Result<(), String> {
        Ok(())
    }
    /// Adds what the probe learnt while running to its parameters (`params`, as it built
    /// them), where they are stored with it.
    fn findings(&self, _params: &mut ProbeParams) {}
    /// Why the run failed, when the probe saw the kernel fail its test (`pi`: a deadlock): the
    /// run is stored as failed, with everything it measured, and the command exits with 1.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// What a probe's samples offer an instrument riding along its run: each instrument needs one,
/// and a probe that does not make that offer is refused the instrument's flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// Samples, in order, as the measuring threads hand them over: every probe makes this offer.
    Samples,
    /// Samples of this machine's kernel, not generated ones: a trace can say what delayed one.
    KernelSamples,
    /// Each sample is a timer wake-up: the timer interrupt's part can be split off.
    TimerExpiry,
    /// Each sample is a gap in a busy loop: what ran in it can be classified.
    BusyGaps,
}

/// How many threads a probe runs when `-t` is not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultThreads {
    PerCpu,
    One,
}

/// Whether and as what the study runs a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InStudy {
    No,
    /// A measurement of the seed studies (timer, clock reads, round trips, responses, noise).
    Seed,
    /// A check of what a kernel qualification runs beyond them (deadline scheduling, IPC
    /// wake-ups, migration, priority inheritance); `study --no-qualify` leaves them out.
    Qualification,
}

/// What a probe's build gets besides its flags.
pub struct Shape {
    /// Samples per thread, once `-l`, the probe's count flag and its default are resolved.
    pub loops: Option<u64>,
    /// The measuring threads' real-time priority (0 at SCHED_OTHER): a probe's own threads
    /// that must stay below it check it here.
    pub priority: i32,
}

/// A probe ready to run, and its parameters as stored with the run.
pub struct Built {
    pub probe: Arc<dyn Probe>,
    pub params: ProbeParams,
}

/// A server that a probe's flags ask for instead of a measurement (`pingpong --serve`).
pub struct ServeSpec {
    pub transport: Transport,
    pub addr: String,
    /// Accept only this session token.
    pub token: Option<u64>,
    pub serve_for: Option<Duration>,
    /// What the server answers, for its banner.
    pub what: &'static str,
}

/// What the study tells a probe about its surroundings.
pub struct StudyEnv {
    /// The echo server of the network probes.
    pub peer: String,
}

/// Everything rtbench knows about a probe, declared in the probe's own file. The command
/// line, the study, the report's ordering and the tests all read it from [`REGISTRY`].
pub struct ProbeInfo {
    pub name: &'static str,
    /// One line: what a sample is, and which seed tool it follows.
    pub help: &'static str,
    /// Emits generated samples rather than measuring this machine: it runs at SCHED_OTHER
    /// without locked memory, is hidden from `--help`, and its runs say so.
    pub synthetic: bool,
    /// What its samples offer the instruments that ride along a run (`crate::instrument`).
    pub offers: &'static [Offer],
    pub metric: Metric,
    pub default_threads: DefaultThreads,
    /// Samples per thread when neither `-l`, the count flag nor a duration bounds the run.
    pub default_loops: Option<u64>,
    /// Its flags, a struct of its file ([`ProbeFlags`]), which builds it.
    pub flags: FlagSet,
    /// Whether it can run here; if not, why (stress-ng's way: a skip with a reason).
    pub supported: fn() -> Result<(), String>,
    /// Whether the study runs it (with its flags' [`ProbeFlags::study`]).
    pub study: InStudy,
    /// Whether `rtbench resume` can continue its run.
    pub resume: Resume,
    /// What a killed run of it leaves journalled, one `restore::replay` per kind it holds: the
    /// next command puts each back (`app::put_back_abandoned`).
    pub replay: &'static [fn() -> Vec<String>],
}

impl ProbeInfo {
    /// Whether the study runs it at all.
    pub fn in_study(&self) -> bool {
        self.study != InStudy::No
    }

    /// The flags at their defaults.
    pub fn defaults(&self) -> ProbeArgs {
        (self.flags.defaults)()
    }
}

/// `supported` of a probe that runs anywhere rtbench does.
pub fn anywhere() -> Result<(), String> {
    Ok(())
}

/// Every probe rtbench knows, in the order the study runs them and reports list them.
pub static REGISTRY: &[ProbeInfo] = &[
    timer::INFO,
    timerlat::INFO,
    gtod::INFO,
    pingpong::INFO,
    response::INFO,
    noise::INFO,
    deadline::INFO,
    ipc::INFO,
    migrate::INFO,
    pi::INFO,
    synthetic::INFO,
];

/// A probe's registry entry by name.
pub fn info(name: &str) -> Option<&'static ProbeInfo> {
    REGISTRY.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each probe's flags are well formed (clap's own checks: no flag twice, no short letter
    /// twice) and the study's flags build.
    #[test]
    fn every_probe_s_flags_are_well_formed_and_the_study_s_build() {
        for info in REGISTRY {
            (info.flags.command)(clap::Command::new(info.name).disable_help_flag(true)).debug_assert();
            let defaults = info.defaults();
            assert_eq!(defaults, defaults.clone(), "{}", info.name);
            if info.in_study() {
                let mut args = defaults;
                args.study(&StudyEnv { peer: "127.0.0.1:1".into() });
                args.build(&Shape { loops: None, priority: 95 })
                    .unwrap_or_else(|e| panic!("{}: the study's flags do not build: {e:#}", info.name));
            }
        }
    }

    /// Flags are held as their probe's type: read back as it, never as another's, and equal
    /// only to flags of the same probe and values.
    #[test]
    fn flags_are_held_as_their_probe_s_type() {
        let (timer, noise) = (info("timer").unwrap().defaults(), info("noise").unwrap().defaults());
        assert!(timer.get::<timer::TimerFlags>().is_some() && timer.get::<noise::NoiseFlags>().is_none());
        assert_ne!(timer, noise);
        let mut faster = timer.get::<timer::TimerFlags>().unwrap().clone();
        faster.interval.interval += 1;
        assert_ne!(ProbeArgs::new(faster), timer);
    }
}
