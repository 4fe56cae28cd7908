//! The named needs and how each is checked on this machine.

use crate::runs;
use std::path::Path;

/// One thing a test needs.
pub enum Need {
    /// A program on PATH, or an absolute path that must exist.
    Command(String),
    Root,
    /// At least two online CPUs.
    TwoCpus,
    /// tracefs's mount point, /sys/kernel/tracing (rtbench mounts it when it is not).
    Tracefs,
    /// The kernel's timerlat tracer on this (the host's) kernel.
    Timerlat,
    /// No timerlat tracer here: the refusal is what is tested.
    NoTimerlat,
    /// The kernel's BTF, readable: BPF programs with CO-RE field offsets.
    Btf,
    /// A cgroup v1 cpuset hierarchy.
    CpusetV1,
    /// python3 with numpy.
    Numpy,
    /// ansible-core and ansible-lint in the repository's virtual environment (scripts/setup.sh).
    Ansible,
    /// An rtla with timerlat's auto-analysis (6.3+), unpacked by scripts/setup.sh.
    RtlaAnalysis,
    /// A kernel whose preemption model can be switched at run time: PREEMPT_DYNAMIC, and its
    /// debugfs file `sched/preempt` readable (read in a mount namespace of its own, so the check
    /// mounts nothing on the machine).
    PreemptSwitch,
    /// The opposite: the refusal is what is tested.
    NoPreemptSwitch,
    /// A running kernel at least this release (`linux_5_8`).
    Linux(u32, u32),
    /// apt knows Debian's standard and RT kernels (linux-image-amd64, linux-image-rt-amd64).
    Kernels,
    /// apt knows Debian's arm64 RT kernel (dpkg has arm64 as a foreign architecture:
    /// scripts/setup-arm.sh).
    Arm64Kernel,
    /// apt knows Debian's armhf RT kernel (linux-image-rt-armmp; dpkg has armhf).
    ArmhfKernel,
    /// Built to run on its own CPU, not under qemu-user (`RTBENCH_QEMU_USER`, which
    /// scripts/cross.sh sets for the ARM tests): the emulator has no bpf(), a host program
    /// cannot start an ARM one, and page faults are the emulator's own.
    Native,
}

impl Need {
    pub fn named(name: &str) -> Result<Need, String> {
        Ok(match name {
            "root" => Need::Root,
            "two_cpus" => Need::TwoCpus,
            "tracefs" => Need::Tracefs,
            "timerlat" => Need::Timerlat,
            "no_timerlat" => Need::NoTimerlat,
            "btf" => Need::Btf,
            "cpuset_v1" => Need::CpusetV1,
            "numpy" => Need::Numpy,
            "ansible" => Need::Ansible,
            "rtla_analysis" => Need::RtlaAnalysis,
            "kernels" => Need::Kernels,
            "preempt_switch" => Need::PreemptSwitch,
            "no_preempt_switch" => Need::NoPreemptSwitch,
            "native" => Need::Native,
            "arm64_kernel" => Need::Arm64Kernel,
            "armhf_kernel" => Need::ArmhfKernel,
            _ => match name.strip_prefix("linux_").and_then(|v| v.split_once('_')) {
                Some((a, b)) if a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok() => {
                    Need::Linux(a.parse().unwrap(), b.parse().unwrap())
                }
                _ => return Err(format!("needs: no check named `{name}` (a program is written as a string)")),
            },
        })
    }

    /// The name `tests/cannot-here.txt` lists it by.
    pub fn name(&self) -> String {
        match self {
            Need::Command(c) => c.clone(),
            Need::Root => "root".into(),
            Need::TwoCpus => "two_cpus".into(),
            Need::Tracefs => "tracefs".into(),
            Need::Timerlat => "timerlat".into(),
            Need::NoTimerlat => "no_timerlat".into(),
            Need::Btf => "btf".into(),
            Need::CpusetV1 => "cpuset_v1".into(),
            Need::Numpy => "numpy".into(),
            Need::Ansible => "ansible".into(),
            Need::RtlaAnalysis => "rtla_analysis".into(),
            Need::Kernels => "kernels".into(),
            Need::PreemptSwitch => "preempt_switch".into(),
            Need::NoPreemptSwitch => "no_preempt_switch".into(),
            Need::Native => "native".into(),
            Need::Arm64Kernel => "arm64_kernel".into(),
            Need::ArmhfKernel => "armhf_kernel".into(),
            Need::Linux(a, b) => format!("linux_{a}_{b}"),
        }
    }
}

/// Why `need` is not met here, or None when it is. `manifest`: the tested crate's directory.
pub fn missing(need: &Need, manifest: &str) -> Option<String> {
    let repo = Path::new(manifest);
    let met = match need {
        Need::Command(c) if c.starts_with('/') => Path::new(c).exists(),
        Need::Command(c) => on_path(c),
        Need::Root => is_root(),
        Need::TwoCpus => online_cpus() >= 2,
        Need::Tracefs => Path::new("/sys/kernel/tracing").is_dir(),
        Need::Timerlat => has_timerlat(),
        Need::NoTimerlat => !has_timerlat(),
        Need::Btf => std::fs::File::open("/sys/kernel/btf/vmlinux").is_ok(),
        Need::CpusetV1 => Path::new("/sys/fs/cgroup/cpuset/cpuset.cpus").exists(),
        Need::Numpy => runs("python3", &["-c", "import numpy"]),
        Need::Ansible => ["ansible-playbook", "ansible-galaxy", "ansible-lint"]
            .iter()
            .all(|t| repo.join("target/ansible-venv/bin").join(t).exists()),
        Need::RtlaAnalysis => rtla_with_analysis(repo),
        Need::Linux(a, b) => running_release() >= (*a, *b),
        Need::PreemptSwitch => preempt_switches(),
        Need::NoPreemptSwitch => !preempt_switches(),
        Need::Kernels => ["linux-image-amd64", "linux-image-rt-amd64"].iter().all(|m| kernel_package(m)),
        Need::Native => emulator().is_none(),
        Need::Arm64Kernel => kernel_package("linux-image-rt-arm64:arm64"),
        Need::ArmhfKernel => kernel_package("linux-image-rt-armmp:armhf"),
    };
    if met {
        return None;
    }
    Some(match need {
        Need::Command(c) => format!("`{c}` is not installed (scripts/setup.sh installs it)"),
        Need::Root => "needs root".into(),
        Need::TwoCpus => "needs two CPUs".into(),
        Need::Tracefs => "this kernel has no tracefs mount point (/sys/kernel/tracing)".into(),
        Need::Timerlat => "this kernel has no timerlat tracer".into(),
        Need::NoTimerlat => "this kernel has the timerlat tracer: there is no refusal to test".into(),
        Need::Btf => "the kernel's BTF (/sys/kernel/btf/vmlinux) is not readable".into(),
        Need::CpusetV1 => "no cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset".into(),
        Need::Numpy => "python3 with numpy is not installed (scripts/setup.sh installs it)".into(),
        Need::Ansible => {
            "ansible-core and ansible-lint are not in target/ansible-venv (scripts/setup.sh installs them)".into()
        }
        Need::RtlaAnalysis => {
            "no rtla with timerlat auto-analysis (6.3 or later) in target/rtla (scripts/setup.sh unpacks one)".into()
        }
        Need::Linux(a, b) => format!("needs Linux {a}.{b} or later"),
        Need::PreemptSwitch => {
            "the preemption model cannot be switched here (not PREEMPT_DYNAMIC, or debugfs's sched/preempt refused)"
                .into()
        }
        Need::NoPreemptSwitch => "the preemption model can be switched here: there is no refusal to test".into(),
        Need::Kernels => "apt knows no linux-image-amd64 / linux-image-rt-amd64 (apt-get update)".into(),
        Need::Arm64Kernel => "apt knows no linux-image-rt-arm64:arm64 (scripts/setup-arm.sh adds arm64)".into(),
        Need::ArmhfKernel => "apt knows no linux-image-rt-armmp:armhf (scripts/setup-arm.sh adds armhf)".into(),
        Need::Native => format!(
            "built to run under {} (qemu-user), which has no bpf(), cannot start an ARM program from a host one, and faults pages its own way",
            emulator().unwrap_or_default()
        ),
    })
}

/// The emulator the tests are built to run under (scripts/cross.sh), if any.
fn emulator() -> Option<String> {
    std::env::var("RTBENCH_QEMU_USER").ok().filter(|q| !q.is_empty())
}

fn on_path(program: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Read where tracefs is mounted, or through debugfs's older mount point.
fn has_timerlat() -> bool {
    ["/sys/kernel/tracing/available_tracers", "/sys/kernel/debug/tracing/available_tracers"]
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("timerlat")))
}

fn rtla_with_analysis(repo: &Path) -> bool {
    let rtla = repo.join("target/rtla/usr/bin/rtla");
    std::process::Command::new(&rtla).args(["timerlat", "top", "-h"]).output().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).contains("--no-aa") || String::from_utf8_lossy(&o.stderr).contains("--no-aa")
    })
}

/// Whether apt knows the kernel package `meta` depends on.
fn kernel_package(meta: &str) -> bool {
    std::process::Command::new("apt-cache")
        .args(["depends", meta])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Depends: linux-image-"))
}

/// The running kernel's major and minor release.
fn running_release() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit()).map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Whether the kernel is PREEMPT_DYNAMIC and lets root read its model, in a private mount
/// namespace (util-linux `unshare`): the machine's own mounts are left as they are.
fn preempt_switches() -> bool {
    let dynamic = std::fs::read_to_string("/proc/sys/kernel/version")
        .is_ok_and(|v| v.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC"));
    let read = "mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug; cat /sys/kernel/debug/sched/preempt";
    dynamic && is_root() && runs("unshare", &["--mount", "--propagation", "private", "sh", "-c", read])
}
