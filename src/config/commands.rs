//! The validated settings of every command besides the probes' runs ([`super::RunConfig`]):
//! what `app` sees instead of flags. The command line builds them (`cli::validate`) and checks
//! everything there, once; nothing here knows clap.

use std::path::PathBuf;
use std::time::Duration;

use super::{BreachOptions, LoadFlags, RunConfig};
use crate::load::LoadSpec;
use crate::report::compare::Condition;

/// `rtbench compare`: one label against a baseline.
#[derive(Debug)]
pub struct CompareConfig {
    pub baseline: String,
    pub label: String,
    /// `--fail-if`, parsed; empty when not given.
    pub conditions: Vec<Condition>,
    pub db: PathBuf,
}

/// `rtbench wcet RUN`: the worst-case estimate of one stored run.
#[derive(Debug)]
pub struct WcetConfig {
    pub run: i64,
    /// `--samples`: the run's raw sample log, given by hand.
    pub samples: Option<PathBuf>,
    pub json: bool,
    pub db: PathBuf,
}

/// `rtbench load`: list the loads, or run one by itself.
#[derive(Debug)]
pub enum LoadConfig {
    List,
    Run(LoadRun),
}

/// A load run by itself for a while.
#[derive(Debug)]
pub struct LoadRun {
    pub spec: LoadSpec,
    /// Where its generators keep their files, checked writable.
    pub tmpdir: PathBuf,
    pub duration: Duration,
    pub quiet: bool,
}

/// `rtbench monitor`: the probe's run, checked, and what the monitor adds to it.
pub struct MonitorConfig {
    /// The timer (or noise) probe's run on the watched CPUs.
    pub run: RunConfig,
    /// `--threshold`, in ns.
    pub thresholds: Vec<u64>,
    pub window: Duration,
    pub keep: Duration,
    /// `--listen`; `None` for "off".
    pub listen: Option<String>,
    pub token: Option<String>,
    pub linger: Option<Duration>,
    pub hlog: Option<PathBuf>,
}

/// `rtbench sysbench`: list the operations, or measure some.
pub enum SysbenchConfig {
    List,
    Measure(Box<SysbenchRun>),
}

/// The operations to measure and how.
pub struct SysbenchRun {
    /// The operations asked for, by name (every one named exists).
    pub ops: Vec<&'static str>,
    pub quick: bool,
    /// The CPU every process of the measurement is pinned to, online.
    pub cpu: usize,
    pub label: String,
    pub db: PathBuf,
    pub settle: Duration,
    pub load_flags: LoadFlags,
    pub mode: SysbenchMode,
}

/// One pass under one load, or `--total`: one pass per load, timed.
pub enum SysbenchMode {
    Once { load: LoadSpec },
    Total { baseline: String, loads: Vec<(String, LoadSpec)> },
}

/// `rtbench study`: every probe idle and loaded, then the report. Each cell's own run is
/// checked by [`RunConfig::new`] from these, before the first cell runs.
pub struct StudyConfig {
    pub duration: Duration,
    pub extended: Option<Duration>,
    /// The load of the loaded cells: a profile or generators; "none" for idle cells only.
    pub load: String,
    pub settle: Duration,
    pub label: String,
    pub output: PathBuf,
    /// `--preempt`: known preemption models, in the order given.
    pub preempt: Option<Vec<String>>,
    pub shield: Option<String>,
    pub breach: Option<BreachOptions>,
    pub peer: Option<String>,
    pub quiet: bool,
    pub no_sysbench: bool,
    pub load_flags: LoadFlags,
    pub db: PathBuf,
}
