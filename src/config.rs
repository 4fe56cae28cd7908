//! Validated settings of one measuring run: what the runner sees instead of flags.

mod commands;
mod resume;

pub use crate::trace::BreachOptions;
pub use commands::*;
pub use resume::{notes, peer, peer_note, rest, resumable, sample_log, Peer, Rest, ResumeConfig};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::error::InputError;
use crate::invalid;
use crate::load::LoadOptions;
pub use crate::model::LoadFlags;
use crate::model::{MeasuredParams, Policy};
use crate::parse::cpu_list;
use crate::probe::{DefaultThreads, Probe, ProbeArgs, ProbeInfo, Shape};

/// Real-time priority of the measuring threads unless `-p` says otherwise.
pub const DEFAULT_PRIORITY: i32 = 95;

/// The settings every measuring run takes, before they are checked: what the command line's
/// run flags say, or what the study asks of each cell.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `Some(0)`: one per CPU.
    pub threads: Option<u64>,
    pub affinity: Option<String>,
    pub priority: i32,
    pub policy: Policy,
    pub loops: Option<u64>,
    pub duration: Option<Duration>,
    pub mlock: bool,
    pub histogram_buckets: Option<u64>,
    pub histfile: Option<PathBuf>,
    pub quiet: bool,
    pub json: Option<PathBuf>,
    pub samples: Option<PathBuf>,
    pub envelope_interval: Duration,
    /// A profile or generators; "none" when idle.
    pub load: String,
    pub settle: Duration,
    pub load_flags: LoadFlags,
    pub label: Option<String>,
    pub db: Option<PathBuf>,
    /// CPUs to shield from the rest of the system for the run.
    pub shield: Option<String>,
    pub breach: Option<BreachOptions>,
    pub split: SplitAsk,
    /// `noise --classify`: asked for, wherever it can be (a study's noise cell), or not.
    pub classify: SplitAsk,
}

/// `--split` (and `--classify`, the same way): asked for (refused up front where it cannot be),
/// or wherever it can be (a study's timer or noise cells; a skip with the reason elsewhere).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SplitAsk {
    #[default]
    Off,
    Asked,
    IfPossible,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            threads: None,
            affinity: None,
            priority: DEFAULT_PRIORITY,
            policy: Policy::Fifo,
            loops: None,
            duration: None,
            mlock: true,
            histogram_buckets: None,
            histfile: None,
            quiet: false,
            json: None,
            samples: None,
            envelope_interval: Duration::from_secs(1),
            load: "none".into(),
            settle: Duration::from_secs(3),
            load_flags: LoadFlags::default(),
            label: None,
            db: None,
            shield: None,
            breach: None,
            split: SplitAsk::Off,
            classify: SplitAsk::Off,
        }
    }
}

/// One measuring thread: its number and the CPU it is pinned to.
#[derive(Clone, Copy, Debug)]
pub struct ThreadPlan {
    pub index: usize,
    pub cpu: Option<usize>,
}

pub struct RunConfig {
    pub info: &'static ProbeInfo,
    pub probe: Arc<dyn Probe>,
    /// The probe's own parameters, stored with the run.
    pub probe_params: crate::model::ProbeParams,
    pub threads: Vec<ThreadPlan>,
    pub policy: Policy,
    pub priority: i32,
    pub mlock: bool,
    pub loops: Option<u64>,
    pub duration: Option<Duration>,
    pub quiet: bool,
    pub json: Option<PathBuf>,
    pub histogram_buckets: Option<u64>,
    pub histfile: Option<PathBuf>,
    pub samples: Option<PathBuf>,
    /// The sample log goes on after what it holds (a resumed run's) instead of beginning anew.
    pub samples_append: bool,
    pub envelope_ns: u64,
    pub label: String,
    pub db: PathBuf,
    /// The load to run while measuring (`None`: idle).
    pub load: Option<crate::load::LoadSpec>,
    /// The flags the load was shaped with, stored with a loaded run (`None`: idle).
    pub load_flags: Option<LoadFlags>,
    pub settle: Duration,
    pub tmpdir: PathBuf,
    pub command_line: String,
    /// CPUs to shield from everything else for the run; the measuring threads run there.
    pub shield: Option<Vec<usize>>,
    pub breach: Option<BreachOptions>,
    /// Split every sample into its IRQ and scheduling parts (a timer's only).
    pub split: bool,
    /// Classify every gap by what ran in it (noise only).
    pub classify: bool,
}

impl RunConfig {
    /// Checks `opts`, resolves the loop count and builds the probe from its flags.
    pub fn new(info: &'static ProbeInfo, args: &ProbeArgs, opts: &RunOptions) -> Result<RunConfig> {
        let shield = shield_cpus(opts.shield.as_deref())?;
        if opts.breach.is_some() && info.synthetic {
            return Err(invalid!("--breach traces the kernel, and {} samples come from no kernel", info.name));
        }
        if shield.is_some() {
            needs_root("--shield", "it moves every task and IRQ off the shielded CPUs")?;
        }
        if opts.breach.is_some() {
            needs_root("--breach", "it traces the kernel with ftrace")?;
        }
        let split = split(info, opts.split)?;
        let classify = classify(info, opts.classify)?;
        // Shielded CPUs are the ones to measure unless -a says otherwise.
        // -a none: unpinned, where the scheduler puts each thread (sockperf's placement).
        let unpinned = opts.affinity.as_deref() == Some("none");
        let cpus = match (&opts.affinity, &shield) {
            (None, Some(s)) => s.clone(),
            _ if unpinned => cpu_list(None, "--affinity")?,
            _ => cpu_list(opts.affinity.as_deref(), "--affinity")?,
        };
        let n = match (opts.threads, info.default_threads) {
            (Some(0), _) | (None, DefaultThreads::PerCpu) => cpus.len(),
            (Some(n), _) => n as usize,
            (None, DefaultThreads::One) => 1,
        };
        if n > 1024 {
            return Err(invalid!("--threads {n} is too many; use 1 to 1024"));
        }
        let threads = (0..n).map(|i| ThreadPlan { index: i, cpu: (!unpinned).then(|| cpus[i % cpus.len()]) }).collect();
        for path in [&opts.json, &opts.histfile, &opts.samples].into_iter().flatten() {
            check_writable(path)?;
        }
        // Samples per thread: -l, else the probe's own count flag, else its default unless a
        // duration bounds the run.
        let loops = opts.loops.or(info.count_flag.and_then(|f| args.number(&f))).or(if opts.duration.is_some() {
            None
        } else {
            info.default_loops
        });
        let built = (info.build)(args, &Shape { loops })?;
        let envelope_ns = opts.envelope_interval.as_nanos().min(u64::MAX as u128) as u64;
        let db = crate::store::default_path(opts.db.as_deref());
        let load = crate::load::LoadSpec::parse(&opts.load, load_options(&opts.load_flags))?;
        let tmpdir = if load.is_none() { std::env::temp_dir() } else { tmp_dir(&opts.load_flags)? };
        // Synthetic samples need no privilege and must not hog CPUs at FIFO priority.
        let (policy, mlock) = if info.synthetic { (Policy::Other, false) } else { (opts.policy, opts.mlock) };
        Ok(RunConfig {
            info,
            probe: built.probe,
            probe_params: built.params,
            threads,
            policy,
            priority: opts.priority,
            mlock,
            loops,
            duration: opts.duration,
            quiet: opts.quiet,
            json: opts.json.clone(),
            histogram_buckets: opts.histogram_buckets,
            histfile: opts.histfile.clone(),
            samples: opts.samples.clone(),
            samples_append: false,
            envelope_ns,
            label: opts.label.clone().unwrap_or_else(crate::sysinfo::kernel_release),
            db,
            load_flags: (!load.is_none()).then(|| opts.load_flags.clone()),
            load: (!load.is_none()).then_some(load),
            settle: opts.settle,
            tmpdir,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            shield,
            breach: opts.breach,
            split,
            classify,
        })
    }

    /// Everything about how the run was made, stored as its `params`.
    pub fn params(&self) -> MeasuredParams {
        MeasuredParams {
            threads: self.threads.len(),
            cpus: self.threads.iter().map(|t| t.cpu).collect(),
            policy: self.policy,
            priority: self.priority,
            mlock: self.mlock,
            loops: self.loops,
            duration_s: self.duration.map(|d| d.as_secs_f64()),
            envelope_interval_ns: self.envelope_ns,
            samples_file: self.samples.as_ref().map(|p| p.display().to_string()),
            ran: Vec::new(),
            lacked: Vec::new(),
            shield: None,
            breach: None,
            split: None,
            classify: None,
            load_flags: self.load_flags.clone(),
            probe: self.probe_params.clone(),
        }
    }
}

/// Whether the run is split: only a timer's wake-up has an IRQ part.
fn split(info: &ProbeInfo, ask: SplitAsk) -> Result<bool> {
    let timer = info.name == crate::probe::timer::INFO.name;
    if ask == SplitAsk::Asked {
        if !timer {
            return Err(invalid!("--split splits a timer wake-up, and {} samples are not one", info.name));
        }
        needs_root("--split", "it traces the kernel's timers with ftrace")?;
    }
    Ok(timer && ask != SplitAsk::Off)
}

/// Whether the gaps are classified: only the noise probe's samples are gaps of the CPU.
fn classify(info: &ProbeInfo, ask: SplitAsk) -> Result<bool> {
    let noise = info.name == crate::probe::noise::INFO.name;
    if ask == SplitAsk::Asked {
        if !noise {
            return Err(invalid!(
                "--classify classifies the noise probe's gaps, and {} samples are not gaps",
                info.name
            ));
        }
        needs_root("--classify", "it traces the kernel with ftrace")?;
    }
    Ok(noise && ask != SplitAsk::Off)
}

/// Refuses `flag` up front when rtbench is not root: what only root may do is not done by
/// halves (issue 28). The real-time capabilities do not give it.
pub fn needs_root(flag: &str, why: &str) -> Result<()> {
    if crate::sys::is_root() {
        return Ok(());
    }
    Err(invalid!(
        "{flag} needs root ({why}); cap_sys_nice and cap_ipc_lock do not give it: run as root, or leave {flag} out"
    ))
}

/// The CPUs `--shield` names: online, and not all of them.
fn shield_cpus(given: Option<&str>) -> Result<Option<Vec<usize>>> {
    let Some(list) = given else { return Ok(None) };
    let cpus = cpu_list(Some(list), "--shield")?;
    let online = crate::sysinfo::online_cpus();
    if online.iter().all(|c| cpus.contains(c)) {
        return Err(invalid!("--shield {list} names every online CPU; leave at least one for the rest of the system"));
    }
    Ok(Some(cpus))
}

/// The load options a user gave, with their defaults filled in.
pub fn load_options(a: &LoadFlags) -> LoadOptions {
    LoadOptions {
        jobs: a.jobs.map_or(2 * crate::sysinfo::online_cpus().len(), |j| j as usize),
        kernel_tree: a.kernel_tree.as_ref().map(|p| p.display().to_string()),
        fswalk_path: a.fswalk_path.display().to_string(),
        hackbench_groups: a.hackbench_groups as usize,
    }
}

/// The directory load generators write in, checked before anything runs.
pub fn tmp_dir(a: &LoadFlags) -> Result<PathBuf> {
    let dir = a.tmpdir.clone().unwrap_or_else(std::env::temp_dir);
    check_writable(&dir.join("rtbench-load-check"))?;
    Ok(dir)
}

/// Fails with a clear error unless a file can be created at `path` (nothing is left behind).
pub fn check_writable(path: &Path) -> Result<()> {
    let fail = |reason: String| InputError::Unwritable { path: path.display().to_string(), reason };
    if path.is_dir() {
        return Err(fail("is a directory".into()).into());
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(fail(format!("directory '{}' does not exist", dir.display())).into());
    }
    let probe = dir.join(format!(".rtbench-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(fail(e.to_string()).into()),
    }
}

/// Writes an output file the user named, whole or not at all; a failure names the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::restore::write_atomic(path, bytes)
        .map_err(|e| InputError::Unwritable { path: path.display().to_string(), reason: e.to_string() }.into())
}
