//! What a shield changed, written down before it changes anything (one shield at a time on a
//! machine), so the next rtbench command can lower a shield whose process was killed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::restore::Change;
use crate::units::format_cpu_list;

/// One shield's changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shielded {
    pub cpus: Vec<usize>,
    /// The cpuset hierarchy's root and the file prefix its files carry ("cpuset." or "").
    pub cpuset_root: PathBuf,
    pub prefix: String,
    /// The cpusets made (each removed again, its tasks moved back to the root).
    pub made: Vec<String>,
    /// Each IRQ's affinity list before, to be written back.
    pub irqs: Vec<(u32, String)>,
    /// `/proc/irq/default_smp_affinity` before.
    pub default_affinity: Option<String>,
    /// The CPUs unbound kernel work may use (`/sys/devices/virtual/workqueue/cpumask`) before.
    #[serde(default)]
    pub workqueue_mask: Option<String>,
}

impl Change for Shielded {
    const KIND: &'static str = "shield";
    const ONE_AT_A_TIME: bool = true;

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        let problems = super::lower(self);
        let cpus = format_cpu_list(&self.cpus);
        if problems.is_empty() {
            Ok(Some(format!(
                "put back the shield of CPUs {cpus} that rtbench pid {owner} left when it ended without lowering it"
            )))
        } else {
            Err(format!(
                "the shield of CPUs {cpus} raised by rtbench pid {owner} is not fully put back: {}",
                problems.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::restore::Journal;

    #[test]
    fn a_journal_written_by_an_older_rtbench_reads_as_the_same_change() {
        // The layout every rtbench has written: owner and fields side by side, in shield.json.
        let old = r#"{"pid": 42, "pid_start": "123", "cpus": [1], "cpuset_root": "/sys/fs/cgroup/cpuset",
            "prefix": "cpuset.", "made": ["rtbench-system", "rtbench-shield"], "irqs": [[24, "0-1"]],
            "default_affinity": "3"}"#;
        let j: Journal<Shielded> = serde_json::from_str(old).unwrap();
        assert_eq!((j.pid, j.pid_start.as_str()), (42, "123"));
        assert_eq!(j.change.irqs, [(24, "0-1".to_string())]);
        assert_eq!(j.change.workqueue_mask, None, "older journals had no workqueue mask");
        assert_eq!(<Shielded as Change>::KIND, "shield");
    }
}
