//! The system snapshot stored with every run: what a reader needs to judge its numbers.

use crate::model::{Preemption, RtThrottling, SystemSnapshot};

/// A file's contents, trimmed; `None` when it cannot be read.
pub(crate) fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

pub fn hostname() -> String {
    read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

/// The start time (clock ticks since boot) of a process, "" when it does not exist. Together
/// with the pid it identifies a process even after the pid is reused.
pub fn process_start(pid: u32) -> String {
    stat_field(pid, 19).unwrap_or_default()
}

/// Field `n` of `/proc/PID/stat` counted from the one after the command name (0: the state,
/// 2: the process group, 19: the start time).
pub fn stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = read(&format!("/proc/{pid}/stat"))?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace().nth(n).map(str::to_string)
}

/// `cpus` as the kernel's hex mask (IRQ affinities, workqueue and tracing cpumasks): 32-bit
/// groups, most significant first, comma-separated.
pub fn cpu_mask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

/// Whether the process `pid` that started at `start` (see [`process_start`]) still runs: a
/// reused pid is another process. A tick apart is the same one: under qemu-user a process
/// reads a start time of its own that QEMU works out, a tick off the kernel's about half the
/// time (a pid is not handed out again within a tick of its last start).
pub fn same_process(pid: u32, start: &str) -> bool {
    crate::sys::process_exists(pid) && same_start(&process_start(pid), start)
}

fn same_start(now: &str, then: &str) -> bool {
    match (now.parse::<u64>(), then.parse::<u64>()) {
        (Ok(a), Ok(b)) => a.abs_diff(b) <= 1,
        _ => now == then,
    }
}

/// Every IRQ whose affinity list can be read, in number order, with that list.
pub fn irq_affinities() -> Vec<(u32, String)> {
    let mut irqs: Vec<u32> = std::fs::read_dir("/proc/irq")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    irqs.sort_unstable();
    irqs.into_iter()
        .filter_map(|irq| Some((irq, read(&format!("/proc/irq/{irq}/smp_affinity_list"))?.trim().to_string())))
        .collect()
}

/// CPU numbers above this are no CPU (Linux's NR_CPUS tops out at 8192).
const MAX_CPU: usize = 8191;

/// IRQ numbers and names in /proc/interrupts text: `  36:  0  12  PCI-MSIX-0000:00:04.0  0-edge
/// virtio1-req.0` is IRQ 36 "virtio1-req.0" (the handler's name, the last column; a shared line
/// lists several, the last kept). Rows of named vectors (`LOC:`, `RES:`) are not IRQs.
pub fn irq_names(text: &str) -> impl Iterator<Item = (u32, String)> + '_ {
    text.lines().filter_map(|l| {
        let (n, rest) = l.trim_start().split_once(':')?;
        Some((n.parse().ok()?, rest.split_whitespace().last().unwrap_or("").to_string()))
    })
}

/// Parses a CPU list such as "0-3,6,8-9". Numbers past any kernel's CPUs are no list: a range
/// to a trillion must not allocate a trillion entries (found by fuzzing). The inverse of
/// [`crate::units::format_cpu_list`].
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let cpu = |x: &str| x.trim().parse::<usize>().ok().filter(|c| *c <= MAX_CPU);
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (cpu(a)?, cpu(b)?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(cpu(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// One `cpu` line of /proc/stat: which CPU (`None` for the sum over all) and its times in
/// clock ticks: user nice system idle iowait irq softirq steal …
pub struct CpuTimes {
    pub cpu: Option<u32>,
    pub ticks: Vec<u64>,
}

impl CpuTimes {
    pub const IDLE: usize = 3;
    pub const IOWAIT: usize = 4;
    pub const IRQ: usize = 5;
    pub const SOFTIRQ: usize = 6;
    pub const STEAL: usize = 7;

    /// One of the times, 0 where the kernel does not report it.
    pub fn get(&self, i: usize) -> u64 {
        self.ticks.get(i).copied().unwrap_or(0)
    }
}

/// The `cpu` lines of a /proc/stat text.
pub fn cpu_times(stat: &str) -> Vec<CpuTimes> {
    stat.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let name = f.next()?.strip_prefix("cpu")?;
            let cpu = if name.is_empty() { None } else { Some(name.parse().ok()?) };
            Some(CpuTimes { cpu, ticks: f.map(|x| x.parse().unwrap_or(0)).collect() })
        })
        .collect()
}

/// The model a PREEMPT_DYNAMIC kernel runs now, from debugfs's "none voluntary (full) lazy".
pub fn current_preempt_model(text: &str) -> Option<String> {
    Some(text.split('(').nth(1)?.split(')').next()?.trim().to_string())
}

/// CPUs that are online now.
pub fn online_cpus() -> Vec<usize> {
    read("/sys/devices/system/cpu/online")
        .and_then(|s| parse_cpu_list(&s))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect())
}

/// CPUs the kernel could ever bring online (`/sys/devices/system/cpu/possible`): what a mask
/// or per-CPU table is sized by, since a CPU hot-plugged later is numbered among them. The
/// online ones where the file cannot be read.
pub fn possible_cpus() -> Vec<usize> {
    read("/sys/devices/system/cpu/possible")
        .and_then(|s| parse_cpu_list(&s))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(online_cpus)
}

/// How many CPU numbers the kernel uses (its `nr_cpu_ids`): one past the highest possible CPU.
pub fn cpu_ids() -> usize {
    possible_cpus().last().map_or(1, |c| c + 1)
}

/// The preemption model, from the most to the least authoritative source.
fn preemption_model(version: &str) -> Preemption {
    Preemption {
        uname_v: ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT"]
            .iter()
            .find(|k| version.split_whitespace().any(|w| w == **k))
            .map(|s| s.to_string()),
        sys_kernel_realtime: read("/sys/kernel/realtime").map(|s| s == "1"),
        debug_sched_preempt: read("/sys/kernel/debug/sched/preempt"),
    }
}

fn cpu_model() -> (Option<String>, Option<f64>) {
    let info = read("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    (field("model name"), field("cpu MHz").and_then(|m| m.parse().ok()))
}

/// RT throttling as the kernel has it now.
pub fn rt_throttling() -> RtThrottling {
    let number = |path: &str| read(path).and_then(|s| s.parse::<i64>().ok());
    RtThrottling {
        sched_rt_runtime_us: number("/proc/sys/kernel/sched_rt_runtime_us"),
        sched_rt_period_us: number("/proc/sys/kernel/sched_rt_period_us"),
    }
}

/// Everything the report shows about the machine a run is made on. The runner adds whether
/// it held `/dev/cpu_dma_latency`.
pub fn snapshot() -> SystemSnapshot {
    let version = read("/proc/sys/kernel/version").unwrap_or_default();
    let (cpu_model, cpu_mhz) = cpu_model();
    let cmdline = read("/proc/cmdline");
    SystemSnapshot {
        vm: cmdline.as_deref().and_then(crate::model::VmPlacement::from_cmdline),
        hostname: Some(hostname()),
        kernel_release: read("/proc/sys/kernel/osrelease"),
        arch: Some(arch()),
        preemption: preemption_model(&version),
        kernel_version: Some(version),
        cmdline,
        cpu_model,
        cpu_mhz,
        cpus_online: read("/sys/devices/system/cpu/online"),
        cpus_isolated: read("/sys/devices/system/cpu/isolated"),
        clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        cpufreq_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        rt_throttling: rt_throttling(),
        cpu_dma_latency_held: None,
        audit: None,
    }
}

/// The machine's architecture as `uname -m` names it: the kernel's `arch` sysctl where it has
/// one, else the one rtbench was built for (which the kernel runs, as it runs rtbench).
pub fn arch() -> String {
    read("/proc/sys/kernel/arch").unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Is `program` on PATH?
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// `uname -r`, the default label.
pub fn kernel_release() -> String {
    read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::format_cpu_list;

    #[test]
    fn a_start_time_a_tick_off_is_the_same_process_and_two_are_not() {
        assert!(same_start("4393739", "4393738") && same_start("4393738", "4393739"), "qemu-user's own");
        assert!(!same_start("4393740", "4393738"), "a pid handed out again");
        assert!(!same_start("", "4393738") && same_start("", ""));
        assert!(same_process(std::process::id(), &process_start(std::process::id())));
    }

    #[test]
    fn masks_are_written_as_the_kernel_reads_them() {
        assert_eq!(cpu_mask(&[0]), "00000001");
        assert_eq!(cpu_mask(&[0, 1]), "00000003");
        assert_eq!(cpu_mask(&[1, 33]), "00000002,00000002");
        assert_eq!(cpu_mask(&[]), "00000000");
    }

    #[test]
    fn cpu_lists_written_read_back() {
        for list in ["0", "0-1", "0-3,6", "1,3,5", "0-2,4-7,9"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(list).unwrap()), list);
        }
        assert_eq!(format_cpu_list(&[3, 1, 2, 2]), "1-3");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(parse_cpu_list("2-3011112111133,3"), None, "no CPU is numbered that high");
        assert_eq!(parse_cpu_list("8191").map(|v| v.len()), Some(1));
    }

    /// Many-CPU servers (issue 38): lists, kernel masks and the machine's own size past 64.
    #[test]
    fn lists_and_masks_past_64_cpus_are_whole() {
        let cpus = parse_cpu_list("0-3,64-127,200").unwrap();
        assert_eq!((cpus.len(), cpus[4], cpus.last()), (4 + 64 + 1, 64, Some(&200)));
        assert_eq!(format_cpu_list(&cpus), "0-3,64-127,200");
        // 200 is bit 8 of the seventh 32-bit group; 64-127 fill groups 2 and 3.
        let mask = cpu_mask(&cpus);
        let groups: Vec<&str> = mask.split(',').collect();
        assert_eq!(groups.len(), 7, "{mask}");
        assert_eq!(groups[0], "00000100");
        assert_eq!(&groups[3..], ["ffffffff", "ffffffff", "00000000", "0000000f"]);
        let possible = possible_cpus();
        assert!(online_cpus().iter().all(|c| possible.contains(c)), "online CPUs are possible ones");
        assert_eq!(cpu_ids(), possible.last().unwrap() + 1);
    }

    #[test]
    fn own_process_start_is_known() {
        assert!(!process_start(std::process::id()).is_empty());
    }
}
