//! Validated settings of one measuring run: what the runner sees instead of flags.

mod resume;

pub use crate::instrument::breach::BreachOptions;
pub use crate::instrument::Ask;
pub use resume::{notes, peer, peer_note, rest, resumable, sample_log, Peer, Rest, ResumeConfig};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::error::InputError;
use crate::instrument::{Planned, Request};
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
    /// The instruments to ride along (`--breach`, `--split`, `--classify`).
    pub instruments: Vec<Request>,
    /// CPUs for the collector (main thread, trace readers, store writes); `None`: the
    /// housekeeping CPUs.
    pub main_affinity: Option<String>,
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
            instruments: Vec::new(),
            main_affinity: None,
        }
    }
}

/// One measuring thread: its number and the CPU it is pinned to.
#[derive(Clone, Copy, Debug)]
pub struct ThreadPlan {
    pub index: usize,
    pub cpu: Option<usize>,
}

/// One measuring run, checked, by concern: the probe, its threads, how long, the load, the
/// shield, the instruments riding along, what it prints and writes, and where it is stored.
pub struct RunConfig {
    pub info: &'static ProbeInfo,
    pub probe: Arc<dyn Probe>,
    /// The probe's own parameters, stored with the run.
    pub probe_params: Box<crate::model::ProbeParams>,
    pub threads: Threads,
    pub loops: Option<u64>,
    pub duration: Option<Duration>,
    pub load: LoadPlan,
    /// CPUs to shield from everything else for the run; the measuring threads run there.
    pub shield: Option<Vec<usize>>,
    /// The instruments to arm, in the registry's order.
    pub instruments: Vec<Planned>,
    /// `--main-affinity`: where the collector runs; `None`: on the online CPUs not measured.
    pub main_affinity: Option<Vec<usize>>,
    pub output: Outputs,
    pub storage: Storage,
}

/// The measuring threads, and how they are to run. Read as the list of threads.
#[derive(Clone, Debug)]
pub struct Threads {
    pub plans: Vec<ThreadPlan>,
    pub policy: Policy,
    pub priority: i32,
    pub mlock: bool,
}

impl std::ops::Deref for Threads {
    type Target = [ThreadPlan];

    fn deref(&self) -> &[ThreadPlan] {
        &self.plans
    }
}

/// The load to run while measuring.
pub struct LoadPlan {
    /// `None`: idle.
    pub spec: Option<crate::load::LoadSpec>,
    /// The flags the load was shaped with, stored with a loaded run (`None`: idle).
    pub flags: Option<LoadFlags>,
    pub settle: Duration,
    /// Where its generators write.
    pub tmpdir: PathBuf,
}

/// What the run prints and writes besides the store.
pub struct Outputs {
    pub quiet: bool,
    pub json: Option<PathBuf>,
    pub histogram_buckets: Option<u64>,
    pub histfile: Option<PathBuf>,
    /// The sample log.
    pub samples: Option<PathBuf>,
    /// The sample log goes on after what it holds (a resumed run's) instead of beginning anew.
    pub samples_append: bool,
}

/// Where and as what the run is stored.
pub struct Storage {
    pub label: String,
    pub db: PathBuf,
    /// The envelope's interval: one point per thread per interval.
    pub envelope_ns: u64,
    pub command_line: String,
}

impl RunConfig {
    /// Checks `opts`, resolves the loop count and builds the probe from its flags.
    pub fn new(info: &'static ProbeInfo, args: &ProbeArgs, opts: &RunOptions) -> Result<RunConfig> {
        let label = opts.label.clone().unwrap_or_else(crate::sysinfo::kernel_release);
        crate::parse::label(&label, "--label")?;
        let shield = shield_cpus(opts.shield.as_deref())?;
        if shield.is_some() {
            needs_root("--shield", "it moves every task and IRQ off the shielded CPUs")?;
        }
        let instruments = instruments(info, &opts.instruments)?;
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
        // A thread per CPU however many the machine has; beyond that, no more than 1024.
        let most = cpus.len().max(1024);
        if n > most {
            return Err(invalid!("--threads {n} is too many; use 1 to {most}"));
        }
        for path in [&opts.json, &opts.histfile, &opts.samples].into_iter().flatten() {
            check_writable(path)?;
        }
        // Samples per thread: -l, else the probe's own count flag, else its default unless a
        // duration bounds the run.
        let loops = opts.loops.or(args.count()).or(if opts.duration.is_some() { None } else { info.default_loops });
        let priority = if matches!(opts.policy, Policy::Other) || info.synthetic { 0 } else { opts.priority };
        let built = args.build(&Shape { loops, priority })?;
        // A probe whose threads must not be pinned (SCHED_DEADLINE's) runs them as `-a none` does.
        let pinned = !unpinned && built.probe.pins_threads();
        let threads = (0..n).map(|i| ThreadPlan { index: i, cpu: pinned.then(|| cpus[i % cpus.len()]) }).collect();
        let envelope_ns = opts.envelope_interval.as_nanos().min(u64::MAX as u128) as u64;
        let db = crate::store::default_path(opts.db.as_deref());
        let load = crate::load::LoadSpec::parse(&opts.load, load_options(&opts.load_flags))?;
        let tmpdir = if load.is_none() { std::env::temp_dir() } else { tmp_dir(&opts.load_flags)? };
        // Synthetic samples need no privilege and must not hog CPUs at FIFO priority.
        let (policy, mlock) = if info.synthetic { (Policy::Other, false) } else { (opts.policy, opts.mlock) };
        Ok(RunConfig {
            info,
            probe: built.probe,
            probe_params: Box::new(built.params),
            threads: Threads { plans: threads, policy, priority: opts.priority, mlock },
            loops,
            duration: opts.duration,
            load: LoadPlan {
                flags: (!load.is_none()).then(|| opts.load_flags.clone()),
                spec: (!load.is_none()).then_some(load),
                settle: opts.settle,
                tmpdir,
            },
            shield,
            instruments,
            main_affinity: opts.main_affinity.as_deref().map(|l| cpu_list(Some(l), "--main-affinity")).transpose()?,
            output: Outputs {
                quiet: opts.quiet,
                json: opts.json.clone(),
                histogram_buckets: opts.histogram_buckets,
                histfile: opts.histfile.clone(),
                samples: opts.samples.clone(),
                samples_append: false,
            },
            storage: Storage { label, db, envelope_ns, command_line: std::env::args().collect::<Vec<_>>().join(" ") },
        })
    }

    /// Everything about how the run was made, stored as its `params`.
    pub fn params(&self) -> MeasuredParams {
        MeasuredParams {
            threads: self.threads.len(),
            cpus: self.threads.iter().map(|t| t.cpu).collect(),
            policy: self.threads.policy,
            priority: self.threads.priority,
            mlock: self.threads.mlock,
            loops: self.loops,
            duration_s: self.duration.map(|d| d.as_secs_f64()),
            envelope_interval_ns: self.storage.envelope_ns,
            samples_file: self.output.samples.as_ref().map(|p| p.display().to_string()),
            ran: Vec::new(),
            lacked: Vec::new(),
            shield: None,
            collector: None,
            breach: None,
            split: None,
            classify: None,
            instruments: Default::default(),
            load_flags: self.load.flags.clone(),
            probe: (*self.probe_params).clone(),
        }
    }
}

/// The instruments a run asks for, in the registry's order: one asked for where the probe does
/// not offer what it needs is refused, as is one that needs root when rtbench is not; one asked
/// for wherever possible is left out where the probe does not offer it.
fn instruments(info: &ProbeInfo, asked: &[Request]) -> Result<Vec<Planned>> {
    let mut planned = Vec::new();
    for i in crate::instrument::REGISTRY {
        let Some(r) = asked.iter().find(|r| r.name == i.name && r.ask != Ask::Off) else { continue };
        let offered = info.offers.contains(&i.needs);
        if r.ask == Ask::Asked {
            if !offered {
                return Err(invalid!("{} {}, and {} samples {}", i.flag, i.does, info.name, i.lacks));
            }
            if let Some(why) = i.root_why {
                needs_root(i.flag, why)?;
            }
        }
        if offered {
            planned.push(Planned { info: i, settings: r.settings.clone() });
        }
    }
    Ok(planned)
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
