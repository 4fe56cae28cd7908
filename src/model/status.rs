//! Where a run is in its life.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// running → complete | interrupted | aborted | failed. Stored and exported by its lowercase name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Being measured now, or its process died and nobody has looked since.
    Running,
    /// Ran to its duration or loop count.
    Complete,
    /// Stopped early by a signal; what it measured until then is kept.
    Interrupted,
    /// Its process ended without finishing (killed, crashed); its last checkpoint is kept.
    Aborted,
    /// Could not go on (an error); its last checkpoint is kept.
    Failed,
}

impl RunStatus {
    pub const ALL: [RunStatus; 5] =
        [RunStatus::Running, RunStatus::Complete, RunStatus::Interrupted, RunStatus::Aborted, RunStatus::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Aborted => "aborted",
            RunStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for st in RunStatus::ALL {
            assert_eq!(RunStatus::parse(st.as_str()), Some(st));
            assert_eq!(serde_json::to_value(st).unwrap(), st.as_str());
        }
        assert_eq!(RunStatus::parse("done"), None);
    }
}
