//! The command line (clap). Nothing below `config` sees these types: each flag struct turns
//! into the plain settings of `config`. The probes' subcommands come from the probe registry.

mod docs;
mod kernels;
mod monitor;
mod probes;
mod sysbench;
mod validate;
mod watch;

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use crate::config::{LoadFlags, RunOptions};
use crate::instrument::Request;
use crate::model::Policy;
use crate::report::formats::export::Format;

pub use kernels::KernelsArgs;
pub use monitor::MonitorArgs;
pub use probes::{command, parse_from, Invocation, ProbeCall};
pub use validate::validate;

#[derive(Parser, Debug)]
#[command(name = "rtbench", version, about = "A real-time latency laboratory for Linux")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
// Parsed once per process.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// The seed study in one command: every probe idle and loaded, then the report.
    Study(StudyArgs),
    /// Is this machine ready for real time? Every setting that spoils latency, with evidence and fix.
    Audit(AuditArgs),
    /// Draw stored runs: figures, tables and index.html.
    Report(ReportArgs),
    /// Ratios of one label against a baseline; exit 1 when --fail-if holds.
    Compare(CompareArgs),
    /// Store another tool's measurement as a run: cyclictest, rtla timerlat/osnoise, sockperf, rt-tests.
    Import(ImportArgs),
    /// Copy the runs of another store into this one.
    Merge(MergeArgs),
    /// Run a system load by itself (the seed's Appendix I script, cleanly).
    Load(LoadCmdArgs),
    /// Statistics of a raw sample log written with --samples.
    Analyze(AnalyzeArgs),
    /// List stored runs.
    Runs(RunsArgs),
    /// Summary and percentiles of one run.
    Show(ShowArgs),
    /// Write one run in another format.
    Export(ExportArgs),
    /// Extreme-value estimate of a run's worst case: the latency exceeded with probability
    /// 1e-6, 1e-9, 1e-12 per sample (and once per hour, day, year), with 95 % intervals.
    Wcet(WcetArgs),
    /// The throughput price: LMbench-style costs of system operations and bandwidths, stored
    /// per operation so labels compare in % (a clean implementation, not LMbench).
    Sysbench(SysbenchArgs),
    /// Kernels side by side: boot each in a virtual machine (virtme-ng on QEMU), run the study
    /// (or COMMAND) inside, bring the runs back under the kernel's release, report them all
    Kernels(KernelsArgs),
    /// Continue an interrupted or aborted run (one killed included) into the same run, with the
    /// same parameters: the gap is recorded, and the statistics cover only measured time
    Resume(ResumeArgs),
    /// Watch latency continuously at low cost: timer windows stored as runs, Prometheus
    /// metrics at /metrics (runs until SIGTERM or Ctrl-C)
    Monitor(MonitorArgs),
    /// Watch your own application without changing it: each real-time thread's wake-up to run
    /// latency and period jitter, what ran in its long waits, and the mistakes that cost it
    Watch(watch::WatchArgs),
    /// Print the completion script of a shell
    ///
    /// e.g. `rtbench completions bash > /etc/bash_completion.d/rtbench`, or
    /// `rtbench completions fish > ~/.config/fish/completions/rtbench.fish`.
    Completions {
        /// bash, zsh, fish, elvish or powershell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Internal: write the man pages (rtbench.1, rtbench-study.1, …) into DIR.
    #[command(name = "__man", hide = true)]
    Man { dir: PathBuf },
    /// Internal: the process that owns a load's generators.
    #[command(name = "__load-supervisor", hide = true)]
    LoadSupervisor { dir: PathBuf, deadline_s: u64, spec: String },
    /// Internal: one load generator.
    #[command(name = "__load-worker", hide = true)]
    LoadWorker { dir: PathBuf, index: usize, deadline_s: u64, spec: String },
}

#[derive(Args, Debug)]
pub struct StudyArgs {
    /// Length of each cell (the seeds' short runs were 1 minute)
    #[arg(short = 'D', long, value_parser = crate::parse::duration, default_value = "60s")]
    pub duration: Duration,
    /// Also run every probe under load for this long (the seeds' 24-hour runs)
    #[arg(long, value_parser = crate::parse::duration, value_name = "DURATION")]
    pub extended: Option<Duration>,
    /// The load of the loaded cells
    #[arg(long, default_value = "paper", value_name = "PROFILE")]
    pub load: String,
    /// Time the load runs before each loaded cell measures
    #[arg(long, value_parser = crate::parse::duration, default_value = "3s", value_name = "DURATION")]
    pub settle: Duration,
    /// Label of every run of the study [default: uname -r]
    #[arg(long)]
    pub label: Option<String>,
    /// Where to write the report
    #[arg(short = 'o', long, default_value = "rtbench-report", value_name = "DIR")]
    pub output: PathBuf,
    /// Write no report, only the runs: where the store is taken elsewhere and reported with
    /// others (a lab's controller merges every host's store and draws one report)
    #[arg(long, conflicts_with = "output")]
    pub no_report: bool,
    /// On a PREEMPT_DYNAMIC kernel: one pass per preemption model (none, voluntary, full, lazy),
    /// each labelled with its model; the model in force is put back afterwards
    #[arg(long, value_name = "MODELS")]
    pub preempt: Option<String>,
    /// Shield these CPUs from the rest of the system in every cell and measure there (see
    /// a probe's --shield)
    #[arg(long, value_name = "CPUS")]
    pub shield: Option<String>,
    /// The instruments' flags (`--breach`, `--no-split`, …), which each instrument declares in
    /// its folder: read from the registry (`instrument::requested`), not by clap's derive here.
    #[arg(skip)]
    pub instruments: Vec<Request>,
    /// A second machine running `rtbench pingpong --serve` for the network probes [default: an
    /// echo server of the study's own on loopback]
    #[arg(long, value_name = "HOST")]
    pub peer: Option<String>,
    /// No live display
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Skip the last cell, `sysbench --quick` idle (the throughput price)
    #[arg(long)]
    pub no_sysbench: bool,
    /// Leave out the qualification checks (deadline, ipc, migrate, pi): the seed studies'
    /// measurements only
    #[arg(long)]
    pub no_qualify: bool,
    /// When the cells are done, compare the study's label with this stored label (as `compare`)
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,
    /// Exit 1 when a condition holds against --baseline, e.g. 'p99 > 1.10x' (see `compare`)
    #[arg(long, value_name = "EXPR", requires = "baseline")]
    pub fail_if: Option<String>,
    /// Also write the --fail-if checks as JUnit XML to FILE (see `compare`)
    #[arg(long, value_name = "FILE", requires = "fail_if")]
    pub junit: Option<PathBuf>,
    /// Also print the --fail-if checks as LAVA test cases (see `compare`)
    #[arg(long, requires = "fail_if")]
    pub lava: bool,
    #[command(flatten)]
    pub load_args: LoadArgs,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// The CPUs that will measure, e.g. 1-3 [default: all online]
    #[arg(long, value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Print JSON (schema: schema/audit.schema.json) instead of a table
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when any finding is bad
    #[arg(long)]
    pub strict: bool,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Labels to draw (repeat to compare kernels) [default: every label]
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Runs to draw besides the labels' newest
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<i64>,
    /// Where to write the report
    #[arg(short = 'o', long, default_value = "rtbench-report", value_name = "DIR")]
    pub output: PathBuf,
    /// Print the findings in words (the report page's first section) instead of writing the
    /// report
    #[arg(long)]
    pub findings: bool,
    /// With --findings: print them as JSON, with the numbers behind each sentence
    #[arg(long, requires = "findings")]
    pub json: bool,
    /// A caveat the runs cannot tell, shown first among the findings (repeat for several), e.g.
    /// a lab's host that was unreachable: its results are missing
    #[arg(long = "caveat", value_name = "TEXT")]
    pub caveats: Vec<String>,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct SysbenchArgs {
    /// Only these groups or operations, comma-separated (processes, context, latency, file-vm,
    /// bandwidth, or an operation such as null-call); --list names them
    #[arg(long, value_name = "LIST")]
    pub only: Option<String>,
    /// Short repetitions (2 ms instead of 20 ms), for tests and a first look
    #[arg(long)]
    pub quick: bool,
    /// List the groups and operations and exit
    #[arg(long)]
    pub list: bool,
    /// Run the operations once per load of --loads and store each pass's total wall time (the
    /// I-pipe study's "total system load" table); needs --baseline
    #[arg(long)]
    pub total: bool,
    /// The loads of --total, comma-separated; + joins generators into one load
    #[arg(long, value_name = "LIST", default_value = "none,trigger,pingflood,trigger+pingflood,trigger+disk")]
    pub loads: String,
    /// The label the --total table's % row compares against (this label itself on the first kernel)
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,
    /// The CPU every process of the measurement is pinned to, or none: unpinned, where the
    /// scheduler puts them, as LMbench runs by default [default: the last online CPU]
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,
    #[command(flatten)]
    pub load: LoadChoice,
    /// Label to store the runs under [default: uname -r]
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The label everything is compared against
    #[arg(long, value_name = "LABEL")]
    pub baseline: String,
    /// The labels compared, each against the baseline (a lab's hosts: one JUnit suite each)
    #[arg(required = true, value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Fail (exit 1) when a condition holds, e.g. 'p99 > 1.10x', 'max > 2x, avg > 1.2x', 'p99.9 > 500us'
    #[arg(long, value_name = "EXPR")]
    pub fail_if: Option<String>,
    /// Also write the --fail-if checks as JUnit XML to FILE: one test case per probe × load ×
    /// condition, a failure for each that holds
    #[arg(long, value_name = "FILE", requires = "fail_if")]
    pub junit: Option<PathBuf>,
    /// Also print the --fail-if checks as LAVA test cases, the checks of the JUnit file: one
    /// `<LAVA_SIGNAL_TESTCASE …>` line per probe × load × condition, the label's value in µs
    #[arg(long, requires = "fail_if", conflicts_with = "json")]
    pub lava: bool,
    /// Print the values and ratios (and the checks) as JSON instead of the table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A cyclictest --json file or -h histogram (stdout or --histfile), rtla timerlat/osnoise hist
    /// output, a sockperf --full-log, or the --json file of ptsematest, sigwaittest, svsematest,
    /// pmqtest, cyclicdeadline, rt-migrate-test or pi_stress (min/avg/max only)
    pub file: PathBuf,
    /// Label of the imported run
    #[arg(long)]
    pub label: String,
    /// Load it was measured under (a profile name, for the report)
    #[arg(long, default_value = "none")]
    pub load: String,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Another rtbench store
    pub other: PathBuf,
    #[command(flatten)]
    pub db: DbArg,
}

/// How to shape a system load.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Parallel jobs of the compile generator [default: 2 × online CPUs]
    #[arg(long, value_parser = crate::parse::positive, value_name = "N")]
    pub jobs: Option<u64>,
    /// Build this kernel tree in the compile generator instead of a generated C tree
    #[arg(long, value_name = "DIR")]
    pub kernel_tree: Option<PathBuf>,
    /// Tree the fswalk generator walks
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub fswalk_path: PathBuf,
    /// Groups of the hackbench generator
    #[arg(long, value_parser = crate::parse::positive, default_value = "30", value_name = "N")]
    pub hackbench_groups: u64,
    /// Where load generators keep their files (removed afterwards) [default: $TMPDIR or /tmp]
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LoadCmdArgs {
    /// A profile (paper, ipipe-hd, none) or a comma-separated list of generators
    pub profile: Option<String>,
    /// Stop after this long
    #[arg(short = 'D', long, value_parser = crate::parse::duration, default_value = "60s")]
    pub duration: Duration,
    /// List the profiles and generators, and whether each can run here
    #[arg(long)]
    pub list: bool,
    /// No live display
    #[arg(short = 'q', long)]
    pub quiet: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Flags every measuring command takes.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Number of measuring threads [default: one per CPU for timer, 1 otherwise]
    #[arg(short = 't', long, num_args = 0..=1, default_missing_value = "0", value_name = "NUM")]
    pub threads: Option<u64>,
    /// CPUs to run on, e.g. 0-3,6; threads are pinned round-robin; none: unpinned, where the
    /// scheduler puts them [default: all online]
    #[arg(short = 'a', long, value_name = "CPUS")]
    pub affinity: Option<String>,
    /// Real-time priority of the measuring threads (1-99)
    #[arg(short = 'p', long, value_parser = crate::parse::priority, default_value_t = crate::config::DEFAULT_PRIORITY)]
    pub priority: i32,
    /// Scheduling policy
    #[arg(long, value_enum, default_value = "fifo")]
    pub policy: PolicyArg,
    /// Samples per thread, then stop
    #[arg(short = 'l', long, value_parser = crate::parse::positive, value_name = "LOOPS")]
    pub loops: Option<u64>,
    /// Stop after this long (30s, 10m, 24h, 1d)
    #[arg(short = 'D', long, value_parser = crate::parse::duration)]
    pub duration: Option<Duration>,
    /// Lock memory (the default; accepted for cyclictest compatibility)
    #[arg(short = 'm', long)]
    pub mlockall: bool,
    /// Do not lock memory
    #[arg(long, conflicts_with = "mlockall")]
    pub no_mlock: bool,
    /// Print a cyclictest histogram with this many 1-µs buckets at the end
    #[arg(short = 'h', long, value_parser = crate::parse::positive_us, value_name = "US")]
    pub histogram: Option<u64>,
    /// Write the histogram to this file instead of stdout
    #[arg(long, value_name = "FILE", requires = "histogram")]
    pub histfile: Option<PathBuf>,
    /// No live display, only the final summary
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Write the run as JSON (rtbench's export format) to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Keep every sample in a compact, crash-safe log FILE (read it with `rtbench analyze`)
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
    /// Width of one point of the min/mean/max envelope over time
    #[arg(long, value_parser = crate::parse::duration, default_value = "1s", value_name = "DURATION")]
    pub envelope_interval: Duration,
    #[command(flatten)]
    pub load: LoadChoice,
    /// Label to store the run under (how kernels are compared) [default: uname -r]
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Move every other task and every movable IRQ off these CPUs for the run and measure there
    /// (cpuset shield; needs root; put back afterwards, by the next rtbench command if killed)
    #[arg(long, value_name = "CPUS")]
    pub shield: Option<String>,
    /// CPUs for rtbench's own work while it measures (the main thread's checkpoints and store
    /// writes, the trace readers), as cyclictest's --mainaffinity [default: the online CPUs not
    /// measured; unpinned, with a warning, when every one is]
    #[arg(long, value_name = "CPUS")]
    pub main_affinity: Option<String>,
    /// Print help
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

impl RunArgs {
    /// The settings these flags ask for, unchecked.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            threads: self.threads,
            affinity: self.affinity.clone(),
            priority: self.priority,
            policy: self.policy.into(),
            loops: self.loops,
            duration: self.duration,
            mlock: !self.no_mlock,
            histogram_buckets: self.histogram,
            histfile: self.histfile.clone(),
            quiet: self.quiet,
            json: self.json.clone(),
            samples: self.samples.clone(),
            envelope_interval: self.envelope_interval,
            load: self.load.load.clone(),
            settle: self.load.settle,
            load_flags: self.load.load_args.flags(),
            label: self.label.clone(),
            db: self.db.db.clone(),
            shield: self.shield.clone(),
            // The instruments' flags are read beside these (`ProbeCall::instruments`).
            instruments: Vec::new(),
            main_affinity: self.main_affinity.clone(),
        }
    }
}

/// The load a measurement runs under, as the probes and sysbench take it.
#[derive(Args, Debug, Clone)]
pub struct LoadChoice {
    /// System load while measuring: a profile (paper, ipipe-hd, none) or generators (cpu,disk,...)
    #[arg(long, value_name = "PROFILE", default_value = "none")]
    pub load: String,
    /// Time the load runs before measuring starts
    #[arg(long, value_parser = crate::parse::duration, default_value = "3s", value_name = "DURATION")]
    pub settle: Duration,
    #[command(flatten)]
    pub load_args: LoadArgs,
}

impl LoadArgs {
    pub fn flags(&self) -> LoadFlags {
        LoadFlags {
            jobs: self.jobs,
            kernel_tree: self.kernel_tree.clone(),
            fswalk_path: self.fswalk_path.clone(),
            hackbench_groups: self.hackbench_groups,
            tmpdir: self.tmpdir.clone(),
        }
    }
}

#[derive(Args, Debug)]
pub struct DbArg {
    /// Store file [default: $RTBENCH_DB, else $XDG_DATA_HOME/rtbench/rtbench.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// A sample log written with --samples
    pub file: PathBuf,
    /// Analyze the complete blocks of a log whose last block was cut off by a crash
    #[arg(long)]
    pub salvage: bool,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct WcetArgs {
    /// Run id (see `rtbench runs`)
    pub run: i64,
    /// The run's raw sample log (written with --samples): exact, declustered exceedances
    /// [default: the log the run recorded, if it is still there; else the histogram]
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// Run id (see `rtbench runs`)
    pub run: i64,
    /// Continue for this long [default: what is left of the run's duration]
    #[arg(short = 'D', long, value_parser = crate::parse::duration)]
    pub duration: Option<Duration>,
    /// No live display, only the final summary
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// A pingpong or response run's peer, given again (its echo server or target): needed
    /// where rtbench did not start the peer itself [default: a study's own echo server, started
    /// again]
    #[arg(long, value_name = "HOST[:PORT]")]
    pub peer: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id (see `rtbench runs`)
    pub run: i64,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run id (see `rtbench runs`)
    pub run: i64,
    /// json, csv, hgrm, cyclictest-hist, cyclictest-json or samples
    #[arg(long, short = 'f', value_parser = Format::parse, default_value = "json")]
    pub format: Format,
    /// Write to FILE instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Buckets (1 µs each) of the cyclictest histogram formats
    #[arg(long, value_parser = crate::parse::positive_us, default_value = "1000", value_name = "US")]
    pub buckets: u64,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::RoundRobin,
            PolicyArg::Other => Policy::Other,
        }
    }
}
