//! What is stored about a run's load: its name when idle or imported, its plan while it runs,
//! and what it did once it stopped.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One generator's progress.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GeneratorReport {
    pub name: String,
    pub ran: bool,
    pub iterations: u64,
    /// What one iteration is.
    pub unit: String,
    /// Which variant ran, when a generator has several (pingflood: icmp or udp).
    pub variant: Option<String>,
}

/// What the system did between two readings of /proc/stat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Activity {
    /// Busy percentage per CPU.
    pub cpu_busy_percent: Vec<f64>,
    pub context_switches_per_s: f64,
    pub interrupts_per_s: f64,
    pub seconds: f64,
}

/// What a load did, stored with the run when it stops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadReport {
    pub profile: String,
    pub generators: Vec<GeneratorReport>,
    /// During the measurement only (not the settling).
    pub activity: Option<Activity>,
    pub cpu_target_percent: Option<f64>,
    /// Absent in reports of `rtbench load`, which does not settle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
}

/// How to shape a system load, as given (`--jobs`, `--kernel-tree`, …), stored with a loaded
/// run so that `rtbench resume` runs the same load again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LoadFlags {
    /// `--jobs`: not given, twice the online CPUs.
    pub jobs: Option<u64>,
    pub kernel_tree: Option<PathBuf>,
    pub fswalk_path: PathBuf,
    pub hackbench_groups: u64,
    pub tmpdir: Option<PathBuf>,
}

impl Default for LoadFlags {
    fn default() -> Self {
        LoadFlags { jobs: None, kernel_tree: None, fswalk_path: "/".into(), hackbench_groups: 30, tmpdir: None }
    }
}

/// A load as planned when its run begins; a run that never ended keeps this.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadPlan {
    pub profile: String,
    /// Generator names.
    pub generators: Vec<String>,
    pub settle_s: f64,
}

/// Just the profile: idle runs (`none`) and imported ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadName {
    #[serde(default = "none")]
    pub profile: String,
}

fn none() -> String {
    "none".into()
}

/// The stored `load` of a run, in the three shapes it takes over the run's life.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LoadRecord {
    Measured(LoadReport),
    Planned(LoadPlan),
    Named(LoadName),
}

impl LoadRecord {
    /// No load.
    pub fn idle() -> LoadRecord {
        LoadRecord::named("none")
    }

    pub fn named(profile: &str) -> LoadRecord {
        LoadRecord::Named(LoadName { profile: profile.to_string() })
    }

    /// The load profile ("none" when idle).
    pub fn profile(&self) -> &str {
        match self {
            LoadRecord::Measured(r) => &r.profile,
            LoadRecord::Planned(p) => &p.profile,
            LoadRecord::Named(n) => &n.profile,
        }
    }

    pub fn is_idle(&self) -> bool {
        self.profile() == "none"
    }

    /// What the load did, once it is known.
    pub fn report(&self) -> Option<&LoadReport> {
        match self {
            LoadRecord::Measured(r) => Some(r),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stored_shape_reads_back_as_itself() {
        let shapes = [
            r#"{"profile":"none"}"#,
            r#"{"profile":"paper","generators":["compile","memcopy"],"settle_s":3.0}"#,
            r#"{"profile":"cpu","generators":[{"name":"cpu","ran":true,"iterations":7,"unit":"spins","variant":null}],"activity":{"cpu_busy_percent":[99.5,100.0],"context_switches_per_s":120.0,"interrupts_per_s":900.0,"seconds":2.0},"cpu_target_percent":95.0,"settle_s":0.5}"#,
        ];
        for (i, text) in shapes.iter().enumerate() {
            let rec: LoadRecord = serde_json::from_str(text).unwrap();
            let kind = match rec {
                LoadRecord::Named(_) => 0,
                LoadRecord::Planned(_) => 1,
                LoadRecord::Measured(_) => 2,
            };
            assert_eq!(kind, i, "{text}");
            assert_eq!(serde_json::to_string(&rec).unwrap(), *text, "stored bytes are kept");
        }
    }
}
