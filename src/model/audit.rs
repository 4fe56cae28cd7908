//! What `rtbench audit` finds: each setting that matters to latency, how it stands, what was
//! read to say so, and how to fix it. Stored with every run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a setting stands, in rising order of concern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    /// Could not be read here (no permission, no such file on this kernel).
    Unknown,
    Warn,
    Bad,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Unknown => "unknown",
            Severity::Warn => "warn",
            Severity::Bad => "bad",
        }
    }
}

/// A file (or other source) and the value read from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    pub source: String,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// Stable name of the check ("rt-throttling").
    pub check: String,
    pub severity: Severity,
    /// What stands, in one sentence.
    pub summary: String,
    pub evidence: Vec<Evidence>,
    /// The command or boot parameter that fixes it, when something should change.
    pub fix: Option<String>,
}
