//! `rtbench resume RUN`: the settings of a stored run, read back from its typed parameters,
//! checked as a command line's are, for the run's next part.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::{BreachOptions, RunConfig, RunOptions, SplitAsk, ThreadPlan};
use crate::invalid;
use crate::model::{LoadRecord, MeasuredParams, RunHeader, RunKind, RunStatus};

/// `rtbench resume RUN`: the run to continue, and for how long.
#[derive(Debug)]
pub struct ResumeConfig {
    pub run: i64,
    /// `-D`: how long to continue [default: what is left of the run's duration].
    pub duration: Option<Duration>,
    pub quiet: bool,
    pub db: PathBuf,
}

/// How much more of the run to measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rest {
    For(Duration),
    /// Samples per thread.
    Loops(u64),
    /// Until stopped, as the run was asked.
    Unbounded,
}

/// The measured parameters of `h` when it can be resumed; else why not, naming the run.
pub fn resumable(h: &RunHeader) -> Result<&MeasuredParams> {
    let id = h.id;
    match h.status {
        RunStatus::Interrupted | RunStatus::Aborted => {}
        RunStatus::Complete => return Err(invalid!("run {id} is complete: there is nothing to resume")),
        RunStatus::Running => return Err(invalid!("run {id} is still running (its process is alive)")),
        RunStatus::Failed => {
            return Err(invalid!(
                "run {id} failed: only an interrupted or aborted run can be resumed (see `show {id}`)"
            ))
        }
    }
    match h.kind {
        RunKind::Probe => {}
        RunKind::MonitorWindow => {
            return Err(invalid!(
                "run {id} is a window of `rtbench monitor`: a monitor window is not resumable; start the monitor \
                 again and its windows go on as new runs"
            ))
        }
        RunKind::SysbenchOp | RunKind::SysbenchTotal => {
            return Err(invalid!("run {id} is a sysbench measurement, made whole: it is not resumable"))
        }
    }
    h.params.measured().ok_or_else(|| invalid!("run {id} was not measured by rtbench (imported): it is not resumable"))
}

/// What is left of a run that measured `measured_s`, or `asked` (`-D`).
pub fn rest(h: &RunHeader, measured_s: f64, fewest_samples: u64, asked: Option<Duration>) -> Result<Rest> {
    let m = resumable(h)?;
    if let Some(d) = asked {
        return Ok(Rest::For(d));
    }
    let done = || invalid!("run {} has measured all it was asked already; give -D to continue it longer", h.id);
    match (m.duration_s, m.loops) {
        (Some(total), _) => {
            let left = total - measured_s;
            // Less than a checkpoint's worth: what a stop at its very end leaves.
            if left < 1.0 {
                return Err(done());
            }
            Ok(Rest::For(Duration::from_secs_f64(left)))
        }
        (None, Some(loops)) => match loops.saturating_sub(fewest_samples) {
            0 => Err(done()),
            left => Ok(Rest::Loops(left)),
        },
        (None, None) => Ok(Rest::Unbounded),
    }
}

impl RunConfig {
    /// The settings stored run `h` was made with, for `rest` more: its probe and its settings,
    /// threads and their CPUs, policy, memory locking, envelope, load, label, shield, breach
    /// tracing and split. Checked as a command line's are (a CPU gone, root needed).
    pub fn resumed(h: &RunHeader, rest: Rest, quiet: bool, db: PathBuf) -> Result<RunConfig> {
        let m = resumable(h)?;
        let id = h.id;
        let info = crate::probe::info(&h.probe)
            .ok_or_else(|| invalid!("run {id}'s probe '{}' is not one this rtbench knows", h.probe))?;
        (info.supported)().map_err(|why| invalid!("run {id}: {} cannot run here: {why}", info.name))?;
        let args =
            info.resumed_args(&m.probe).map_err(|why| invalid!("run {id} ({}) cannot be resumed: {why}", h.probe))?;
        let (duration, loops) = match rest {
            Rest::For(d) => (Some(d), None),
            Rest::Loops(n) => (None, Some(n)),
            Rest::Unbounded => (None, None),
        };
        let (load, settle) = load_of(&h.load);
        let opts = RunOptions {
            threads: Some(m.threads as u64),
            affinity: Some(affinity(&m.cpus)),
            priority: m.priority,
            policy: m.policy,
            loops,
            duration,
            mlock: m.mlock,
            quiet,
            envelope_interval: Duration::from_nanos(m.envelope_interval_ns),
            load,
            settle,
            label: Some(h.label.clone()),
            db: Some(db),
            shield: m.shield.as_ref().map(|s| crate::units::format_cpu_list(&s.cpus)),
            breach: m.breach.as_ref().filter(|b| b.skipped.is_none()).map(|b| BreachOptions {
                threshold_ns: b.threshold_ns,
                max: b.max,
                stop: false,
            }),
            split: asked(m.split.as_ref().map(|s| s.skipped.is_none())),
            classify: asked(m.classify.as_ref().map(|c| c.skipped.is_none())),
            ..RunOptions::default()
        };
        let mut cfg = RunConfig::new(info, &args, &opts)?;
        // Each thread on the CPU it measured on, as stored (the flags pin them round-robin).
        cfg.threads = m.cpus.iter().enumerate().map(|(index, &cpu)| ThreadPlan { index, cpu }).collect();
        Ok(cfg)
    }
}

/// The CPUs the threads ran on, as `-a` takes them; `none` when unpinned.
fn affinity(cpus: &[Option<usize>]) -> String {
    let mut pinned: Vec<usize> = cpus.iter().flatten().copied().collect();
    pinned.sort_unstable();
    pinned.dedup();
    if pinned.is_empty() {
        "none".into()
    } else {
        crate::units::format_cpu_list(&pinned)
    }
}

/// Split (or classified) again when the run was, and not when it was skipped.
fn asked(done: Option<bool>) -> SplitAsk {
    if done == Some(true) {
        SplitAsk::Asked
    } else {
        SplitAsk::Off
    }
}

/// The load profile and its settling time as the run stored them.
fn load_of(load: &LoadRecord) -> (String, Duration) {
    let settle_s = match load {
        LoadRecord::Measured(r) => r.settle_s,
        LoadRecord::Planned(p) => Some(p.settle_s),
        LoadRecord::Named(_) => None,
    };
    let default = RunOptions::default().settle;
    (load.profile().to_string(), settle_s.map_or(default, Duration::from_secs_f64))
}
