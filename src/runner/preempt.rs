//! Switching the preemption model of a PREEMPT_DYNAMIC kernel between a study's passes, so one
//! boot compares several "kernels". A [`Held`] change: its journal is written before the first
//! switch, and one `put_back` restores the model it found (and unmounts debugfs if it mounted
//! it), when the switch drops or, after a kill, when the next rtbench command replays it.

use serde::{Deserialize, Serialize};

use crate::restore::{Change, Guard, Held};
use crate::sysinfo::current_preempt_model as current;

const DEBUGFS: &str = "/sys/kernel/debug";
const FILE: &str = "/sys/kernel/debug/sched/preempt";

/// The models a PREEMPT_DYNAMIC kernel may offer.
pub const MODELS: [&str; 4] = ["none", "voluntary", "full", "lazy"];

/// A switched preemption model, held: dropping it puts the model it found back (and unmounts
/// debugfs if it mounted it) through [`Switched::put_back`], as the next command would.
pub struct PreemptSwitch {
    held: Held<Switched>,
}

impl PreemptSwitch {
    /// Gets ready to switch: mounts debugfs when it is not, reads the model in force, writes
    /// the journal. `Err` says why switching cannot be done here; nothing is left changed then.
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
        let held = in_force().and_then(|original| {
            Held::journalled(Switched { original, mounted })
                .map_err(|e| format!("cannot write the preemption switch's journal: {e}"))
        });
        if held.is_err() && mounted {
            let _ = crate::sys::unmount(DEBUGFS);
        }
        Ok(PreemptSwitch { held: held? })
    }

    /// The model that was in force.
    pub fn original(&self) -> &str {
        &self.held.change().original
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

/// The model in force, read from debugfs.
fn in_force() -> Result<String, String> {
    let text = std::fs::read_to_string(FILE).map_err(|e| format!("cannot read {FILE}: {e}"))?;
    current(&text).ok_or_else(|| format!("{FILE} says '{}', no current model", text.trim()))
}

impl Guard for PreemptSwitch {
    fn name(&self) -> &'static str {
        "preemption model"
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
                "could not put the preemption model back to '{}' (switched by rtbench pid {owner})",
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
