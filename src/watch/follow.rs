//! Each watched thread's account, from the programs' events in time order: every wait from
//! being made runnable to running — woken, or preempted and so still runnable — which is what
//! `perf sched timehist` calls the scheduling delay and bcc's runqlat the run-queue latency; its
//! time on the CPU, its switches in, preemptions and migrations; each of its sleeps judged by
//! what it slept in and who woke it ([`calls`](super::calls)); the times ordinary tasks took
//! its CPU while it could run. A thread the application starts while watched is followed from
//! its first wake-up.

use std::collections::BTreeMap;

use super::calls::{self, Call, Slept, Waker};
use super::instead::Late;
use crate::stats::Stats;
use crate::trace::ftrace::parse;
use crate::trace::stream::Lines;

/// The events, as the programs number them.
pub const WAKEUP: u32 = 0;
pub const WAKEUP_NEW: u32 = 1;
pub const SWITCH: u32 = 2;
pub const MIGRATE: u32 = 3;
pub const WAKING: u32 = 4;

/// A record's size: nine words.
pub const RECORD: usize = 72;

/// One event of a watched thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub ts: u64,
    /// The CPU it happened on (a switch's), or for a migration the CPU the thread goes to.
    pub cpu: u32,
    pub kind: u32,
    /// The woken, switched-in or migrated thread, and its kernel priority (0–99 real-time,
    /// 100–139 the others).
    pub pid: u32,
    pub prio: u32,
    /// A switch's thread switched out, and its state then (0: still runnable, preempted); a
    /// waking's waker and its kernel priority.
    pub prev: u32,
    pub prev_state: u32,
    /// Whether `pid`, and a switch's `prev` or a waking's waker, is a thread of the watched
    /// processes.
    pub watched: bool,
    pub prev_watched: bool,
    /// The system call a switch's `prev`, or a waking's waker, was in.
    pub call: Option<Call>,
}

impl Event {
    /// A record as the programs write it: (time), (CPU, kind), (pid, prio), (prev, the
    /// migration's CPU or the waker; prev's state or the waker's priority), (pid watched, prev
    /// or waker watched), (system call number + 1, its operation), (its first argument).
    pub fn from(rec: &[u8]) -> Option<Event> {
        let half = |i: usize| rec.get(i * 4..i * 4 + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let ts = u64::from(half(0)?) | u64::from(half(1)?) << 32;
        let (kind, other) = (half(3)?, half(6)?);
        let cpu = if kind == MIGRATE { other } else { half(2)? };
        let (op, arg0) = (half(11)?, u64::from(half(12)?) | u64::from(half(13)?) << 32);
        // A clock_nanosleep's time asked: seconds, nanoseconds (the low word; 32-bit ARM's
        // timespec pads it).
        let asked = (u64::from(half(14)?) | u64::from(half(15)?) << 32)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(half(16)?));
        half(17)?;
        Some(Event {
            ts,
            cpu,
            kind,
            pid: half(4)?,
            prio: half(5)?,
            prev: other,
            prev_state: half(7)?,
            watched: half(8)? != 0,
            prev_watched: half(9)? != 0,
            call: half(10)?.checked_sub(1).map(|nr| Call { nr, op, arg0, asked }),
        })
    }
}

/// One watched thread's account.
#[derive(Clone, Debug, Default)]
pub struct Account {
    /// Wake-up to switched in, ns.
    pub latencies: Stats,
    /// The largest of them and when it ended.
    pub worst: Option<(u64, u64)>,
    pub runtime_ns: u64,
    pub switches_in: u64,
    /// Switched out still runnable: its wait to run again is timed as a wake-up's.
    pub preemptions: u64,
    pub migrations: u64,
    /// Its kernel priority when last seen.
    pub prio: Option<u32>,
    /// For each watched thread of its priority that ran just before it, on the CPU it waited
    /// for: how often.
    pub behind: BTreeMap<u32, u64>,
    pub last_cpu: Option<u32>,
    /// Its sleeps, by what they were ([`calls::judge`]), with who ended them: how often.
    pub sleeps: BTreeMap<(Slept, Option<u32>), u64>,
    /// For each absolute sleep on CLOCK_MONOTONIC, how late it ran after the time it asked:
    /// what a periodic thread measures as its own jitter (and cyclictest as its latency). Made
    /// at the first (a histogram each is large; most threads never sleep so).
    pub lateness: Option<Stats>,
    /// The times between its runs after a wake-up: a periodic thread's period and its spread,
    /// whatever way it sleeps. Made at the first.
    pub intervals: Option<Stats>,
    last_woken_run: Option<u64>,
    /// Its wait is one after a preemption.
    after_preemption: bool,
    /// Preempted while it could run by an ordinary (not real-time) task: how often, the
    /// longest wait to run again, and by which tasks how often.
    pub ceded: u64,
    pub ceded_worst_ns: u64,
    pub ceded_to: BTreeMap<u32, u64>,
    woken_at: Option<u64>,
    running_since: Option<u64>,
    /// Asleep, in this call (none: outside one); who is waking it.
    asleep: Option<Option<Call>>,
    waker: Option<Waker>,
    /// The time its absolute sleep asked, until it runs.
    due: Option<u64>,
    ceding: bool,
}

/// The accounts of every thread seen.
#[derive(Debug, Default)]
pub struct Followed {
    pub threads: BTreeMap<u32, Account>,
    /// Records read, and lost because the buffer was full.
    pub records: u64,
    pub lost_events: u64,
    read_to: u64,
    /// Threads throttled now, waiting to run again.
    ceding: u32,
    /// Waits longer than this (0: none) are kept in `late` for the watch to look up who ran
    /// instead.
    pub late_above_ns: u64,
    pub late: Vec<Late>,
}

/// Fed by the BPF programs, or by an ftrace instance's sched events: those lines name no
/// process, so there only the threads given an account first ([`Followed::of`]) are followed.
impl Lines for Followed {
    fn line(&mut self, l: &str) {
        let Some(e) = parse::line(l) else { return };
        let number = |key| parse::field(e.detail, key).and_then(|v| v.parse::<u32>().ok());
        let known = |pid: Option<u32>| pid.is_some_and(|p| self.threads.contains_key(&p));
        let kind = match e.name {
            "sched_wakeup" => WAKEUP,
            "sched_wakeup_new" => WAKEUP_NEW,
            "sched_switch" => SWITCH,
            "sched_migrate_task" => MIGRATE,
            _ => return,
        };
        let (pid, prev) = match kind {
            SWITCH => (number("next_pid"), number("prev_pid")),
            _ => (number("pid"), None),
        };
        let cpu = if kind == MIGRATE { number("dest_cpu") } else { Some(e.cpu) };
        // A switched-out thread still runnable ("R", "R+") was preempted.
        let preempted = parse::field(e.detail, "prev_state").is_some_and(|s| s.starts_with('R'));
        let event = Event {
            ts: e.ts_ns,
            cpu: cpu.unwrap_or(e.cpu),
            kind,
            pid: pid.unwrap_or(0),
            prio: number(if kind == SWITCH { "next_prio" } else { "prio" }).unwrap_or(0),
            prev: prev.unwrap_or(0),
            prev_state: u32::from(!preempted),
            watched: known(pid),
            prev_watched: known(prev),
            call: None,
        };
        self.take(&event);
    }

    fn caught_up(&mut self, ns: u64) {
        self.read_to = self.read_to.max(ns);
    }

    fn read_to(&self) -> u64 {
        self.read_to
    }
}

impl Followed {
    /// Accounts for `tids` from the start (the ones an ftrace instance's lines can follow).
    pub fn of(tids: &[u32]) -> Followed {
        Followed { threads: tids.iter().map(|&t| (t, Account::default())).collect(), ..Followed::default() }
    }

    /// While a throttled thread waits, the ordinary tasks switched in on its CPU (those the
    /// programs see: the watched processes' own) ran in its place.
    fn ran_instead(&mut self, e: &Event) {
        if self.ceding == 0 || e.prio < 100 || e.pid == 0 {
            return;
        }
        for (tid, a) in self.threads.iter_mut() {
            if a.ceding && a.last_cpu == Some(e.cpu) && *tid != e.pid && e.prev != *tid {
                *a.ceded_to.entry(e.pid).or_default() += 1;
            }
        }
    }

    /// Takes one event, in time order.
    pub fn take(&mut self, e: &Event) {
        match e.kind {
            WAKING if e.watched => {
                let a = self.threads.entry(e.pid).or_default();
                let waker = Waker { tid: e.prev, prio: e.prev_state, watched: e.prev_watched, call: e.call };
                a.waker.get_or_insert(waker);
            }
            WAKEUP | WAKEUP_NEW if e.watched => self.threads.entry(e.pid).or_default().woken(e),
            SWITCH => {
                self.ran_instead(e);
                if e.prev_watched {
                    self.switched_out(e);
                }
                if e.watched {
                    self.switched_in(e);
                }
            }
            MIGRATE if e.watched => {
                let a = self.threads.entry(e.pid).or_default();
                a.migrations += 1;
                a.last_cpu = Some(e.cpu);
            }
            _ => {}
        }
    }

    /// A watched thread leaves its CPU: asleep in its call, or preempted (throttled, when an
    /// ordinary task took a real-time thread's CPU).
    fn switched_out(&mut self, e: &Event) {
        let a = self.threads.entry(e.prev).or_default();
        if let Some(since) = a.running_since.take() {
            a.runtime_ns += e.ts.saturating_sub(since);
        }
        if e.prev_state != 0 {
            a.asleep = Some(e.call);
            return;
        }
        a.preemptions += 1;
        a.woken_at = Some(e.ts);
        a.after_preemption = true;
        if a.prio.is_some_and(|p| p < 100) && e.prio >= 100 && e.pid != 0 {
            a.ceded += 1;
            *a.ceded_to.entry(e.pid).or_default() += 1;
            a.ceding = true;
            self.ceding += 1;
        }
    }

    /// A watched thread switched in: its wait, if it waited, timed (and looked up later when
    /// long), and an absolute sleep's lateness.
    fn switched_in(&mut self, e: &Event) {
        let twin = e.prev_watched && self.threads.get(&e.prev).and_then(|p| p.prio) == Some(e.prio);
        let a = self.threads.entry(e.pid).or_default();
        if twin && a.woken_at.is_some() {
            *a.behind.entry(e.prev).or_default() += 1;
        }
        if let Some(woken) = a.woken_at.take() {
            let waited = e.ts.saturating_sub(woken);
            a.latencies.record(waited);
            if a.worst.is_none_or(|(w, _)| waited > w) {
                a.worst = Some((waited, e.ts));
            }
            if std::mem::take(&mut a.ceding) {
                a.ceded_worst_ns = a.ceded_worst_ns.max(waited);
                self.ceding -= 1;
            }
            if let Some(due) = a.due.take() {
                a.lateness.get_or_insert_with(Stats::default).record(e.ts.saturating_sub(due));
            }
            // A run after a wake-up (not after a preemption) begins a period.
            if !std::mem::take(&mut a.after_preemption) {
                if let Some(last) = a.last_woken_run.replace(e.ts) {
                    a.intervals.get_or_insert_with(Stats::default).record(e.ts - last);
                }
            }
            if self.late_above_ns > 0 && waited > self.late_above_ns {
                self.late.push(Late { tid: e.pid, cpu: e.cpu, from: woken, to: e.ts });
            }
        }
        a.running_since = Some(e.ts);
        a.switches_in += 1;
        a.last_cpu = Some(e.cpu);
        a.prio = Some(e.prio);
    }
}

impl Account {
    /// Made runnable: its wait begins, unless it is on its CPU or already woken; the sleep it
    /// ends judged by its call and its waker.
    fn woken(&mut self, e: &Event) {
        if self.running_since.is_none() && self.woken_at.is_none() {
            self.woken_at = Some(e.ts);
            self.after_preemption = false;
        }
        self.prio = Some(e.prio);
        let waker = self.waker.take();
        if let Some(call) = self.asleep.take() {
            let slept = calls::judge(call, e.prio, waker);
            self.due = call.and_then(|c| c.due()).filter(|_| slept == Slept::Timed);
            let by = matches!(slept, Slept::Inverted | Slept::Blocked(_)).then(|| waker.map(|w| w.tid)).flatten();
            *self.sleeps.entry((slept, by)).or_default() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, kind: u32, pid: u32, prev: u32) -> Event {
        Event {
            ts,
            cpu: 1,
            kind,
            pid,
            prio: 19,
            prev,
            prev_state: 1,
            watched: pid == 7,
            prev_watched: prev == 7,
            call: None,
        }
    }

    #[test]
    fn a_wake_up_is_timed_to_its_switch_in_and_the_run_to_its_switch_out() {
        let mut f = Followed::default();
        for e in [
            ev(1_000, WAKEUP, 7, 0),
            ev(1_500, WAKEUP, 7, 0), // woken again before it ran: the first wake-up counts
            ev(4_000, SWITCH, 7, 3), // in: waited 3 µs
            ev(4_100, WAKEUP, 7, 0), // woken while on its CPU: no wait
            ev(9_000, SWITCH, 3, 7), // out: ran 5 µs
            ev(10_000, MIGRATE, 7, 0),
            ev(20_000, WAKEUP, 7, 0),
            ev(21_000, SWITCH, 7, 3),                            // in: waited 1 µs
            ev(22_000, WAKEUP, 8, 0),                            // another process's thread
            Event { prev_state: 0, ..ev(23_000, SWITCH, 3, 7) }, // preempted after 2 µs
            ev(25_500, SWITCH, 7, 3),                            // back in: waited 2.5 µs
        ] {
            f.take(&e);
        }
        let a = &f.threads[&7];
        assert_eq!(a.latencies.count, 3);
        assert_eq!((a.latencies.min, a.latencies.max), (1_000, 3_000));
        assert_eq!(a.worst, Some((3_000, 4_000)));
        assert_eq!((a.runtime_ns, a.switches_in, a.preemptions, a.migrations), (7_000, 3, 1, 1));
        assert_eq!(f.threads.keys().collect::<Vec<_>>(), [&7], "only watched threads have accounts");
    }

    /// A sleep judged by its call and waker; an absolute sleep's lateness to the time asked; an
    /// ordinary task that preempts a real-time thread.
    #[test]
    fn sleeps_are_judged_absolute_ones_timed_late_and_ordinary_preemptions_counted() {
        let abs = Call { nr: libc::SYS_clock_nanosleep as u32, op: 1, arg0: 1, asked: 10_000 };
        let wait = Call { nr: libc::SYS_futex as u32, op: 128, arg0: 0, asked: 0 };
        let wake = Call { nr: libc::SYS_futex as u32, op: 129, arg0: 0, asked: 0 };
        let mut f = Followed::default();
        for e in [
            ev(1_000, SWITCH, 7, 3),
            Event { call: Some(abs), ..ev(5_000, SWITCH, 3, 7) }, // asleep until 10 µs
            ev(10_500, WAKEUP, 7, 0),
            ev(12_000, SWITCH, 7, 3), // ran 2 µs after the time asked
            Event { call: Some(wait), ..ev(13_000, SWITCH, 3, 7) },
            Event { prev_state: 120, prev_watched: true, call: Some(wake), ..ev(14_000, WAKING, 7, 8) },
            ev(14_100, WAKEUP, 7, 0),
            ev(15_000, SWITCH, 7, 3),
            Event { prio: 120, prev_state: 0, ..ev(16_000, SWITCH, 9, 7) }, // an ordinary task took it
            ev(19_000, SWITCH, 7, 9),
        ] {
            f.take(&e);
        }
        let a = &f.threads[&7];
        let late = a.lateness.as_ref().expect("an absolute sleep timed");
        assert_eq!((late.count, late.max), (1, 2_000));
        // Runs after a wake-up at 12 and 15 µs (the one after a preemption begins no period).
        let every = a.intervals.as_ref().expect("its periods");
        assert_eq!((every.count, every.min, every.max), (1, 3_000, 3_000));
        let sleeps: Vec<_> = a.sleeps.iter().map(|(k, n)| (*k, *n)).collect();
        assert_eq!(sleeps, [((Slept::Timed, None), 1), ((Slept::Inverted, Some(8)), 1)]);
        assert_eq!((a.ceded, a.ceded_worst_ns, a.ceded_to.get(&9)), (1, 3_000, Some(&1)));
    }

    #[test]
    fn an_ftrace_instance_s_lines_are_the_same_events_for_the_threads_known() {
        let mut f = Followed::of(&[7]);
        for l in [
            "  app-7  [001] d..2.  100.000001: sched_wakeup: comm=app pid=7 prio=19 target_cpu=001",
            "  other-9 [001] d..2. 100.000004: sched_switch: prev_comm=other prev_pid=9 prev_prio=120 prev_state=R+ ==> next_comm=app next_pid=7 next_prio=19",
            "  app-7  [001] d..2.  100.000010: sched_switch: prev_comm=app prev_pid=7 prev_prio=19 prev_state=S ==> next_comm=other next_pid=9 next_prio=120",
            "  x-8    [000] d..2.  100.000020: sched_wakeup: comm=x pid=8 prio=120 target_cpu=000",
        ] {
            f.line(l);
        }
        let a = &f.threads[&7];
        assert_eq!((a.latencies.count, a.latencies.max), (1, 3_000));
        assert_eq!((a.runtime_ns, a.prio, a.preemptions), (6_000, Some(19), 0));
        assert_eq!(f.threads.len(), 1, "a thread not known from the start is not followed there");
    }

    #[test]
    fn a_record_reads_as_the_programs_write_it() {
        let mut words: [u32; 18] = [0x9abc_def0, 0x1234, 3, SWITCH, 42, 120, 41, 0, 1, 0, 203, 128, 5, 1, 2, 0, 7, 99];
        let rec: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let e = Event::from(&rec).unwrap();
        assert_eq!((e.ts, e.cpu, e.kind, e.pid, e.prio, e.prev), (0x1234_9abc_def0, 3, SWITCH, 42, 120, 41));
        assert!(e.watched && !e.prev_watched);
        let asked = 2_000_000_007;
        assert_eq!(e.call, Some(Call { nr: 202, op: 128, arg0: 0x1_0000_0005, asked }), "number + 1 in the record");
        assert_eq!(Event::from(&rec[..68]), None, "a cut record is none");
        words[10] = 0;
        let rec: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(Event::from(&rec).unwrap().call, None, "outside a system call");
    }
}
