//! Where the collector ran: the runner's main thread (checkpoints, the store's writes, the
//! CPUs' counters) and the instruments' trace readers. On a machine laid out for real-time work
//! (isolcpus, nohz_full) it belongs on the housekeeping CPUs, off the measured ones, as rtla
//! and cyclictest's `--mainaffinity` keep theirs; where it shares a measured CPU, the run says so.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the collector's CPUs were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollectorChoice {
    /// `--main-affinity`.
    Asked,
    /// The CPUs it may use that are online and not measured: the housekeeping CPUs.
    Housekeeping,
    /// Left where the scheduler puts it: every CPU it may use is measured.
    Unpinned,
    /// Left where the scheduler puts it: a measuring thread floats (`-a none`), so no CPU is
    /// free of measuring.
    Floating,
}

/// Where the collector ran, as the kernel held its affinity while the run measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollectorRecord {
    /// The CPUs the collector's threads were allowed on.
    pub cpus: Vec<usize>,
    pub chosen: CollectorChoice,
    /// Measured CPUs among them (the threads' pinned CPUs; none when a thread floats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<usize>,
}

impl CollectorRecord {
    /// The record of a collector allowed on `cpus`, chosen so, beside threads pinned to `measured`.
    pub fn new(cpus: Vec<usize>, chosen: CollectorChoice, measured: &[Option<usize>]) -> CollectorRecord {
        let shared = cpus.iter().copied().filter(|c| measured.contains(&Some(*c))).collect();
        CollectorRecord { cpus, chosen, shared }
    }

    /// Where it ran and why there, in words: "CPU 0 (the online CPUs not measured)".
    pub fn describe(&self) -> String {
        let cpus = crate::units::format_cpu_list(&self.cpus);
        let on = if self.cpus.len() == 1 { format!("CPU {cpus}") } else { format!("CPUs {cpus}") };
        match self.chosen {
            CollectorChoice::Asked => format!("{on} (--main-affinity)"),
            CollectorChoice::Housekeeping => format!("{on} (the online CPUs not measured)"),
            CollectorChoice::Unpinned => format!("unpinned, on {on} (every CPU it may use is measured)"),
            CollectorChoice::Floating => format!("unpinned, on {on} (a measuring thread floats)"),
        }
    }

    /// The run's caveat when the collector shared a measured CPU.
    pub fn warning(&self) -> Option<String> {
        if self.shared.is_empty() {
            return None;
        }
        let shared = crate::units::format_cpu_list(&self.shared);
        let why = match self.chosen {
            CollectorChoice::Asked => "as --main-affinity asked".to_string(),
            _ => "every online CPU is measured; leave one unmeasured, or give --main-affinity".to_string(),
        };
        Some(format!(
            "collector shares measured CPUs {shared} ({why}): its checkpoints, trace readers and store writes \
             run beside the measuring threads"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collector_on_a_measured_cpu_is_a_caveat_one_off_them_is_not() {
        let off = CollectorRecord::new(vec![0], CollectorChoice::Housekeeping, &[Some(1), Some(2)]);
        assert_eq!((off.shared.len(), off.warning()), (0, None));
        assert_eq!(off.describe(), "CPU 0 (the online CPUs not measured)");
        let all = CollectorRecord::new(vec![0, 1], CollectorChoice::Unpinned, &[Some(0), Some(1)]);
        assert_eq!(all.shared, [0, 1]);
        assert!(all.warning().unwrap().starts_with("collector shares measured CPUs 0-1 (every online CPU"));
        let asked = CollectorRecord::new(vec![1, 3], CollectorChoice::Asked, &[Some(1)]);
        assert!(asked.warning().unwrap().contains("CPUs 1 (as --main-affinity asked)"), "{:?}", asked.warning());
        let floating = CollectorRecord::new(vec![0, 1], CollectorChoice::Floating, &[None]);
        assert_eq!(
            (floating.warning(), floating.describe()),
            (None, "unpinned, on CPUs 0-1 (a measuring thread floats)".into())
        );
    }

    #[test]
    fn the_record_is_stored_as_named_fields() {
        let r = CollectorRecord::new(vec![0], CollectorChoice::Asked, &[Some(1)]);
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"cpus":[0],"chosen":"asked"}"#);
    }
}
