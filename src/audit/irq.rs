//! Interrupts: which may land on the measured CPUs, and whether irqbalance moves them.

use super::{ev, finding, fix, read};
use crate::model::{Finding, Severity};

pub fn checks(cpus: &[usize]) -> Vec<Finding> {
    vec![affinity(cpus), irqbalance()]
}

/// An IRQ's name: the last column of its /proc/interrupts row.
fn names() -> Vec<(String, String)> {
    let text = read("/proc/interrupts").unwrap_or_default();
    crate::sysinfo::irq_names(&text).map(|(irq, name)| (irq.to_string(), name)).collect()
}

fn affinity(cpus: &[usize]) -> Finding {
    let names = names();
    let irqs = crate::sysinfo::irq_affinities();
    let mut on_measured = Vec::new();
    let mut evidence = Vec::new();
    for (irq, list) in &irqs {
        let path = format!("/proc/irq/{irq}/smp_affinity_list");
        let Some(set) = crate::sysinfo::parse_cpu_list(list) else { continue };
        if set.iter().any(|c| cpus.contains(c)) {
            let name = names.iter().find(|(n, _)| *n == irq.to_string()).map_or("", |(_, d)| d.as_str());
            on_measured.push(format!("{irq} {name}").trim().to_string());
            evidence.push(ev(&path, list.clone()));
        }
    }
    if irqs.is_empty() {
        return finding("irq-affinity", Severity::Unknown, "/proc/irq unreadable", vec![ev("/proc/irq", "unreadable")]);
    }
    let f = if on_measured.is_empty() {
        finding(
            "irq-affinity",
            Severity::Ok,
            format!("none of {} IRQs may run on the measured CPUs", irqs.len()),
            vec![ev("/proc/irq/*/smp_affinity_list", format!("{} IRQs read", irqs.len()))],
        )
    } else {
        finding(
            "irq-affinity",
            Severity::Warn,
            format!(
                "{} of {} IRQs may run on the measured CPUs: {}",
                on_measured.len(),
                irqs.len(),
                on_measured.join(", ")
            ),
            evidence,
        )
    };
    fix(f, "echo OTHER_CPUS > /proc/irq/N/smp_affinity_list for each, or boot with irqaffinity=OTHER_CPUS")
}

fn irqbalance() -> Finding {
    let running = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())))
                .find_map(|e| {
                    let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                    (comm.trim() == "irqbalance").then(|| e.file_name().to_string_lossy().into_owned())
                })
        })
        .unwrap_or(None);
    let f = match &running {
        Some(pid) => finding(
            "irqbalance",
            Severity::Warn,
            "irqbalance runs: it moves IRQs back onto the measured CPUs",
            vec![ev(&format!("/proc/{pid}/comm"), "irqbalance")],
        ),
        None => {
            finding("irqbalance", Severity::Ok, "irqbalance does not run", vec![ev("/proc/*/comm", "no irqbalance")])
        }
    };
    fix(f, "systemctl stop irqbalance, or IRQBALANCE_BANNED_CPULIST=CPUS")
}
