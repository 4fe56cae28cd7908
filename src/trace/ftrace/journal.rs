//! What the breach tracer changed, written down before it changes anything: a killed run's
//! instance (and a tracefs mount of ours) is removed by the next rtbench command.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::restore::Change;

/// One tracer's instance; several traced runs may go on at once, a journal each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Traced {
    /// The instance directory.
    pub instance: PathBuf,
    /// tracefs's mount point, when rtbench mounted it.
    pub mounted: Option<PathBuf>,
}

impl Change for Traced {
    const KIND: &'static str = "trace";

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        super::instance::remove(&self.instance).map_err(|e| {
            format!(
                "the trace instance {} left by rtbench pid {owner} could not be removed: {e}",
                self.instance.display()
            )
        })?;
        if let Some(root) = &self.mounted {
            super::instance::unmount_if_unused(root);
        }
        Ok(Some(format!(
            "removed the trace instance {} that rtbench pid {owner} left when it ended without removing it",
            self.instance.display()
        )))
    }
}

/// The split's instance (`--split`): a journal of its own, beside the breach tracer's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SplitTraced(pub Traced);

impl Change for SplitTraced {
    const KIND: &'static str = "split-trace";

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        self.0.put_back(owner)
    }
}

/// The noise classification's instance (`--classify`): a journal of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClassifyTraced(pub Traced);

impl Change for ClassifyTraced {
    const KIND: &'static str = "classify-trace";

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        self.0.put_back(owner)
    }
}
