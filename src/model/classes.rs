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

    /// Its name in the store and in JSON (serde's): `irq`, `softirq`, `thread`, `hardware`, `unknown`.
    pub fn key(self) -> &'static str {
        match self {
            NoiseClass::Irq => "irq",
            NoiseClass::Softirq => "softirq",
            NoiseClass::Thread => "thread",
            NoiseClass::Hardware => "hardware",
            NoiseClass::Unknown => "unknown",
        }
    }

    /// The class of a [`NoiseClass::key`]; `None` for any other word.
    pub fn from_key(key: &str) -> Option<NoiseClass> {
        NoiseClass::ALL.into_iter().find(|c| c.key() == key)
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

/// One thread's gaps of one class in one envelope interval (`noise --classify`, "counted per
/// class per second"): stored as rows beside the CPU's steal time of the same interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ClassInterval {
    pub thread: u32,
    /// Envelope interval number since the start of the run.
    pub index: u64,
    pub class: NoiseClass,
    pub count: u64,
    /// The gaps' total length.
    pub ns: u64,
}

/// One thread's gaps by class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadClasses {
    pub thread: u32,
    /// By class, then the most noise first.
    pub totals: Vec<ClassTotal>,
    /// The thread's longest gaps (at most [`LongGap::KEPT`]), each with what ran in it, the
    /// longest first. Runs made before they were kept have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub longest: Vec<LongGap>,
    /// The interfering events in the thread's gaps over the run, counted as rtla osnoise counts
    /// its IRQ, softirq and thread columns: an event each, not a gap each (a gap may hold
    /// several, or none). Runs made before they were counted have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
}

/// Interfering events in a thread's gaps, as rtla osnoise counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Interference {
    /// Interrupt handlers and interrupt vectors (the local timer's included) that ran.
    pub irq: u64,
    /// Softirqs that ran.
    pub softirq: u64,
    /// Tasks other than the measuring thread and the idle task that ran.
    pub thread: u64,
    /// Gaps in which none of these ran: rtla osnoise's HW column. The HW/hypervisor class is
    /// wider: it also takes a gap whose events explain less than half of it. Runs made before
    /// it was counted have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw: Option<u64>,
    /// The time they took in the gaps, as osnoise's `irq_noise`, `softirq_noise` and
    /// `thread_noise` events add it up (each context's own time, what it interrupted not
    /// counting it), and as its HW samples do (the whole length of a gap in which none ran).
    /// Runs made before it was counted have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<InterferenceNs>,
}

/// The interfering contexts' time in a thread's gaps, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterferenceNs {
    pub irq: u64,
    pub softirq: u64,
    pub thread: u64,
    /// The gaps in which none ran, whole.
    pub hw: u64,
}

impl Interference {
    pub fn add(&mut self, other: &Interference) {
        (self.irq, self.softirq, self.thread) =
            (self.irq + other.irq, self.softirq + other.softirq, self.thread + other.thread);
        if let Some(n) = other.hw {
            self.hw = Some(self.hw.unwrap_or(0) + n);
        }
        if let Some(o) = other.time {
            let t = self.time.get_or_insert_with(InterferenceNs::default);
            (t.irq, t.softirq, t.thread, t.hw) =
                (t.irq + o.irq, t.softirq + o.softirq, t.thread + o.thread, t.hw + o.hw);
        }
    }
}

/// One gap and what ran in it, as osnoise's trace names the worst of its noise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LongGap {
    /// When it began, since the start of the run.
    pub t_ns: u64,
    pub ns: u64,
    pub class: NoiseClass,
    /// What ran, as in [`ClassTotal::name`].
    pub name: String,
    pub detail: Option<String>,
}

impl LongGap {
    /// How many of a thread's longest gaps are kept.
    pub const KEPT: usize = 16;

    /// Keeps `gap` in `longest` (the longest first) if it is among the [`LongGap::KEPT`] longest.
    pub fn keep(longest: &mut Vec<LongGap>, gap: LongGap) {
        let at = longest.partition_point(|g| g.ns >= gap.ns);
        if at < LongGap::KEPT {
            longest.insert(at, gap);
            longest.truncate(LongGap::KEPT);
        }
    }

    /// What ran, as `show` names it: "python3 (pid 412, FIFO 99)"; empty when nothing was
    /// named (the hardware and unknown classes).
    pub fn what(&self) -> String {
        named(&self.name, self.detail.as_deref())
    }
}

impl ClassTotal {
    /// What ran, as `show` names it; see [`LongGap::what`].
    pub fn what(&self) -> String {
        named(&self.name, self.detail.as_deref())
    }
}

fn named(name: &str, detail: Option<&str>) -> String {
    match detail {
        Some(d) if !name.is_empty() => format!("{name} ({d})"),
        _ => name.to_string(),
    }
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
    /// Where the events came from: BPF programs on the tracepoints, or an ftrace instance (and
    /// why BPF could not load). Runs made before BPF was used do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// How the BPF programs' records reached the reader: `ringbuf` (shared memory, no system
    /// call a record) or `queue` (a system call a record, kernels before 5.8). None from ftrace
    /// and in runs made before ring buffers were used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Records the BPF programs handed to the reader, beside the `lost_events` that did not fit:
    /// what the reader took in (none from ftrace, nor in runs made before they were counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    /// The BPF programs' own time on the measured CPUs, in ns by their own clock (from their
    /// first reading of it to their record handed on), and how many times they ran there: they
    /// run inside the gaps they classify, so this much of the noise is theirs (and more: the
    /// kernel's call into them is not in it). None from ftrace and in runs made before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_runs: Option<u64>,
}

impl ClassifyRecord {
    /// Every thread's totals of one class: (count, ns, largest gap, gaps over the budget).
    pub fn class(&self, class: NoiseClass) -> (u64, u64, u64, u64) {
        let all = self.threads.iter().flat_map(|t| &t.totals).filter(|t| t.class == class);
        all.fold((0, 0, 0, 0), |(c, ns, max, over), t| {
            (c + t.count, ns + t.ns, max.max(t.max_ns), over + t.over_budget)
        })
    }

    /// All the gaps' time, every class's.
    pub fn noise_ns(&self) -> u64 {
        NoiseClass::ALL.iter().map(|k| self.class(*k).1).sum()
    }

    /// The part of the noise that is the classification's own programs' time (they run inside
    /// the gaps they classify), 0 … 1; `None` where it was not counted.
    pub fn programs_share(&self) -> Option<f64> {
        self.programs_ns.map(|p| p as f64 / self.noise_ns().max(1) as f64)
    }
}

impl ClassifyRecord {
    /// The run's warning when its largest gaps are not the kernel's: those above the largest
    /// the kernel is responsible for fell in time it did not see. `None` when the kernel made
    /// the largest (or nothing was classified).
    pub fn warning(&self) -> Option<String> {
        let kernel = [NoiseClass::Irq, NoiseClass::Softirq, NoiseClass::Thread].map(|c| self.class(c));
        let (_, _, unseen_max_ns, unseen_over) = self.class(NoiseClass::Hardware);
        let unseen = Unseen {
            noun: "gaps",
            kernel_max_ns: kernel.iter().map(|k| k.2).max().unwrap_or(0),
            unseen_max_ns,
            budget_ns: self.budget_ns,
            over: NoiseClass::ALL.iter().map(|c| self.class(*c).3).sum(),
            unseen_over,
        };
        self.skipped.is_none().then(|| unseen.warning()).flatten()
    }
}

/// What a run's trace saw of its largest latencies: how many fell in time the kernel did not
/// see, and the largest the kernel is responsible for. Said in the same words whether the
/// trace classified a noise run's gaps (`--classify`) or any probe's breaches (`--breach`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unseen {
    /// What the samples are: "gaps", "traced samples".
    pub noun: &'static str,
    /// The largest latency the kernel ran something in.
    pub kernel_max_ns: u64,
    /// The largest latency in time the kernel did not see.
    pub unseen_max_ns: u64,
    /// The rule-of-thumb budget, when the CPU clock is known.
    pub budget_ns: Option<u64>,
    /// Latencies over the budget, and those of them in time the kernel did not see.
    pub over: u64,
    pub unseen_over: u64,
}

impl Unseen {
    /// The run's warning; `None` when the kernel made the largest latency.
    pub fn warning(&self) -> Option<String> {
        let us = |ns: u64| crate::units::fmt_ns_as_us(ns as f64);
        let (noun, kernel_max) = (self.noun, self.kernel_max_ns);
        if self.unseen_max_ns <= kernel_max {
            return None;
        }
        let which = match self.budget_ns {
            Some(b) => format!(
                "{} of the {} {noun} above the rule-of-thumb budget ({} µs) fell in time the kernel did not see",
                self.unseen_over,
                self.over,
                us(b)
            ),
            None => format!("the {noun} above it fell in time the kernel did not see"),
        };
        Some(format!(
            "latencies above {} µs are not the kernel's: {which} (hypervisor, SMI or hardware; the largest {} µs); \
             the largest the kernel is responsible for is {} µs",
            us(kernel_max),
            us(self.unseen_max_ns),
            us(kernel_max)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(class: NoiseClass, count: u64, max_ns: u64, over_budget: u64) -> ClassTotal {
        let name = String::new();
        ClassTotal { class, name, detail: None, count, ns: count * max_ns, max_ns, over_budget }
    }

    #[test]
    fn the_warning_sets_the_unseen_gaps_apart_from_the_kernels_largest() {
        let totals = vec![
            total(NoiseClass::Irq, 100, 60_000, 2),
            total(NoiseClass::Thread, 3, 2_000_000, 3),
            total(NoiseClass::Hardware, 50, 3_700_000, 7),
        ];
        let mut r = ClassifyRecord {
            budget_ns: Some(38_461),
            threads: vec![ThreadClasses { thread: 0, totals, longest: Vec::new(), interference: None }],
            ..Default::default()
        };
        let w = r.warning().unwrap();
        let us = |ns: f64| crate::units::fmt_ns_as_us(ns);
        let (kernel, unseen) = (us(2e6), us(3.7e6));
        assert!(w.starts_with(&format!("latencies above {kernel} µs are not the kernel's: 7 of the 12 gaps")), "{w}");
        assert!(w.contains(&format!("(hypervisor, SMI or hardware; the largest {unseen} µs)")), "{w}");
        assert!(w.ends_with(&format!("the largest the kernel is responsible for is {kernel} µs")), "{w}");
        r.threads[0].totals[1].max_ns = 4_000_000;
        assert_eq!(r.warning(), None, "the kernel made the largest gap");
    }

    /// Only the longest are kept, the longest first, however the gaps come; ties keep the
    /// earlier gap first.
    #[test]
    fn the_longest_gaps_are_kept_longest_first() {
        let mut longest = Vec::new();
        let lengths: Vec<u64> = (0..40).map(|i| (i * 7919) % 53).collect();
        for (t, &ns) in lengths.iter().enumerate() {
            let gap = LongGap { t_ns: t as u64, ns, class: NoiseClass::Irq, name: String::new(), detail: None };
            LongGap::keep(&mut longest, gap);
        }
        let mut want: Vec<(u64, u64)> = lengths.iter().enumerate().map(|(t, &ns)| (ns, t as u64)).collect();
        want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        want.truncate(LongGap::KEPT);
        assert_eq!(longest.iter().map(|g| (g.ns, g.t_ns)).collect::<Vec<_>>(), want);
    }

    #[test]
    fn what_ran_is_named_with_its_detail_and_nothing_is_named_for_the_hardware() {
        let gap = |class, name: &str, detail: Option<&str>| {
            let (name, detail) = (name.to_string(), detail.map(str::to_string));
            LongGap { t_ns: 0, ns: 1, class, name, detail }
        };
        assert_eq!(gap(NoiseClass::Thread, "python3", Some("pid 4, FIFO 99")).what(), "python3 (pid 4, FIFO 99)");
        assert_eq!(gap(NoiseClass::Irq, "IRQ 36 virtio1", None).what(), "IRQ 36 virtio1");
        assert_eq!(gap(NoiseClass::Hardware, "", None).what(), "");
    }
}
