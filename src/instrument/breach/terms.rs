//! A breach in rtla timerlat's terms: the same trace [`super::attribute`] reads, cut the way
//! `rtla timerlat -a` cuts an activation's thread latency, so the two tools' answers can be held
//! side by side. From the intended wake-up `t0` to the sample `t1`:
//!
//! - *IRQ handler delay*: `t0` to the start of the interrupt that ran the sample's timer (with
//!   *exit from idle* when the CPU was idle and no other IRQ ran in between); an IRQ that ran
//!   inside it is the *previous IRQ interference*, a part of the delay, not a share of its own;
//! - *IRQ latency*: `t0` to the timer's callback (`hrtimer_expire_entry`), overlapping the
//!   delay and the duration;
//! - *timer IRQ duration*: that interrupt's entry to its exit;
//! - after it, until `t1`: the task the interrupt found running is the *blocking thread*
//!   (`swapper/N`, pid 0, when the CPU was idle), and what ran instead of it is *IRQ*,
//!   *softirq* or *thread interference*, each source with its total.
//!
//! What the parts leave out (the measuring thread's own time between its switch-in and its
//! clock read; the CPU idle after the interrupt while another task blocked; time nothing in the
//! trace covers) is [`TimerlatAnalysis::unaccounted_ns`]: the parts and it add up to `t1 - t0`
//! exactly. Neither tool sees the interrupt's arrival at the CPU: the delay includes it.

use crate::model::{AnalysisInterference, AnalysisTask, TimerlatAnalysis};
use crate::trace::context::Effect;
use crate::trace::ftrace::parse::{field, Event};

/// The text trace prints timestamps to the µs: an event may read up to this much early.
const RESOLUTION_NS: u64 = 1_000;

/// An interrupt (IRQ handler or x86 vector) open on the CPU.
#[derive(Clone)]
struct Open {
    start: u64,
    /// rtla's way: the IRQ's name or the vector's (`local_timer`), and its number.
    name: String,
    id: u64,
    /// The task it interrupted: pid and name.
    over: (i32, String),
}

/// One CPU followed event by event: the task current and the interrupts open. Not
/// [`crate::trace::context::Context`]: that one lets a task woken onto an idle CPU run as soon as
/// the interrupt returns, where rtla counts the idle task's way out to the switch as blocking.
struct Walk {
    cpu: u32,
    ours: i32,
    /// pid and name, as the last line or switch told it.
    current: Option<(i32, String)>,
    open: Vec<Open>,
    /// The softirq running (action, vector) and the pid of the task it runs in: on PREEMPT_RT
    /// it is preempted with that task, and is no part of the time another task then takes.
    softirq: Option<(String, u64, i32)>,
}

impl Walk {
    /// The task current now: pid and name (`swapper/N` for the idle task; -1 when unknown).
    fn current(&self) -> (i32, String) {
        match &self.current {
            Some((0, _)) => (0, format!("swapper/{}", self.cpu)),
            Some(c) => c.clone(),
            None => (-1, String::new()),
        }
    }

    /// Takes in one event; returns the interrupt it closed, if any.
    fn apply(&mut self, e: &Event) -> Option<Open> {
        if e.cpu != self.cpu {
            return None;
        }
        // Every line names the task current when it fired.
        self.current = Some((e.pid, e.comm.to_string()));
        let num = |key| field(e.detail, key).and_then(|v| v.parse().ok()).unwrap_or(0);
        match Effect::of(e) {
            Effect::IrqEntry(_) => {
                let name = field(e.detail, "name").unwrap_or("?").to_string();
                self.open.push(Open { start: e.ts_ns, name, id: num("irq"), over: self.current() });
            }
            Effect::VectorEntry(v) => {
                let over = self.current();
                self.open.push(Open { start: e.ts_ns, name: v.to_string(), id: num("vector"), over });
            }
            Effect::IrqExit => return self.open.pop(),
            Effect::SoftirqEntry(action) => self.softirq = Some((action.to_string(), num("vec"), e.pid)),
            Effect::SoftirqExit => self.softirq = None,
            Effect::Switch { comm, pid, .. } => {
                // No switch happens inside a hard interrupt: one still open lost its exit.
                self.open.clear();
                self.current = Some((pid, comm.to_string()));
            }
            _ => {}
        }
        None
    }
}

/// The sample's timer: the `hrtimer_wakeup` that fired on `cpu` from `t0` on and woke `ours`
/// (else the first that fired), as an index into `events`.
fn sample_timer(events: &[Event], cpu: u32, t0: u64, t1: u64, ours: i32) -> Option<usize> {
    let fired = |e: &Event| {
        e.cpu == cpu
            && e.name == "hrtimer_expire_entry"
            && field(e.detail, "function") == Some("hrtimer_wakeup")
            && e.ts_ns + RESOLUTION_NS > t0
            && e.ts_ns <= t1
    };
    let woke_ours = |i: &usize| {
        events[i + 1..]
            .iter()
            .take_while(|e| !(e.cpu == cpu && e.name.starts_with("hrtimer_expire")))
            .any(|e| e.name == "sched_wakeup" && field(e.detail, "pid").and_then(|p| p.parse().ok()) == Some(ours))
    };
    let fired: Vec<usize> = events.iter().enumerate().filter(|(_, e)| fired(e)).map(|(i, _)| i).collect();
    fired.iter().copied().find(woke_ours).or(fired.first().copied())
}

/// The breakdown of `[t0, t1]` on `cpu`, as [`super::attribute::attribute`] takes its events;
/// `None` when the trace does not hold the sample's timer firing, or the measuring thread
/// (`ours`) is unknown.
pub fn breakdown(events: &[Event], cpu: u32, t0: u64, t1: u64, ours: i32) -> Option<TimerlatAnalysis> {
    if ours < 0 || t1 < t0 {
        return None;
    }
    let k = sample_timer(events, cpu, t0, t1, ours)?;
    let mut w = Walk { cpu, ours, current: None, open: Vec::new(), softirq: None };
    let mut rest = events.iter().enumerate().filter(|(_, e)| e.cpu == cpu);
    let mut previous = 0;
    for (_, e) in rest.by_ref().take_while(|(i, _)| *i < k) {
        // An IRQ that ended after t0 held the timer's interrupt back (for its part after t0).
        if let Some(o) = w.apply(e).filter(|_| e.ts_ns > t0) {
            previous += e.ts_ns - o.start.max(t0);
        }
    }
    let entry = &events[k];
    let mut notes = Vec::new();
    let (timer, depth) = match w.open.last() {
        Some(o) => (o.clone(), w.open.len()),
        None => {
            notes.push(
                "the trace has no entry of the interrupt that ran the timer (no irq_vectors events here): the IRQ \
                 handler delay runs to the timer's callback and the timer IRQ duration is the callback's alone"
                    .to_string(),
            );
            (Open { start: entry.ts_ns, name: String::new(), id: 0, over: w.current() }, 0)
        }
    };
    w.apply(entry);
    let address = field(entry.detail, "hrtimer");
    let mut irq_end = None;
    for (_, e) in rest.by_ref() {
        w.apply(e);
        let done = match depth {
            0 => e.cpu == cpu && e.name == "hrtimer_expire_exit" && field(e.detail, "hrtimer") == address,
            d => w.open.len() < d,
        };
        if done {
            irq_end = Some(e.ts_ns);
            break;
        }
    }
    let start = timer.start.clamp(t0, t1);
    let end = irq_end.unwrap_or_else(|| {
        notes.push("the timer's interrupt did not end in the trace before the sample".to_string());
        t1
    });
    let end = end.clamp(start, t1);
    let mut after = After::new(timer.over.clone());
    let mut cursor = end;
    for (_, e) in rest.take_while(|(_, e)| e.ts_ns < t1) {
        if e.ts_ns > cursor {
            after.spend(&w, e.ts_ns - cursor);
            cursor = e.ts_ns;
        }
        w.apply(e);
    }
    after.spend(&w, t1.saturating_sub(cursor));
    let exit_from_idle = timer.over.0 == 0 && previous == 0;
    let head = TimerlatAnalysis {
        cpu,
        previous_irq_interference_ns: (previous > 0).then_some(previous.min(start - t0)),
        irq_handler_delay_ns: start - t0,
        exit_from_idle,
        irq_latency_ns: entry.ts_ns.saturating_sub(t0),
        timer_irq_duration_ns: Some(end - start),
        thread_latency_ns: Some(t1 - t0),
        notes,
        ..TimerlatAnalysis::default()
    };
    Some(after.into_analysis(head))
}

/// Where the time after the timer's interrupt went.
struct After {
    /// The task the interrupt found running, and how long it ran on after it.
    blocking: (i32, String, u64),
    /// Each interfering source (class, name, id) with its total, in order of first appearance.
    interference: Vec<AnalysisInterference>,
}

impl After {
    fn new((pid, name): (i32, String)) -> After {
        After { blocking: (pid, name, 0), interference: Vec::new() }
    }

    fn spend(&mut self, w: &Walk, ns: u64) {
        if ns == 0 {
            return;
        }
        let (class, name, id) = if let Some(o) = w.open.last() {
            ("irq", o.name.clone(), o.id)
        } else if let Some((action, vec, _)) = w.softirq.as_ref().filter(|s| s.2 == w.current().0) {
            ("softirq", action.clone(), *vec)
        } else {
            match w.current() {
                (pid, _) if pid == self.blocking.0 => {
                    self.blocking.2 += ns;
                    return;
                }
                // The measuring thread's own time, idle while another blocks, or unknown: no
                // part of rtla's.
                (pid, _) if pid <= 0 || pid == w.ours => return,
                (pid, name) => ("thread", name, pid as u64),
            }
        };
        let same = |i: &&mut AnalysisInterference| i.class == class && i.task.name == name && i.task.id == id;
        match self.interference.iter_mut().find(same) {
            Some(i) => i.task.duration_ns += ns,
            None => self.interference.push(AnalysisInterference {
                class: class.to_string(),
                task: AnalysisTask { name, id, duration_ns: ns },
            }),
        }
    }

    fn into_analysis(self, head: TimerlatAnalysis) -> TimerlatAnalysis {
        let total = |class: &str| {
            let ns: u64 = self.interference.iter().filter(|i| i.class == class).map(|i| i.task.duration_ns).sum();
            (ns > 0).then_some(ns)
        };
        let (pid, name, ns) = self.blocking;
        TimerlatAnalysis {
            blocking_thread: (pid >= 0).then_some(AnalysisTask { name, id: pid as u64, duration_ns: ns }),
            irq_interference_ns: total("irq"),
            softirq_interference_ns: total("softirq"),
            thread_interference_ns: total("thread"),
            interference: self.interference,
            ..head
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ftrace::parse;

    const OURS: i32 = 500;

    fn events(text: &str) -> Vec<Event<'_>> {
        text.lines().filter_map(parse::line).collect()
    }

    /// The parts rtla gives a share, and what they leave out, add up to the thread latency.
    fn assert_adds_up(a: &TimerlatAnalysis) {
        let shares: u64 = a.parts().iter().filter(|p| p.2).map(|p| p.1).sum();
        assert_eq!(shares + a.unaccounted_ns().unwrap(), a.thread_latency_ns.unwrap(), "{a:#?}");
    }

    #[test]
    fn a_hog_running_when_the_timer_fires_is_the_blocking_thread_net_of_what_interrupted_it() {
        // Due at 10.000100; the local timer vector enters 30 µs late, the callback 10 µs later,
        // the vector leaves at .000160; the hog runs on, interrupted by an IRQ and a softirq,
        // until it yields at .005100; the thread reads the clock 10 µs after.
        let text = "\
            rtbench-0-500   [001] d..2. 10.000000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=hog next_pid=77 next_prio=0
            hog-77      [001] d.h1. 10.000090: hrtimer_expire_entry: hrtimer=0000aaaa function=tick_nohz_handler now=1
            hog-77      [001] d.h1. 10.000095: hrtimer_expire_exit: hrtimer=0000aaaa
            hog-77      [001] d.h1. 10.000130: local_timer_entry: vector=236
            hog-77      [001] d.h1. 10.000140: hrtimer_expire_entry: hrtimer=0000bbbb function=hrtimer_wakeup now=10000100000
            hog-77      [001] d.h2. 10.000142: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            hog-77      [001] d.h1. 10.000150: hrtimer_expire_exit: hrtimer=0000bbbb
            hog-77      [001] d.h1. 10.000160: local_timer_exit: vector=236
            hog-77      [001] d.h1. 10.002000: irq_handler_entry: irq=36 name=virtio1-req.0
            hog-77      [001] d.h1. 10.002050: irq_handler_exit: irq=36 ret=handled
            hog-77      [001] ..s1. 10.003000: softirq_entry: vec=1 [action=TIMER]
            hog-77      [001] ..s1. 10.003100: softirq_exit: vec=1 [action=TIMER]
            hog-77      [001] d..2. 10.005100: sched_switch: prev_comm=hog prev_pid=77 prev_prio=0 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4
            rtbench-0-500   [001] ..... 10.005110: tracing_mark_write: rtbench breach";
        let a = breakdown(&events(text), 1, 10_000_100_000, 10_005_110_000, OURS).unwrap();
        assert_eq!((a.cpu, a.irq_handler_delay_ns, a.exit_from_idle), (1, 30_000, false));
        assert_eq!(a.previous_irq_interference_ns, None, "the tick before the due time held nothing back");
        assert_eq!(a.irq_latency_ns, 40_000, "to the sample's callback, not the tick's");
        assert_eq!(a.timer_irq_duration_ns, Some(30_000));
        let hog = AnalysisTask { name: "hog".into(), id: 77, duration_ns: 4_940_000 - 50_000 - 100_000 };
        assert_eq!(a.blocking_thread, Some(hog));
        assert_eq!((a.irq_interference_ns, a.softirq_interference_ns), (Some(50_000), Some(100_000)));
        assert_eq!(a.thread_interference_ns, None);
        let listed: Vec<(&str, &str, u64)> =
            a.interference.iter().map(|i| (i.class.as_str(), i.task.name.as_str(), i.task.id)).collect();
        assert_eq!(listed, [("irq", "virtio1-req.0", 36), ("softirq", "TIMER", 1)]);
        assert_eq!(a.thread_latency_ns, Some(5_010_000));
        assert_eq!(a.unaccounted_ns(), Some(10_000), "the thread's own 10 µs to its clock read");
        assert_adds_up(&a);
        assert!(a.notes.is_empty(), "{:?}", a.notes);
    }

    #[test]
    fn an_idle_cpu_gives_exit_from_idle_and_a_higher_task_woken_with_ours_is_thread_interference() {
        // As rtla's hist capture: the IRQ comes 600 µs late into idle, the idle task takes 40 µs
        // to switch, to a FIFO 99 hog woken in the same interrupt, which runs 300 ms.
        let text = "\
            <idle>-0       [001] d..2. 20.000000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
            <idle>-0       [001] d.h1. 20.000700: local_timer_entry: vector=236
            <idle>-0       [001] d.h1. 20.000710: hrtimer_expire_entry: hrtimer=0000bbbb function=hrtimer_wakeup now=1
            <idle>-0       [001] d.h2. 20.000712: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            <idle>-0       [001] d.h1. 20.000714: hrtimer_expire_exit: hrtimer=0000bbbb
            <idle>-0       [001] d.h1. 20.000715: hrtimer_expire_entry: hrtimer=0000cccc function=hrtimer_wakeup now=1
            <idle>-0       [001] d.h2. 20.000716: sched_wakeup: comm=python3 pid=273 prio=0 target_cpu=001
            <idle>-0       [001] d.h1. 20.000718: hrtimer_expire_exit: hrtimer=0000cccc
            <idle>-0       [001] d.h1. 20.000760: local_timer_exit: vector=236
            <idle>-0       [001] d..2. 20.000800: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=python3 next_pid=273 next_prio=0
            python3-273     [001] d..2. 20.300800: sched_switch: prev_comm=python3 prev_pid=273 prev_prio=0 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let a = breakdown(&events(text), 1, 20_000_100_000, 20_300_805_000, OURS).unwrap();
        assert_eq!((a.irq_handler_delay_ns, a.exit_from_idle, a.irq_latency_ns), (600_000, true, 610_000));
        assert_eq!(a.timer_irq_duration_ns, Some(60_000));
        let idle = AnalysisTask { name: "swapper/1".into(), id: 0, duration_ns: 40_000 };
        assert_eq!(a.blocking_thread, Some(idle));
        assert_eq!(a.thread_interference_ns, Some(300_000_000));
        assert_eq!(a.interference[0].task, AnalysisTask { name: "python3".into(), id: 273, duration_ns: 300_000_000 });
        assert_eq!(a.unaccounted_ns(), Some(5_000));
        assert_adds_up(&a);
    }

    #[test]
    fn a_softirq_preempted_with_its_task_on_preempt_rt_is_not_the_preempting_thread_s_time() {
        // PREEMPT_RT: ksoftirqd runs SCHED when the timer fires; the FIFO 99 hog woken with ours
        // preempts it mid-softirq for 300 ms; ksoftirqd then ends the softirq.
        let text = "\
            ksoftirqd/1-20  [001] d..2. 40.000000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=ksoftirqd/1 next_pid=20 next_prio=120
            ksoftirqd/1-20  [001] ..s1. 40.000050: softirq_entry: vec=7 [action=SCHED]
            ksoftirqd/1-20  [001] d.h1. 40.000700: local_timer_entry: vector=236
            ksoftirqd/1-20  [001] d.h1. 40.000710: hrtimer_expire_entry: hrtimer=0000bbbb function=hrtimer_wakeup now=1
            ksoftirqd/1-20  [001] d.h2. 40.000712: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            ksoftirqd/1-20  [001] d.h1. 40.000714: hrtimer_expire_exit: hrtimer=0000bbbb
            ksoftirqd/1-20  [001] d.h2. 40.000716: sched_wakeup: comm=python3 pid=273 prio=0 target_cpu=001
            ksoftirqd/1-20  [001] d.h1. 40.000760: local_timer_exit: vector=236
            ksoftirqd/1-20  [001] d..2. 40.000770: sched_switch: prev_comm=ksoftirqd/1 prev_pid=20 prev_prio=120 prev_state=R+ ==> next_comm=python3 next_pid=273 next_prio=0
            python3-273     [001] d..2. 40.300770: sched_switch: prev_comm=python3 prev_pid=273 prev_prio=0 prev_state=S ==> next_comm=ksoftirqd/1 next_pid=20 next_prio=120
            ksoftirqd/1-20  [001] ..s1. 40.300780: softirq_exit: vec=7 [action=SCHED]
            ksoftirqd/1-20  [001] d..2. 40.300790: sched_switch: prev_comm=ksoftirqd/1 prev_pid=20 prev_prio=120 prev_state=R ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let a = breakdown(&events(text), 1, 40_000_100_000, 40_300_795_000, OURS).unwrap();
        assert_eq!(a.thread_interference_ns, Some(300_000_000), "the hog's: {a:#?}");
        assert_eq!(a.softirq_interference_ns, Some(20_000), "ksoftirqd's softirq, before and after: {a:#?}");
        assert_adds_up(&a);
    }

    #[test]
    fn an_irq_before_the_timer_s_is_inside_the_delay_and_missing_vectors_are_said() {
        // No vector events (as off x86): the IRQ handler delay runs to the callback. An IRQ that
        // ran across the due time held it back by its part after it.
        let text = "\
            cc1-900     [001] d..2. 30.000000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=cc1 next_pid=900 next_prio=120
            cc1-900     [001] d.h1. 30.000050: irq_handler_entry: irq=36 name=virtio1-req.0
            cc1-900     [001] d.h1. 30.000300: irq_handler_exit: irq=36 ret=handled
            cc1-900     [001] d.h1. 30.000310: hrtimer_expire_entry: hrtimer=0000bbbb function=hrtimer_wakeup now=1
            cc1-900     [001] d.h2. 30.000311: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            cc1-900     [001] d.h1. 30.000320: hrtimer_expire_exit: hrtimer=0000bbbb
            cc1-900     [001] d..2. 30.000330: sched_switch: prev_comm=cc1 prev_pid=900 prev_prio=120 prev_state=R ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let a = breakdown(&events(text), 1, 30_000_100_000, 30_000_332_000, OURS).unwrap();
        assert_eq!(a.previous_irq_interference_ns, Some(200_000));
        assert_eq!((a.irq_handler_delay_ns, a.irq_latency_ns, a.exit_from_idle), (210_000, 210_000, false));
        assert_eq!(a.timer_irq_duration_ns, Some(10_000), "the callback alone");
        assert_eq!(a.blocking_thread.as_ref().map(|b| (b.id, b.duration_ns)), Some((900, 10_000)));
        assert_adds_up(&a);
        assert!(a.notes[0].contains("no entry of the interrupt that ran the timer"), "{:?}", a.notes);
        // Without the sample's timer in the trace there is nothing to cut.
        let lost = text.lines().filter(|l| !l.contains("hrtimer_expire_entry")).collect::<Vec<_>>().join("\n");
        assert_eq!(breakdown(&events(&lost), 1, 30_000_100_000, 30_000_332_000, OURS), None);
    }
}
