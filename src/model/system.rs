//! The system snapshot stored with every run: what a reader needs to judge its numbers.
//! Every field is optional: an imported run knows only what its file said.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The preemption model, from the most to the least authoritative source.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Preemption {
    /// PREEMPT_RT, PREEMPT_DYNAMIC or PREEMPT, as `uname -v` says.
    pub uname_v: Option<String>,
    /// `/sys/kernel/realtime` is 1.
    pub sys_kernel_realtime: Option<bool>,
    /// The current model of a PREEMPT_DYNAMIC kernel (debugfs).
    pub debug_sched_preempt: Option<String>,
}

impl Preemption {
    /// The model in words, and where it was read.
    pub fn describe(&self) -> String {
        if self.sys_kernel_realtime == Some(true) {
            return "PREEMPT_RT (/sys/kernel/realtime)".into();
        }
        if let Some(s) = &self.debug_sched_preempt {
            return format!("{s} (debugfs)");
        }
        match &self.uname_v {
            Some(s) => format!("{s} (uname -v)"),
            None => "unknown".into(),
        }
    }

    pub fn is_realtime(&self) -> bool {
        self.sys_kernel_realtime == Some(true) || self.uname_v.as_deref() == Some("PREEMPT_RT")
    }
}

/// RT throttling: a FIFO thread that never sleeps is stopped for the rest of each period.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RtThrottling {
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SystemSnapshot {
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    /// The machine's architecture as `uname -m` names it (x86_64, aarch64, armv7l); absent in
    /// runs made before it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    pub preemption: Preemption,
    pub cmdline: Option<String>,
    pub cpu_model: Option<String>,
    pub cpu_mhz: Option<f64>,
    pub cpus_online: Option<String>,
    pub cpus_isolated: Option<String>,
    pub clocksource: Option<String>,
    pub cpufreq_governor: Option<String>,
    pub rt_throttling: RtThrottling,
    /// Whether the run held `/dev/cpu_dma_latency` at 0 (unknown for imports).
    pub cpu_dma_latency_held: Option<bool>,
    /// `rtbench audit` of the measured CPUs when the run began (absent in older runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<Vec<super::Finding>>,
    /// The virtual machine `rtbench kernels` booted the run's kernel in (absent elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmPlacement>,
}

impl SystemSnapshot {
    /// The rule-of-thumb budget (10⁵ CPU cycles), when the CPU clock is known.
    pub fn budget_ns(&self) -> Option<u64> {
        self.cpu_mhz.filter(|m| *m > 0.0).map(|m| (1e8 / m) as u64)
    }
}

/// The warning of every run made on an emulated CPU, wherever the run is shown.
pub const EMULATED_WARNING: &str = "emulated CPU (TCG): these latencies are the emulator's, not the kernel's";

/// Where a run inside a virtual machine ran, as the host that booted it told the guest (on the
/// kernel command line: `rtbench.vm=qemu rtbench.accel=tcg rtbench.vcpus=2 rtbench.host=…`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VmPlacement {
    /// The virtual machine monitor: qemu.
    pub hypervisor: String,
    /// kvm, or tcg (every instruction emulated).
    pub accelerator: String,
    pub vcpus: Option<u32>,
    /// `uname -r` of the host.
    pub host_kernel: Option<String>,
    /// Performance mode (`--host-cpus`): the host CPUs the vCPUs were pinned to, one each
    /// (absent: the host scheduled them as it liked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<String>,
    /// Performance mode: the vCPU threads' SCHED_FIFO priority on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcpu_fifo: Option<u8>,
}

impl VmPlacement {
    /// Reads the placement from a kernel command line; None outside such a guest.
    pub fn from_cmdline(cmdline: &str) -> Option<VmPlacement> {
        let param = |key: &str| {
            let key = format!("rtbench.{key}=");
            cmdline.split_whitespace().find_map(|w| w.strip_prefix(key.as_str())).map(str::to_string)
        };
        Some(VmPlacement {
            hypervisor: param("vm")?,
            accelerator: param("accel").unwrap_or_else(|| "unknown".into()),
            vcpus: param("vcpus").and_then(|n| n.parse().ok()),
            host_kernel: param("host"),
            host_cpus: param("host_cpus"),
            vcpu_fifo: param("vcpu_fifo").and_then(|p| p.parse().ok()),
        })
    }

    /// Under TCG: the numbers are the emulator's.
    pub fn emulated(&self) -> bool {
        self.accelerator == "tcg"
    }

    /// In words: "qemu (tcg), 2 vCPUs, host 6.18.0".
    pub fn describe(&self) -> String {
        let vcpus = self.vcpus.map(|n| format!(", {n} vCPUs")).unwrap_or_default();
        let host = self.host_kernel.as_ref().map(|h| format!(", host {h}")).unwrap_or_default();
        let pinned = match (&self.host_cpus, self.vcpu_fifo) {
            (Some(cpus), Some(fifo)) => format!(", pinned to host CPUs {cpus} at FIFO {fifo}"),
            _ => String::new(),
        };
        format!("{} ({}){vcpus}{pinned}{host}", self.hypervisor, self.accelerator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_reads_where_it_runs_from_its_command_line() {
        let line = "console=ttyS0 rtbench.vm=qemu rtbench.accel=tcg rtbench.vcpus=2 rtbench.host=6.18.0 quiet";
        let vm = VmPlacement::from_cmdline(line).unwrap();
        assert_eq!(vm.describe(), "qemu (tcg), 2 vCPUs, host 6.18.0");
        assert!(vm.emulated());
        assert!(!VmPlacement::from_cmdline("rtbench.vm=qemu rtbench.accel=kvm").unwrap().emulated());
        assert_eq!(VmPlacement::from_cmdline("console=ttyS0 rtbench.accel=tcg"), None, "no rtbench.vm: no guest");
        let pinned = VmPlacement::from_cmdline(&format!("{line} rtbench.host_cpus=2-3 rtbench.vcpu_fifo=1")).unwrap();
        assert_eq!(pinned.describe(), "qemu (tcg), 2 vCPUs, pinned to host CPUs 2-3 at FIFO 1, host 6.18.0");
    }
}
