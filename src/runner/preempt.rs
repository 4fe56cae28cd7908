//! Switching the preemption model of a PREEMPT_DYNAMIC kernel between a study's passes, so one
//! boot compares several "kernels". A guard: the model it found is put back when it drops, and
//! debugfs is unmounted again if it mounted it. A journal written before the first switch lets
//! the next rtbench command do the same when the study was killed.

use serde::{Deserialize, Serialize};

use crate::restore::{Change, Guard, Journal, Written};
use crate::sysinfo::current_preempt_model as current;

const DEBUGFS: &str = "/sys/kernel/debug";
const FILE: &str = "/sys/kernel/debug/sched/preempt";

/// The models a PREEMPT_DYNAMIC kernel may offer.
pub const MODELS: [&str; 4] = ["none", "voluntary", "full", "lazy"];

pub struct PreemptSwitch {
    original: String,
    mounted: bool,
    /// Removed once the model is put back.
    journal: Option<Written>,
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
        let mut switch = PreemptSwitch { original: String::new(), mounted, journal: None };
        let text = std::fs::read_to_string(FILE).map_err(|e| format!("cannot read {FILE}: {e}"))?;
        let original = current(&text).ok_or_else(|| format!("{FILE} says '{}', no current model", text.trim()))?;
        let journal = Journal::mine(Switched { original: original.clone(), mounted }).write();
        switch.journal = Some(journal.map_err(|e| format!("cannot write the preemption switch's journal: {e}"))?);
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
        if !self.original.is_empty() && std::fs::write(FILE, &self.original).is_ok() {
            if let Some(journal) = self.journal.take() {
                journal.remove();
            }
        }
        if self.mounted {
            let _ = crate::sys::unmount(DEBUGFS);
        }
    }
}

/// The model a switching process found, written before its first switch.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Switched {
    original: String,
    /// Whether that process mounted debugfs.
    mounted: bool,
}

impl Change for Switched {
    const KIND: &'static str = "preempt";

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        let now = std::fs::read_to_string(FILE).ok().and_then(|t| current(&t));
        if now.as_deref() != Some(self.original.as_str()) && std::fs::write(FILE, &self.original).is_err() {
            return Err(format!(
                "could not put the preemption model back to '{}' after rtbench pid {owner} ended without it",
                self.original
            ));
        }
        if self.mounted {
            let _ = crate::sys::unmount(DEBUGFS);
        }
        Ok((now.as_deref() != Some(self.original.as_str())).then(|| {
            format!(
                "put the preemption model back to '{}' (from '{}'): rtbench pid {owner} ended without doing it",
                self.original,
                now.as_deref().unwrap_or("?")
            )
        }))
    }
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
