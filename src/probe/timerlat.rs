//! `timerlat`: the kernel's own timer latency (rtla timerlat), where the kernel has the tracer.
//! The kernel's timerlat thread on each measured CPU wakes every period and the tracer stamps
//! both the timer interrupt's handler and the thread's wake-up against the timer's expiry; this
//! probe's threads only read those stamps from their CPU's buffer. A sample is the thread
//! latency; the IRQ latency of the same activations is the run's IRQ split, as `--split` gives
//! it for `timer`.
//!
//! The tracer runs in an instance of rtbench's own; its global options (CPUs, period) are held
//! by the restore layer and put back, by the next command after a kill.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Result;

use super::timer::Interval;
use super::{Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{IrqSplit, Metric, ProbeParams, TimerParams};
use crate::restore::{Guard, Held};
use crate::stats::Stats;
use crate::trace::ftrace::instance::{self, Instance};
use crate::trace::ftrace::owned::Owned;
use crate::trace::stream::LinePipe;
use crate::trace::timerlat::{self, Options};
use crate::trace::TimerlatTraced;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "timerlat",
    help: "the kernel's own timer latency (rtla timerlat): IRQ and thread latency per activation, where the kernel has the tracer",
    synthetic: false,
    offers: &[super::Offer::Samples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::PerCpu,
    default_loops: None,
    flags: FlagSet::of::<TimerlatFlags>(),
    supported,
    // Beside the timer cells where the kernel has the tracer; elsewhere `supported` gives the
    // study its reason to skip the cell.
    study: super::InStudy::Seed,
    resume: super::Resume::Settings,    replay: &[
        crate::restore::replay::<crate::trace::TimerlatTraced>,
        crate::restore::replay::<crate::trace::timerlat::Options>,
    ],
};

/// `timerlat`'s flags: its period is the timer's `-i`.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct TimerlatFlags {
    #[command(flatten)]
    pub interval: Interval,
}

impl ProbeFlags for TimerlatFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let interval_us = self.interval.interval;
        let params = TimerParams { interval_us, distance_us: 0, monitor_window_s: None };
        let probe = Timerlat { period_us: interval_us, armed: OnceLock::new(), irq: Mutex::new(Vec::new()) };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Timerlat(params) })
    }

    /// Its runs stored before parameters were tagged read as the timer's.
    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let (ProbeParams::Timerlat(p) | ProbeParams::Timer(p)) = stored else { return None };
        Some(TimerlatFlags { interval: Interval { interval: p.interval_us } })
    }
}

/// How long a reader sleeps between two reads of its CPU's buffer: the tracer's own kernel
/// thread measures, so the reader only has to keep the buffer from filling. Woken more often,
/// it makes the latencies it reads worse: in the RT guest (TCG, 1 ms period, 10 s runs), reads
/// every 50 ms gave a thread p99 of 1212-1681 µs against rtla's 221-317 µs on the same tracer,
/// and reads every 500 ms with a look at the stop flag every 50 ms between them 1.2-1.6x
/// rtla's p99; with no wake-up but the reads, 1.11x (IRQ) and 1.09x (thread) over 6 rounds
/// (rtla reads once a second). Under an emulator every wake-up of the reader's CPU takes host
/// time from the measured one.
const READ_EVERY_NS: u64 = 500_000_000;
/// Per-CPU buffer: two lines of ~100 bytes per activation, two seconds of them at 10 kHz (four
/// reads' worth).
const BUFFER_KB: u64 = 4096;

fn supported() -> Result<(), String> {
    let root = instance::tracefs()?.root;
    timerlat::present(&root)?.then_some(()).ok_or_else(|| timerlat::ABSENT.to_string())
}

struct Timerlat {
    period_us: u64,
    /// The instance, the CPU each thread reads and the CPUs the readers run on, once armed.
    armed: OnceLock<Armed>,
    /// Each thread's IRQ latencies.
    irq: Mutex<Vec<Stats>>,
}

struct Armed {
    instance: PathBuf,
    cpus: Vec<usize>,
    /// The collector's CPUs, the housekeeping ones (empty: every one is measured, and each
    /// reader stays on its CPU at SCHED_OTHER). rtla reads from none of the measured either.
    readers_on: Vec<usize>,
}

/// What the run holds while the tracer runs: its options, then its instance (removed first).
struct Tracing {
    _instance: Owned,
    _options: Held<Options>,
}

impl Guard for Tracing {
    fn name(&self) -> &'static str {
        "timerlat tracer"
    }
}

impl Probe for Timerlat {
    fn step_ns(&self) -> u64 {
        self.period_us * 1000
    }

    /// Samples arrive a read at a time.
    fn sample_gap_ns(&self) -> Option<u64> {
        Some(READ_EVERY_NS + self.period_us * 1000)
    }

    fn arm(&self, cpus: &[Option<usize>], collector: &[usize]) -> Result<Option<Box<dyn Guard>>> {
        let cpus: Vec<usize> = cpus.iter().enumerate().map(|(i, c)| c.unwrap_or(i)).collect();
        let mut sorted = cpus.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let root = instance::tracefs().map_err(|e| crate::invalid!("timerlat: {e}"))?.root;
        let options = Options::read(&root).map_err(|e| anyhow::anyhow!("cannot read the timerlat options: {e}"))?;
        let options =
            Held::journalled(options).map_err(|e| anyhow::anyhow!("cannot hold the timerlat options: {e}"))?;
        options.change().set(&sorted, self.period_us)?;
        let name = format!("rtbench-timerlat-{}", std::process::id());
        let made = Owned::make(&name, TimerlatTraced, |root| {
            Instance::create_with(root, &name, &sorted, BUFFER_KB, |i| i.set_tracer("timerlat"))
        })
        .map_err(|e| anyhow::anyhow!("timerlat: {e}"))?;
        let readers_on = collector.to_vec();
        let _ = self.armed.set(Armed { instance: made.instance.dir.clone(), cpus: cpus.clone(), readers_on });
        *self.irq.lock().unwrap_or_else(|e| e.into_inner()) = vec![Stats::default(); cpus.len()];
        Ok(Some(Box::new(Tracing { _instance: made, _options: options })))
    }

    /// The kernel's timerlat thread measures, at FIFO 95 on the CPU; a reader at that priority
    /// would hold it back while it parses (3-8x rtla's latencies in the RT guest).
    fn measures_itself(&self) -> bool {
        false
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let Some(armed) = self.armed.get() else { return };
        let at = armed.instance.join(format!("per_cpu/cpu{}/trace_pipe", armed.cpus[ctx.index]));
        let Ok(mut pipe) = LinePipe::open(&at) else { return };
        if !armed.readers_on.is_empty() {
            let _ = crate::sys::set_affinity(&armed.readers_on);
        }
        let mut irq = Stats::default();
        let mut taken = 0u64;
        // An activation's IRQ line comes before its thread line: kept until the thread line says
        // whether the run counts that activation (its IRQ line can fall just before the run's
        // start, or its thread line after the stop).
        let mut pending: Option<(u64, u64)> = None;
        // The run's own activations: the tracer ran before the run began (armed first), and
        // the last read comes after the stop.
        let (from, mut until) = (ctx.start_ns, u64::MAX);
        while taken < ctx.loops && until == u64::MAX {
            // One wake-up a read, none between to look for the stop: the last read comes up
            // to READ_EVERY_NS after it, and keeps what the tracer took until it.
            crate::sys::sleep_until(crate::sys::now_ns() + READ_EVERY_NS);
            if let Some(at) = ctx.stopped_at_ns() {
                until = at;
            }
            // A pipe that cannot be read any more gives nothing more; the run ends on time.
            let _ = pipe.drain(|text| {
                for s in text.lines().filter_map(timerlat::sample) {
                    if s.irq {
                        pending = Some((s.activation, s.latency_ns));
                    } else if taken < ctx.loops && (from..=until).contains(&s.ts_ns) {
                        ctx.rec.record(s.ts_ns - from, s.latency_ns);
                        taken += 1;
                        if let Some((_, latency)) = pending.take().filter(|(a, _)| *a == s.activation) {
                            irq.record(latency);
                        }
                    }
                }
            });
            let mut all = self.irq.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(t) = all.get_mut(ctx.index) {
                t.merge(&irq);
            }
            // Emptied in place: a new histogram is some 300 KB to allocate and zero, twenty
            // times a second, on a CPU that under TCG the measured one shares the host with.
            irq.reset();
        }
    }

    fn irq(&self, i: usize, samples: u64) -> Option<IrqSplit> {
        let all = self.irq.lock().unwrap_or_else(|e| e.into_inner());
        let stats = all.get(i)?.clone();
        Some(IrqSplit { unmatched: samples.saturating_sub(stats.count), stats })
    }
}
