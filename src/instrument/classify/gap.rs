//! One noise gap classified by what the trace shows on its CPU during it, as osnoise does: the
//! interrupt, softirq or task that took most of it, or nothing the kernel saw when no event
//! covers most of it.

use super::timeline::Stretch;
use crate::model::{CauseKind, Interference, InterferenceNs, NoiseClass};
use crate::trace::context::Key;

/// The time around a handler that its tracepoints do not cover, counted as the handler's: the
/// entry and exit code, and on a virtual machine the exits its own work causes (EOI, re-arming
/// the timer). A 3 µs tick handler explains a 12 µs gap; it does not explain a 3 ms one.
pub const UNTRACED_EDGES_NS: u64 = 10_000;
/// The trace prints time to the µs: an event stamped `ts` happened in `[ts, ts + 1 µs)`.
pub(super) const STAMP_NS: u64 = 1_000;

/// What a gap was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: NoiseClass,
    /// What ran, for the kernel's classes.
    pub key: Option<Key>,
}

/// Hashed by all but the name's text (its length stands for it): a gap's verdict is looked up
/// among its thread's totals once per gap, and tasks and handlers are told apart by their pid,
/// priority and kind nearly always; equal verdicts hash alike, as they must.
impl std::hash::Hash for Verdict {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.class.hash(h);
        if let Some(k) = &self.key {
            (k.kind, k.pid, k.prio, k.name.len()).hash(h);
        }
    }
}

/// The contexts that ran in a gap, each with the ns of it they cover and how many stretches:
/// a gap holds one or two nearly always, kept on the stack (a gap each 60 µs on a busy CPU).
struct Tally<'a> {
    few: [(Option<&'a Key>, u64, u64); 4],
    more: Vec<(&'a Key, u64, u64)>,
}

impl<'a> Tally<'a> {
    fn add(&mut self, key: &'a Key, overlap: u64) {
        for (k, ns, n) in &mut self.few {
            match k {
                Some(k) if *k == key => return (*ns, *n) = (*ns + overlap, *n + 1),
                Some(_) => {}
                None => return (*k, *ns, *n) = (Some(key), overlap, 1),
            }
        }
        match self.more.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, ns, n)) => (*ns, *n) = (*ns + overlap, *n + 1),
            None => self.more.push((key, overlap, 1)),
        }
    }

    fn each(&self) -> impl Iterator<Item = (&'a Key, u64, u64)> + '_ {
        let few = self.few.iter().filter_map(|(k, ns, n)| k.map(|k| (k, *ns, *n)));
        few.chain(self.more.iter().copied())
    }
}

/// Classifies the gap `[t0, t1)` from its CPU's stretches (in time order); `ours` is the
/// measuring thread, whose own time is what the kernel did not take from it.
///
/// With it, the events in the gap as rtla osnoise counts its interference: each IRQ handler or
/// vector, softirq and task (not the idle one) that ran in it, however little of it they took,
/// and whether none did (osnoise's HW, narrower than the class: a 1 ms gap holding a 40 µs tick
/// is HW/hypervisor, not HW to osnoise).
pub fn classify<'a>(
    stretches: impl IntoIterator<Item = &'a Stretch>,
    ours: i32,
    t0: u64,
    t1: u64,
) -> (Verdict, Interference) {
    let mut by = Tally { few: [(None, 0, 0); 4], more: Vec::new() };
    // Each kind's time in the gap as the stamps give it (the verdict's overlap allows for the
    // text trace's µs stamps; this one does not pad the BPF records' ns).
    let mut time = InterferenceNs::default();
    for s in stretches {
        if s.from >= t1 {
            break;
        }
        let mine = s.key.pid == Some(ours) || s.key.kind == CauseKind::Untraced;
        let overlap = (s.to + STAMP_NS).min(t1).saturating_sub(s.from.max(t0));
        if mine || overlap == 0 {
            continue;
        }
        by.add(&s.key, overlap);
        let stamped = s.to.min(t1).saturating_sub(s.from.max(t0));
        match s.key.kind {
            CauseKind::Irq => time.irq += stamped,
            CauseKind::Softirq => time.softirq += stamped,
            CauseKind::Task => time.thread += stamped,
            _ => {}
        }
    }
    let covered: u64 = by.each().map(|(_, ns, n)| ns + n * UNTRACED_EDGES_NS).sum();
    let most = by.each().max_by_key(|(_, ns, _)| *ns);
    let verdict = match most {
        Some((key, _, _)) if covered * 2 >= t1 - t0 => Verdict { class: class_of(key.kind), key: Some(key.clone()) },
        _ => Verdict { class: NoiseClass::Hardware, key: None },
    };
    let none_ran = by.each().next().is_none();
    time.hw = if none_ran { t1 - t0 } else { 0 };
    let mut events = Interference { hw: Some(u64::from(none_ran)), time: Some(time), ..Interference::default() };
    for (key, _, n) in by.each() {
        match key.kind {
            CauseKind::Irq => events.irq += n,
            CauseKind::Softirq => events.softirq += n,
            CauseKind::Task => events.thread += n,
            _ => {}
        }
    }
    (verdict, events)
}

fn class_of(kind: CauseKind) -> NoiseClass {
    match kind {
        CauseKind::Irq => NoiseClass::Irq,
        CauseKind::Softirq => NoiseClass::Softirq,
        _ => NoiseClass::Thread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instrument::classify::timeline::Timeline;
    use crate::trace::stream::Lines;

    const OURS: i32 = 500;

    /// CPU 1's stretches from these lines, read up to `until`.
    fn timeline(text: &str, until: u64) -> Timeline {
        let mut t = Timeline::new(&[1]);
        for l in text.lines() {
            t.line(l);
        }
        t.caught_up(until);
        t
    }

    fn verdict(t: &Timeline, t0: u64, t1: u64) -> (NoiseClass, Option<String>) {
        let (v, _) = classify(t.stretches(1).unwrap(), OURS, t0, t1);
        (v.class, v.key.map(|k| k.name.to_string()))
    }

    const BUSY: &str = "\
        rtbench-0-500 [001] d..2. 10.000000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4
        rtbench-0-500 [001] d.h1. 10.001000: local_timer_entry: vector=236
        rtbench-0-500 [001] d.h1. 10.001003: local_timer_exit: vector=236
        rtbench-0-500 [001] ..s1. 10.001003: softirq_entry: vec=1 [action=TIMER]
        rtbench-0-500 [001] ..s1. 10.001040: softirq_exit: vec=1 [action=TIMER]
        rtbench-0-500 [001] d..2. 10.002000: sched_wakeup: comm=burst pid=77 prio=0 target_cpu=001
        rtbench-0-500 [001] d..2. 10.002001: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=R ==> next_comm=burst next_pid=77 next_prio=0
        burst-77      [001] d..2. 10.004001: sched_switch: prev_comm=burst prev_pid=77 prev_prio=0 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4
        rtbench-0-500 [001] d.h1. 10.005000: irq_handler_entry: irq=36 name=virtio1-req.0
        rtbench-0-500 [001] d.h1. 10.005002: irq_handler_exit: irq=36 ret=handled";

    #[test]
    fn each_gap_goes_to_what_took_most_of_it() {
        let t = timeline(BUSY, 10_010_000_000);
        // A tick gap: the handler's 3 µs and its untraced edges.
        assert_eq!(verdict(&t, 10_000_999_500, 10_001_003_800), (NoiseClass::Irq, Some("local timer".into())));
        assert_eq!(verdict(&t, 10_001_003_200, 10_001_040_500), (NoiseClass::Softirq, Some("softirq TIMER".into())));
        assert_eq!(verdict(&t, 10_001_999_000, 10_004_002_000), (NoiseClass::Thread, Some("burst".into())));
        assert_eq!(verdict(&t, 10_004_999_800, 10_005_003_000), (NoiseClass::Irq, Some("IRQ 36 virtio1-req.0".into())));
    }

    #[test]
    fn a_gap_no_event_covers_is_nothing_the_kernel_saw() {
        let t = timeline(BUSY, 10_010_000_000);
        // Our thread was current throughout: the CPU was taken from under the kernel.
        assert_eq!(verdict(&t, 10_006_000_000, 10_009_700_000), (NoiseClass::Hardware, None));
        // A 1 ms gap with the tick and its softirq in it (40 µs): they do not explain it.
        assert_eq!(verdict(&t, 10_000_500_000, 10_001_500_000), (NoiseClass::Hardware, None));
    }

    /// osnoise's HW is a gap in which nothing ran; the class also takes one its events do not
    /// explain.
    #[test]
    fn only_a_gap_in_which_nothing_ran_is_osnoise_s_hw() {
        let t = timeline(BUSY, 10_010_000_000);
        let events = |t0, t1| classify(t.stretches(1).unwrap(), OURS, t0, t1).1;
        let empty = events(10_006_000_000, 10_009_700_000);
        let ns = |irq, softirq, hw| Some(InterferenceNs { irq, softirq, thread: 0, hw });
        assert_eq!(empty, Interference { hw: Some(1), time: ns(0, 0, 3_700_000), ..Interference::default() });
        let ticked = events(10_000_500_000, 10_001_500_000);
        // The tick's 3 µs and its softirq's 37 µs, each its own time, as osnoise's events give it.
        let want = Interference { irq: 1, softirq: 1, thread: 0, hw: Some(0), time: ns(3_000, 37_000, 0) };
        assert_eq!(ticked, want, "HW/hypervisor, not HW");
        let mut run = Interference::default();
        [empty, ticked, empty].iter().for_each(|e| run.add(e));
        assert_eq!(
            run,
            Interference { irq: 1, softirq: 1, thread: 0, hw: Some(2), time: ns(3_000, 37_000, 7_400_000) }
        );
    }

    /// Past the four contexts kept on the stack, each is still counted and the largest wins.
    #[test]
    fn a_gap_of_many_contexts_goes_to_the_one_that_took_most() {
        let key = |i: i32| Key { kind: CauseKind::Task, name: format!("t{i}").into(), pid: Some(i), prio: Some(120) };
        let keys: Vec<Key> = (1..=7).map(key).collect();
        // Stretches of 10 µs each, round-robin over the 7 tasks, task 6 twice as long.
        let stretches: Vec<Stretch> = (0..28u64)
            .map(|i| {
                let k = keys[(i % 7) as usize].clone();
                let len = if k.pid == Some(6) { 20_000 } else { 10_000 };
                Stretch { from: i * 30_000, to: i * 30_000 + len - STAMP_NS, key: k }
            })
            .collect();
        let (v, events) = classify(&stretches, OURS, 0, 28 * 30_000);
        // Each task's time as stamped: 24 stretches of 9 µs, task 6's four of 19 µs.
        let time = Some(InterferenceNs { thread: 24 * 9_000 + 4 * 19_000, ..InterferenceNs::default() });
        assert_eq!(events, Interference { thread: 28, hw: Some(0), time, ..Interference::default() }, "28 switches in");
        assert_eq!((v.class, v.key.and_then(|k| k.pid)), (NoiseClass::Thread, Some(6)));
    }

    #[test]
    fn a_task_woken_from_another_cpu_is_found_and_old_stretches_go() {
        let text = "\
            rtbench-0-500 [001] d..2. 20.000000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4
            bash-30       [000] d..2. 20.000500: sched_wakeup: comm=kworker/1:1 pid=88 prio=120 target_cpu=001
            rtbench-0-500 [001] d..2. 20.001000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=R ==> next_comm=kworker/1:1 next_pid=88 next_prio=120
            kworker/1:1-88 [001] d..2. 20.001100: sched_switch: prev_comm=kworker/1:1 prev_pid=88 prev_prio=120 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let mut t = timeline(text, 20_002_000_000);
        let (v, _) = classify(t.stretches(1).unwrap(), OURS, 20_000_999_000, 20_001_101_000);
        let key = v.key.unwrap();
        assert_eq!((v.class, &*key.name, key.pid, key.prio), (NoiseClass::Thread, "kworker/1:1", Some(88), Some(120)));
        assert_eq!(verdict(&t, 20_000_400_000, 20_000_600_000), (NoiseClass::Hardware, None), "bash ran on CPU 0");
        t.forget(1, 20_001_050_000);
        assert!(t.stretches(1).unwrap().iter().all(|s| s.to >= 20_001_050_000));
    }
}
