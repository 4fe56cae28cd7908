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

/// A tracer of an instrument that rides along the breach tracer: a journal of its own, under a
/// kind of its own, so each instrument's instance is put back by its own entry.
macro_rules! traced_kind {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Traced);

        impl Change for $name {
            const KIND: &'static str = $kind;

            fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
                self.0.put_back(owner)
            }
        }
    };
}

traced_kind!(
    /// The split's instance (`--split`).
    SplitTraced,
    "split-trace"
);
traced_kind!(
    /// The noise classification's instance (`--classify`).
    ClassifyTraced,
    "classify-trace"
);
traced_kind!(
    /// The timerlat source's instance.
    TimerlatTraced,
    "timerlat-trace"
);
