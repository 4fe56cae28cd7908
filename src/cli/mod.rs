//! The command line (clap). Nothing below `config` sees these types.

pub mod parse;

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "rtbench", version, about = "A real-time latency laboratory for Linux")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Timer wake-up latency, as cyclictest measures it (flags follow cyclictest).
    #[command(disable_help_flag = true)]
    Timer(TimerArgs),
    /// Clock read latency, as gtod_latency measures it.
    #[command(disable_help_flag = true)]
    Gtod(GtodArgs),
    /// Round trips to an echo server (the ØMQ study's ping-pong); `--serve` runs the server.
    #[command(disable_help_flag = true)]
    Pingpong(PingpongArgs),
    /// Response to an external trigger (lpptest): `--target` answers, `--logger` measures.
    #[command(disable_help_flag = true)]
    Response(ResponseArgs),
    /// Deterministic synthetic samples, for tests and benchmarks.
    #[command(hide = true, disable_help_flag = true)]
    Synthetic(SyntheticArgs),
    /// The seed study in one command: every probe idle and loaded, then the report.
    Study(StudyArgs),
    /// Draw stored runs: figures, tables and index.html.
    Report(ReportArgs),
    /// Ratios of one label against a baseline; exit 1 when --fail-if holds.
    Compare(CompareArgs),
    /// Turn cyclictest output (--json file or -h histogram) into a stored run.
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
    #[arg(short = 'D', long, value_parser = parse::duration, default_value = "60s")]
    pub duration: Duration,
    /// Also run every probe under load for this long (the seeds' 24-hour runs)
    #[arg(long, value_parser = parse::duration, value_name = "DURATION")]
    pub extended: Option<Duration>,
    /// The load of the loaded cells
    #[arg(long, default_value = "paper", value_name = "PROFILE")]
    pub load: String,
    /// Time the load runs before each loaded cell measures
    #[arg(long, value_parser = parse::duration, default_value = "3s", value_name = "DURATION")]
    pub settle: Duration,
    /// Label of every run of the study [default: uname -r]
    #[arg(long)]
    pub label: Option<String>,
    /// Where to write the report
    #[arg(short = 'o', long, default_value = "rtbench-report", value_name = "DIR")]
    pub output: PathBuf,
    /// A second machine running `rtbench pingpong --serve` for the network probes [default: an
    /// echo server of the study's own on loopback]
    #[arg(long, value_name = "HOST")]
    pub peer: Option<String>,
    /// No live display
    #[arg(short = 'q', long)]
    pub quiet: bool,
    #[command(flatten)]
    pub load_args: LoadArgs,
    #[command(flatten)]
    pub db: DbArg,
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
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The label everything is compared against
    #[arg(long, value_name = "LABEL")]
    pub baseline: String,
    /// The label compared
    pub label: String,
    /// Fail (exit 1) when a condition holds, e.g. 'p99 > 1.10x', 'max > 2x, avg > 1.2x', 'p99.9 > 500us'
    #[arg(long, value_name = "EXPR")]
    pub fail_if: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A cyclictest --json file or a cyclictest -h histogram (stdout or --histfile)
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
    #[arg(long, value_parser = parse::positive, value_name = "N")]
    pub jobs: Option<u64>,
    /// Build this kernel tree in the compile generator instead of a generated C tree
    #[arg(long, value_name = "DIR")]
    pub kernel_tree: Option<PathBuf>,
    /// Tree the fswalk generator walks
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub fswalk_path: PathBuf,
    /// Groups of the hackbench generator
    #[arg(long, value_parser = parse::positive, default_value = "30", value_name = "N")]
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
    #[arg(short = 'D', long, value_parser = parse::duration, default_value = "60s")]
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
    /// CPUs to run on, e.g. 0-3,6; threads are pinned round-robin [default: all online]
    #[arg(short = 'a', long, value_name = "CPUS")]
    pub affinity: Option<String>,
    /// Real-time priority of the measuring threads (1-99)
    #[arg(short = 'p', long, value_parser = parse::priority, default_value = "95")]
    pub priority: i32,
    /// Scheduling policy
    #[arg(long, value_enum, default_value = "fifo")]
    pub policy: PolicyArg,
    /// Samples per thread, then stop
    #[arg(short = 'l', long, value_parser = parse::positive, value_name = "LOOPS")]
    pub loops: Option<u64>,
    /// Stop after this long (30s, 10m, 24h, 1d)
    #[arg(short = 'D', long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Lock memory (the default; accepted for cyclictest compatibility)
    #[arg(short = 'm', long)]
    pub mlockall: bool,
    /// Do not lock memory
    #[arg(long, conflicts_with = "mlockall")]
    pub no_mlock: bool,
    /// Print a cyclictest histogram with this many 1-µs buckets at the end
    #[arg(short = 'h', long, value_parser = parse::positive_us, value_name = "US")]
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
    #[arg(long, value_parser = parse::duration, default_value = "1s", value_name = "DURATION")]
    pub envelope_interval: Duration,
    /// System load while measuring: a profile (paper, ipipe-hd, none) or generators (cpu,disk,...)
    #[arg(long, value_name = "PROFILE", default_value = "none")]
    pub load: String,
    /// Time the load runs before measuring starts
    #[arg(long, value_parser = parse::duration, default_value = "3s", value_name = "DURATION")]
    pub settle: Duration,
    #[command(flatten)]
    pub load_args: LoadArgs,
    /// Label to store the run under (how kernels are compared) [default: uname -r]
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Print help
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

impl RunArgs {
    /// Samples per thread: `-l`, else the probe's own count flag, else `default` unless a
    /// duration bounds the run.
    pub fn loops_or(&self, count: Option<u64>, default: u64) -> Option<u64> {
        self.loops.or(count).or(if self.duration.is_some() { None } else { Some(default) })
    }
}

#[derive(Args, Debug)]
pub struct DbArg {
    /// Store file [default: $RTBENCH_DB, else $XDG_DATA_HOME/rtbench/rtbench.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct TimerArgs {
    /// Wake-up interval in µs
    #[arg(short = 'i', long, value_parser = parse::positive_us, default_value = "1000", value_name = "US")]
    pub interval: u64,
    /// Added to the interval per thread, in µs (cyclictest's -d)
    #[arg(short = 'd', long, value_parser = parse::us, default_value = "0", value_name = "US")]
    pub distance: u64,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct GtodArgs {
    /// Clock-read pairs per thread (the same as -l) [default: 1000000, or unlimited with -D]
    #[arg(short = 'n', long, value_parser = parse::positive, value_name = "N")]
    pub pairs: Option<u64>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct SyntheticArgs {
    /// Seed of the generator: the same seed gives the same samples
    #[arg(long, default_value = "1")]
    pub seed: u64,
    /// Synthetic time between samples, in µs
    #[arg(short = 'i', long, value_parser = parse::positive_us, default_value = "1000", value_name = "US")]
    pub interval: u64,
    /// Median of the lognormal body, in ns
    #[arg(long, value_parser = parse::positive, default_value = "5000", value_name = "NS")]
    pub median: u64,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct PingpongArgs {
    /// Server address (HOST:PORT, or a socket path for unix) [default: loopback]
    pub addr: Option<String>,
    /// Run the echo server, on ADDR [default: 127.0.0.1:17700]
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "ADDR")]
    pub serve: Option<String>,
    #[arg(long, value_enum, default_value = "udp")]
    pub transport: crate::net::transport::Transport,
    /// Message payload in bytes (1 to 65536)
    #[arg(short = 's', long, value_parser = parse::message_size, default_value = "1", value_name = "BYTES")]
    pub size: usize,
    /// Round trips per thread (the same as -l) [default: 1000000, or unlimited with -D]
    #[arg(short = 'n', long, value_parser = parse::positive, value_name = "N")]
    pub round_trips: Option<u64>,
    /// Store full round-trip times instead of one-way (RTT/2)
    #[arg(long)]
    pub rtt: bool,
    /// Round trips before measuring, reported apart
    #[arg(long, default_value = "1000", value_name = "N")]
    pub warmup: u64,
    /// Spin on a non-blocking socket instead of sleeping in recv (UDP)
    #[arg(long)]
    pub busy_poll: bool,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

/// What the two ends of a network probe agree on.
#[derive(Args, Debug)]
pub struct SessionArgs {
    /// Session token (decimal); a server given one accepts only it [default: random per session]
    #[arg(long)]
    pub token: Option<u64>,
    /// Server or target only: stop after this long
    #[arg(long, value_parser = parse::duration, value_name = "DURATION")]
    pub serve_for: Option<Duration>,
}

#[derive(Args, Debug)]
pub struct ResponseArgs {
    /// Answer triggers on ADDR [default: 127.0.0.1:17700]
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "ADDR", conflicts_with = "logger")]
    pub target: Option<String>,
    /// Send triggers to TARGET and measure its answers
    #[arg(long, value_name = "TARGET")]
    pub logger: Option<String>,
    /// Time between triggers
    #[arg(long, value_parser = parse::duration, default_value = "1ms")]
    pub period: Duration,
    /// A trigger not answered within this long is lost
    #[arg(long, value_parser = parse::duration, default_value = "100ms")]
    pub timeout: Duration,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub run: RunArgs,
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
    #[arg(long, short = 'f', value_enum, default_value = "json")]
    pub format: ExportFormat,
    /// Write to FILE instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Buckets (1 µs each) of the cyclictest histogram formats
    #[arg(long, value_parser = parse::positive_us, default_value = "1000", value_name = "US")]
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

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Csv,
    Hgrm,
    CyclictestHist,
    CyclictestJson,
}
