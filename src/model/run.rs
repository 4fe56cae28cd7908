//! A stored run: its header, its per-thread results and their merge.

use schemars::JsonSchema;
use serde::Serialize;

use super::{LoadRecord, Metric, RunKind, RunParams, RunStatus, SystemSnapshot};
use crate::stats::Stats;

/// A run's header: everything but its per-thread results. Serialized as the `run` object of
/// the JSON export.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunHeader {
    #[schemars(range(min = 1))]
    pub id: i64,
    pub label: String,
    pub probe: String,
    /// What the run is. Not in the JSON export, which keeps its layout: there the probe tells.
    #[serde(skip)]
    pub kind: RunKind,
    pub status: RunStatus,
    pub start: String,
    pub end: Option<String>,
    pub params: RunParams,
    pub load: LoadRecord,
    pub system: SystemSnapshot,
    pub rt_priority: bool,
    pub warnings: Vec<String>,
    pub command_line: String,
    pub tool_version: String,
    #[serde(skip)]
    pub envelope_ns: u64,
    #[serde(skip)]
    pub metric: Metric,
}

impl RunHeader {
    /// The load profile the run was measured under ("none" when idle).
    pub fn load_profile(&self) -> &str {
        self.load.profile()
    }

    /// What the report draws and compares the run as: its probe, and the variant of it the run
    /// measured where a probe measures several (`ipc-mutex`, `ipc-sem`).
    pub fn cell_probe(&self) -> String {
        match self.params.variant() {
            Some(variant) => format!("{}-{variant}", self.probe),
            None => self.probe.clone(),
        }
    }
}

/// One thread's results.
#[derive(Clone, Debug)]
pub struct ThreadResult {
    pub thread: u32,
    pub cpu: Option<u32>,
    pub stats: Stats,
    /// `--split`: the IRQ part of the thread's samples; `None` when the run was not split.
    pub irq: Option<IrqSplit>,
}

/// The IRQ latency of a timer thread's samples (`--split`): for each sample whose hrtimer expiry
/// was traced, when the expiry handler ran − when the timer was due. The thread's own latency
/// minus this is the scheduling part.
#[derive(Clone, Debug, Default)]
pub struct IrqSplit {
    /// Of the matched samples only: `stats.count` is how many were matched.
    pub stats: Stats,
    /// Samples with no expiry event to match (a lost event, a full buffer): counted, never
    /// guessed.
    pub unmatched: u64,
}

impl IrqSplit {
    /// The share of the samples matched, 0 … 1 (1 when there were none).
    pub fn matched_fraction(&self) -> f64 {
        let all = self.stats.count + self.unmatched;
        if all == 0 {
            1.0
        } else {
            self.stats.count as f64 / all as f64
        }
    }
}

/// One thread's largest latency in one window of a monitor (the long-term plot's point).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowMax {
    pub run: i64,
    pub probe: String,
    /// When the window began, RFC 3339 UTC.
    pub start: String,
    pub thread: u32,
    pub cpu: Option<u32>,
    pub max_ns: u64,
    pub count: u64,
    /// The hypervisor's steal on the CPU, in the interval of the window's largest latency, was
    /// at least that latency: the window's max may be the hypervisor's, not the kernel's.
    pub stolen: bool,
    /// `--split`: the largest IRQ latency among the window's samples (the part to the timer's
    /// interrupt, as rtla timerlat's IRQ column), when the window's samples were split.
    pub irq_max_ns: Option<u64>,
}

/// One thread's raw samples: thread number, then (time offset, latency) in order.
pub type ThreadSamples = (u32, Vec<(u64, u64)>);

/// One run with its per-thread results and their merge.
pub struct Run {
    pub header: RunHeader,
    pub threads: Vec<ThreadResult>,
    pub total: Stats,
    /// Breaches traced with `--breach`, in order.
    pub breaches: Vec<super::Breach>,
    /// Where `rtbench resume` continued the run: the spans it did not measure, in order.
    pub gaps: Vec<Gap>,
    /// `noise --classify`: each thread's gaps per class per envelope interval.
    pub noise: Vec<super::ClassInterval>,
}

/// A span a resumed run did not measure: from its last checkpoint before it stopped (killed,
/// interrupted) to the moment `rtbench resume` measured again. Its statistics hold no sample of
/// it; its envelope and samples' time offsets count it, so figures show it where it was.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Gap {
    /// RFC 3339 UTC, as the run's start and end.
    pub start: String,
    pub end: String,
    /// end − start.
    pub seconds: f64,
    /// Where it lies on the run's time axis, ns from the run's start (as samples' offsets).
    #[serde(skip)]
    pub start_ns: u64,
    #[serde(skip)]
    pub end_ns: u64,
}

impl Run {
    /// `--split`: the IRQ part of every thread's samples merged; None when a thread was not split.
    pub fn irq_total(&self) -> Option<Stats> {
        let mut total = Stats::default();
        for t in &self.threads {
            total.merge(&t.irq.as_ref()?.stats);
        }
        Some(total)
    }

    /// Why the run has no distribution to draw, estimate or export as a histogram, when it has
    /// none: a tool's summary imported (rt-tests' IPC tools and cyclicdeadline keep min, average
    /// and max; pi_stress a count).
    pub fn without_distribution(&self) -> Option<String> {
        let tool = match &self.header.params {
            super::RunParams::Imported(i) => i.summary.as_ref().map(|t| t.tool.as_str()),
            _ => None,
        };
        let known = self.total.has_distribution() && self.threads.iter().all(|t| t.stats.has_distribution());
        if known && tool.is_none() {
            return None;
        }
        let what = if self.threads.is_empty() { "counts" } else { "min, average and max" };
        Some(format!("run {} holds {}'s {what} only: no distribution", self.header.id, tool.unwrap_or("its tool")))
    }

    pub fn new(header: RunHeader, threads: Vec<ThreadResult>) -> Run {
        let mut total = Stats::default();
        for t in &threads {
            total.merge(&t.stats);
        }
        Run { header, threads, total, breaches: Vec::new(), gaps: Vec::new(), noise: Vec::new() }
    }
}
