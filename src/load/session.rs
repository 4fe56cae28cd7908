//! The parent's side of a load: start the supervisor, read progress, stop, report.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use super::procstat::{self, CpuSample};
use super::LoadSpec;
use crate::error::InputError;
use crate::model::{GeneratorReport, LoadReport};
use crate::sys;
use anyhow::{Context, Result};

pub struct LoadSession {
    pub spec: LoadSpec,
    dir: PathBuf,
    supervisor: Option<Child>,
}

impl LoadSession {
    /// Starts the load. `tmp` must be writable; `deadline_s` (0: none) bounds every process.
    pub fn start(spec: &LoadSpec, tmp: &Path, deadline_s: u64) -> Result<LoadSession> {
        let stamp = sys::now_ns() % 1_000_000_000;
        let dir = tmp.join(format!("rtbench-load-{}-{stamp}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| InputError::Unwritable {
            path: tmp.display().to_string(),
            reason: format!("temporary directory for the load: {e}"),
        })?;
        let exe = std::env::current_exe().context("cannot find rtbench's own executable")?;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("__load-supervisor")
            .arg(&dir)
            .arg(deadline_s.to_string())
            .arg(serde_json::to_string(spec)?)
            .stdin(std::process::Stdio::null());
        sys::own_child(&mut cmd, libc::SIGTERM, Some(0), 0);
        let supervisor = cmd.spawn().context("could not start the load supervisor")?;
        Ok(LoadSession { spec: spec.clone(), dir, supervisor: Some(supervisor) })
    }

    /// Iteration counts and variants so far.
    pub fn progress(&self) -> Vec<GeneratorReport> {
        let status = self.dir.join("status");
        self.spec
            .generators
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let count = std::fs::read_to_string(status.join(i.to_string())).ok();
                let variant = std::fs::read_to_string(status.join(format!("{i}.note"))).ok();
                GeneratorReport {
                    name: g.args.as_ref().map_or(g.name.clone(), |a| format!("{}:{a}", g.name)),
                    ran: count.is_some(),
                    iterations: count.and_then(|c| c.trim().parse().ok()).unwrap_or(0),
                    unit: super::info(&g.name).map_or("", |i| i.unit).to_string(),
                    variant,
                }
            })
            .collect()
    }

    /// Whether every generator is past its first second (`Some(Ok)`), one failed in it, with
    /// its own message (`Some(Err)`), or some are not decided yet (`None`).
    pub fn first_second(&self) -> Option<Result<(), String>> {
        let status = self.dir.join("status");
        let mut decided = true;
        for (i, g) in self.spec.generators.iter().enumerate() {
            if let Ok(why) = std::fs::read_to_string(status.join(format!("{i}.failed"))) {
                return Some(Err(format!("load generator '{}' failed: {}", g.name, why.trim())));
            }
            decided &= status.join(format!("{i}.up")).exists();
        }
        decided.then_some(Ok(()))
    }

    /// Stops every load process and removes the temporary directory; returns the last progress.
    pub fn stop(mut self) -> Vec<GeneratorReport> {
        let progress = self.progress();
        self.shutdown();
        progress
    }

    /// Ends the load within [`SUPERVISOR_GRACE`] and a little: a stop must end the whole command
    /// within 2 s (issue 29), and a supervisor that cannot clean up (stopped, stuck in the
    /// kernel) held it for 3 s. Killed, its workers die with it (their death signal) and its
    /// cgroup is emptied here.
    fn shutdown(&mut self) {
        let Some(mut sup) = self.supervisor.take() else { return };
        let _ = sys::send_signal(sup.id() as i32, libc::SIGTERM);
        if !ended_within(&mut sup, SUPERVISOR_GRACE) {
            let _ = sup.kill();
            ended_within(&mut sup, KILLED_WAIT);
            super::supervisor::kill_cgroup(sup.id());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How long a stopping load waits for its supervisor to end every load process (it takes
/// ~0.3 s for the paper's load here) before killing it.
const SUPERVISOR_GRACE: Duration = Duration::from_millis(800);
/// How long it then waits for the killed supervisor to be gone; one that is not yet is left to
/// end with rtbench.
const KILLED_WAIT: Duration = Duration::from_millis(200);

/// Whether `child` has ended within `bound`.
fn ended_within(child: &mut Child, bound: Duration) -> bool {
    let until = Instant::now() + bound;
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for LoadSession {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The report of a load measured from `before` to `after`, with a warning when it fell short.
pub fn report(
    spec: &LoadSpec,
    generators: Vec<GeneratorReport>,
    before: &CpuSample,
    after: &CpuSample,
) -> (LoadReport, Vec<String>) {
    let activity = procstat::between(before, after);
    let target = spec.cpu_target();
    let mut warnings = Vec::new();
    if let Some(t) = target {
        let short: Vec<String> = activity
            .cpu_busy_percent
            .iter()
            .enumerate()
            .filter(|(_, b)| **b < t)
            .map(|(cpu, b)| format!("CPU {cpu} {b:.1} %"))
            .collect();
        if !short.is_empty() {
            warnings.push(format!("load '{}' fell short of {t:.0} % busy: {}", spec.profile, short.join(", ")));
        }
    }
    for g in generators.iter().filter(|g| !g.ran) {
        warnings.push(format!("load generator '{}' never ran", g.name));
    }
    let report = LoadReport {
        profile: spec.profile.clone(),
        generators,
        activity: Some(activity),
        cpu_target_percent: target,
        settle_s: None,
    };
    (report, warnings)
}
