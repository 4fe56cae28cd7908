//! The load supervisor process: starts one worker per generator, and on SIGTERM, SIGINT, SIGHUP
//! or its parent's death kills them all (process group and cgroup) and removes the temporary
//! directory. It exists so that nothing survives rtbench, even a SIGKILL of it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::LoadSpec;
use crate::sys;

/// Body of `rtbench __load-supervisor`.
pub fn run(dir: &Path, spec: &LoadSpec, deadline_s: u64) -> Result<()> {
    sys::block_stop_signals()?;
    // Orphans (a compiler whose make was killed) come to us, so none outlives the load.
    sys::become_subreaper()?;
    let parent = sys::parent_pid();
    let exe = std::env::current_exe().context("cannot find rtbench's own executable")?;
    std::fs::create_dir_all(dir.join("status"))?;
    let cgroup = make_cgroup();
    let mut group: Option<u32> = None;
    let mut children = Vec::new();
    for (i, g) in spec.generators.iter().enumerate() {
        let info = super::info(&g.name).context("unknown generator")?;
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("__load-worker")
            .arg(dir)
            .arg(i.to_string())
            .arg(deadline_s.to_string())
            .arg(serde_json::to_string(spec)?)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        sys::own_child(&mut cmd, libc::SIGKILL, Some(group.unwrap_or(0)), info.nice);
        let child = cmd.spawn().with_context(|| format!("could not start generator {}", g.name))?;
        group.get_or_insert(child.id());
        if let Some(cg) = &cgroup {
            let _ = std::fs::write(cg.join("cgroup.procs"), child.id().to_string());
        }
        children.push(child);
    }
    let deadline = (deadline_s > 0).then(|| Instant::now() + Duration::from_secs(deadline_s));
    loop {
        if sys::wait_stop_signal(Duration::from_millis(200)).is_some() {
            break;
        }
        if sys::parent_pid() != parent || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    cleanup(group, cgroup.as_deref(), &mut children, dir);
    Ok(())
}

fn cleanup(group: Option<u32>, cgroup: Option<&Path>, children: &mut [std::process::Child], dir: &Path) {
    if let Some(cg) = cgroup {
        let _ = std::fs::write(cg.join("cgroup.kill"), "1");
    }
    if let Some(g) = group {
        let _ = sys::send_signal(-(g as i32), libc::SIGKILL);
    }
    for c in children.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
    // Reap every adopted descendant; bounded, in case one is stuck in the kernel.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        sys::reap_children();
        if !has_children() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Some(cg) = cgroup {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if std::fs::read_to_string(cg.join("cgroup.procs")).map(|s| s.trim().is_empty()).unwrap_or(true) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir(cg);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Whether any process still has us as its parent.
fn has_children() -> bool {
    let me = std::process::id().to_string();
    std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")).map(|s| !s.trim().is_empty()).unwrap_or(false)
}

/// A cgroup v2 for the load, if the machine has a writable cgroup2 mount.
fn make_cgroup() -> Option<PathBuf> {
    let cg = cgroup_path(std::process::id())?;
    std::fs::create_dir(&cg).ok()?;
    cg.join("cgroup.kill").exists().then_some(cg.clone()).or_else(|| {
        let _ = std::fs::remove_dir(&cg);
        None
    })
}

/// Where the load cgroup of supervisor `pid` is made: beside the processes of the cgroup this
/// process is in (a supervisor is in its parent's).
fn cgroup_path(pid: u32) -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let root = mounts.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (post.split_whitespace().next() == Some("cgroup2")).then(|| pre.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim_start_matches('/');
    Some(root.join(rel).join(format!("rtbench-load-{pid}")))
}

/// For the parent of a supervisor it had to kill before it cleaned up: what is left in its
/// cgroup is killed and the cgroup removed, waiting for it no more than a moment.
pub fn kill_cgroup(pid: u32) {
    let Some(cg) = cgroup_path(pid).filter(|cg| cg.is_dir()) else { return };
    let _ = std::fs::write(cg.join("cgroup.kill"), "1");
    let until = Instant::now() + Duration::from_millis(200);
    while std::fs::remove_dir(&cg).is_err() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}
