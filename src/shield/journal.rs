//! What a shield changed, written down before it changes anything, so the next rtbench command
//! can put the system back when the process that made the shield was killed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One shield's changes and the process that made them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub pid: u32,
    /// The process's start time, so a reused pid is not taken for it.
    pub pid_start: String,
    pub cpus: Vec<usize>,
    /// The cpuset hierarchy's root and the file prefix its files carry ("cpuset." or "").
    pub cpuset_root: PathBuf,
    pub prefix: String,
    /// The cpusets made (each removed again, its tasks moved back to the root).
    pub made: Vec<String>,
    /// Each IRQ's affinity list before, to be written back.
    pub irqs: Vec<(u32, String)>,
    /// `/proc/irq/default_smp_affinity` before.
    pub default_affinity: Option<String>,
    /// The CPUs unbound kernel work may use (`/sys/devices/virtual/workqueue/cpumask`) before.
    #[serde(default)]
    pub workqueue_mask: Option<String>,
}

/// Where the journal lives: a runtime directory, emptied at boot just as the changes are undone
/// by a reboot. `RTBENCH_STATE_DIR` moves it.
pub fn path() -> PathBuf {
    state_dir().join("shield.json")
}

/// Writes `value` to `at` as JSON, whole or not at all: a temporary file renamed into place.
pub fn write_atomically<T: Serialize>(at: &Path, value: &T) -> std::io::Result<()> {
    if let Some(dir) = at.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = at.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, at)
}

/// The journals `{prefix}PID.json` in the state directory whose writer is gone, with their
/// paths; `owner` says which process wrote one (pid, start time). Unreadable ones are skipped.
pub fn abandoned<T: serde::de::DeserializeOwned>(prefix: &str, owner: impl Fn(&T) -> (u32, &str)) -> Vec<(PathBuf, T)> {
    let Ok(dir) = std::fs::read_dir(state_dir()) else { return Vec::new() };
    dir.flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(prefix) && n.ends_with(".json")))
        .filter_map(|e| Some((e.path(), serde_json::from_slice::<T>(&std::fs::read(e.path()).ok()?).ok()?)))
        .filter(|(_, j)| {
            let (pid, start) = owner(j);
            !crate::sysinfo::same_process(pid, start)
        })
        .collect()
}

/// Where rtbench writes down the system changes it must undo (the shield's, the breach
/// tracer's): a runtime directory, emptied at boot as the changes are.
pub fn state_dir() -> PathBuf {
    std::env::var_os("RTBENCH_STATE_DIR").map_or_else(|| PathBuf::from("/run/rtbench"), PathBuf::from)
}

impl Journal {
    /// Writes the journal, refusing when one is there already (another shield, alive or not
    /// yet replayed). The write is whole or absent: a temporary file renamed into place.
    pub fn create(&self, at: &Path) -> std::io::Result<()> {
        if let Some(dir) = at.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = at.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?)?;
        // A hard link fails when the target exists: two shields never both win.
        let linked = std::fs::hard_link(&tmp, at);
        let _ = std::fs::remove_file(&tmp);
        linked
    }

    /// The journal at `at`, if any. A file that cannot be read as one is an error: it is kept
    /// for a person to look at rather than taken for "nothing to restore".
    pub fn load(at: &Path) -> std::io::Result<Option<Journal>> {
        match std::fs::read(at) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| std::io::Error::other(format!("{} is not a shield journal: {e}", at.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the process that made it still runs.
    pub fn owner_alive(&self) -> bool {
        crate::sysinfo::same_process(self.pid, &self.pid_start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Journal {
        Journal {
            pid: std::process::id(),
            pid_start: crate::sysinfo::process_start(std::process::id()),
            cpus: vec![1],
            cpuset_root: "/sys/fs/cgroup/cpuset".into(),
            prefix: "cpuset.".into(),
            made: vec!["rtbench-system".into(), "rtbench-shield".into()],
            irqs: vec![(24, "0-1".into())],
            default_affinity: Some("3".into()),
            workqueue_mask: Some("3".into()),
        }
    }

    #[test]
    fn a_journal_is_written_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("state/shield.json");
        assert_eq!(Journal::load(&at).unwrap(), None, "none yet");
        let j = sample();
        j.create(&at).unwrap();
        assert_eq!(Journal::load(&at).unwrap(), Some(j.clone()));
        assert!(j.owner_alive(), "this test process made it");
        assert!(j.create(&at).is_err(), "a second shield is refused while the first one's journal is there");
        std::fs::write(&at, b"{not json").unwrap();
        assert!(Journal::load(&at).is_err(), "a damaged journal is an error, not 'nothing to restore'");
    }

    #[test]
    fn a_dead_or_reused_pid_is_no_owner() {
        let mut j = sample();
        j.pid_start = "0".into();
        assert!(!j.owner_alive(), "same pid, another start time: the pid was reused");
    }
}
