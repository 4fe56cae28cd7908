//! rtla timerlat's auto-analysis (`-a`) of the activation that stopped its run, kept with the
//! imported run: where that activation's thread latency went, part by part. rtbench gives each
//! traced breach the same breakdown from its own trace (`Breach::timerlat_analysis`), so the two
//! tools' answers read alike.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The breakdown rtla prints after "CPU N hit stop tracing". Every duration is in ns. The parts
/// (all but the IRQ latency, which overlaps them) are shares of the thread latency, though rtla
/// may leave some of it unaccounted for (0.4 % in the capture the tests read); a stop on the
/// IRQ latency has no thread side (`thread_latency_ns` and the parts after the IRQ are None).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimerlatAnalysis {
    /// The CPU whose activation hit the stop threshold.
    pub cpu: u32,
    /// An IRQ that was running when the timer fired, which the timer IRQ waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_irq_interference_ns: Option<u64>,
    /// From the timer's expiry to its IRQ handler starting.
    pub irq_handler_delay_ns: u64,
    /// Whether rtla says the IRQ handler delay includes the CPU's exit from idle.
    pub exit_from_idle: bool,
    /// From the timer's expiry to the timerlat IRQ reading the clock.
    pub irq_latency_ns: u64,
    /// How long the timerlat IRQ handler ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_irq_duration_ns: Option<u64>,
    /// The thread that ran on the CPU while the timerlat thread waited, and for how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking_thread: Option<AnalysisTask>,
    /// IRQs that ran between the timer IRQ and the thread (total; each in `interference`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_interference_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq_interference_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_interference_ns: Option<u64>,
    /// Each interfering IRQ, softirq or thread as rtla lists it, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interference: Vec<AnalysisInterference>,
    /// The activation's thread latency, the total the parts are shares of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_latency_ns: Option<u64>,
    /// What this breakdown could not see, in words (rtbench's own, where its trace lacks what
    /// rtla's has); none from rtla.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A task rtla names: its command name, its pid (or IRQ/softirq number) and its duration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnalysisTask {
    pub name: String,
    pub id: u64,
    pub duration_ns: u64,
}

/// One interference as rtla lists it under its class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnalysisInterference {
    /// `irq`, `softirq` or `thread`.
    pub class: String,
    #[serde(flatten)]
    pub task: AnalysisTask,
}

impl TimerlatAnalysis {
    /// The parts as `show` lists them: name, duration, and whether rtla gives it a share of
    /// the total. The IRQ latency is not a part: it overlaps the delay and the duration; nor is
    /// a previous IRQ's interference, which is inside the IRQ handler delay (rtla prints it
    /// without a share, as an "up to").
    pub fn parts(&self) -> Vec<(String, u64, bool)> {
        let delay = if self.exit_from_idle { "IRQ handler delay (exit from idle)" } else { "IRQ handler delay" };
        let named = |name: &str, v: Option<u64>| v.map(|v| (name.to_string(), v, true));
        let mut parts: Vec<_> = self
            .previous_irq_interference_ns
            .map(|v| ("previous IRQ interference".to_string(), v, false))
            .into_iter()
            .collect();
        parts.push((delay.to_string(), self.irq_handler_delay_ns, true));
        parts.push(("IRQ latency".to_string(), self.irq_latency_ns, false));
        parts.extend(named("timer IRQ duration", self.timer_irq_duration_ns));
        if let Some(b) = &self.blocking_thread {
            parts.push((format!("blocking thread {} (pid {})", b.name, b.id), b.duration_ns, true));
        }
        parts.extend(named("IRQ interference", self.irq_interference_ns));
        parts.extend(named("softirq interference", self.softirq_interference_ns));
        parts.extend(named("thread interference", self.thread_interference_ns));
        parts
    }

    /// The thread latency the parts leave out: rtla's parts need not add up to it (time
    /// between them no event of its explains), nor do rtbench's (the measuring thread's own
    /// time from its switch-in to its clock read, and the CPU idle between the timer's IRQ and
    /// that switch while another task blocked it). `None` without a thread latency.
    pub fn unaccounted_ns(&self) -> Option<u64> {
        let shares: u64 = self.parts().iter().filter(|p| p.2).map(|p| p.1).sum();
        self.thread_latency_ns.map(|t| t.saturating_sub(shares))
    }
}
