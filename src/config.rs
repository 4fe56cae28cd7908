//! Validated settings of one measuring run: what the runner sees instead of flags.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::cli::{PolicyArg, RunArgs};
use crate::error::InputError;
use crate::invalid;
use crate::model::{MeasuredParams, Policy};
use crate::probe::Probe;

/// One measuring thread: its number and the CPU it is pinned to.
#[derive(Clone, Copy, Debug)]
pub struct ThreadPlan {
    pub index: usize,
    pub cpu: Option<usize>,
}

pub struct RunConfig {
    pub probe_name: &'static str,
    pub probe: Arc<dyn Probe>,
    /// Probe-specific parameters, stored with the run.
    pub probe_params: serde_json::Value,
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
    pub envelope_ns: u64,
    pub label: String,
    pub db: PathBuf,
    /// The load to run while measuring (`None`: idle).
    pub load: Option<crate::load::LoadSpec>,
    pub settle: Duration,
    pub tmpdir: PathBuf,
    pub command_line: String,
}

/// How many threads a probe runs when `-t` is not given.
#[derive(Clone, Copy)]
pub enum DefaultThreads {
    PerCpu,
    One,
}

impl RunConfig {
    pub fn new(
        probe_name: &'static str,
        probe: Arc<dyn Probe>,
        probe_params: serde_json::Value,
        args: &RunArgs,
        default_threads: DefaultThreads,
    ) -> Result<RunConfig> {
        let online = crate::sysinfo::online_cpus();
        let cpus = match &args.affinity {
            None => online.clone(),
            Some(list) => {
                let cpus = crate::sysinfo::parse_cpu_list(list)
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| invalid!("--affinity '{list}' is not a CPU list; use e.g. 0-3,6"))?;
                if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
                    return Err(invalid!("--affinity: CPU {bad} is not online; online CPUs are {online:?}"));
                }
                cpus
            }
        };
        let n = match (args.threads, default_threads) {
            (Some(0), _) | (None, DefaultThreads::PerCpu) => cpus.len(),
            (Some(n), _) => n as usize,
            (None, DefaultThreads::One) => 1,
        };
        if n > 1024 {
            return Err(invalid!("--threads {n} is too many; use 1 to 1024"));
        }
        let threads = (0..n).map(|i| ThreadPlan { index: i, cpu: Some(cpus[i % cpus.len()]) }).collect();
        let policy = match args.policy {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::RoundRobin,
            PolicyArg::Other => Policy::Other,
        };
        for path in [&args.json, &args.histfile, &args.samples].into_iter().flatten() {
            check_writable(path)?;
        }
        let envelope_ns = args.envelope_interval.as_nanos().min(u64::MAX as u128) as u64;
        let db = crate::store::default_path(args.db.db.as_deref());
        let load = crate::load::LoadSpec::parse(&args.load, load_options(&args.load_args))?;
        let tmpdir = if load.is_none() { std::env::temp_dir() } else { tmp_dir(&args.load_args)? };
        Ok(RunConfig {
            probe_name,
            probe,
            probe_params,
            threads,
            policy,
            priority: args.priority,
            mlock: !args.no_mlock,
            loops: args.loops,
            duration: args.duration,
            quiet: args.quiet,
            json: args.json.clone(),
            histogram_buckets: args.histogram,
            histfile: args.histfile.clone(),
            samples: args.samples.clone(),
            envelope_ns,
            label: args.label.clone().unwrap_or_else(crate::sysinfo::kernel_release),
            db,
            load: (!load.is_none()).then_some(load),
            settle: args.settle,
            tmpdir,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
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
            probe: match &self.probe_params {
                serde_json::Value::Object(m) => m.clone(),
                _ => serde_json::Map::new(),
            },
        }
    }
}

/// The load options a user gave, with their defaults filled in.
pub fn load_options(a: &crate::cli::LoadArgs) -> crate::load::LoadOptions {
    crate::load::LoadOptions {
        jobs: a.jobs.map_or(2 * crate::sysinfo::online_cpus().len(), |j| j as usize),
        kernel_tree: a.kernel_tree.as_ref().map(|p| p.display().to_string()),
        fswalk_path: a.fswalk_path.display().to_string(),
        hackbench_groups: a.hackbench_groups as usize,
    }
}

/// The directory load generators write in, checked before anything runs.
pub fn tmp_dir(a: &crate::cli::LoadArgs) -> Result<PathBuf> {
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

/// Writes `bytes` to `path` atomically: a reader sees the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail = |e: std::io::Error| InputError::Unwritable { path: path.display().to_string(), reason: e.to_string() };
    let tmp = path
        .with_file_name(format!(".{}.rtbench-tmp", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()));
    std::fs::write(&tmp, bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })?;
    Ok(())
}
