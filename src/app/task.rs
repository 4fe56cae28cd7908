//! The validated settings of every command besides the probes' runs (`config::RunConfig`, which
//! the runner takes): what `app` runs instead of flags. The command line builds them
//! (`cli::validate`) and checks everything there, once; nothing here knows clap. They belong to
//! the face (some hold the report's types: a `--fail-if` condition, an export format), so they
//! live beside `app`, below which nothing reaches up.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{LoadFlags, RunConfig, RunOptions};
use crate::load::LoadSpec;
use crate::probe::ServeSpec;
use crate::report::formats::export::Format;
use crate::report::text::compare::Condition;

/// `rtbench compare`: labels against a baseline, each on its own.
#[derive(Debug)]
pub struct CompareConfig {
    pub baseline: String,
    /// At least one; exactly one with `json`.
    pub labels: Vec<String>,
    /// `--fail-if`, parsed; empty when not given.
    pub conditions: Vec<Condition>,
    /// `--junit`: where to write the conditions' checks as JUnit XML (only with conditions).
    pub junit: Option<PathBuf>,
    /// `--lava`: print the checks as LAVA test cases (only with conditions, not with `json`).
    pub lava: bool,
    /// `--json`: the ratios as JSON instead of the table.
    pub json: bool,
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
    /// The CPU every process of the measurement is pinned to, online; None: unpinned, where the
    /// scheduler puts them (LMbench's default placement).
    pub cpu: Option<usize>,
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
    /// Where the report goes; None with `--no-report`.
    pub output: Option<PathBuf>,
    /// `--preempt`: known preemption models, in the order given.
    pub preempt: Option<Vec<String>>,
    pub shield: Option<String>,
    /// What its instrument flags ask for: the split and the classification wherever tracing
    /// is possible unless turned off, the breach tracer where a threshold is given.
    pub instruments: Vec<crate::instrument::Request>,
    pub peer: Option<String>,
    pub quiet: bool,
    pub no_sysbench: bool,
    /// Leave out the probes the registry marks as qualification checks.
    pub no_qualify: bool,
    pub load_flags: LoadFlags,
    pub db: PathBuf,
    /// `--baseline`: compare the study's labels with a stored one when its cells are done.
    pub gate: Option<StudyGate>,
}

/// The label of a study's pass under preemption model `model` (`--preempt`): the study's
/// label with the model beside it.
pub fn preempt_label(label: &str, model: &str) -> String {
    format!("{label} preempt={model}")
}

/// `study --baseline L [--fail-if EXPR [--junit FILE]]`: what `compare` would do with the
/// study's labels, in the same command.
pub struct StudyGate {
    pub baseline: String,
    /// `--fail-if`, parsed; empty when not given (the comparison is printed, nothing gates).
    pub conditions: Vec<Condition>,
    pub junit: Option<PathBuf>,
    /// `--lava`: print the checks as LAVA test cases.
    pub lava: bool,
}

/// A probe's subcommand, checked: the server its flags ask for, or a measuring run.
pub enum ProbeTask {
    Serve { spec: ServeSpec, opts: RunOptions },
    Measure(RunConfig),
}

/// `rtbench audit`.
pub struct AuditConfig {
    /// The CPUs that will measure, online.
    pub cpus: Vec<usize>,
    pub json: bool,
    pub strict: bool,
}

/// `rtbench report`.
pub struct ReportConfig {
    pub labels: Vec<String>,
    pub runs: Vec<i64>,
    pub output: PathBuf,
    /// Print the findings (as text or JSON) instead of writing the report.
    pub findings: Option<Output>,
    /// `--caveat`: said first among the findings; one line each.
    pub caveats: Vec<String>,
    pub db: PathBuf,
}

/// How a command that prints prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
}

/// `rtbench kernels`.
pub struct KernelsConfig {
    /// Each KERNEL as written, and what it is.
    pub kernels: Vec<(String, crate::vm::cache::Source)>,
    /// The modules of the vmlinuz kernels.
    pub modules: Option<PathBuf>,
    pub cpus: u32,
    /// As QEMU takes it: 1G, 512M.
    pub memory: String,
    pub allow_emulated: bool,
    /// The runs' label; `{release}` is each kernel's release, `{arch}` its architecture.
    pub label: String,
    /// The rtbench for the guests of each other architecture (`--guest-binary`).
    pub guest_binaries: Vec<(crate::vm::image::Arch, PathBuf)>,
    pub boot_timeout: Duration,
    /// Performance mode (`--host-cpus`).
    pub perf: Option<crate::vm::perf::Perf>,
    /// Words added to each guest's kernel command line (`--kernel-param`).
    pub kernel_params: Vec<String>,
    /// rtbench command lines run in each guest, in order.
    pub commands: Vec<GuestCommand>,
    pub output: PathBuf,
    pub db: PathBuf,
}

/// One rtbench command line (without the program) for a guest.
#[derive(Clone, Debug, PartialEq)]
pub struct GuestCommand {
    pub args: Vec<String>,
    /// It stores runs and names no label: the kernel's is added.
    pub needs_label: bool,
}

/// `rtbench import`.
pub struct ImportConfig {
    pub file: PathBuf,
    pub label: String,
    pub load: String,
    pub db: PathBuf,
}

/// `rtbench merge`.
pub struct MergeConfig {
    pub other: PathBuf,
    pub db: PathBuf,
}

/// `rtbench analyze`.
pub struct AnalyzeConfig {
    pub file: PathBuf,
    pub salvage: bool,
    pub json: bool,
}

/// `rtbench runs`.
pub struct RunsConfig {
    pub json: bool,
    pub db: PathBuf,
}

/// `rtbench show RUN`.
pub struct ShowConfig {
    pub run: i64,
    pub db: PathBuf,
}

/// `rtbench export RUN`.
pub struct ExportConfig {
    pub run: i64,
    pub format: Format,
    pub output: Option<PathBuf>,
    /// Buckets of the cyclictest histogram formats, 1 µs each.
    pub buckets: u64,
    pub db: PathBuf,
}

/// `rtbench __man DIR`: the man pages, rendered from the command line's own definitions.
pub struct ManConfig {
    /// Created if missing.
    pub dir: PathBuf,
    pub pages: Vec<ManPage>,
}

/// One rendered man page: its file name (`rtbench-study.1`) and its roff text.
pub struct ManPage {
    pub file: String,
    pub roff: Vec<u8>,
}

/// The hidden commands a load runs as: its supervisor, or one of its generators.
pub struct LoadChild {
    pub dir: PathBuf,
    /// `None`: the supervisor.
    pub worker: Option<usize>,
    pub deadline_s: u64,
    pub spec: LoadSpec,
}

/// What the command line asks for, checked: the one thing `app` runs.
// Built once per process.
#[allow(clippy::large_enum_variant)]
/// `rtbench watch`: the application's threads followed for `duration`.
#[derive(Debug)]
pub struct WatchConfig {
    pub target: crate::watch::target::Target,
    pub duration: std::time::Duration,
    /// The threads that are not real-time measured too.
    pub all: bool,
    /// Waits longer than this are looked up in the trace of their CPU (0: none).
    pub explain_above_ns: u64,
    pub label: String,
    pub db: std::path::PathBuf,
}

pub enum Task {
    Probe(ProbeTask),
    Study(StudyConfig),
    Audit(AuditConfig),
    Report(ReportConfig),
    Compare(CompareConfig),
    Import(ImportConfig),
    Merge(MergeConfig),
    Load(LoadConfig),
    LoadChild(LoadChild),
    Analyze(AnalyzeConfig),
    Runs(RunsConfig),
    Show(ShowConfig),
    Export(ExportConfig),
    Wcet(WcetConfig),
    Sysbench(SysbenchConfig),
    Monitor(MonitorConfig),
    Kernels(KernelsConfig),
    Watch(WatchConfig),
    Resume(super::ResumeConfig),
    /// `rtbench completions SHELL`: the script, to print.
    Completions(String),
    Man(ManConfig),
}
