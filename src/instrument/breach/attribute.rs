//! What delayed a thread, from the trace of its CPU: between the intended wake-up and the
//! sample, every stretch of time goes to what the CPU was doing — an interrupt handler, a
//! softirq, another task, idle — and what the trace cannot explain is said to be so.

use crate::model::{Cause, CauseKind};
use crate::trace::context::{describe, Context, Key};
use crate::trace::ftrace::parse::Event;
use crate::units::fmt_ns_as_us;

/// The causes of one delay, largest first, and the verdict naming the first.
#[derive(Debug, PartialEq)]
pub struct Attribution {
    pub causes: Vec<Cause>,
    pub verdict: String,
}

struct State<'o> {
    cpu: Context,
    ours: i32,
    /// When the interrupt that ran the thread's timer began, if the trace holds it.
    irq_at: Option<u64>,
    /// (context, ns) in order of first appearance.
    spent: Vec<(Key, u64)>,
    /// Before `irq_at`: the tasks that ran while the interrupt had not come, with their time.
    late_over: Vec<(Key, u64)>,
    policy: &'o dyn Fn(i32) -> Option<String>,
}

impl State<'_> {
    /// `[from, to)` goes to what the CPU is doing; a task's (or its softirq's) part before the
    /// timer's interrupt is that interrupt's delay, no doing of the task's.
    fn spend(&mut self, from: u64, to: u64) {
        let key = self.cpu.key(self.ours);
        let late = self.irq_at.map_or(0, |at| at.min(to).saturating_sub(from));
        if late > 0 && matches!(key.kind, CauseKind::Task | CauseKind::Softirq) {
            add(&mut self.late_over, key.clone(), late);
            add(&mut self.spent, late_key(), late);
            add(&mut self.spent, key, to - from - late);
        } else {
            add(&mut self.spent, key, to.saturating_sub(from));
        }
    }
}

/// `ns` more for `key`, which takes its place in `spent` at its first time.
fn add(spent: &mut Vec<(Key, u64)>, key: Key, ns: u64) {
    if ns == 0 {
        return;
    }
    match spent.iter_mut().find(|(k, _)| *k == key) {
        Some((_, total)) => *total += ns,
        None => spent.push((key, ns)),
    }
}

fn late_key() -> Key {
    Key { kind: CauseKind::IrqDelay, name: "IRQ handler delay".into(), pid: None, prio: None }
}

/// Splits `[t0, t1]` on `cpu` among what ran there. `events` are that CPU's (and wake-ups
/// onto it from elsewhere), in time order, from before `t0` (to learn what was current) to at
/// least `t1`; `ours` is the measuring thread's id; `irq_at` is when the interrupt that ran the
/// thread's timer began, where the trace holds it; `policy` names a real-time task's policy
/// ("FIFO") when it can.
pub fn attribute(
    events: &[Event],
    (cpu, ours): (u32, i32),
    (t0, t1): (u64, u64),
    irq_at: Option<u64>,
    policy: &dyn Fn(i32) -> Option<String>,
) -> Attribution {
    let (spent, late_over) = (Vec::new(), Vec::new());
    let mut s = State { cpu: Context::new(cpu), ours, irq_at, spent, late_over, policy };
    let mut cursor = t0;
    // On an idle CPU: when the wake-up interrupt came, and when the thread ran after it.
    let (mut interrupt_at, mut ran_at) = (None, None);
    for e in events.iter().filter(|e| e.cpu == cpu || e.name == "sched_wakeup") {
        if e.ts_ns > t0 {
            if e.ts_ns >= t1 {
                break;
            }
            s.spend(cursor, e.ts_ns);
            cursor = e.ts_ns;
        }
        let idle = !s.cpu.in_irq() && s.cpu.current_pid() == Some(0);
        s.cpu.apply(e);
        if e.ts_ns >= t0 && e.cpu == cpu {
            // The first thing an idle CPU records is the interrupt that woke it.
            if idle && interrupt_at.is_none() {
                interrupt_at = Some(e.ts_ns);
            }
            if interrupt_at.is_some() && ran_at.is_none() && s.cpu.current_pid() == Some(ours) {
                ran_at = Some(e.ts_ns);
            }
        }
    }
    s.spend(cursor, t1.max(cursor));
    let delay = t1.saturating_sub(t0).max(1);
    let mut causes: Vec<Cause> = s
        .spent
        .iter()
        .map(|(k, ns)| Cause {
            kind: k.kind,
            name: k.name.to_string(),
            detail: describe(k, s.policy),
            ns: *ns,
            share: *ns as f64 / delay as f64,
        })
        .collect();
    if let (Some(idle), Some(irq)) = (causes.iter_mut().find(|c| c.kind == CauseKind::Idle), interrupt_at) {
        let exit = ran_at.map_or(String::new(), |r| {
            format!(
                "; {} µs more until the thread ran (exit from idle, handler, switch)",
                fmt_ns_as_us((r - irq) as f64)
            )
        });
        idle.detail =
            Some(format!("the interrupt came {} µs after the intended wake-up{exit}", fmt_ns_as_us((irq - t0) as f64)));
    }
    let most = s.late_over.iter().max_by_key(|(_, ns)| *ns);
    if let (Some(late), Some((task, _))) = (causes.iter_mut().find(|c| c.kind == CauseKind::IrqDelay), most) {
        let who = describe(task, s.policy).map_or_else(|| task.name.to_string(), |d| format!("{} ({d})", task.name));
        late.detail = Some(format!("the timer's interrupt had not come while {who} ran"));
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.ns));
    let verdict = causes.first().map_or_else(|| "nothing to attribute".to_string(), verdict);
    Attribution { causes, verdict }
}

/// One line, as rtla's auto-analysis says it.
fn verdict(c: &Cause) -> String {
    let (dur, pct) = (fmt_ns_as_us(c.ns as f64), (c.share * 100.0).round());
    match c.kind {
        CauseKind::Task => format!(
            "task {} ({}) ran {dur} µs = {pct} % of the delay",
            c.name,
            c.detail.as_deref().unwrap_or("pid unknown")
        ),
        CauseKind::Irq => format!("{} handler {dur} µs = {pct} % of the delay", c.name),
        CauseKind::Softirq => format!("{} {dur} µs = {pct} % of the delay", c.name),
        CauseKind::Idle => format!(
            "CPU idle until the wake-up interrupt came: {dur} µs = {pct} % of the delay (nothing in the trace \
             held it back: exit from idle, the hypervisor or an SMI)"
        ),
        CauseKind::Own => format!("the thread itself {dur} µs = {pct} % of the delay"),
        CauseKind::IrqDelay => format!(
            "IRQ handler delay {dur} µs = {pct} % of the delay: {} (interrupts off in its kernel code, or \
             the hypervisor; a task holds back no interrupt otherwise)",
            c.detail.as_deref().unwrap_or("the timer's interrupt came late")
        ),
        CauseKind::Untraced => format!(
            "nothing in the trace for {dur} µs = {pct} % of the delay ({}): the CPU was not running \
             anything the kernel saw (hypervisor steal or an SMI)",
            c.name
        ),
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

    fn fifo(_: i32) -> Option<String> {
        Some("FIFO".into())
    }

    #[test]
    fn a_real_time_hog_is_named_with_its_share() {
        // Intended wake-up at 10.000100; the hog (FIFO 99) runs from before it until 10.005100.
        let text = "\
            rtbench-0-500   [001] d..2. 10.000000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=hog next_pid=77 next_prio=0
            hog-77      [001] d.h1. 10.000100: hrtimer_expire_entry: hrtimer=1 function=hrtimer_wakeup now=10000100000
            hog-77      [001] d.h2. 10.000102: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            hog-77      [001] d.h1. 10.002000: irq_handler_entry: irq=36 name=virtio1-req.0
            hog-77      [001] d.h1. 10.002050: irq_handler_exit: irq=36 ret=handled
            hog-77      [001] d..2. 10.005100: sched_switch: prev_comm=hog prev_pid=77 prev_prio=0 prev_state=S ==> next_comm=rtbench-0 next_pid=500 next_prio=4
            rtbench-0-500   [001] ..... 10.005110: tracing_mark_write: rtbench breach";
        let a = attribute(&events(text), (1, OURS), (10_000_100_000, 10_005_110_000), None, &fifo);
        let main = &a.causes[0];
        assert_eq!((main.kind, main.name.as_str()), (CauseKind::Task, "hog"));
        assert_eq!(main.detail.as_deref(), Some("pid 77, FIFO 99"));
        assert_eq!(main.ns, 5_000_000 - 50_000, "the IRQ's 50 µs are not the hog's");
        let irq = a.causes.iter().find(|c| c.kind == CauseKind::Irq).unwrap();
        assert_eq!((irq.name.as_str(), irq.ns), ("IRQ 36 virtio1-req.0", 50_000));
        let total: u64 = a.causes.iter().map(|c| c.ns).sum();
        assert_eq!(total, 5_010_000, "every ns of the delay goes somewhere");
        assert!(a.verdict.starts_with("task hog (pid 77, FIFO 99) ran 4"), "{}", a.verdict);
        assert!(a.verdict.contains("= 99 % of the delay"), "{}", a.verdict);
    }

    #[test]
    fn an_idle_cpu_woken_late_and_a_stolen_cpu_are_told_apart() {
        let idle = "\
            <idle>-0       [001] d..2. 20.000000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
            <idle>-0       [001] d.h1. 20.003000: hrtimer_expire_entry: hrtimer=1 function=hrtimer_wakeup now=1
            <idle>-0       [001] d.h2. 20.003002: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            <idle>-0       [001] d..2. 20.003010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let a = attribute(&events(idle), (1, OURS), (20_000_100_000, 20_003_012_000), None, &fifo);
        assert_eq!(a.causes[0].kind, CauseKind::Idle, "{a:?}");
        let said = a.causes[0].detail.as_deref().unwrap();
        assert!(
            said.starts_with("the interrupt came 2") && said.contains("; 10 µs more until the thread ran"),
            "{said}"
        );
        assert!(a.verdict.starts_with("CPU idle until the wake-up interrupt came"), "{}", a.verdict);
        // Woken and on the CPU in time, yet the sample is 2 ms late: nothing the kernel saw.
        let stolen = "\
            <idle>-0       [001] d.h2. 30.000102: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            <idle>-0       [001] d..2. 30.000105: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let a = attribute(&events(stolen), (1, OURS), (30_000_100_000, 30_002_105_000), None, &fifo);
        assert_eq!(a.causes[0].kind, CauseKind::Untraced, "{a:?}");
        assert!(a.verdict.contains("hypervisor steal or an SMI"), "{}", a.verdict);
    }

    #[test]
    fn a_task_running_while_the_timer_s_interrupt_had_not_come_is_not_blamed_for_it() {
        // Intended wake-up at 50.000000; the timer's interrupt comes 800 µs late while cc1
        // (nice 0) runs, and the FIFO thread preempts cc1 as the interrupt returns.
        let text = "\
            cc1-900     [001] d..2. 49.990000: sched_switch: prev_comm=rtbench-0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=cc1 next_pid=900 next_prio=120
            cc1-900     [001] d.h1. 50.000800: local_timer_entry: vector=236
            cc1-900     [001] d.h1. 50.000802: hrtimer_expire_entry: hrtimer=1 function=hrtimer_wakeup now=50000802000
            cc1-900     [001] d.h2. 50.000803: sched_wakeup: comm=rtbench-0 pid=500 prio=4 target_cpu=001
            cc1-900     [001] d.h1. 50.000804: hrtimer_expire_exit: hrtimer=1
            cc1-900     [001] d.h1. 50.000810: local_timer_exit: vector=236
            cc1-900     [001] d..2. 50.000812: sched_switch: prev_comm=cc1 prev_pid=900 prev_prio=120 prev_state=R ==> next_comm=rtbench-0 next_pid=500 next_prio=4";
        let events = events(text);
        let (t0, t1) = (50_000_000_000, 50_000_815_000);
        // As a breach's window finds it: the interrupt's start from the breakdown in rtla's terms.
        let analysis = super::super::terms::breakdown(&events, 1, t0, t1, OURS).unwrap();
        assert_eq!(analysis.irq_handler_delay_ns, 800_000);
        let a = attribute(&events, (1, OURS), (t0, t1), Some(t0 + analysis.irq_handler_delay_ns), &fifo);
        let by = |k: CauseKind| a.causes.iter().find(|c| c.kind == k).map(|c| c.ns);
        assert_eq!(a.causes[0].kind, CauseKind::IrqDelay, "{a:?}");
        assert_eq!(by(CauseKind::IrqDelay), Some(800_000));
        assert_eq!(by(CauseKind::Task), Some(2_000), "cc1's own part is the 2 µs after the interrupt");
        assert_eq!(by(CauseKind::Irq), Some(10_000));
        assert_eq!(a.causes.iter().map(|c| c.ns).sum::<u64>(), t1 - t0, "every ns of the delay goes somewhere");
        assert_eq!(
            a.causes[0].detail.as_deref(),
            Some("the timer's interrupt had not come while cc1 (pid 900, nice 0) ran")
        );
        assert!(a.verdict.starts_with("IRQ handler delay 800"), "{}", a.verdict);
        assert!(a.verdict.contains("interrupts off in its kernel code, or the hypervisor"), "{}", a.verdict);
        // Without the interrupt's start (no such trace), the time is cc1's, as before.
        let a = attribute(&events, (1, OURS), (t0, t1), None, &fifo);
        assert_eq!((a.causes[0].kind, a.causes[0].ns), (CauseKind::Task, 802_000));
    }

    #[test]
    fn nested_vectors_and_softirqs_take_their_own_time() {
        let text = "\
            cc1-900     [001] d..2. 40.000000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=cc1 next_pid=900 next_prio=120
            cc1-900     [001] d.h1. 40.000200: local_timer_entry: vector=236
            cc1-900     [001] d.h1. 40.000300: local_timer_exit: vector=236
            cc1-900     [001] ..s1. 40.000300: softirq_entry: vec=1 [action=TIMER]
            cc1-900     [001] ..s1. 40.001300: softirq_exit: vec=1 [action=TIMER]";
        let a = attribute(&events(text), (1, OURS), (40_000_000_000, 40_001_500_000), None, &fifo);
        let by = |n: &str| a.causes.iter().find(|c| c.name == n).map(|c| c.ns);
        assert_eq!(by("softirq TIMER"), Some(1_000_000));
        assert_eq!(by("local timer"), Some(100_000));
        assert_eq!(by("cc1"), Some(400_000));
        assert_eq!(a.causes[0].name, "softirq TIMER");
        assert_eq!(a.causes.iter().find(|c| c.name == "cc1").unwrap().detail.as_deref(), Some("pid 900, nice 0"));
    }
}
