//! `pi`: rt-tests' pi_stress. Each measuring thread drives an inversion group on its CPU: a
//! low, a medium and a high FIFO thread around one mutex with priority inheritance. Each round
//! the low thread takes the mutex and wakes the other two; the high one asks for the mutex and
//! waits, the medium one is ready to run as long as the high one has not finished. With
//! priority inheritance the kernel runs the low thread at the high one's priority until it lets
//! the mutex go, and the round ends; without it the medium thread keeps the CPU, the low never
//! runs, and the high waits for ever: a deadlock.
//!
//! The sample is how long the high thread waited for the mutex (the inversion's length, which
//! pi_stress does not measure: it counts rounds). A group that ends no round for
//! `--deadlock-ms` is deadlocked: the run ends as failed, the three threads named with what
//! /proc says they were doing, and the measuring thread then lets the medium one stop, so that
//! every thread ends. `--inject` is the control: mutexes without inheritance, which must be
//! caught.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::{Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{Metric, PiParams, ProbeParams};
use crate::sys::{self, Futex, PosixMutex};

pub const INFO: ProbeInfo = ProbeInfo {
    name: "pi",
    help: "priority inheritance under inversion (pi_stress): low/medium/high FIFO groups around a PI mutex; how \
           long the high thread waited for it, and any deadlock",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: None,
    flags: FlagSet::of::<PiFlags>(),
    supported,
    study: super::InStudy::Qualification,
    resume: super::Resume::Not("a deadlock is a group's state, which a new process cannot take over"),
    replay: &[],
};

fn supported() -> Result<(), String> {
    if sys::is_root() {
        Ok(())
    } else {
        Err("its groups need real-time priorities (run as root)".into())
    }
}

/// `pi`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct PiFlags {
    /// FIFO priority of each group's low thread; the medium and high ones are the next two
    #[arg(long, value_name = "PRIO", value_parser = crate::parse::priority, default_value_t = 2)]
    pub base_priority: i32,
    /// How long a group may end no round before it counts as deadlocked, in ms
    #[arg(long, value_name = "MS", value_parser = crate::parse::positive, default_value_t = 2000)]
    pub deadlock_ms: u64,
    /// The control: mutexes without priority inheritance, so that the first round deadlocks
    #[arg(long)]
    pub inject: bool,
}

impl ProbeFlags for PiFlags {
    fn build(&self, shape: &Shape) -> Result<Built> {
        // The measuring thread watches its group from above: a deadlocked group's medium
        // thread keeps the CPU from anything at or below its priority.
        if self.base_priority + 2 >= shape.priority {
            anyhow::bail!(crate::invalid!(
                "pi: a group from FIFO {} reaches FIFO {}, and its measuring thread runs at {}: it must run above \
                 the group (-p, --policy fifo) to see a deadlock",
                self.base_priority,
                self.base_priority + 2,
                if shape.priority == 0 { "SCHED_OTHER".to_string() } else { format!("FIFO {}", shape.priority) }
            ));
        }
        let p = PiParams {
            base_priority: self.base_priority,
            deadlock_ms: self.deadlock_ms,
            inject: self.inject,
            inversions: None,
            inversions_per_s: None,
            deadlocks: None,
            first_deadlocks: Vec::new(),
        };
        let probe = Pi { params: p.clone(), found: Mutex::default(), deadlocked: AtomicBool::new(false) };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Pi(p) })
    }
}

struct Pi {
    params: PiParams,
    found: Mutex<Found>,
    /// A group deadlocked: every group ends its rounds.
    deadlocked: AtomicBool,
}

#[derive(Default)]
struct Found {
    /// A group that could not be made (no mutex): the run fails, but no deadlock was seen.
    error: Option<String>,
    inversions: u64,
    /// When the first group began its rounds and the last ended them (CLOCK_MONOTONIC ns).
    span: Option<(u64, u64)>,
    deadlocks: Vec<String>,
}

/// The three threads of a group.
#[derive(Clone, Copy, Debug)]
enum Role {
    Low,
    Medium,
    High,
}

impl Role {
    const ALL: [Role; 3] = [Role::Low, Role::Medium, Role::High];

    fn name(self) -> &'static str {
        match self {
            Role::Low => "low",
            Role::Medium => "medium",
            Role::High => "high",
        }
    }
}

/// What a group's threads and its measuring thread share. Each round has a number; the
/// words hold the number of the last round that got that far.
struct Group {
    mutex: PosixMutex,
    /// The measuring thread starts a round here; the low thread waits on it.
    round: Futex,
    /// The low thread holds the mutex; the medium and high threads wait on it.
    held: Futex,
    /// The high thread had the mutex and let it go; the measuring thread waits on it, the
    /// medium thread runs until it changes.
    done: Futex,
    /// How long the high thread waited for the mutex in the last round, in ns.
    waited: AtomicU64,
    /// The medium thread stops running (a deadlock was seen), or every thread ends.
    release: AtomicBool,
    quit: AtomicBool,
    /// Each thread's id, once it runs, in `Role` order.
    tids: [AtomicI32; 3],
}

impl Group {
    fn new(inherit: bool) -> std::io::Result<Group> {
        Ok(Group {
            mutex: PosixMutex::new(inherit)?,
            round: Futex::default(),
            held: Futex::default(),
            done: Futex::default(),
            waited: AtomicU64::new(0),
            release: AtomicBool::new(false),
            quit: AtomicBool::new(false),
            tids: Default::default(),
        })
    }

    /// Waits until `word` leaves `seen`; its new value, or None once the group ends.
    fn next(&self, word: &Futex, seen: u32) -> Option<u32> {
        while word.load() == seen && !self.quit.load(Ordering::Acquire) {
            word.wait(seen);
        }
        (!self.quit.load(Ordering::Acquire)).then(|| word.load())
    }

    /// One thread of the group, on `cpu` at `priority`, until the group ends.
    fn member(&self, role: Role, cpu: usize, priority: i32) {
        let _ = sys::set_affinity(&[cpu]);
        let _ = sys::set_scheduler(libc::SCHED_FIFO, priority);
        sys::prefault_stack(64 * 1024);
        self.tids[role as usize].store(sys::gettid(), Ordering::Release);
        let mut seen = 0;
        match role {
            Role::Low => {
                while let Some(n) = self.next(&self.round, seen) {
                    seen = n;
                    let _ = self.mutex.lock();
                    // Both others are higher: they run from here, before this thread goes on.
                    self.held.store(n);
                    self.held.wake_all();
                    self.mutex.unlock();
                }
            }
            Role::Medium => {
                while let Some(n) = self.next(&self.held, seen) {
                    seen = n;
                    while self.done.load() != n && !self.release.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                }
            }
            Role::High => {
                while let Some(n) = self.next(&self.held, seen) {
                    seen = n;
                    let asked = sys::now_ns();
                    let _ = self.mutex.lock();
                    self.waited.store(sys::now_ns() - asked, Ordering::Relaxed);
                    self.mutex.unlock();
                    self.done.store(n);
                    self.done.wake_all();
                }
            }
        }
    }

    /// Ends every thread of the group.
    fn end(&self) {
        self.release.store(true, Ordering::Release);
        self.quit.store(true, Ordering::Release);
        for word in [&self.round, &self.held] {
            word.store(word.load().wrapping_add(1));
            word.wake_all();
        }
    }
}

/// What /proc says thread `tid` of this process is doing: its state letter and last CPU.
fn doing(tid: i32) -> String {
    let field = |n| crate::sysinfo::stat_field(tid as u32, n);
    let state = match field(0).as_deref() {
        Some("R") => "running or ready",
        Some("S") => "waiting",
        Some("D") => "waiting, uninterruptible",
        Some(_) => "in another state",
        None => "gone",
    };
    // Field 39 of the stat, the 36th after the state.
    match field(36) {
        Some(cpu) => format!("{state}, CPU {cpu}"),
        None => state.to_string(),
    }
}

impl Pi {
    /// What a deadlocked group's threads were doing, in words.
    fn deadlock(&self, index: usize, cpu: usize, group: &Group, rounds: u64) -> String {
        let named: Vec<String> = Role::ALL
            .iter()
            .map(|&r| {
                let tid = group.tids[r as usize].load(Ordering::Acquire);
                let prio = self.params.base_priority + r as i32;
                format!("{} (TID {tid}, FIFO {prio}: {})", r.name(), doing(tid))
            })
            .collect();
        let inherit =
            if self.params.inject { "without priority inheritance (--inject)" } else { "with priority inheritance" };
        format!(
            "deadlock: group {index} on CPU {cpu} ended no round in {} ms (after {rounds} inversions), its mutex \
             {inherit}: the high thread waited for the mutex the low one held while the medium one kept the CPU — {}",
            self.params.deadlock_ms,
            named.join("; ")
        )
    }
}

impl Probe for Pi {
    fn step_ns(&self) -> u64 {
        0
    }

    fn sample_gap_ns(&self) -> Option<u64> {
        Some(self.params.deadlock_ms * 1_000_000 * 2)
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let group = match Group::new(!self.params.inject) {
            Ok(g) => g,
            Err(e) => {
                let said = format!("group {}: no mutex: {e}", ctx.index);
                self.found.lock().unwrap_or_else(|e| e.into_inner()).error.get_or_insert(said);
                return;
            }
        };
        let cpu = sys::current_cpu().unwrap_or(0);
        let limit = self.params.deadlock_ms * 1_000_000;
        let mut rounds = 0u64;
        let mut began = 0;
        std::thread::scope(|s| {
            for role in Role::ALL {
                let (group, priority) = (&group, self.params.base_priority + role as i32);
                s.spawn(move || group.member(role, cpu, priority));
            }
            while group.tids.iter().any(|t| t.load(Ordering::Acquire) == 0) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut n = 0u32;
            began = sys::now_ns();
            while rounds < ctx.loops && !ctx.stopped() && !self.deadlocked.load(Ordering::Relaxed) {
                n = n.wrapping_add(1);
                let started = sys::now_ns();
                group.round.store(n);
                group.round.wake_all();
                let until = started + limit;
                while group.done.load() != n && sys::now_ns() < until {
                    group.done.wait_while(group.done.load(), Duration::from_nanos(until.saturating_sub(sys::now_ns())));
                }
                if group.done.load() != n {
                    let said = self.deadlock(ctx.index, cpu, &group, rounds);
                    self.deadlocked.store(true, Ordering::Relaxed);
                    self.found.lock().unwrap_or_else(|e| e.into_inner()).deadlocks.push(said);
                    break;
                }
                ctx.rec.record(started.saturating_sub(ctx.start_ns), group.waited.load(Ordering::Relaxed));
                rounds += 1;
            }
            group.end();
        });
        let ended = sys::now_ns();
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.inversions += rounds;
        found.span = Some(found.span.map_or((began, ended), |(b, e)| (b.min(began), e.max(ended))));
    }

    fn findings(&self, params: &mut ProbeParams) {
        let ProbeParams::Pi(p) = params else { return };
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        p.inversions = Some(found.inversions);
        p.inversions_per_s = found.span.map(|(b, e)| found.inversions as f64 * 1e9 / (e - b).max(1) as f64);
        p.deadlocks = Some(found.deadlocks.len() as u64);
        p.first_deadlocks = found.deadlocks.clone();
    }

    fn failure(&self) -> Option<String> {
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.deadlocks.first().or(found.error.as_ref()).cloned()
    }
}
