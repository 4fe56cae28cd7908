//! What one CPU is doing, followed event by event: the task current, the interrupt handlers
//! and softirq running over it, the tasks woken onto it. The breach attribution and the noise
//! classification read the same state: a stretch of time between two events belongs to
//! [`Context::key`].

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use super::ftrace::parse::{field, Event};
use crate::model::CauseKind;

/// What an event does to a CPU's context, its fields typed once: read from a trace line's text
/// ([`Effect::of`]) or built straight from a BPF record, with no text between.
#[derive(Debug, PartialEq)]
pub enum Effect<'a> {
    /// An IRQ handler began: its label, `IRQ <number> <name>`.
    IrqEntry(Cow<'a, str>),
    /// An IRQ handler or an interrupt vector ended.
    IrqExit,
    /// A softirq began: its action (`TIMER`, `NET_RX`, …).
    SoftirqEntry(&'a str),
    SoftirqExit,
    Switch {
        comm: &'a str,
        pid: i32,
        prio: Option<i32>,
    },
    Wakeup {
        comm: &'a str,
        pid: i32,
        prio: Option<i32>,
        target: Option<u32>,
    },
    /// An x86 interrupt vector that is no IRQ began: its label (`local timer`, `reschedule`, …).
    VectorEntry(&'static str),
    Other,
}

impl<'a> Effect<'a> {
    /// A trace line's event, its fields read from its text.
    pub fn of(e: &Event<'a>) -> Effect<'a> {
        let num = |key| field(e.detail, key).and_then(|p| p.parse().ok());
        match e.name {
            "irq_handler_entry" => Effect::IrqEntry(Cow::Owned(format!(
                "IRQ {} {}",
                field(e.detail, "irq").unwrap_or("?"),
                field(e.detail, "name").unwrap_or("")
            ))),
            "irq_handler_exit" => Effect::IrqExit,
            "softirq_entry" => Effect::SoftirqEntry(field(e.detail, "action").unwrap_or("?")),
            "softirq_exit" => Effect::SoftirqExit,
            "sched_switch" => Effect::Switch {
                comm: field(e.detail, "next_comm").unwrap_or("?"),
                pid: num("next_pid").unwrap_or(-1),
                prio: num("next_prio"),
            },
            "sched_wakeup" => Effect::Wakeup {
                comm: field(e.detail, "comm").unwrap_or("?"),
                pid: num("pid").unwrap_or(-1),
                prio: num("prio"),
                target: field(e.detail, "target_cpu").and_then(|c| c.parse().ok()),
            },
            // The x86 interrupt vectors that are not IRQs (local timer, reschedule and
            // function-call IPIs, irq_work) come as *_entry / *_exit pairs.
            name => Effect::vector(name).unwrap_or(Effect::Other),
        }
    }
}

/// Whom the CPU was running.
#[derive(Clone, Debug, Default)]
struct Current {
    comm: Arc<str>,
    pid: i32,
    /// The kernel's priority (0–99 real-time, 100–139 normal), when a switch told it.
    prio: Option<i32>,
}

/// The context one stretch of time belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub kind: CauseKind,
    /// Shared with the context it was taken from: a key is taken at every event.
    pub name: Arc<str>,
    pub pid: Option<i32>,
    pub prio: Option<i32>,
}

/// One CPU's state as its events tell it.
pub struct Context {
    cpu: u32,
    current: Option<Current>,
    /// Tasks woken onto this CPU and not yet seen running on it.
    woken: Vec<Current>,
    irqs: Vec<Arc<str>>,
    /// The softirq running and the task it runs in (the one current at its entry). On a
    /// PREEMPT_RT kernel softirqs run in tasks and are preempted with them: the softirq is the
    /// CPU's context only while that task is current (a busy loop that preempted ksoftirqd
    /// mid-softirq was taken for the softirq, all 300 ms of it).
    softirq: Option<(Arc<str>, Option<i32>)>,
    names: Names,
}

/// The names a CPU's events keep coming back to (its tasks, handlers, softirqs), each made
/// once: the classification's reader takes in tens of thousands of events a second per CPU,
/// and an allocation each was most of its time (issue 38).
#[derive(Default)]
struct Names(Vec<Arc<str>>);

impl Names {
    /// Names kept; past it the oldest goes.
    const KEPT: usize = 64;

    /// `prefix` followed by `name`, shared.
    fn get(&mut self, prefix: &str, name: &str) -> Arc<str> {
        let same = |a: &Arc<str>| a.len() == prefix.len() + name.len() && a.starts_with(prefix) && a.ends_with(name);
        if let Some(a) = self.0.iter().find(|a| same(a)) {
            return Arc::clone(a);
        }
        let a: Arc<str> = Arc::from(format!("{prefix}{name}"));
        if self.0.len() >= Self::KEPT {
            self.0.remove(0);
        }
        self.0.push(Arc::clone(&a));
        a
    }
}

/// The names of the keys that are no task's or handler's.
static UNKNOWN: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("unknown"));
static IDLE: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("idle"));
static OURS: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("our thread's CPU time"));

impl Context {
    pub fn new(cpu: u32) -> Context {
        Context { cpu, current: None, woken: Vec::new(), irqs: Vec::new(), softirq: None, names: Names::default() }
    }

    /// The pid of the task current, if the trace has told it.
    pub fn current_pid(&self) -> Option<i32> {
        self.current.as_ref().map(|c| c.pid)
    }

    /// True while an interrupt handler runs.
    pub fn in_irq(&self) -> bool {
        !self.irqs.is_empty()
    }

    /// What the CPU is doing now; `ours` (the measuring thread) is time the trace does not
    /// explain.
    pub fn key(&self, ours: i32) -> Key {
        let (kind, name, pid, prio) = self.parts(ours);
        Key { kind, name: Arc::clone(name), pid, prio }
    }

    /// Whether `k` is what the CPU is doing now ([`Context::key`], with nothing cloned: the
    /// reader asks at every event).
    pub fn is(&self, k: &Key, ours: i32) -> bool {
        let (kind, name, pid, prio) = self.parts(ours);
        k.kind == kind && k.pid == pid && k.prio == prio && (Arc::ptr_eq(&k.name, name) || k.name == *name)
    }

    /// [`Context::key`]'s fields, borrowed.
    fn parts(&self, ours: i32) -> (CauseKind, &Arc<str>, Option<i32>, Option<i32>) {
        if let Some(irq) = self.irqs.last() {
            return (CauseKind::Irq, irq, None, None);
        }
        if let Some(s) = self.softirq_running() {
            return (CauseKind::Softirq, s, None, None);
        }
        match &self.current {
            None => (CauseKind::Untraced, &UNKNOWN, None, None),
            Some(c) if c.pid == 0 => (CauseKind::Idle, &IDLE, None, None),
            // Our thread had the CPU, yet the sample came late: its own code takes a few µs.
            Some(c) if c.pid == ours => (CauseKind::Untraced, &OURS, None, None),
            Some(c) => (CauseKind::Task, &c.comm, Some(c.pid), c.prio),
        }
    }

    /// Takes in one event of this CPU (or a wake-up onto it from elsewhere).
    pub fn apply(&mut self, e: &Event) {
        self.apply_effect(e.cpu, e.pid, || e.comm, &Effect::of(e));
    }

    /// Takes in one event, its fields already typed: fired on `cpu` while `pid` (`comm`, read
    /// only when the trace had another task current there) was current there.
    pub fn apply_effect<'c>(&mut self, cpu: u32, pid: i32, comm: impl Fn() -> &'c str, effect: &Effect) {
        // Every line names the task current when it fired, before the event's own effect. A
        // switch may go untraced (here the switches out of the idle task do not show): the
        // line corrects what was assumed.
        if cpu == self.cpu && self.current.as_ref().map(|c| c.pid) != Some(pid) {
            let prio = self.woken.iter().find(|w| w.pid == pid).and_then(|w| w.prio);
            self.woken.retain(|w| w.pid != pid);
            self.current = Some(Current { comm: self.names.get("", comm()), pid, prio });
        }
        match effect {
            Effect::IrqEntry(label) => self.irqs.push(self.names.get("", label)),
            Effect::SoftirqEntry(action) => {
                self.softirq = Some((self.names.get("softirq ", action), self.current_pid()));
            }
            Effect::SoftirqExit => {
                self.softirq = None;
                self.leave_interrupt();
            }
            Effect::Switch { comm, pid, prio } => {
                let next = Current { comm: self.names.get("", comm), pid: *pid, prio: *prio };
                self.woken.retain(|w| w.pid != next.pid);
                self.current = Some(next);
                // No task switch happens inside a hard interrupt: an entry still open here lost
                // its exit (a full buffer or queue), and would take every later gap.
                if cpu == self.cpu {
                    self.irqs.clear();
                }
            }
            Effect::Wakeup { comm, pid, prio, target } if *target == Some(self.cpu) => {
                self.woken.push(Current { comm: self.names.get("", comm), pid: *pid, prio: *prio });
            }
            Effect::VectorEntry(label) => self.irqs.push(self.names.get("", label)),
            Effect::IrqExit => {
                self.irqs.pop();
                self.leave_interrupt();
            }
            _ => {}
        }
    }

    /// The softirq running now: none while the task it runs in is preempted.
    fn softirq_running(&self) -> Option<&Arc<str>> {
        self.softirq.as_ref().filter(|(_, task)| *task == self.current_pid()).map(|(name, _)| name)
    }

    /// An idle CPU with a task woken onto it runs that task as soon as the last interrupt
    /// returns, whether or not the switch shows in the trace.
    fn leave_interrupt(&mut self) {
        let idle = self.current.as_ref().is_none_or(|c| c.pid == 0);
        if !idle || !self.irqs.is_empty() || self.softirq_running().is_some() || self.woken.is_empty() {
            return;
        }
        // The most urgent first: the lowest kernel priority number.
        let next = self.woken.iter().enumerate().min_by_key(|(_, w)| w.prio.unwrap_or(i32::MAX)).map(|(i, _)| i);
        if let Some(i) = next {
            self.current = Some(self.woken.remove(i));
        }
    }
}

/// A task's pid and scheduling in words ("pid 77, FIFO 99"); `policy` names a real-time task's
/// policy when it can.
pub fn describe(k: &Key, policy: &dyn Fn(i32) -> Option<String>) -> Option<String> {
    let pid = k.pid?;
    let sched = match k.prio {
        Some(p) if p < 0 => "deadline".to_string(),
        Some(p) if p < 100 => format!("{} {}", policy(pid).unwrap_or_else(|| "RT".into()), 99 - p),
        Some(p) => format!("nice {}", p - 120),
        None => "priority unknown".into(),
    };
    Some(format!("pid {pid}, {sched}"))
}

/// The x86 interrupt vectors that are not IRQs (local timer, reschedule and function-call
/// IPIs, irq_work), by their tracepoints' prefix, with the label their time gets.
const VECTORS: [(&str, &str); 6] = [
    ("local_timer", "local timer"),
    ("reschedule", "reschedule"),
    ("call_function", "call function"),
    ("call_function_single", "call function single"),
    ("irq_work", "irq work"),
    ("x86_platform_ipi", "x86 platform ipi"),
];

impl Effect<'_> {
    /// The tracepoint `name`'s effect, if it is a vector's entry or exit.
    pub fn vector(name: &str) -> Option<Effect<'static>> {
        VECTORS.iter().find_map(|(v, label)| match name.strip_prefix(v)? {
            "_entry" => Some(Effect::VectorEntry(label)),
            "_exit" => Some(Effect::IrqExit),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ftrace::parse;

    #[test]
    fn a_wake_up_sent_from_another_cpu_does_not_make_its_sender_current_here() {
        let mut c = Context::new(1);
        let here = "cc1-900 [001] d..2. 1.000000: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=cc1 next_pid=900 next_prio=120";
        let there = "bash-30 [000] d..2. 1.000010: sched_wakeup: comm=kworker/1:1 pid=77 prio=120 target_cpu=001";
        c.apply(&parse::line(here).unwrap());
        c.apply(&parse::line(there).unwrap());
        assert_eq!(c.current_pid(), Some(900), "bash runs on CPU 0");
        assert_eq!(&*c.key(500).name, "cc1");
    }

    #[test]
    fn a_softirq_preempted_with_its_task_is_not_what_the_preempting_task_does() {
        let mut c = Context::new(1);
        let lines = [
            "ksoftirqd/1-20 [001] ..s1. 3.000000: softirq_entry: vec=7 [action=SCHED]",
            "ksoftirqd/1-20 [001] d..2. 3.000010: sched_switch: prev_comm=ksoftirqd/1 prev_pid=20 prev_prio=120 prev_state=R+ ==> next_comm=python3 next_pid=176 next_prio=0",
            "python3-176 [001] d..2. 3.300000: sched_switch: prev_comm=python3 prev_pid=176 prev_prio=0 prev_state=S ==> next_comm=ksoftirqd/1 next_pid=20 next_prio=120",
            "ksoftirqd/1-20 [001] ..s1. 3.300010: softirq_exit: vec=7 [action=SCHED]",
        ];
        let mut keys = Vec::new();
        for l in lines {
            c.apply(&parse::line(l).unwrap());
            keys.push(c.key(500).name.to_string());
        }
        assert_eq!(keys, ["softirq SCHED", "python3", "softirq SCHED", "ksoftirqd/1"]);
    }

    #[test]
    fn a_switch_ends_an_interrupt_whose_exit_was_lost() {
        let mut c = Context::new(1);
        let lines = [
            "cc1-900 [001] d.h1. 2.000000: irq_handler_entry: irq=36 name=virtio1",
            "cc1-900 [001] d..2. 2.000100: sched_switch: prev_comm=cc1 prev_pid=900 prev_prio=120 prev_state=R ==> next_comm=make next_pid=901 next_prio=120",
        ];
        c.apply(&parse::line(lines[0]).unwrap());
        assert!(c.in_irq(), "the interrupt's exit is missing");
        c.apply(&parse::line(lines[1]).unwrap());
        assert!(!c.in_irq());
        assert_eq!(&*c.key(500).name, "make", "the switched-to task, not the interrupt");
    }
}
