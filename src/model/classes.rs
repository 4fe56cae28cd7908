//! What ran during each noise gap (`noise --classify`), as `rtla osnoise top` counts it: an
//! interrupt, a softirq, another thread, or nothing the kernel saw (the hypervisor, an SMI or
//! the hardware: osnoise's HW column).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The class of one gap: what took most of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoiseClass {
    /// An interrupt handler or vector (named: `IRQ 36 virtio1-req.0`, `local timer`).
    Irq,
    /// A softirq (named: `softirq TIMER`).
    Softirq,
    /// Another task (named by its comm; pid and policy beside).
    Thread,
    /// Nothing the kernel saw: no event on the CPU covers most of the gap.
    Hardware,
    /// Not classified: the trace had not been read that far when the run ended.
    Unknown,
}

impl NoiseClass {
    pub const ALL: [NoiseClass; 5] =
        [NoiseClass::Irq, NoiseClass::Softirq, NoiseClass::Thread, NoiseClass::Hardware, NoiseClass::Unknown];

    /// The column heading, as rtla osnoise top's.
    pub fn heading(self) -> &'static str {
        match self {
            NoiseClass::Irq => "IRQ",
            NoiseClass::Softirq => "softirq",
            NoiseClass::Thread => "thread",
            NoiseClass::Hardware => "HW/hypervisor",
            NoiseClass::Unknown => "unknown",
        }
    }

    /// Whether the kernel ran something in the gap.
    pub fn kernel(self) -> bool {
        matches!(self, NoiseClass::Irq | NoiseClass::Softirq | NoiseClass::Thread)
    }
}

/// The gaps of one class and name on one thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClassTotal {
    pub class: NoiseClass,
    /// What ran: `IRQ 36 virtio1-req.0`, `softirq TIMER`, a task's comm; empty for the
    /// hardware and unknown classes.
    pub name: String,
    /// For threads: pid and scheduling ("pid 412, FIFO 99").
    pub detail: Option<String>,
    pub count: u64,
    /// The gaps' total length.
    pub ns: u64,
    pub max_ns: u64,
    /// Gaps longer than the rule-of-thumb budget (10⁵ CPU cycles), when the CPU clock is known.
    pub over_budget: u64,
}

/// One thread's gaps by class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadClasses {
    pub thread: u32,
    /// By class, then the most noise first.
    pub totals: Vec<ClassTotal>,
}

impl ThreadClasses {
    /// The count, total and largest gap of one class.
    pub fn of(&self, class: NoiseClass) -> (u64, u64, u64) {
        self.totals
            .iter()
            .filter(|t| t.class == class)
            .fold((0, 0, 0), |(c, ns, max), t| (c + t.count, ns + t.ns, max.max(t.max_ns)))
    }
}

/// What `--classify` came to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClassifyRecord {
    /// Events the kernel dropped from the trace buffer (gaps then may read as hardware).
    pub lost_events: u64,
    /// The rule-of-thumb budget `over_budget` counts against, in ns.
    pub budget_ns: Option<u64>,
    pub threads: Vec<ThreadClasses>,
    /// Why the gaps were not classified, when they were not.
    pub skipped: Option<String>,
}

impl ClassifyRecord {
    /// Every thread's totals of one class: (count, ns, largest gap, gaps over the budget).
    pub fn class(&self, class: NoiseClass) -> (u64, u64, u64, u64) {
        let all = self.threads.iter().flat_map(|t| &t.totals).filter(|t| t.class == class);
        all.fold((0, 0, 0, 0), |(c, ns, max, over), t| {
            (c + t.count, ns + t.ns, max.max(t.max_ns), over + t.over_budget)
        })
    }
}
