//! The mistakes that cost a real-time thread its latency, each named with its evidence and its
//! fix, from what the watch read of the application's threads (/proc) and saw of them (the
//! scheduler's events). Where the kernel's runtime-verification monitor for real-time
//! applications (`rtapp`, Linux 6.17) has a rule, the finding follows it and says so; where
//! rtbench goes further, the finding says that instead.

use std::collections::BTreeMap;

use super::calls::{self, Slept};
use super::follow::{Account, Followed};
use super::target::{Policy, Thread};
use crate::model::{NoiseClass, RanInstead};

/// One mistake: its rule, the threads it names, and the sentence with evidence and fix.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub rule: &'static str,
    pub tids: Vec<u32>,
    pub said: String,
}

/// Each thread's page faults (minor, major) as /proc counts them, first and last read.
#[derive(Debug, Default)]
pub struct Faults {
    first: BTreeMap<u32, (u64, u64)>,
    last: BTreeMap<u32, (u64, u64)>,
}

impl Faults {
    /// Reads the counts of `threads` that still run; the first read of each is its baseline.
    pub fn read(&mut self, threads: &[Thread]) {
        for t in threads {
            let Some(counts) = fault_counts(t.tgid, t.tid) else { continue };
            self.first.entry(t.tid).or_insert(counts);
            self.last.insert(t.tid, counts);
        }
    }

    /// The faults of `tid` since its first read: (minor, major).
    pub fn since_first(&self, tid: u32) -> (u64, u64) {
        match (self.first.get(&tid), self.last.get(&tid)) {
            (Some(a), Some(b)) => (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)),
            _ => (0, 0),
        }
    }
}

/// A thread's minflt and majflt (its stat's fields 7 and 9 after the command name).
fn fault_counts(tgid: u32, tid: u32) -> Option<(u64, u64)> {
    let rest = super::target::task_stat(tgid, tid)?;
    Some((rest.get(7)?.parse().ok()?, rest.get(9)?.parse().ok()?))
}

/// What ran in a thread's long waits, when looked up.
pub type RanInsteadOf<'a> = &'a dyn Fn(u32) -> Option<RanInstead>;

/// Every mistake found in the real-time `threads` (as they were when the watch began), from
/// what `followed` saw of them, their `faults` and what ran `instead` in their long waits.
pub fn find(threads: &[Thread], followed: &Followed, faults: &Faults, instead: RanInsteadOf) -> Vec<Finding> {
    let rt: Vec<&Thread> = threads.iter().filter(|t| t.policy.real_time()).collect();
    let mut found = Vec::new();
    for t in &rt {
        found.extend(faulted(t, faults.since_first(t.tid)));
        let Some(a) = followed.threads.get(&t.tid) else { continue };
        found.extend(moved(t, a.migrations));
        found.extend(slept(t, a));
        found.extend(blocked(t, a, threads));
        found.extend(inverted(t, a, threads, instead));
        found.extend(throttled(t, a, threads));
    }
    found.extend(shared(&rt, followed));
    found
}

fn named(t: &Thread) -> String {
    format!("{} ({})", t.comm, t.tid)
}

/// A thread by its id: of the application (with its policy), or any other by its name now.
fn whose(tid: u32, threads: &[Thread]) -> String {
    match threads.iter().find(|t| t.tid == tid) {
        Some(t) if t.policy.real_time() => format!("{}, {}/{}", named(t), t.policy.name(), t.priority),
        Some(t) => format!("{}, {}", named(t), t.policy.name()),
        None => super::target::comm_of(tid).map_or_else(|| format!("thread {tid}"), |c| format!("{c} ({tid})")),
    }
}

/// The ids of `tally` (most often first) in words: "a (1) 40 times, b (2) 3 times".
fn tally_words(tally: &BTreeMap<u32, u64>, threads: &[Thread]) -> String {
    let mut by: Vec<(&u32, &u64)> = tally.iter().collect();
    by.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let times = |n: u64| if n == 1 { "once".to_string() } else { format!("{n} times") };
    by.iter().take(3).map(|(tid, n)| format!("{} {}", whose(**tid, threads), times(**n))).collect::<Vec<_>>().join("; ")
}

/// Its sleeps of one kind, and who ended them.
fn sleeps_of(a: &Account, kind: impl Fn(Slept) -> bool) -> (u64, BTreeMap<u32, u64>) {
    let mut by = BTreeMap::new();
    let mut count = 0;
    for ((_, waker), n) in a.sleeps.iter().filter(|((s, _), _)| kind(*s)) {
        count += n;
        if let Some(w) = waker {
            *by.entry(*w).or_default() += n;
        }
    }
    (count, by)
}

/// Relative sleeps: the period drifts by each wake-up's lateness.
fn slept(t: &Thread, a: &Account) -> Option<Finding> {
    let (n, _) = sleeps_of(a, |s| s == Slept::Relative);
    (n > 0).then(|| Finding {
        rule: "sleep",
        tids: vec![t.tid],
        said: format!(
            "{} slept {n} times in a relative sleep (nanosleep, usleep, or clock_nanosleep without \
             TIMER_ABSTIME or on CLOCK_REALTIME): each period begins when the last wake-up ran, so \
             its lateness adds up and the period drifts. Fix: sleep until an absolute time on \
             CLOCK_MONOTONIC, advanced by one period each time (clock_nanosleep(CLOCK_MONOTONIC, \
             TIMER_ABSTIME, &next, NULL)) (the rtapp monitor's sleep rule)",
            named(t)
        ),
    })
}

/// Sleeps in a call that waits on something else's progress: I/O, a pipe, a socket.
fn blocked(t: &Thread, a: &Account, threads: &[Thread]) -> Option<Finding> {
    let (n, wakers) = sleeps_of(a, |s| matches!(s, Slept::Blocked(_)));
    if n == 0 {
        return None;
    }
    let mut by_call: BTreeMap<u32, u64> = BTreeMap::new();
    for ((slept, _), k) in &a.sleeps {
        if let Slept::Blocked(nr) = slept {
            *by_call.entry(*nr).or_default() += k;
        }
    }
    let in_calls: Vec<String> = match by_call.len() {
        1 => by_call.keys().map(|nr| calls::words(*nr)).collect(),
        _ => by_call.iter().map(|(nr, k)| format!("{} {k} times", calls::words(*nr))).collect(),
    };
    let woken = match wakers.is_empty() {
        true => String::new(),
        false => format!(", woken by {}", tally_words(&wakers, threads)),
    };
    Some(Finding {
        rule: "block",
        tids: vec![t.tid],
        said: format!(
            "{} blocked {n} times in {}{woken}: a real-time thread that waits for I/O or for \
             another thread waits as long as they take, whatever its priority. Fix: leave the \
             I/O to a thread that is not real-time and pass data through a lock-free queue or a \
             priority-inheriting lock (the rtapp monitor's sleep rule)",
            named(t),
            in_calls.join(", ")
        ),
    })
}

/// Futex waits ended by a lower-priority thread of the application: priority inversion; with
/// the task that kept that thread from running most, when its long waits were looked up.
fn inverted(t: &Thread, a: &Account, threads: &[Thread], instead: RanInsteadOf) -> Option<Finding> {
    let (n, wakers) = sleeps_of(a, |s| s == Slept::Inverted);
    if n == 0 {
        return None;
    }
    let mut tids = vec![t.tid];
    tids.extend(wakers.keys());
    let holder = wakers.iter().max_by_key(|(_, n)| **n).map(|(tid, _)| *tid);
    let meanwhile = holder.and_then(|h| Some((h, instead(h)?))).and_then(|(h, r)| {
        let most = r.totals.iter().filter(|c| c.class == NoiseClass::Thread).max_by_key(|c| c.ns)?;
        let detail = most.detail.as_ref().map_or(String::new(), |d| format!(" ({d})"));
        Some(format!(
            " While {} waited to run, {}{detail} held its CPU: in {} of its waits over {} µs, {} ms in all.",
            whose(h, threads),
            most.name,
            most.count,
            crate::units::fmt_ns_as_us(r.above_ns as f64),
            crate::units::fmt_us(most.ns as f64 / 1e6)
        ))
    });
    Some(Finding {
        rule: "inversion",
        tids,
        said: format!(
            "{} waited {n} times on a lock without priority inheritance (a futex wait) until a \
             lower-priority thread let it go: {}. Meanwhile every thread of a priority between \
             theirs ran first (priority inversion).{} Fix: make the lock priority-inheriting \
             (pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT)) (the rtapp monitor's \
             sleep rule: a futex wait must be ended by a thread of its priority or higher)",
            named(t),
            tally_words(&wakers, threads),
            meanwhile.unwrap_or_default()
        ),
    })
}

/// Preempted by ordinary tasks while it could run: the kernel throttled real-time work.
fn throttled(t: &Thread, a: &Account, threads: &[Thread]) -> Option<Finding> {
    if a.ceded == 0 {
        return None;
    }
    let knobs = crate::sysinfo::rt_throttling();
    let limit = match (knobs.sched_rt_runtime_us, knobs.sched_rt_period_us) {
        (Some(r), Some(p)) => format!("sched_rt_runtime_us {r} of every sched_rt_period_us {p}"),
        _ => "the RT runtime".to_string(),
    };
    Some(Finding {
        rule: "throttle",
        tids: vec![t.tid],
        said: format!(
            "{} was preempted {} times by tasks that are not real-time ({}) while it could run, \
             waiting up to {} ms to run again: the kernel throttled it because real-time work \
             took more of its CPU than {limit} allows, and gave the rest to ordinary tasks (from \
             Linux 6.12 through the fair server). Fix: keep its work well inside its period, or \
             give it a SCHED_DEADLINE reservation. (Not an rtapp rule: rtbench's own)",
            named(t),
            a.ceded,
            tally_words(&a.ceded_to, threads),
            crate::units::fmt_us(a.ceded_worst_ns as f64 / 1e6)
        ),
    })
}

/// Page faults while watched: memory not locked, or not touched before the periodic work.
fn faulted(t: &Thread, (minor, major): (u64, u64)) -> Option<Finding> {
    if minor + major == 0 {
        return None;
    }
    let said = format!(
        "{} took {} page faults while watched ({major} major): each one stops it in the kernel \
         until the page is there. Fix: lock its memory (mlockall(MCL_CURRENT | MCL_FUTURE)) and \
         touch the stack and heap it will use before its real-time work begins (the rtapp \
         monitor's pagefault rule)",
        named(t),
        minor + major
    );
    Some(Finding { rule: "pagefault", tids: vec![t.tid], said })
}

/// Moved between CPUs while watched: its affinity lets the scheduler move it, and every move
/// costs cold caches and a wait for the other CPU (rtbench goes further than rtapp here).
fn moved(t: &Thread, migrations: u64) -> Option<Finding> {
    if migrations == 0 {
        return None;
    }
    let cpus = crate::units::format_cpu_list(&t.cpus);
    let said = format!(
        "{} moved between CPUs {migrations} times while watched (it may run on CPUs {cpus}): each \
         move costs it cold caches and a wait for the other CPU. Fix: pin it to one CPU \
         (pthread_setaffinity_np), best one kept for it (isolcpus or a cpuset). (Not an rtapp \
         rule: rtbench's own)",
        named(t)
    );
    Some(Finding { rule: "migration", tids: vec![t.tid], said })
}

/// FIFO threads of one priority that may run on one CPU: when both are runnable there, the one
/// woken second waits for the other to sleep (FIFO does not share time), however urgent its
/// work. Said for each pair, with how often one was seen waiting behind the other.
fn shared(rt: &[&Thread], followed: &Followed) -> Vec<Finding> {
    let mut found = Vec::new();
    for (i, a) in rt.iter().enumerate() {
        for b in &rt[i + 1..] {
            let same = a.policy == Policy::Fifo && b.policy == Policy::Fifo && a.priority == b.priority;
            let overlap: Vec<usize> = a.cpus.iter().copied().filter(|c| b.cpus.contains(c)).collect();
            // Only threads held to few CPUs meet for certain; two free ones spread out.
            let held = a.cpus.len() == 1 || b.cpus.len() == 1;
            if !same || overlap.is_empty() || !held {
                continue;
            }
            let behind = |x: &Thread, y: &Thread| {
                followed.threads.get(&x.tid).and_then(|acc| acc.behind.get(&y.tid)).copied().unwrap_or(0)
            };
            let said = format!(
                "{} and {} share CPU {} at FIFO priority {}: when both are runnable, the second \
                 waits until the first sleeps (seen {} and {} times while watched). Fix: give the \
                 more urgent one the higher priority, or each a CPU of its own. (Not an rtapp \
                 rule: rtbench's own)",
                named(a),
                named(b),
                crate::units::format_cpu_list(&overlap),
                a.priority,
                behind(a, b),
                behind(b, a)
            );
            found.push(Finding { rule: "shared-priority", tids: vec![a.tid, b.tid], said });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::follow::{Event, SWITCH, WAKEUP};

    fn thread(tid: u32, policy: Policy, priority: u32, cpus: &[usize]) -> Thread {
        Thread { tid, tgid: 1, comm: format!("t{tid}"), policy, priority, cpus: cpus.to_vec() }
    }

    #[test]
    fn twins_on_one_cpu_are_found_and_their_waits_counted() {
        let threads = [
            thread(2, Policy::Fifo, 80, &[0]),
            thread(3, Policy::Fifo, 80, &[0, 1]),
            thread(4, Policy::Fifo, 70, &[0]),
            thread(5, Policy::Other, 0, &[0]),
        ];
        let mut f = Followed::of(&[2, 3]);
        let ev = |ts, kind, pid, prev| Event {
            ts,
            cpu: 0,
            kind,
            pid,
            prio: 19,
            prev,
            prev_state: 1,
            watched: true,
            prev_watched: prev != 0,
            call: None,
        };
        for e in [ev(1, SWITCH, 2, 0), ev(2, WAKEUP, 3, 0), ev(5, SWITCH, 3, 2)] {
            f.take(&e);
        }
        let found = find(&threads, &f, &Faults::default(), &|_| None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].rule, &found[0].tids[..]), ("shared-priority", &[2, 3][..]));
        assert!(
            found[0].said.contains("share CPU 0 at FIFO priority 80") && found[0].said.contains("seen 0 and 1 times")
        );
    }

    #[test]
    fn faults_and_moves_of_a_real_time_thread_are_found_and_a_clean_one_has_none() {
        let rt = thread(2, Policy::Fifo, 80, &[0, 1]);
        let mut faults = Faults::default();
        faults.first.insert(2, (10, 1));
        faults.last.insert(2, (14, 1));
        let mut f = Followed::of(&[2]);
        f.threads.get_mut(&2).unwrap().migrations = 3;
        let found = find(std::slice::from_ref(&rt), &f, &faults, &|_| None);
        let rules: Vec<&str> = found.iter().map(|x| x.rule).collect();
        assert_eq!(rules, ["pagefault", "migration"]);
        let said = &found[0].said;
        assert!(said.starts_with("t2 (2) took 4 page faults while watched (0 major)"), "{said}");
        assert!(find(&[rt], &Followed::of(&[2]), &Faults::default(), &|_| None).is_empty(), "a clean thread has none");
    }

    #[test]
    fn this_thread_s_faults_are_counted_from_its_first_read() {
        let me = crate::watch::target::threads(&crate::watch::target::Target::Pid(std::process::id())).unwrap();
        let mine: Vec<Thread> = me.into_iter().filter(|t| t.tid == crate::sys::gettid() as u32).collect();
        let mut faults = Faults::default();
        faults.read(&mine);
        // Fresh pages, touched: each a fault.
        let mut fresh = vec![0u8; 64 << 20];
        for page in fresh.chunks_mut(4096) {
            page[0] = 1;
        }
        std::hint::black_box(&fresh);
        faults.read(&mine);
        let (minor, _) = faults.since_first(mine[0].tid);
        // One a page, or one a huge page where transparent huge pages back it.
        assert!(minor >= 32, "64 MiB touched: {minor} faults");
    }
}
