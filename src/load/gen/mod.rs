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

/// Body of `rtbench __load-worker`: runs generator `index` of `spec` until killed or past
/// `deadline_s`, publishing its iteration count in `dir/status/`.
pub fn run_worker(dir: &Path, spec: &LoadSpec, index: usize, deadline_s: u64) -> Result<()> {
    let g = spec.generators.get(index).context("no such generator in the load")?;
    let info = super::info(&g.name).context("unknown generator")?;
    let scratch = dir.join(format!("{index}-{}", g.name));
    std::fs::create_dir_all(&scratch).with_context(|| format!("could not create '{}'", scratch.display()))?;
    let status = dir.join("status").join(format!("{index}"));
    let deadline = (deadline_s > 0).then(|| Instant::now() + Duration::from_secs(deadline_s));
    let ctx = WorkerCtx { spec: g, opts: &spec.options, scratch, counter: AtomicU64::new(0), status, deadline };
    std::thread::scope(|s| {
        s.spawn(|| {
            while ctx.keep_going() {
                ctx.publish();
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        let r = (info.work)(&ctx);
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

    fn publish(&self) {
        let _ = crate::restore::write_atomic(&self.status, self.counter.load(Ordering::Relaxed).to_string().as_bytes());
    }
}
