//! A guest's processes: virtme-ng, and the QEMU it starts, lead their own process group, so one
//! signal stops them all and a Ctrl-C at the terminal reaches only rtbench. The group is a
//! [`Held`] change, in the restore layer's journal while it runs: one `put_back` stops it when
//! it ends, and when a killed rtbench left it, the next rtbench command.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::restore::{Change, Held};

/// How often a wait looks at the child, its marker and the clock.
const TICK: Duration = Duration::from_millis(200);

/// A running process group, held: stopped (SIGKILL to the whole group) through
/// [`Guest::put_back`] when it stops or drops, as the next command stops a killed rtbench's.
pub struct Group {
    child: Child,
    /// None once stopped.
    held: Option<Held<Guest>>,
}

/// How a [`Group::wait`] ended.
#[derive(Debug, PartialEq)]
pub enum Waited {
    Exited(ExitStatus),
    /// What was waited for came.
    Ready,
    TimedOut,
    /// SIGINT, SIGTERM or SIGHUP came (it is blocked in rtbench while guests run).
    Signal(i32),
}

impl Group {
    /// Starts `cmd` as the leader of a new process group, its journal written: a replay stops
    /// the group and removes `scratch`, the temporary directory of its files.
    pub fn spawn(cmd: &mut Command, scratch: &Path) -> Result<Group> {
        // No death signal: QEMU, two processes below the leader, would not get it; the
        // journal stops the whole group instead.
        crate::sys::own_child(cmd, 0, Some(0), 0);
        let child = cmd.spawn().with_context(|| format!("could not start {:?}", cmd.get_program()))?;
        let guest = Guest { pgid: child.id(), scratch: Some(scratch.to_path_buf()) };
        let held = Held::journalled(guest.clone()).unwrap_or_else(|e| {
            eprintln!("rtbench: WARNING: guest not journaled ({e})");
            Held::unjournalled(guest)
        });
        Ok(Group { child, held: Some(held) })
    }

    /// Waits until the group's leader exits, `ready()` holds, `deadline` passes or a stop
    /// signal comes, whichever is first.
    pub fn wait(&mut self, ready: impl Fn() -> bool, deadline: Option<Instant>) -> Result<Waited> {
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Waited::Exited(status));
            }
            if ready() {
                return Ok(Waited::Ready);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Waited::TimedOut);
            }
            if let Some(sig) = crate::sys::wait_stop_signal(TICK) {
                return Ok(Waited::Signal(sig));
            }
        }
    }

    /// The group's id (its leader's pid).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Stops every process of the group and reaps the leader.
    pub fn stop(&mut self) {
        drop(self.held.take());
        let _ = self.child.wait();
    }
}

impl Drop for Group {
    /// The group is stopped by its holder; this only reaps the leader, which is no system
    /// change but a zombie.
    fn drop(&mut self) {
        self.stop();
    }
}

/// A guest's process group, in the journal while it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guest {
    pub pgid: u32,
    /// The temporary directory of its files (console, share, script).
    #[serde(default)]
    pub scratch: Option<PathBuf>,
}

impl Change for Guest {
    const KIND: &'static str = "guest";

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        // A live owner's scratch directory is its own, still in use by its other guests (and
        // removed by it at its end); a gone one's is left to us.
        if let Some(dir) = self.scratch.as_ref().filter(|_| owner != std::process::id()) {
            let _ = std::fs::remove_dir_all(dir);
        }
        // A group id is not handed out again while a process is in the group: whatever is
        // still in it was started for the guest.
        let members = members(self.pgid);
        if members.is_empty() {
            return Ok(None);
        }
        crate::sys::send_signal(-(self.pgid as i32), libc::SIGKILL)
            .map_err(|e| format!("cannot stop the guest processes {members:?} rtbench {owner} left: {e}"))?;
        Ok(Some(format!(
            "stopped the {} guest process(es) (QEMU) a killed rtbench (pid {owner}) left running",
            members.len()
        )))
    }
}

/// The processes of group `pgid`.
pub fn members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| crate::sysinfo::stat_field(pid, 2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_stopped_whole_with_its_grandchildren() {
        crate::sys::block_stop_signals().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 60 & sleep 60 & wait"]);
        let mut group = Group::spawn(&mut cmd, Path::new("/nonexistent")).unwrap();
        let pgid = group.child.id();
        let started = Instant::now();
        let waited = group.wait(|| members(pgid).len() >= 3, Some(Instant::now() + Duration::from_secs(10))).unwrap();
        assert_eq!(waited, Waited::Ready, "the shell and its two sleeps are one group");
        let short = group.wait(|| false, Some(Instant::now() + Duration::from_millis(300))).unwrap();
        assert_eq!(short, Waited::TimedOut);
        drop(group);
        // The killed grandchildren are reaped by init; wait for them to be gone.
        while !members(pgid).is_empty() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(members(pgid).is_empty(), "nothing of the group is left");
    }

    #[test]
    fn a_dead_owners_guest_is_stopped_by_the_replay() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 60 & wait"]);
        crate::sys::own_child(&mut cmd, 0, Some(0), 0);
        let mut leader = cmd.spawn().unwrap();
        let pgid = leader.id();
        while members(pgid).len() < 2 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let scratch = tempfile::tempdir().unwrap().keep();
        std::fs::write(scratch.join("console.log"), "booting").unwrap();
        let said = Guest { pgid, scratch: Some(scratch.clone()) }.put_back(1).unwrap().unwrap();
        assert!(said.starts_with("stopped the 2 guest process(es)"), "{said}");
        assert!(!scratch.exists(), "its temporary files went with it");
        let _ = leader.wait();
        let gone = Guest { pgid: u32::MAX - 1, scratch: None };
        assert_eq!(gone.put_back(1), Ok(None), "an empty group is nothing to do");
    }
}
