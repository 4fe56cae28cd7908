//! A latency breach traced with ftrace: when it happened, what the trace shows on the CPU
//! between the intended wake-up and the actual one, and the verdict that names the culprit.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What took a share of the delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
}

impl Breach {
    /// The cause that explains most of the delay.
    pub fn main_cause(&self) -> Option<&Cause> {
        self.causes.first()
    }
}
