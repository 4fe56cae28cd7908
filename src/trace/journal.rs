//! What the breach tracer changed, written down before it changes anything, beside the
//! shield's journal: a killed run's instance (and a tracefs mount of ours) is removed by the
//! next rtbench command.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceJournal {
    pub pid: u32,
    pub pid_start: String,
    /// The instance directory.
    pub instance: PathBuf,
    /// tracefs's mount point, when rtbench mounted it.
    pub mounted: Option<PathBuf>,
}

impl TraceJournal {
    /// One per process: several traced runs may go on at once.
    pub fn path_for(pid: u32) -> PathBuf {
        crate::shield::state_dir().join(format!("trace-{pid}.json"))
    }

    pub fn create(&self) -> std::io::Result<PathBuf> {
        let at = Self::path_for(self.pid);
        crate::shield::write_atomically(&at, self)?;
        Ok(at)
    }
}

/// Undoes what tracers whose process is gone left behind; says what it did.
pub fn replay_abandoned() -> Vec<String> {
    let mut said = Vec::new();
    for (path, j) in crate::shield::abandoned("trace-", |j: &TraceJournal| (j.pid, j.pid_start.as_str())) {
        match super::instance::remove(&j.instance) {
            Ok(()) => {
                if let Some(root) = &j.mounted {
                    super::instance::unmount_if_unused(root);
                }
                let _ = std::fs::remove_file(&path);
                said.push(format!(
                    "removed the trace instance {} that rtbench pid {} left when it ended without removing it",
                    j.instance.display(),
                    j.pid
                ));
            }
            Err(e) => said.push(format!(
                "WARNING: the trace instance {} left by rtbench pid {} could not be removed: {e}",
                j.instance.display(),
                j.pid
            )),
        }
    }
    said
}
