//! The trace of the measured CPUs as stretches of time, each with what the CPU was doing
//! ([`Context::key`]), read as the reader streams it. The runner looks a gap up in them once
//! the reader has read past it, then lets them go.

use std::collections::VecDeque;

use crate::trace::context::{Context, Effect, Key};
use crate::trace::ftrace::parse;
use crate::trace::stream::{lost, Lines};

/// How long stretches are kept when no gap asks for them: a runner that has not taken them by
/// then never will.
const KEEP_NS: u64 = 30_000_000_000;

/// `[from, to)` on one CPU, CLOCK_MONOTONIC ns as the trace prints it (to the µs).
#[derive(Clone, Debug, PartialEq)]
pub struct Stretch {
    pub from: u64,
    pub to: u64,
    pub key: Key,
}

/// One CPU followed: its state, when its last event came, the stretches since.
struct Cpu {
    context: Context,
    last_ns: Option<u64>,
    stretches: VecDeque<Stretch>,
}

impl Cpu {
    /// The time from the last event to `to` goes to what the CPU was doing; false when there
    /// is none (no event yet, or not before `to`).
    fn spend(&mut self, to: u64) -> bool {
        let Some(from) = self.last_ns.filter(|l| *l < to) else { return false };
        // The measuring thread's pid is not known here: its stretches are kept as any task's,
        // and the lookup sets them apart.
        match self.stretches.back_mut() {
            Some(s) if s.to == from && self.context.is(&s.key, -1) => s.to = to,
            _ => self.stretches.push_back(Stretch { from, to, key: self.context.key(-1) }),
        }
        true
    }
}

/// What the classification's BPF programs took of the measured CPUs: time by their own clock,
/// from their first reading of it to their record handed on, and how many times they ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgramTime {
    pub ns: u64,
    pub runs: u64,
}

/// What the reader has read of the measured CPUs.
#[derive(Default)]
pub struct Timeline {
    /// By CPU number (a lookup per event: no hashing), `None` for a CPU not followed.
    cpus: Vec<Option<Cpu>>,
    /// Every event the kernel committed before this CLOCK_MONOTONIC time has been read.
    pub caught_up_ns: u64,
    /// Events the kernel dropped (a full buffer).
    pub lost_events: u64,
    /// Records the BPF programs handed over (an ftrace instance's lines are not counted).
    pub records: u64,
    /// The BPF programs' own time on the measured CPUs and their runs there (none from ftrace).
    pub programs: Option<ProgramTime>,
}

impl Timeline {
    /// Follows `cpus`; events of others are not kept.
    pub fn new(cpus: &[usize]) -> Timeline {
        let mut followed: Vec<Option<Cpu>> = Vec::new();
        for &c in cpus {
            if followed.len() <= c {
                followed.resize_with(c + 1, || None);
            }
            followed[c] = Some(Cpu { context: Context::new(c as u32), last_ns: None, stretches: VecDeque::new() });
        }
        Timeline { cpus: followed, ..Timeline::default() }
    }

    fn cpu(&mut self, cpu: u32) -> Option<&mut Cpu> {
        self.cpus.get_mut(cpu as usize).and_then(Option::as_mut)
    }

    /// The stretches of `cpu` read so far.
    pub fn stretches(&self, cpu: u32) -> Option<&VecDeque<Stretch>> {
        self.cpus.get(cpu as usize).and_then(Option::as_ref).map(|c| &c.stretches)
    }

    /// Lets the stretches of `cpu` that end before `ns` go.
    pub fn forget(&mut self, cpu: u32, ns: u64) {
        if let Some(c) = self.cpu(cpu) {
            while c.stretches.front().is_some_and(|s| s.to < ns) {
                c.stretches.pop_front();
            }
        }
    }

    /// Takes in one event read from the trace.
    pub(super) fn event(&mut self, e: &parse::Event) {
        self.effect(e.cpu, e.ts_ns, e.pid, || e.comm, &Effect::of(e));
    }

    /// Takes in one event, its fields typed (from the trace's text or straight from a BPF
    /// record): fired at `ts_ns` on `cpu` while `pid` (`comm`, read only when needed: most
    /// events come while the task the trace last showed is still current) was current there.
    pub(super) fn effect<'c>(&mut self, cpu: u32, ts_ns: u64, pid: i32, comm: impl Fn() -> &'c str, effect: &Effect) {
        let target = match effect {
            Effect::Wakeup { target, .. } => *target,
            _ => None,
        };
        if let Some(c) = target.filter(|t| *t != cpu).and_then(|t| self.cpu(t)) {
            c.context.apply_effect(cpu, pid, &comm, effect);
        }
        let Some(c) = self.cpu(cpu) else { return };
        c.spend(ts_ns);
        c.context.apply_effect(cpu, pid, comm, effect);
        c.last_ns = Some(c.last_ns.map_or(ts_ns, |l| l.max(ts_ns)));
    }
}

impl Lines for Timeline {
    fn line(&mut self, l: &str) {
        if let Some(n) = lost(l) {
            self.lost_events += n;
        } else if let Some(e) = parse::line(l) {
            self.event(&e);
        }
    }

    fn caught_up(&mut self, ns: u64) {
        // What the CPU does from its last event on is what it did at it: nothing has changed
        // it, up to the time read.
        for c in self.cpus.iter_mut().flatten() {
            if c.spend(ns) {
                c.last_ns = Some(ns);
            }
            while c.stretches.front().is_some_and(|s| s.to + KEEP_NS < ns) {
                c.stretches.pop_front();
            }
        }
        self.caught_up_ns = ns;
    }
    fn read_to(&self) -> u64 {
        self.caught_up_ns
    }
}
