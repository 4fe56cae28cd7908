//! IRQ affinity, read and written through /proc/irq.

use std::path::Path;

const PROC_IRQ: &str = "/proc/irq";

pub fn set(irq: u32, list: &str) -> std::io::Result<()> {
    std::fs::write(format!("{PROC_IRQ}/{irq}/smp_affinity_list"), list)
}

/// Where the kernel sends new IRQs: a hex CPU mask.
pub fn default_affinity() -> Option<String> {
    Some(std::fs::read_to_string(Path::new(PROC_IRQ).join("default_smp_affinity")).ok()?.trim().to_string())
}

pub fn set_default(mask: &str) -> std::io::Result<()> {
    std::fs::write(Path::new(PROC_IRQ).join("default_smp_affinity"), mask)
}

const WORKQUEUE_MASK: &str = "/sys/devices/virtual/workqueue/cpumask";

/// The CPUs unbound workqueues (kworker/u*, their rescuers) may run on: a hex mask.
pub fn workqueue_mask() -> Option<String> {
    Some(std::fs::read_to_string(WORKQUEUE_MASK).ok()?.trim().to_string())
}

pub fn set_workqueue_mask(mask: &str) -> std::io::Result<()> {
    std::fs::write(WORKQUEUE_MASK, mask)
}
