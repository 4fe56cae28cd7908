//! `migrate`: rt-tests' rt-migrate-test. One more real-time task than CPUs, each at its own
//! FIFO priority, released together every interval to run a while: the kernel must run the
//! highest ones at once, on whichever CPU, pushing and pulling them as needed; the lowest waits.
//! A higher-priority task that waits while a lower one runs is a violation.
//!
//! The measuring thread releases the tasks (all at once, one futex) and sleeps out the interval.
//! Each interval gives one sample, the latest start among the tasks that should have started at
//! once (all but the lowest), and is checked: for every pair of tasks, how long the higher one
//! waited while the lower one ran. rt-migrate-test compares neighbouring priorities only, and
//! stops at the first failure; this checks every pair of every interval and counts them, and
//! sets apart those in intervals where the hypervisor stole time.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::{Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{Metric, MigrateParams, ProbeParams};
use crate::sys::{self, Futex};

pub const INFO: ProbeInfo = ProbeInfo {
    name: "migrate",
    help: "real-time task migration (rt-migrate-test): CPUs + 1 FIFO tasks released together; the latest start \
           of those that should run at once, and every wait of a higher task while a lower one ran",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    // rt-migrate-test's 50 loops.
    default_loops: Some(50),
    flags: FlagSet::of::<MigrateFlags>(),
    supported,
    study: super::InStudy::Qualification,
    resume: super::Resume::Not("its intervals are checked as a whole, each against the others' tasks"),
    replay: &[],
};

fn supported() -> Result<(), String> {
    if !sys::is_root() {
        Err("its tasks need real-time priority (run as root)".into())
    } else if crate::sysinfo::online_cpus().len() < 2 {
        Err("one CPU: there is nowhere to migrate a task to".into())
    } else {
        Ok(())
    }
}

/// `migrate`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct MigrateFlags {
    /// Real-time tasks [default: the online CPUs + 1]
    #[arg(long, value_name = "N", value_parser = crate::parse::positive)]
    pub tasks: Option<u64>,
    /// FIFO priority of the lowest task; each next one is one higher (rt-migrate-test's -p)
    #[arg(long, value_name = "PRIO", value_parser = crate::parse::priority, default_value_t = 2)]
    pub base_priority: i32,
    /// How long each task runs in an interval, in ms
    #[arg(long, value_name = "MS", value_parser = crate::parse::positive, default_value_t = 20)]
    pub run_ms: u64,
    /// How long an interval lasts, in ms
    #[arg(long, value_name = "MS", value_parser = crate::parse::positive, default_value_t = 100)]
    pub interval_ms: u64,
    /// How long a higher task may wait while a lower one runs before it counts, in µs
    /// (rt-migrate-test's -m)
    #[arg(long, value_name = "US", value_parser = crate::parse::positive, default_value_t = 1000)]
    pub max_wait: u64,
    /// The control: pin the two highest tasks to one CPU, so that one waits every interval
    #[arg(long)]
    pub inject: bool,
}

impl ProbeFlags for MigrateFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let cpus = crate::sysinfo::online_cpus();
        let tasks = self.tasks.map_or(cpus.len() + 1, |n| n as usize);
        if self.base_priority as usize + tasks > 98 {
            anyhow::bail!(crate::invalid!(
                "migrate: {tasks} tasks from priority {} pass 98 (the measuring thread stays above them)",
                self.base_priority
            ));
        }
        if self.run_ms * 2 > self.interval_ms {
            anyhow::bail!(crate::invalid!(
                "migrate: --interval-ms {} leaves the lowest task no time to run after the others' --run-ms {}",
                self.interval_ms,
                self.run_ms
            ));
        }
        if self.inject && tasks < 3 {
            anyhow::bail!(crate::invalid!("migrate --inject: it takes at least 3 tasks (--tasks)"));
        }
        let p = MigrateParams {
            tasks,
            task_cpus: cpus,
            base_priority: self.base_priority,
            run_ms: self.run_ms,
            interval_ms: self.interval_ms,
            max_wait_us: self.max_wait,
            inject: self.inject,
            intervals: None,
            violations: None,
            violations_in_steal: None,
            first_violations: Vec::new(),
        };
        let probe = Migrate { params: p.clone(), found: Mutex::default() };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Migrate(p) })
    }
}

/// Violations said in words, at most.
const SAID: usize = 5;

struct Migrate {
    params: MigrateParams,
    found: Mutex<Found>,
}

#[derive(Default)]
struct Found {
    intervals: u64,
    violations: u64,
    in_steal: u64,
    said: Vec<String>,
}

/// One task's last run: CLOCK_MONOTONIC ns, and its CPU.
#[derive(Default)]
struct Ran {
    start: AtomicU64,
    end: AtomicU64,
    cpu: AtomicUsize,
}

/// What the measuring thread and the tasks share.
#[derive(Default)]
struct Shared {
    /// The interval's number: a task runs once each time it changes.
    release: Futex,
    finished: AtomicUsize,
    quit: AtomicBool,
    ran: Vec<Ran>,
}

impl Migrate {
    /// Task `i`: its priority, its CPUs; then a run of `run_ms` at every release.
    fn task(&self, shared: &Shared, i: usize) {
        let p = &self.params;
        let pinned = p.inject && i + 2 >= p.tasks;
        let cpus = if pinned { vec![p.task_cpus[0]] } else { p.task_cpus.clone() };
        let _ = sys::set_affinity(&cpus);
        let _ = sys::set_scheduler(libc::SCHED_FIFO, p.base_priority + i as i32);
        sys::prefault_stack(64 * 1024);
        let mut seen = 0;
        loop {
            while shared.release.load() == seen && !shared.quit.load(Ordering::Acquire) {
                shared.release.wait_while(seen, Duration::from_millis(50));
            }
            if shared.quit.load(Ordering::Acquire) {
                return;
            }
            seen = shared.release.load();
            let start = sys::now_ns();
            let cpu = sys::current_cpu().unwrap_or(usize::MAX);
            let until = start + p.run_ms * 1_000_000;
            while sys::now_ns() < until {
                std::hint::spin_loop();
            }
            let r = &shared.ran[i];
            r.start.store(start, Ordering::Relaxed);
            r.end.store(sys::now_ns(), Ordering::Relaxed);
            r.cpu.store(cpu, Ordering::Relaxed);
            shared.finished.fetch_add(1, Ordering::Release);
        }
    }

    /// Checks one interval released at `release`: every higher task's wait while a lower one
    /// ran. Returns the latest start of the tasks that should have started at once.
    fn check(&self, shared: &Shared, release: u64, stolen: bool) -> u64 {
        let ran: Vec<(u64, u64, usize)> = shared
            .ran
            .iter()
            .map(|r| (r.start.load(Ordering::Relaxed), r.end.load(Ordering::Relaxed), r.cpu.load(Ordering::Relaxed)))
            .collect();
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.intervals += 1;
        for (hi, &(hi_start, _, hi_cpu)) in ran.iter().enumerate() {
            for (lo, &(lo_start, lo_end, lo_cpu)) in ran.iter().enumerate().take(hi) {
                // How long the higher task waited while the lower one ran.
                let waited = hi_start.min(lo_end).saturating_sub(lo_start.max(release));
                if waited <= self.params.max_wait_us * 1000 {
                    continue;
                }
                found.violations += 1;
                found.in_steal += u64::from(stolen);
                if found.said.len() < SAID {
                    let prio = |i: usize| self.params.base_priority + i as i32;
                    let steal = if stolen { " (the hypervisor stole time in it)" } else { "" };
                    let said = format!(
                        "interval {}: the task at FIFO {} waited {} µs while the one at FIFO {} ran on CPU {lo_cpu} \
                         (it then ran on CPU {hi_cpu}){steal}",
                        found.intervals,
                        prio(hi),
                        waited / 1000,
                        prio(lo)
                    );
                    found.said.push(said);
                }
            }
        }
        // The lowest ones wait by design: those beyond one a CPU.
        let waiting = self.params.tasks.saturating_sub(self.params.task_cpus.len());
        ran.iter().skip(waiting).map(|r| r.0.saturating_sub(release)).max().unwrap_or(0)
    }
}

/// The hypervisor's steal over all CPUs so far, in clock ticks.
fn steal_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let all = crate::sysinfo::cpu_times(&stat).into_iter().find(|t| t.cpu.is_none());
    all.map_or(0, |t| t.get(crate::sysinfo::CpuTimes::STEAL))
}

impl Probe for Migrate {
    fn step_ns(&self) -> u64 {
        self.params.interval_ms * 1_000_000
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let shared = Shared { ran: (0..self.params.tasks).map(|_| Ran::default()).collect(), ..Shared::default() };
        let interval = self.params.interval_ms * 1_000_000;
        std::thread::scope(|s| {
            for i in 0..self.params.tasks {
                let shared = &shared;
                s.spawn(move || self.task(shared, i));
            }
            // The tasks set themselves up before the first release.
            sys::sleep_until(sys::now_ns() + interval);
            let mut taken = 0u64;
            while taken < ctx.loops && !ctx.stopped() {
                let steal = steal_ticks();
                shared.finished.store(0, Ordering::Release);
                let release = sys::now_ns();
                shared.release.store(shared.release.load() + 1);
                shared.release.wake_all();
                sys::sleep_until(release + interval);
                // A task still running or never run: wait for it (a starved one ends the run).
                let limit = sys::now_ns() + 10 * interval;
                while shared.finished.load(Ordering::Acquire) < self.params.tasks && sys::now_ns() < limit {
                    sys::sleep_until(sys::now_ns() + 1_000_000);
                }
                if shared.finished.load(Ordering::Acquire) < self.params.tasks {
                    let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
                    let said = format!(
                        "interval {}: a task had not run its {} ms after {} ms: the run ends there",
                        found.intervals + 1,
                        self.params.run_ms,
                        11 * self.params.interval_ms
                    );
                    found.said.push(said);
                    break;
                }
                let latest = self.check(&shared, release, steal_ticks() != steal);
                ctx.rec.record(release.saturating_sub(ctx.start_ns), latest);
                taken += 1;
            }
            shared.quit.store(true, Ordering::Release);
            shared.release.wake_all();
        });
    }

    fn findings(&self, params: &mut ProbeParams) {
        let ProbeParams::Migrate(p) = params else { return };
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        p.intervals = Some(found.intervals);
        p.violations = Some(found.violations);
        p.violations_in_steal = Some(found.in_steal);
        p.first_violations = found.said.clone();
    }
}
