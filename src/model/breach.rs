//! A latency breach traced with ftrace: when it happened, what the trace shows on the CPU
//! between the intended wake-up and the actual one, and the verdict that names the culprit.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What took a share of the delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// Another task ran on the CPU.
    Task,
    /// A hard interrupt handler.
    Irq,
    Softirq,
    /// The CPU was idle: the wake-up had not come, or was on its way out of idle.
    Idle,
    /// The measuring thread itself, between getting the CPU and taking its sample.
    Own,
    /// Nothing in the trace: the CPU did not run anything the kernel recorded (the hypervisor
    /// took it, an SMI, or code with interrupts off and no event).
    Untraced,
    /// The timer's interrupt had not come while a task ran (rtla's IRQ handler delay): no task
    /// holds back an interrupt but with interrupts off in its kernel code, and the hypervisor
    /// does the same from outside. Which one, the trace does not say.
    IrqDelay,
}

/// One contributor to a breach's delay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cause {
    pub kind: CauseKind,
    /// Task name, `IRQ 24 virtio0`, `softirq TIMER`, …
    pub name: String,
    /// For tasks: pid and scheduling ("pid 412, FIFO 99").
    pub detail: Option<String>,
    pub ns: u64,
    /// Share of the delay, 0 … 1.
    #[schemars(range(min = 0.0))]
    pub share: f64,
}

/// One event of the trace window, for the timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceEvent {
    pub cpu: u32,
    /// ns from the intended wake-up (negative: before it).
    pub at_ns: i64,
    /// The task that was current when the event fired.
    pub task: String,
    pub pid: i32,
    pub event: String,
    pub detail: String,
}

impl TraceEvent {
    /// The value of `key=` in its detail ([`event_field`]).
    pub fn field(&self, key: &str) -> Option<&str> {
        event_field(&self.detail, key)
    }
}

/// The value of `key=` in an event's detail, up to the next space (or the `]` of softirq's
/// `[action=…]`).
pub fn event_field<'a>(detail: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = detail[from..].find(key).map(|i| i + from) {
        let starts_word = i == 0 || matches!(detail.as_bytes()[i - 1], b' ' | b'[');
        if starts_word && detail[i + key.len()..].starts_with('=') {
            let v = &detail[i + key.len() + 1..];
            let end = v.find([' ', ']']).unwrap_or(v.len());
            return Some(&v[..end]);
        }
        from = i + key.len();
    }
    None
}

/// A traced breach, stored with its run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Breach {
    /// 1, 2, … in the order they were traced.
    #[schemars(range(min = 1))]
    pub seq: u32,
    pub thread: u32,
    pub cpu: Option<u32>,
    /// The sample's time offset from the run's start (the intended wake-up).
    pub t_ns: u64,
    /// The same instant on CLOCK_MONOTONIC, to line it up with other logs of the machine.
    pub mono_ns: u64,
    pub latency_ns: u64,
    /// With `--split`: how late the sample's timer interrupt ran (the rest of `latency_ns` is
    /// the thread's wait after it); absent when not split or its expiry was not matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_ns: Option<u64>,
    /// One line naming the main cause and its share of the delay.
    pub verdict: String,
    /// Largest first.
    pub causes: Vec<Cause>,
    pub window: Vec<TraceEvent>,
    /// The same delay cut as `rtla timerlat -a` cuts a thread latency, from the same trace: IRQ
    /// handler delay, timer IRQ duration, blocking thread, IRQ / softirq / thread interference
    /// (and the IRQ latency beside them). Where rtbench's trace differs from rtla's: the IRQ
    /// latency is when the timer's callback began (`hrtimer_expire_entry`), not a clock read in
    /// it; every time is to the µs of the text trace; without interrupt-vector events the
    /// interrupt's own entry is unknown (its `notes` say so). Absent when the trace does not
    /// hold the sample's timer firing, and in breaches stored before rtbench made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timerlat_analysis: Option<super::TimerlatAnalysis>,
}

impl Breach {
    /// The breach in one line, as a run says it when it is taken.
    pub fn said(&self) -> String {
        format!(
            "breach {} on thread {}: {} µs at {:.3} s: {}",
            self.seq,
            self.thread,
            crate::units::fmt_ns_as_us(self.latency_ns as f64),
            self.t_ns as f64 / 1e9,
            self.verdict
        )
    }

    /// The cause that explains most of the delay.
    pub fn main_cause(&self) -> Option<&Cause> {
        self.causes.first()
    }

    /// Whether most (over half) of the delay was time nothing in the trace covers: the CPU ran
    /// nothing the kernel saw (the hypervisor, an SMI, the hardware).
    pub fn mostly_unseen(&self) -> bool {
        let share: f64 = self.causes.iter().filter(|c| c.kind == CauseKind::Untraced).map(|c| c.share).sum();
        share > 0.5
    }
}

/// What `--breach` saw of a run's largest latencies, counted as `noise --classify` counts its
/// gaps: a traced sample whose delay was mostly unseen is the hypervisor's or the hardware's.
/// Samples at or under the `threshold_ns` were not traced, so the kernel's largest is at least
/// it. `None` when no breach was traced.
pub fn unseen(breaches: &[Breach], threshold_ns: u64, budget_ns: Option<u64>) -> Option<super::Unseen> {
    if breaches.is_empty() {
        return None;
    }
    let (unseen, kernel): (Vec<&Breach>, Vec<&Breach>) = breaches.iter().partition(|b| b.mostly_unseen());
    let over = |bs: &[&Breach]| budget_ns.map_or(0, |b| bs.iter().filter(|x| x.latency_ns > b).count() as u64);
    let max = |bs: &[&Breach]| bs.iter().map(|b| b.latency_ns).max().unwrap_or(0);
    Some(super::Unseen {
        noun: "traced samples",
        kernel_max_ns: max(&kernel).max(threshold_ns),
        unseen_max_ns: max(&unseen),
        budget_ns,
        over: over(&unseen) + over(&kernel),
        unseen_over: over(&unseen),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breach(latency_ns: u64, untraced_share: f64) -> Breach {
        let cause = |kind, share: f64| Cause { kind, name: String::new(), detail: None, ns: 0, share };
        let causes = vec![cause(CauseKind::Untraced, untraced_share), cause(CauseKind::Task, 1.0 - untraced_share)];
        let (verdict, window) = (String::new(), Vec::new());
        Breach {
            seq: 1,
            thread: 0,
            cpu: Some(1),
            t_ns: 0,
            mono_ns: 0,
            latency_ns,
            irq_ns: None,
            verdict,
            causes,
            window,
            timerlat_analysis: None,
        }
    }

    #[test]
    fn traced_samples_mostly_unseen_are_set_apart_from_the_kernel_s_largest() {
        let traced = [breach(1_357_000, 1.0), breach(900_000, 0.2), breach(2_000_000, 0.6), breach(300_000, 0.5)];
        let u = unseen(&traced, 100_000, Some(500_000)).unwrap();
        assert_eq!((u.kernel_max_ns, u.unseen_max_ns), (900_000, 2_000_000), "half unseen is not mostly");
        assert_eq!((u.over, u.unseen_over), (3, 2));
        let w = u.warning().unwrap();
        assert!(
            w.contains("2 of the 3 traced samples above the rule-of-thumb budget (500 µs) fell in time the kernel"),
            "{w}"
        );
        assert!(w.ends_with("the largest the kernel is responsible for is 900 µs"), "{w}");
        let all_unseen = unseen(&[breach(800_000, 0.9)], 100_000, None).unwrap();
        assert_eq!(all_unseen.kernel_max_ns, 100_000, "under the threshold nothing was traced: it may be the kernel's");
        assert_eq!(unseen(&[breach(800_000, 0.1)], 100_000, None).unwrap().warning(), None, "the kernel's largest");
        assert_eq!(unseen(&[], 100_000, None), None);
    }
}
