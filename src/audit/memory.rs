//! Memory: transparent huge pages and swap.

use super::{ev, ev_file, finding, fix, read};
use crate::model::{Finding, Severity};

pub fn checks() -> Vec<Finding> {
    vec![thp(), swap()]
}

/// The bracketed choice of a sysfs setting: "always [madvise] never" → "madvise".
fn chosen(s: &str) -> Option<&str> {
    s.split('[').nth(1)?.split(']').next()
}

fn thp() -> Finding {
    let (e, value) = ev_file("/sys/kernel/mm/transparent_hugepage/enabled");
    let f = match value.as_deref().and_then(chosen) {
        Some("always") => finding(
            "thp",
            Severity::Warn,
            "transparent huge pages always: page faults and khugepaged compaction can stall",
            vec![e],
        ),
        Some(mode) => finding("thp", Severity::Ok, format!("transparent huge pages {mode}"), vec![e]),
        None => finding("thp", Severity::Ok, "no transparent huge pages", vec![e]),
    };
    fix(f, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or boot with transparent_hugepage=madvise")
}

fn swap() -> Finding {
    let swaps = read("/proc/swaps").unwrap_or_default();
    let devices: Vec<&str> = swaps.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    let f = if devices.is_empty() {
        finding("swap", Severity::Ok, "no swap", vec![ev("/proc/swaps", "empty")])
    } else {
        finding(
            "swap",
            Severity::Warn,
            format!(
                "swap on {}: real-time tasks that do not lock their memory can wait for the disk",
                devices.join(", ")
            ),
            vec![ev("/proc/swaps", devices.join(", "))],
        )
    };
    fix(f, "swapoff -a (rtbench locks its own memory)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_choice_is_read() {
        assert_eq!(chosen("always [madvise] never"), Some("madvise"));
        assert_eq!(chosen("[always] madvise never"), Some("always"));
        assert_eq!(chosen("never"), None);
    }
}
