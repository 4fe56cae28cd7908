//! From the split's trace lines to expiries: `hrtimer_start` says which thread armed which
//! hrtimer for when (`softexpires`: the time the thread asked for, on the timer's own clock,
//! CLOCK_MONOTONIC for the probes' sleeps), `hrtimer_expire_entry` of the same hrtimer on the
//! same CPU says when its handler ran (`now`, on that clock too). No trace clock is involved.

use std::collections::{HashMap, VecDeque};

use crate::trace::ftrace::parse;
use crate::trace::stream::{lost, Lines};

/// One traced expiry of a thread's sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiry {
    /// When the thread asked to wake (CLOCK_MONOTONIC ns).
    pub due_ns: u64,
    /// When the expiry handler ran (CLOCK_MONOTONIC ns).
    pub ran_ns: u64,
}

/// What the reader has read: expiries per thread id, and how far.
#[derive(Debug, Default)]
pub struct Seen {
    pub by_pid: HashMap<i32, VecDeque<Expiry>>,
    /// Every event the kernel committed before this CLOCK_MONOTONIC time has been read.
    pub caught_up_ns: u64,
    /// Events the kernel dropped (a full buffer).
    pub lost_events: u64,
    /// Records the BPF program handed over (an ftrace instance's lines are not counted).
    pub records: u64,
    /// Expiries the kernel did not run the BPF program for (see [`SplitRecord::missed`]).
    ///
    /// [`SplitRecord::missed`]: crate::model::SplitRecord::missed
    pub missed: Option<u64>,
    /// The threads followed; until they are known, every sleeper on the CPUs is kept.
    pub follow: Option<Vec<i32>>,
    /// Timers started and not yet expired, by CPU and hrtimer: the thread and its due time.
    armed: HashMap<(u32, u64), (i32, u64)>,
}

impl Seen {
    /// Follows only `pids` from now on.
    pub fn follow(&mut self, pids: &[i32]) {
        self.by_pid.retain(|pid, _| pids.contains(pid));
        self.follow = Some(pids.to_vec());
    }

    /// Thread `pid`'s sleep due at `due_ns` ended: its handler ran at `ran_ns`.
    pub fn expired(&mut self, pid: i32, due_ns: u64, ran_ns: u64) {
        if self.follow.as_ref().is_none_or(|f| f.contains(&pid)) {
            self.by_pid.entry(pid).or_default().push_back(Expiry { due_ns, ran_ns });
        }
    }
}

impl Lines for Seen {
    fn line(&mut self, l: &str) {
        if let Some(n) = lost(l) {
            self.lost_events += n;
            return;
        }
        let Some(e) = parse::line(l) else { return };
        let number = |key| parse::field(e.detail, key).and_then(|v| v.parse::<u64>().ok());
        let Some(timer) = parse::field(e.detail, "hrtimer").and_then(|h| u64::from_str_radix(h, 16).ok()) else {
            return;
        };
        match e.name {
            // Re-armed before it expired (a sleep cut short): the new time replaces the old.
            "hrtimer_start" => {
                if let Some(due) = number("softexpires") {
                    self.armed.insert((e.cpu, timer), (e.pid, due));
                }
            }
            "hrtimer_expire_entry" => {
                if let (Some((pid, due_ns)), Some(ran_ns)) = (self.armed.remove(&(e.cpu, timer)), number("now")) {
                    self.expired(pid, due_ns, ran_ns);
                }
            }
            _ => {}
        }
    }

    fn caught_up(&mut self, ns: u64) {
        self.caught_up_ns = ns;
    }
    fn read_to(&self) -> u64 {
        self.caught_up_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "rtbench-0-812 [001] d..1. 100.000000: hrtimer_start: hrtimer=00000000ca75ba3a function=hrtimer_wakeup expires=5000001000 softexpires=5000000000 mode=ABS was_armed=0";
    const EXPIRE: &str =
        "<idle>-0 [001] d.h1. 100.001000: hrtimer_expire_entry: hrtimer=00000000ca75ba3a function=hrtimer_wakeup now=5000003500";

    #[test]
    fn an_expiry_is_the_thread_s_that_armed_the_same_timer_on_the_same_cpu() {
        let mut seen = Seen::default();
        seen.line(START);
        seen.line(&EXPIRE.replace("[001]", "[000]"));
        assert!(seen.by_pid.is_empty(), "another CPU's timer of the same address is not ours");
        seen.line(EXPIRE);
        let want = Expiry { due_ns: 5_000_000_000, ran_ns: 5_000_003_500 };
        assert_eq!(seen.by_pid[&812], [want], "due is softexpires, the time the thread asked for");
        seen.line(EXPIRE);
        assert_eq!(seen.by_pid[&812].len(), 1, "an expiry with no start before it is nobody's");
    }

    #[test]
    fn only_followed_threads_are_kept_and_lost_events_are_counted() {
        let mut seen = Seen::default();
        seen.line(START);
        seen.line(EXPIRE);
        seen.follow(&[900]);
        assert!(seen.by_pid.is_empty(), "812 is not followed");
        seen.line(START);
        seen.line(EXPIRE);
        assert!(seen.by_pid.is_empty());
        seen.line("CPU:1 [LOST 20 EVENTS]");
        seen.line("CPU:0 [LOST 3 EVENTS]");
        assert_eq!(seen.lost_events, 23);
    }
}
