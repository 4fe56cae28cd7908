//! The CPUs: clock source, virtualisation and steal, frequency, idle states, SMT, isolation,
//! NUMA and SMIs.

use std::os::unix::fs::FileExt;

use super::platform::{self, Family};
use super::{cmdline_param, ev, ev_file, finding, fix, read};
use crate::model::{Evidence, Finding, Severity};
use crate::sysinfo::CpuTimes;

pub fn checks(cpus: &[usize]) -> Vec<Finding> {
    vec![clocksource(), virtualization(), cpufreq(cpus), cpuidle(cpus), smt(), isolation(cpus), numa(cpus), smi(cpus)]
}

fn cpu_flags() -> Vec<String> {
    let info = read("/proc/cpuinfo").unwrap_or_default();
    let line = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    line.split_once(':').map_or(vec![], |(_, f)| f.split_whitespace().map(str::to_string).collect())
}

fn clocksource() -> Finding {
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let (e, current) = ev_file(path);
    if platform::family() == Family::Arm {
        return arm_clocksource(e, current);
    }
    let flags = cpu_flags();
    let stable: Vec<&str> =
        ["constant_tsc", "nonstop_tsc", "tsc_reliable"].into_iter().filter(|f| flags.iter().any(|x| x == f)).collect();
    let evidence = vec![
        e,
        ev("/proc/cpuinfo flags", if stable.is_empty() { "no TSC stability flag".into() } else { stable.join(" ") }),
    ];
    let f = match current.as_deref() {
        Some("tsc") => finding("clocksource", Severity::Ok, "tsc: the cheapest clock to read", evidence),
        Some(other) => finding(
            "clocksource",
            Severity::Warn,
            format!(
                "{other}: clock reads cost more than with tsc{}",
                if stable.len() >= 2 { " (the TSC looks stable)" } else { "" }
            ),
            evidence,
        ),
        None => finding("clocksource", Severity::Unknown, "current clocksource unreadable", evidence),
    };
    fix(f, "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource, or boot with clocksource=tsc tsc=reliable when the TSC is stable")
}

/// ARM's cheap clock is the architected timer's counter, which user space reads without a
/// system call (the vDSO), as x86 reads the TSC.
fn arm_clocksource(e: Evidence, current: Option<String>) -> Finding {
    let (available, _) = ev_file("/sys/devices/system/clocksource/clocksource0/available_clocksource");
    let evidence = vec![e, available];
    let f = match current.as_deref() {
        Some("arch_sys_counter") => finding(
            "clocksource",
            Severity::Ok,
            "arch_sys_counter: the architected timer's counter, read without a system call",
            evidence,
        ),
        Some(other) => finding(
            "clocksource",
            Severity::Warn,
            format!("{other}: not the architected timer's counter, the cheapest clock to read"),
            evidence,
        ),
        None => finding("clocksource", Severity::Unknown, "current clocksource unreadable", evidence),
    };
    fix(f, "echo arch_sys_counter > /sys/devices/system/clocksource/clocksource0/current_clocksource")
}

/// Steal ticks since boot, summed over CPUs.
fn steal_since_boot() -> Option<u64> {
    let stat = read("/proc/stat")?;
    crate::sysinfo::cpu_times(&stat).iter().find(|t| t.cpu.is_none()).map(|t| t.get(CpuTimes::STEAL))
}

fn virtualization() -> Finding {
    let (vendor, said) = platform::hypervisor();
    let steal = steal_since_boot();
    let hz = crate::sys::clock_ticks_per_second();
    let mut evidence = vec![said];
    if let Some(s) = steal {
        evidence.push(ev("/proc/stat steal", format!("{s} ticks ({:.1} s) since boot", s as f64 / hz as f64)));
    }
    let f = match (vendor, steal) {
        (None, _) => finding("virtualization", Severity::Ok, "bare metal", evidence),
        (Some(v), Some(s)) if s > 0 => finding(
            "virtualization",
            Severity::Bad,
            format!(
                "virtual machine ({v}); the hypervisor has taken {:.1} s of CPU since boot: spikes may be its, not the kernel's",
                s as f64 / hz as f64
            ),
            evidence,
        ),
        (Some(v), _) => finding(
            "virtualization",
            Severity::Warn,
            format!("virtual machine ({v}); no steal time so far, but the host can take the CPUs"),
            evidence,
        ),
    };
    fix(f, "measure on bare metal, or pin the virtual CPUs to dedicated host cores (no overcommit)")
}

fn cpufreq(cpus: &[usize]) -> Finding {
    let mut evidence = Vec::new();
    let mut not_performance = Vec::new();
    for &c in cpus {
        let path = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor");
        if let Some(g) = read(&path) {
            if g != "performance" {
                not_performance.push(format!("CPU {c}: {g}"));
            }
            evidence.push(ev(&path, g));
        }
    }
    let (boost_ev, boost) = ev_file("/sys/devices/system/cpu/cpufreq/boost");
    if boost.is_some() {
        evidence.push(boost_ev);
    }
    if evidence.is_empty() {
        let e = ev("/sys/devices/system/cpu/cpu0/cpufreq", "absent");
        return finding("cpufreq", Severity::Ok, "no cpufreq driver: the frequency is not scaled here", vec![e]);
    }
    let f = if !not_performance.is_empty() {
        finding(
            "cpufreq",
            Severity::Warn,
            format!("frequency scaled on demand ({})", not_performance.join(", ")),
            evidence,
        )
    } else if boost.as_deref() == Some("1") {
        finding("cpufreq", Severity::Warn, "governor performance, but boost on: the clock changes with load", evidence)
    } else {
        finding("cpufreq", Severity::Ok, "governor performance on every measured CPU", evidence)
    };
    fix(f, "cpupower frequency-set -g performance; echo 0 > /sys/devices/system/cpu/cpufreq/boost")
}

fn cpuidle(cpus: &[usize]) -> Finding {
    let (driver_ev, _) = ev_file("/sys/devices/system/cpu/cpuidle/current_driver");
    let mut evidence = vec![driver_ev];
    let mut deep = Vec::new();
    let cpu = cpus.first().copied().unwrap_or(0);
    for n in 0.. {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{n}");
        let Some(name) = read(&format!("{dir}/name")) else { break };
        let latency: u64 = read(&format!("{dir}/latency")).and_then(|l| l.parse().ok()).unwrap_or(0);
        let disabled = read(&format!("{dir}/disable")).as_deref() == Some("1");
        evidence
            .push(ev(&dir, format!("{name}, exit latency {latency} µs{}", if disabled { ", disabled" } else { "" })));
        if !disabled && latency > 10 {
            deep.push(format!("{name} ({latency} µs)"));
        }
    }
    let f = if evidence.len() == 1 {
        finding("cpuidle", Severity::Ok, "no cpuidle states: the CPU does not sleep deeply", evidence)
    } else if deep.is_empty() {
        finding("cpuidle", Severity::Ok, "no enabled idle state takes more than 10 µs to leave", evidence)
    } else {
        finding(
            "cpuidle",
            Severity::Warn,
            format!(
                "deep idle states enabled: {} (rtbench holds /dev/cpu_dma_latency at 0 while it measures)",
                deep.join(", ")
            ),
            evidence,
        )
    };
    fix(
        f,
        "hold /dev/cpu_dma_latency at 0 (as rtbench does), or boot with processor.max_cstate=1 intel_idle.max_cstate=0",
    )
}

fn smt() -> Finding {
    let (e, active) = ev_file("/sys/devices/system/cpu/smt/active");
    let f = match active.as_deref() {
        Some("1") => {
            finding("smt", Severity::Warn, "SMT on: a sibling thread shares the core of a measured CPU", vec![e])
        }
        Some(_) => finding("smt", Severity::Ok, "SMT off", vec![e]),
        None => finding("smt", Severity::Unknown, "SMT state unreadable", vec![e]),
    };
    fix(f, "boot with nosmt, or echo off > /sys/devices/system/cpu/smt/control")
}

fn isolation(cpus: &[usize]) -> Finding {
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    let mut evidence = Vec::new();
    let mut covered = Vec::new();
    for (param, file) in [
        ("isolcpus", "/sys/devices/system/cpu/isolated"),
        ("nohz_full", "/sys/devices/system/cpu/nohz_full"),
        ("rcu_nocbs", ""),
    ] {
        let given = cmdline_param(&cmdline, param);
        evidence.push(ev("/proc/cmdline", format!("{param}={}", given.unwrap_or("(not given)"))));
        let list = if file.is_empty() { given.map(str::to_string) } else { read(file).filter(|s| !s.is_empty()) };
        let set = list.as_deref().and_then(cpus_of);
        if set.is_some_and(|s| cpus.iter().all(|c| s.contains(c))) {
            covered.push(param);
        }
    }
    let f = match covered.len() {
        3 => finding(
            "isolation",
            Severity::Ok,
            "the measured CPUs are isolated, tickless and free of RCU callbacks",
            evidence,
        ),
        0 => finding("isolation", Severity::Warn, "no isolation: the measured CPUs run everything else too", evidence),
        _ => finding(
            "isolation",
            Severity::Warn,
            format!("the measured CPUs have only {} (of isolcpus, nohz_full, rcu_nocbs)", covered.join(", ")),
            evidence,
        ),
    };
    fix(f, "boot with isolcpus=CPUS nohz_full=CPUS rcu_nocbs=CPUS")
}

/// The CPU list of an isolation parameter, past flags such as `isolcpus=domain,managed_irq,1-3`.
fn cpus_of(list: &str) -> Option<Vec<usize>> {
    let cpus: Vec<&str> = list.split(',').skip_while(|t| !t.starts_with(|c: char| c.is_ascii_digit())).collect();
    crate::sysinfo::parse_cpu_list(&cpus.join(",")).filter(|v| !v.is_empty())
}

fn numa(cpus: &[usize]) -> Finding {
    let (e, online) = ev_file("/sys/devices/system/node/online");
    let nodes = online.as_deref().and_then(crate::sysinfo::parse_cpu_list).unwrap_or_default();
    let node_of = |cpu: usize| {
        nodes
            .iter()
            .copied()
            .find(|n| std::path::Path::new(&format!("/sys/devices/system/node/node{n}/cpu{cpu}")).exists())
    };
    let used: Vec<usize> = {
        let mut v: Vec<usize> = cpus.iter().filter_map(|c| node_of(*c)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let f = if nodes.len() <= 1 {
        finding("numa", Severity::Ok, "one memory node", vec![e])
    } else if used.len() > 1 {
        finding(
            "numa",
            Severity::Warn,
            format!("the measured CPUs span nodes {used:?}: remote memory is slower"),
            vec![e],
        )
    } else {
        finding("numa", Severity::Ok, format!("{} nodes; the measured CPUs are on one", nodes.len()), vec![e])
    };
    fix(f, "measure on the CPUs of one node (-a), with memory bound there (numactl --membind)")
}

/// SMIs counted by MSR 0x34 (Intel), through the msr driver.
fn smi(cpus: &[usize]) -> Finding {
    if platform::family() != Family::X86 {
        let e = ev("processor", std::env::consts::ARCH);
        return finding(
            "smi",
            Severity::Ok,
            "no SMIs: System Management Mode is x86's (time secure firmware takes is still unseen by the kernel; rtla hwlat finds it)",
            vec![e],
        );
    }
    let cpu = cpus.first().copied().unwrap_or(0);
    let path = format!("/dev/cpu/{cpu}/msr");
    let count = std::fs::File::open(&path).and_then(|f| {
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, 0x34)?;
        Ok(u64::from_le_bytes(b) & 0xffff_ffff)
    });
    match count {
        Ok(0) => finding("smi", Severity::Ok, "no SMI since boot", vec![ev(&format!("{path} @0x34"), "0")]),
        Ok(n) => fix(
            finding(
                "smi",
                Severity::Warn,
                format!("{n} SMIs since boot: firmware stops every CPU, invisible to the kernel"),
                vec![ev(&format!("{path} @0x34"), n.to_string())],
            ),
            "disable firmware features that use SMIs (USB legacy, power management) in the BIOS",
        ),
        Err(e) => finding(
            "smi",
            Severity::Unknown,
            "SMI count unreadable (needs root, the msr driver and an Intel CPU)",
            vec![ev(&path, e.to_string())],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_lists_are_read_past_their_flags() {
        assert_eq!(cpus_of("domain,managed_irq,1-3"), Some(vec![1, 2, 3]));
        assert_eq!(cpus_of("2,5"), Some(vec![2, 5]));
        assert_eq!(cpus_of("nohz"), None);
    }
}
