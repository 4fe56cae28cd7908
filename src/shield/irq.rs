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

/// `cpus` as the kernel's hex mask: 32-bit groups, most significant first, comma-separated.
pub fn mask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_written_as_the_kernel_reads_them() {
        assert_eq!(mask(&[0]), "00000001");
        assert_eq!(mask(&[0, 1]), "00000003");
        assert_eq!(mask(&[1, 33]), "00000002,00000002");
        assert_eq!(mask(&[]), "00000000");
    }
}
