//! `deadline`: rt-tests' cyclicdeadline. Each thread runs under SCHED_DEADLINE with a period
//! (its deadline: the interval, plus the step per thread) and a share of it as runtime, gives
//! up the CPU at once each period (sched_yield: it sleeps until the kernel replenishes its
//! runtime at the next period), and reads the clock when it runs again. The sample is that time
//! less the period's start, counted from the thread's first period on.
//!
//! As cyclicdeadline: the same parameters and runtime share, the first wake-up as the origin and
//! an earlier wake-up moving it back. Unlike it: CLOCK_MONOTONIC (the kernel's deadline timers
//! run on it) in ns, where it reads CLOCK_MONOTONIC_RAW in µs; a wake-up a whole period late is
//! an overrun, counted, and the next period is the one after it (cyclicdeadline carries the
//! offset into every later sample). The kernel admits a deadline thread only with all the CPUs
//! of its root domain, so the threads are unpinned (cyclicdeadline makes exclusive cpusets for
//! a subset; rtbench changes no cpuset for it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use anyhow::Result;

use super::{Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{DeadlineParams, Metric, ProbeParams};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "deadline",
    help: "SCHED_DEADLINE wake-up latency (cyclicdeadline): a thread that yields each period, its clock once \
           running again − the period's start",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: None,
    flags: FlagSet::of::<DeadlineFlags>(),
    supported,
    study: super::InStudy::Qualification,
    resume: super::Resume::Settings,
    replay: &[],
};

/// Whether a thread may enter SCHED_DEADLINE here: a small reservation (100 µs of every 10 ms)
/// asked on a thread of the moment, which ends with it.
fn supported() -> Result<(), String> {
    let r = Reservation { runtime: 100_000, period: 10_000_000 };
    let tried = std::thread::spawn(move || sys::set_deadline(r.runtime, r.period, r.period)).join();
    match tried {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(refusal(0, r, &e)),
        Err(_) => Err("the check of SCHED_DEADLINE could not run".into()),
    }
}

/// `deadline`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct DeadlineFlags {
    /// The first thread's period and deadline, in µs (cyclicdeadline's -i)
    #[arg(short = 'i', long, value_name = "US", value_parser = crate::parse::positive_us, default_value_t = 1000)]
    pub interval: u64,
    /// Added to the period per thread, in µs (cyclicdeadline's -s)
    #[arg(short = 's', long, value_name = "US", value_parser = crate::parse::us, default_value_t = 500)]
    pub step: u64,
    /// The runtime as a share of the period, in % [default: cyclicdeadline's: 60, or 80 × CPUs
    /// ÷ threads where there are more threads than CPUs]
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u64).range(1..=100))]
    pub runtime_percent: Option<u64>,
}

impl ProbeFlags for DeadlineFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let p = DeadlineParams {
            interval_us: self.interval,
            step_us: self.step,
            runtime_percent: self.runtime_percent,
            reservations: Vec::new(),
        };
        Ok(Built {
            probe: Arc::new(Deadline { params: p.clone(), threads: AtomicUsize::new(1) }),
            params: ProbeParams::Deadline(p),
        })
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Deadline(p) = stored else { return None };
        Some(DeadlineFlags { interval: p.interval_us, step: p.step_us, runtime_percent: p.runtime_percent })
    }
}

struct Deadline {
    params: DeadlineParams,
    /// The run's threads, as `prepare` was told.
    threads: AtomicUsize,
}

/// One thread's reservation, in ns.
#[derive(Clone, Copy, Debug)]
struct Reservation {
    runtime: u64,
    period: u64,
}

impl Deadline {
    /// Thread `i` of `threads`: cyclicdeadline's period and runtime share.
    fn reservation(&self, i: usize, threads: usize) -> Reservation {
        let cpus = crate::sysinfo::online_cpus().len().max(1);
        let percent =
            self.params.runtime_percent.unwrap_or(if threads > cpus { (cpus * 80 / threads) as u64 } else { 60 });
        let period = (self.params.interval_us + i as u64 * self.params.step_us) * 1000;
        Reservation { runtime: (period * percent / 100).max(1000), period }
    }

    /// Thread `index`'s reservation among the run's threads (as `prepare` was told them).
    fn thread_reservation(&self, index: usize) -> Reservation {
        self.reservation(index, self.threads.load(Ordering::Relaxed).max(index + 1))
    }

    /// The calling thread under SCHED_DEADLINE with reservation `r`, on every online CPU.
    fn enter(r: Reservation) -> std::io::Result<()> {
        sys::set_affinity(&crate::sysinfo::online_cpus())?;
        sys::set_deadline(r.runtime, r.period, r.period)
    }
}

/// Why the kernel refused a reservation, in words.
fn refusal(i: usize, r: Reservation, e: &std::io::Error) -> String {
    let asked = format!("thread {i}: {} µs of every {} µs", r.runtime / 1000, r.period / 1000);
    let why = match e.raw_os_error() {
        Some(libc::EBUSY) => "its admission control has no bandwidth left for it (the deadline tasks' share \
                              of each CPU may not pass sched_rt_runtime_us of sched_rt_period_us); fewer \
                              threads, a longer period or a smaller --runtime-percent"
            .to_string(),
        Some(libc::EPERM) => "not permitted (it takes root or CAP_SYS_NICE)".to_string(),
        Some(libc::EINVAL) => "it found the reservation invalid (runtime ≤ deadline ≤ period)".to_string(),
        _ => e.to_string(),
    };
    format!("the kernel refused SCHED_DEADLINE ({asked}): {why}")
}

impl Probe for Deadline {
    fn step_ns(&self) -> u64 {
        self.params.interval_us * 1000
    }

    /// Every thread's reservation, asked of the kernel at once on threads of the moment, so
    /// that a refusal ends the command before anything is stored.
    fn prepare(&self, threads: usize) -> Result<()> {
        self.threads.store(threads, Ordering::Relaxed);
        let all_tried = Barrier::new(threads);
        let refused: Vec<Option<String>> = std::thread::scope(|s| {
            let tries: Vec<_> = (0..threads)
                .map(|i| {
                    let (r, all_tried) = (self.reservation(i, threads), &all_tried);
                    s.spawn(move || {
                        let said = Deadline::enter(r).err().map(|e| refusal(i, r, &e));
                        // Each holds its reservation until all have asked: admission counts them together.
                        all_tried.wait();
                        said
                    })
                })
                .collect();
            tries.into_iter().map(|t| t.join().unwrap_or(None)).collect()
        });
        match refused.into_iter().flatten().next() {
            Some(why) => anyhow::bail!(why),
            None => Ok(()),
        }
    }

    /// Unpinned: the kernel admits a deadline thread only with its root domain's CPUs.
    fn pins_threads(&self) -> bool {
        false
    }

    /// The thread under SCHED_DEADLINE, before the runner records how it runs.
    fn set_up_thread(&self, index: usize) -> Result<(), String> {
        let r = self.thread_reservation(index);
        Deadline::enter(r).map_err(|e| refusal(index, r, &e))
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let r = self.thread_reservation(ctx.index);
        // The first wake-up after a yield is the origin of its periods.
        sys::yield_cpu();
        let mut start = sys::now_ns();
        let mut taken = 0u64;
        while taken < ctx.loops && !ctx.stopped() {
            start += r.period;
            sys::yield_cpu();
            let now = sys::now_ns();
            if now < start {
                // Woken before the period it counted on: that is where its periods begin.
                start = now;
            }
            ctx.rec.record(start.saturating_sub(ctx.start_ns), now - start);
            taken += 1;
            // Like the timer: a wake-up past the next period's start skips the periods it missed.
            while now >= start + r.period {
                start += r.period;
                ctx.rec.overrun();
            }
        }
    }

    fn findings(&self, params: &mut ProbeParams) {
        let ProbeParams::Deadline(p) = params else { return };
        let threads = self.threads.load(Ordering::Relaxed);
        p.reservations =
            (0..threads).map(|i| self.reservation(i, threads)).map(|r| [r.runtime / 1000, r.period / 1000]).collect();
    }
}
