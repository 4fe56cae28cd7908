//! Switching the preemption model of a PREEMPT_DYNAMIC kernel between a study's passes, so one
//! boot compares several "kernels". A guard: the model it found is put back when it drops, and
//! debugfs is unmounted again if it mounted it. A journal written before the first switch lets
//! the next rtbench command do the same when the study was killed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::session::Guard;
use crate::sysinfo::current_preempt_model as current;

const DEBUGFS: &str = "/sys/kernel/debug";
const FILE: &str = "/sys/kernel/debug/sched/preempt";

/// The models a PREEMPT_DYNAMIC kernel may offer.
pub const MODELS: [&str; 4] = ["none", "voluntary", "full", "lazy"];

pub struct PreemptSwitch {
    original: String,
    mounted: bool,
}

impl PreemptSwitch {
    /// Gets ready to switch: mounts debugfs when it is not, reads the model in force. `Err` says
    /// why switching cannot be done here; nothing is left changed then.
    pub fn open() -> Result<PreemptSwitch, String> {
        let version = std::fs::read_to_string("/proc/sys/kernel/version").unwrap_or_default();
        if !version.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC") {
            return Err("the kernel is not PREEMPT_DYNAMIC: its preemption model is fixed at build time".into());
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let mounted = !mounts.lines().any(|l| l.split_whitespace().nth(1) == Some(DEBUGFS));
        if mounted {
            crate::sys::mount_pseudo("debugfs", DEBUGFS).map_err(|e| format!("cannot mount debugfs: {e}"))?;
        }
        // From here on, dropping the switch unmounts what it mounted.
        let mut switch = PreemptSwitch { original: String::new(), mounted };
        let text = std::fs::read_to_string(FILE).map_err(|e| format!("cannot read {FILE}: {e}"))?;
        let original = current(&text).ok_or_else(|| format!("{FILE} says '{}', no current model", text.trim()))?;
        let pid = std::process::id();
        let journal =
            Journal { pid, pid_start: crate::sysinfo::process_start(pid), original: original.clone(), mounted };
        journal.create().map_err(|e| format!("cannot write {}: {e}", Journal::path_for(pid).display()))?;
        switch.original = original;
        Ok(switch)
    }

    /// The model that was in force.
    pub fn original(&self) -> &str {
        &self.original
    }

    /// Switches to `model` and checks the kernel took it.
    pub fn set(&self, model: &str) -> Result<(), String> {
        std::fs::write(FILE, model).map_err(|e| format!("cannot write '{model}' to {FILE}: {e}"))?;
        let now = std::fs::read_to_string(FILE).ok().and_then(|t| current(&t));
        match now.as_deref() {
            Some(m) if m == model => Ok(()),
            other => Err(format!("{FILE} reads '{}' after writing '{model}'", other.unwrap_or("?"))),
        }
    }
}

impl Guard for PreemptSwitch {
    fn name(&self) -> &'static str {
        "preemption model"
    }
}

impl Drop for PreemptSwitch {
    fn drop(&mut self) {
        if !self.original.is_empty() {
            let _ = std::fs::write(FILE, &self.original);
            let _ = std::fs::remove_file(Journal::path_for(std::process::id()));
        }
        if self.mounted {
            let _ = crate::sys::unmount(DEBUGFS);
        }
    }
}

/// The model a switching process found, written before its first switch.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Journal {
    pid: u32,
    pid_start: String,
    original: String,
    /// Whether that process mounted debugfs.
    mounted: bool,
}

impl Journal {
    fn path_for(pid: u32) -> PathBuf {
        crate::shield::state_dir().join(format!("preempt-{pid}.json"))
    }

    fn create(&self) -> std::io::Result<()> {
        crate::shield::write_atomically(&Self::path_for(self.pid), self)
    }
}

/// Puts back the model that switching processes which are gone found; says what it did.
pub fn replay_abandoned() -> Vec<String> {
    let mut said = Vec::new();
    for (path, j) in crate::shield::abandoned("preempt-", |j: &Journal| (j.pid, j.pid_start.as_str())) {
        let now = std::fs::read_to_string(FILE).ok().and_then(|t| current(&t));
        let put_back = now.as_deref() == Some(j.original.as_str()) || std::fs::write(FILE, &j.original).is_ok();
        if !put_back {
            said.push(format!(
                "WARNING: could not put the preemption model back to '{}' after rtbench pid {} ended without it",
                j.original, j.pid
            ));
            continue;
        }
        if j.mounted {
            let _ = crate::sys::unmount(DEBUGFS);
        }
        let _ = std::fs::remove_file(&path);
        if now.as_deref() != Some(j.original.as_str()) {
            said.push(format!(
                "put the preemption model back to '{}' (from '{}'): rtbench pid {} ended without doing it",
                j.original,
                now.unwrap_or_else(|| "?".into()),
                j.pid
            ));
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_model_is_the_one_in_parentheses() {
        assert_eq!(current("none voluntary (full) lazy\n").as_deref(), Some("full"));
        assert_eq!(current("(none) voluntary full").as_deref(), Some("none"));
        assert_eq!(current("none voluntary full"), None);
    }
}
