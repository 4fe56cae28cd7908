//! The generators, one file each, and the worker process that runs one of them.

mod compile;
mod cpu;
mod disk;
mod fswalk;
mod hackbench;
mod memcopy;
mod pingflood;
mod stressng;
mod trigger;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{GeneratorInfo, LoadSpec, WorkerCtx};

/// Every generator rtbench knows.
pub static REGISTRY: &[GeneratorInfo] = &[
    compile::INFO,
    memcopy::INFO,
    pingflood::INFO,
    hackbench::INFO,
    fswalk::INFO,
    disk::INFO,
    cpu::INFO,
    trigger::INFO,
    stressng::INFO,
];

/// How long a generator must run before it counts as started: a program that fails sooner
/// (bad arguments, a broken tree) fails the load instead of being restarted.
pub const FIRST_SECOND: Duration = Duration::from_secs(1);

/// Body of `rtbench __load-worker`: runs generator `index` of `spec` until killed or past
/// `deadline_s`, publishing in `dir/status/` its iteration count (`INDEX`), that it is past its
/// first second (`INDEX.up`) or why it failed (`INDEX.failed`).
pub fn run_worker(dir: &Path, spec: &LoadSpec, index: usize, deadline_s: u64) -> Result<()> {
    let g = spec.generators.get(index).context("no such generator in the load")?;
    let info = super::info(&g.name).context("unknown generator")?;
    let scratch = dir.join(format!("{index}-{}", g.name));
    std::fs::create_dir_all(&scratch).with_context(|| format!("could not create '{}'", scratch.display()))?;
    let status = dir.join("status").join(format!("{index}"));
    let deadline = (deadline_s > 0).then(|| Instant::now() + Duration::from_secs(deadline_s));
    let started = Instant::now();
    let ctx =
        WorkerCtx { spec: g, opts: &spec.options, scratch, counter: AtomicU64::new(0), status, deadline, started };
    std::thread::scope(|s| {
        s.spawn(|| {
            while ctx.keep_going() {
                ctx.publish();
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        let r = (info.work)(&ctx);
        if let Err(e) = &r {
            let _ = crate::restore::write_atomic(&ctx.status.with_extension("failed"), format!("{e:#}").as_bytes());
        }
        ctx.publish();
        r
    })
}

impl WorkerCtx<'_> {
    /// Counts one completed iteration.
    pub fn iteration(&self) {
        self.counter.fetch_add(1, Ordering::Relaxed);
    }

    /// False once the supervisor is gone or the worker's time is up: every loop checks it.
    pub fn keep_going(&self) -> bool {
        crate::sys::parent_pid() != 1 && self.deadline.is_none_or(|d| Instant::now() < d)
    }

    /// Records a note for the parent, such as which variant ran.
    pub fn note(&self, text: &str) {
        let _ = std::fs::write(self.status.with_extension("note"), text);
    }

    /// Runs `cmd` (the program `what`) to its end, its stderr kept beside the status; whether it
    /// succeeded. An error, with the program's last line of stderr, when it failed within the
    /// worker's first second: bad arguments would otherwise restart forever, loading nothing.
    pub fn run_child(&self, what: &str, cmd: &mut Command) -> Result<bool> {
        let log = self.status.with_extension("stderr");
        let stderr = std::fs::File::create(&log).with_context(|| format!("could not create '{}'", log.display()))?;
        cmd.stdout(std::process::Stdio::null()).stderr(stderr);
        crate::sys::own_child(cmd, libc::SIGKILL, None, 0);
        let status = cmd.spawn().with_context(|| format!("could not start {what}"))?.wait()?;
        if status.success() || self.started.elapsed() >= FIRST_SECOND {
            return Ok(status.success());
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        match text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
            Some(last) => Err(anyhow::anyhow!("{what} failed in its first second ({status}): {last}")),
            None => Err(anyhow::anyhow!("{what} failed in its first second ({status})")),
        }
    }

    fn publish(&self) {
        let _ = crate::restore::write_atomic(&self.status, self.counter.load(Ordering::Relaxed).to_string().as_bytes());
        // A margin past the first second, so that a child failing just inside it is reported
        // as failed before the worker is reported as up.
        let up = self.status.with_extension("up");
        if self.started.elapsed() >= FIRST_SECOND + Duration::from_millis(200) && !up.exists() {
            let _ = crate::restore::write_atomic(&up, b"");
        }
    }
}
