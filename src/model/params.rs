//! How a run was made: the settings every probe shares, plus the probe's own part
//! ([`ProbeParams`]), both typed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ProbeParams;

/// Scheduling policy of the measuring threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    RoundRobin,
    Other,
    /// SCHED_DEADLINE, which a probe puts its own threads under (`deadline`); never asked of
    /// the runner.
    Deadline,
}

impl Policy {
    /// The policy's name as stored and shown ("fifo").
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::RoundRobin => "roundrobin",
            Policy::Other => "other",
            Policy::Deadline => "deadline",
        }
    }

    /// `fifo/95`, or `other`: cyclictest's `P:` field.
    pub fn shown(self, priority: i32) -> String {
        match self {
            Policy::Other | Policy::Deadline => self.name().to_string(),
            rt => format!("{}/{priority}", rt.name()),
        }
    }
}

/// How one measuring thread ran, as the kernel held it once the thread had set itself up: a
/// thread refused its real-time policy ran at SCHED_OTHER whatever was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadRan {
    pub thread: u32,
    pub policy: Policy,
    /// 0 for SCHED_OTHER.
    pub priority: i32,
    /// How late the kernel could fire the thread's timers on purpose: 1 ns when rtbench could
    /// set it (the default, 50 µs, matters at SCHED_OTHER). Absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_ns: Option<u64>,
}

/// A privilege a run asked for and did not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lacked {
    /// The real-time policy: the threads ran at SCHED_OTHER.
    RealTimePolicy,
    /// Locked memory.
    MemoryLock,
    /// `/dev/cpu_dma_latency`: deep CPU idle states stayed allowed.
    CpuDmaLatency,
}

impl Lacked {
    /// In a word, for a table's cell.
    pub fn short(self) -> &'static str {
        match self {
            Lacked::RealTimePolicy => "rt policy",
            Lacked::MemoryLock => "mlock",
            Lacked::CpuDmaLatency => "cpu_dma_latency",
        }
    }
}

/// The settings of a run rtbench measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MeasuredParams {
    pub threads: usize,
    /// The CPU each thread was pinned to.
    pub cpus: Vec<Option<usize>>,
    /// What was asked for; `ran` says what each thread had.
    pub policy: Policy,
    pub priority: i32,
    pub mlock: bool,
    pub loops: Option<u64>,
    pub duration_s: Option<f64>,
    pub envelope_interval_ns: u64,
    pub samples_file: Option<String>,
    /// How each thread that measured ran, stored at the run's end (empty in runs stored before
    /// rtbench recorded it, and in runs that failed before their end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran: Vec<ThreadRan>,
    /// What the run asked for and could not have (empty in runs stored before rtbench said).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacked: Vec<Lacked>,
    /// The CPUs shielded from the rest of the system for the run, and how completely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shield: Option<ShieldRecord>,
    /// Where the collector (the runner's main thread, the trace readers, the store's writes)
    /// ran (absent in runs stored before rtbench recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector: Option<super::CollectorRecord>,
    /// `--breach`: the threshold, and what tracing caught.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breach: Option<BreachRecord>,
    /// `--split`: whether each timer sample was split into its IRQ and scheduling parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitRecord>,
    /// `noise --classify`: every gap by what ran in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classify: Option<super::ClassifyRecord>,
    /// The records of the other instruments, by name (`model::Sections`): a new instrument's
    /// record is stored here without a field of its own.
    #[serde(default, skip_serializing_if = "super::Sections::is_empty")]
    pub instruments: super::Sections,
    /// The load's flags as given, in a loaded run (absent in idle runs, and in runs stored
    /// before rtbench kept them: those resume with the defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_flags: Option<super::LoadFlags>,
    /// The probe's own parameters and what it learnt while running, stored flat beside these.
    #[serde(flatten)]
    pub probe: ProbeParams,
}

impl MeasuredParams {
    /// The settings of a one-thread run rtbench writes whole rather than measures through the
    /// runner (a sysbench operation, a thread `watch` followed): its CPU, how it ran and its
    /// probe's part; no instrument, no load flags, intervals of a second.
    pub fn one_thread(cpu: Option<usize>, policy: Policy, priority: i32, probe: ProbeParams) -> MeasuredParams {
        MeasuredParams {
            threads: 1,
            cpus: vec![cpu],
            policy,
            priority,
            mlock: false,
            loops: None,
            duration_s: None,
            envelope_interval_ns: 1_000_000_000,
            samples_file: None,
            ran: Vec::new(),
            lacked: Vec::new(),
            shield: None,
            collector: None,
            breach: None,
            split: None,
            classify: None,
            instruments: Default::default(),
            load_flags: None,
            probe,
        }
    }
}

/// What `--shield` did: the CPUs, what stayed on them and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShieldRecord {
    pub cpus: Vec<usize>,
    /// Per-CPU kernel threads of the shielded CPUs: they stay there on any kernel.
    pub bound_kernel_threads: usize,
    /// Other tasks that may run on the shielded CPUs and refused to leave (name and id).
    pub stuck: Vec<String>,
    pub irqs_moved: usize,
    /// IRQs that refused another affinity.
    pub irqs_refused: Vec<u32>,
}

impl ShieldRecord {
    /// The run's warning when the shield is not complete.
    pub fn warning(&self) -> Option<String> {
        let cpus = crate::units::format_cpu_list(&self.cpus);
        let mut what = Vec::new();
        if !self.stuck.is_empty() {
            let more = self.stuck.len().saturating_sub(5);
            let names = self.stuck.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            what.push(format!("{} tasks could not leave: {names}{more}", self.stuck.len()));
        }
        if !self.irqs_refused.is_empty() {
            let irqs: Vec<String> = self.irqs_refused.iter().map(|n| n.to_string()).collect();
            what.push(format!("IRQs that refused another affinity: {}", irqs.join(", ")));
        }
        (!what.is_empty()).then(|| format!("the shield of CPUs {cpus} is not complete; {}", what.join("; ")))
    }
}

/// What `--breach` asked for and what came of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreachRecord {
    pub threshold_ns: u64,
    /// The most windows stored.
    pub max: u32,
    /// Breaches whose window was stored.
    pub traced: u32,
    /// Breaches seen while a window was being taken, or after the last one allowed.
    pub untraced: u64,
    /// Events this kernel does not have (the attribution does without them).
    pub events_missing: Vec<String>,
    /// Why the run went untraced, when it did.
    pub skipped: Option<String>,
}

/// What `--split` came to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SplitRecord {
    /// Events the kernel dropped from the split's trace buffer (their samples are unmatched).
    pub lost_events: u64,
    /// Why the run was not split, when it was not.
    pub skipped: Option<String>,
    /// Where the expiries came from: BPF programs on the timer tracepoints, or an ftrace
    /// instance (and why BPF could not load). Runs made before BPF was used do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// How the BPF program's records reached the reader: `ringbuf` (shared memory, no system
    /// call a record) or `queue` (a system call a record, kernels before 5.8). None from ftrace
    /// and in runs made before ring buffers were used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Records the BPF program handed to the reader, beside the `lost_events` that did not fit:
    /// what the reader took in (none from ftrace, nor in runs made before they were counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    /// How the expiries were taken in: `per-sample` (a record each, paired with its sample) or
    /// `aggregate` (histograms in the kernel, a record only for an expiry over their bound).
    /// None from ftrace and in runs made before the mode was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Why that mode: the sample rate against the collector's budget, or that it was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_reason: Option<String>,
    /// Samples whose IRQ latency was counted in the kernel's histograms, not paired one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated: Option<u64>,
    /// Timer expiries the kernel did not run the BPF program for, the program being already
    /// running on that CPU: a timer of the interrupt expiring while a softirq's timer ran it
    /// (rare; a virtual CPU descheduled inside the program makes it likelier). Any of them can
    /// be a sample's, whose sample is then unmatched. None from ftrace, from kernels before
    /// 5.12, and in runs made before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed: Option<u64>,
}

/// A run made by another tool and imported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImportedParams {
    pub imported_from: String,
    pub format: String,
    /// rtla timerlat's auto-analysis of the activation that stopped the run (`-a`), when the
    /// file has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timerlat_analysis: Option<super::TimerlatAnalysis>,
    /// Which of its probe's measurements the file's are, where the probe makes several (an
    /// rt-tests IPC tool's way: `mutex`, `signal`, `sem`, `mq`), as rtbench's own runs say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// What a tool that keeps no distribution said (rt-tests' ptsematest, cyclicdeadline,
    /// pi_stress, rt-migrate-test…): its own verdict and counts; the run's statistics are its
    /// min, average and max, with no percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ToolSummary>,
}

/// A tool's summary of its run, as its JSON file gives it (rt-tests' `--json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSummary {
    /// The tool ("ptsematest") and its version ("2.40").
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The tool's exit status: 0 when it passed its own test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_code: Option<i64>,
    /// pi_stress's inversions (it measures no latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inversions: Option<u64>,
}

/// The stored `params` of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
// One per run, read and written at its start and end: size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum RunParams {
    Measured(MeasuredParams),
    Imported(ImportedParams),
    /// Whatever a row holds that is neither (written by hand or by a newer rtbench): kept as is.
    Unknown(Value),
}

impl RunParams {
    /// Which of its probe's measurements the run made, where the probe makes several.
    pub fn variant(&self) -> Option<&str> {
        match self {
            RunParams::Measured(m) => m.probe.variant(),
            RunParams::Imported(i) => i.variant.as_deref(),
            RunParams::Unknown(_) => None,
        }
    }

    pub fn measured(&self) -> Option<&MeasuredParams> {
        match self {
            RunParams::Measured(m) => Some(m),
            _ => None,
        }
    }

    /// How long the run was asked to last; `None` for a loop count or an import.
    pub fn duration_s(&self) -> Option<f64> {
        self.measured().and_then(|m| m.duration_s)
    }

    /// The policy and priority thread `thread` ran at, when rtbench measured the run. Where the
    /// run does not say (stored before it did, or the thread measured nothing), what was asked
    /// when the run had its real-time priority (`rt_priority`), SCHED_OTHER when it had not.
    pub fn ran_at(&self, thread: u32, rt_priority: bool) -> Option<(Policy, i32)> {
        let m = self.measured()?;
        let asked = if rt_priority { (m.policy, m.priority) } else { (Policy::Other, 0) };
        Some(m.ran.iter().find(|r| r.thread == thread).map_or(asked, |r| (r.policy, r.priority)))
    }
}

/// Where a thread ran, as tables and `show` say it: "pinned to CPU 1", or "unpinned".
pub fn placement(cpu: Option<usize>) -> String {
    cpu.map_or_else(|| "unpinned".to_string(), |c| format!("pinned to CPU {c}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe's own keys stand beside the shared ones, flat: one of the same name would be
    /// taken by the shared settings and the run read as no measured run at all. Each newer
    /// probe's part reads back as it was written.
    #[test]
    fn every_newer_probe_part_reads_back_beside_the_shared_settings() {
        use super::super::{IpcParams, IpcVia, Lateness, MigrateParams, PiParams, WatchParams};
        let shared = r#"{"threads":1,"cpus":[0],"policy":"fifo","priority":95,"mlock":true,"loops":10,"duration_s":null,"envelope_interval_ns":1000000000,"samples_file":null}"#;
        let ipc = ProbeParams::Ipc(IpcParams { via: IpcVia::Sem, interval_us: 1000, distance_us: 500 });
        let migrate = ProbeParams::Migrate(MigrateParams {
            tasks: 3,
            task_cpus: vec![0, 1],
            base_priority: 2,
            run_ms: 20,
            interval_ms: 100,
            max_wait_us: 1000,
            inject: false,
            intervals: Some(10),
            violations: Some(0),
            violations_in_steal: Some(0),
            first_violations: vec![],
        });
        let pi = ProbeParams::Pi(PiParams {
            base_priority: 2,
            deadlock_ms: 2000,
            inject: true,
            inversions: Some(0),
            inversions_per_s: Some(0.0),
            deadlocks: Some(1),
            first_deadlocks: vec!["deadlock: group 0".into()],
        });
        let watch = ProbeParams::Watch(Box::new(WatchParams {
            target: "--comm app".into(),
            tid: 12,
            pid: 11,
            comm: "rt-loop".into(),
            sched_policy: Some("fifo".into()),
            sched_priority: Some(80),
            kernel_priority: Some(19),
            allowed_cpus: vec![1],
            runtime_ns: 5_000,
            switches_in: 3,
            preemptions: 1,
            migrations: 0,
            worst_at_ns: Some(1_000_000),
            lateness: Some(Lateness { count: 2, p50_ns: 900, p99_ns: 1_500, max_ns: 1_500 }),
            period: None,
            instead: None,
            watch_runs: vec![7, 8],
            events: 9,
            lost_events: 0,
            source: "BPF (ringbuf)".into(),
            findings: vec!["rt-loop (12) took 3 page faults while watched".into()],
        }));
        for probe in [ipc, migrate, pi, watch] {
            let mut p: MeasuredParams = serde_json::from_str(shared).unwrap();
            p.probe = probe;
            let text = serde_json::to_string(&RunParams::Measured(p.clone())).unwrap();
            let back: RunParams = serde_json::from_str(&text).unwrap();
            assert_eq!(back.measured(), Some(&p), "{text}");
        }
    }

    #[test]
    fn params_keep_their_layout_and_probe_part() {
        let text = r#"{"threads":2,"cpus":[0,1],"policy":"fifo","priority":95,"mlock":true,"loops":null,"duration_s":12.0,"envelope_interval_ns":20000000,"samples_file":null,"probe":"timer","interval_us":1000,"distance_us":0}"#;
        let p: RunParams = serde_json::from_str(text).unwrap();
        let m = p.measured().expect("a measured run");
        assert!(matches!(&m.probe, ProbeParams::Timer(super::super::TimerParams { interval_us: 1000, .. })));
        assert_eq!(p.duration_s(), Some(12.0));
        assert_eq!(serde_json::to_string(&p).unwrap(), text);
        let imported: RunParams =
            serde_json::from_str(r#"{"imported_from":"ct.json","format":"--json file"}"#).unwrap();
        assert!(matches!(imported, RunParams::Imported(_)));
        let odd: RunParams = serde_json::from_str(r#"{"weird":true}"#).unwrap();
        assert!(matches!(odd, RunParams::Unknown(_)));
    }

    #[test]
    fn each_thread_is_said_to_run_as_it_ran() {
        let text = r#"{"threads":2,"cpus":[0,1],"policy":"fifo","priority":95,"mlock":true,"loops":null,"duration_s":1.0,"envelope_interval_ns":1000,"samples_file":null}"#;
        let old: RunParams = serde_json::from_str(text).unwrap();
        // A run stored before threads were recorded: its header says whether it had its policy.
        assert_eq!(old.ran_at(0, true), Some((Policy::Fifo, 95)));
        assert_eq!(old.ran_at(0, false), Some((Policy::Other, 0)), "refused: SCHED_OTHER, not fifo/95");
        let RunParams::Measured(mut m) = old else { unreachable!() };
        m.ran = vec![ThreadRan { thread: 1, policy: Policy::Other, priority: 0, timer_slack_ns: Some(1) }];
        let new: RunParams = serde_json::from_str(&serde_json::to_string(&RunParams::Measured(m)).unwrap()).unwrap();
        assert_eq!(new.ran_at(1, true), Some((Policy::Other, 0)), "thread 1 was refused its policy");
        assert_eq!(new.ran_at(0, true), Some((Policy::Fifo, 95)));
        assert_eq!(Policy::Fifo.shown(95), "fifo/95");
        assert_eq!(Policy::Other.shown(95), "other");
        let imported: RunParams = serde_json::from_str(r#"{"imported_from":"x","format":"y"}"#).unwrap();
        assert_eq!(imported.ran_at(0, true), None);
    }
}
