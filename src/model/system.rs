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
}
