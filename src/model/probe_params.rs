//! A probe's own parameters, typed: what the probe was set to and what it learnt while
//! running, one struct per probe. They are stored flat beside the settings every run shares
//! (the layout runs always had), after a `"probe"` key that says whose they are (`"timer"`,
//! `"timerlat"`, …, `"sysbench-op"`, `"sysbench-total"`).
//!
//! Runs stored before that key was written are told apart by their keys, as they always were:
//! each probe's struct requires a key no other has (timer `distance_us`, gtod `pairs`, pingpong
//! `transport`, response `target`, noise `threshold_ns`, synthetic `seed`, a sysbench operation
//! `op`, a sysbench pass `load_item`; a timerlat run reads as the timer's), and a run with none
//! of them has no probe part.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

pub use super::pingpong_params::{PingpongParams, RoundTripsApart, ThreadRoundTrips, Transport, Warmup};
use super::{SysbenchOpParams, SysbenchTotalParams};

/// The stored parameters of one probe's run, by probe: written after its tag.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "probe", rename_all = "kebab-case")]
pub enum ProbeParams {
    Timer(TimerParams),
    Timerlat(TimerParams),
    Gtod(GtodParams),
    Pingpong(PingpongParams),
    Response(ResponseParams),
    Noise(NoiseParams),
    Synthetic(SyntheticParams),
    SysbenchOp(SysbenchOpParams),
    SysbenchTotal(SysbenchTotalParams),
    Ipc(IpcParams),
    Migrate(MigrateParams),
    Deadline(DeadlineParams),
    Pi(PiParams),
    /// Boxed: a watched thread's account is the largest of them.
    Watch(Box<WatchParams>),
    /// No probe part at all (a run written by hand): stored as nothing, without a tag.
    #[serde(untagged)]
    Absent(Absent),
}

impl Default for ProbeParams {
    fn default() -> Self {
        ProbeParams::Absent(Absent {})
    }
}

/// Reads one probe's part from its keys.
type Read = fn(Value) -> serde_json::Result<ProbeParams>;

/// Each tag (as the derive writes it) and how its part reads, in the order untagged parts are
/// tried (the order rtbench always tried them in; a timerlat part without its tag reads as the
/// timer's, first).
const TAGS: [(&str, Read); 15] = [
    ("timer", |v| serde_json::from_value(v).map(ProbeParams::Timer)),
    ("timerlat", |v| serde_json::from_value(v).map(ProbeParams::Timerlat)),
    ("gtod", |v| serde_json::from_value(v).map(ProbeParams::Gtod)),
    ("pingpong", |v| serde_json::from_value(v).map(ProbeParams::Pingpong)),
    ("response", |v| serde_json::from_value(v).map(ProbeParams::Response)),
    ("noise", |v| serde_json::from_value(v).map(ProbeParams::Noise)),
    ("synthetic", |v| serde_json::from_value(v).map(ProbeParams::Synthetic)),
    ("sysbench-op", |v| serde_json::from_value(v).map(ProbeParams::SysbenchOp)),
    ("sysbench-total", |v| serde_json::from_value(v).map(ProbeParams::SysbenchTotal)),
    ("ipc", |v| serde_json::from_value(v).map(ProbeParams::Ipc)),
    ("migrate", |v| serde_json::from_value(v).map(ProbeParams::Migrate)),
    ("deadline", |v| serde_json::from_value(v).map(ProbeParams::Deadline)),
    ("pi", |v| serde_json::from_value(v).map(ProbeParams::Pi)),
    ("watch", |v| serde_json::from_value(v).map(|w| ProbeParams::Watch(Box::new(w)))),
    // Last: it takes only an empty part.
    ("absent", |v| serde_json::from_value(v).map(ProbeParams::Absent)),
];

impl<'de> Deserialize<'de> for ProbeParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut keys = Map::deserialize(d)?;
        match keys.remove("probe") {
            Some(Value::String(tag)) => {
                let (_, read) = TAGS[..TAGS.len() - 1]
                    .iter()
                    .find(|(t, _)| *t == tag)
                    .ok_or_else(|| D::Error::custom(format!("'{tag}' is no probe this rtbench knows")))?;
                read(Value::Object(keys)).map_err(|e| D::Error::custom(format!("{tag}'s parameters: {e}")))
            }
            Some(other) => Err(D::Error::custom(format!("a probe's name is a string, not {other}"))),
            None => TAGS
                .iter()
                .find_map(|(_, read)| read(Value::Object(keys.clone())).ok())
                .ok_or_else(|| D::Error::custom("the parameters are no probe's")),
        }
    }
}

/// `timer`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimerParams {
    pub interval_us: u64,
    /// Added to the interval per thread (cyclictest's `-d`).
    pub distance_us: u64,
    /// A monitor's window: its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor_window_s: Option<f64>,
}

/// What `ipc`'s sender wakes its receiver with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IpcVia {
    /// A POSIX mutex the receiver waits to lock and the sender unlocks (ptsematest).
    Mutex,
    /// A signal the receiver waits for and the sender sends to its thread (sigwaittest).
    Signal,
    /// A System V semaphore the receiver takes and the sender posts (svsematest).
    Sem,
    /// A POSIX message queue the receiver reads and the sender writes (pmqtest).
    Mq,
    /// A futex word the receiver waits on and the sender changes and wakes.
    Futex,
}

impl IpcVia {
    pub const ALL: [IpcVia; 5] = [IpcVia::Mutex, IpcVia::Signal, IpcVia::Sem, IpcVia::Mq, IpcVia::Futex];

    /// The one named `name`.
    pub fn parse(name: &str) -> Option<IpcVia> {
        IpcVia::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Its name as given and stored ("mq").
    pub fn name(self) -> &'static str {
        match self {
            IpcVia::Mutex => "mutex",
            IpcVia::Signal => "signal",
            IpcVia::Sem => "sem",
            IpcVia::Mq => "mq",
            IpcVia::Futex => "futex",
        }
    }
}

/// `ipc`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IpcParams {
    pub via: IpcVia,
    /// The receiver's pause between two wake-ups.
    pub interval_us: u64,
    /// Added to the interval per pair (the rt-tests tools' `-d`).
    pub distance_us: u64,
}

/// `deadline`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeadlineParams {
    /// The first thread's period (and deadline).
    pub interval_us: u64,
    /// Added to the period per thread.
    pub step_us: u64,
    /// The runtime as a share of the period, when given (else cyclicdeadline's rule).
    pub runtime_percent: Option<u64>,
    /// Each thread's reservation as the kernel admitted it, `[runtime, period]` in µs (the
    /// deadline is the period), once the run has ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<[u64; 2]>,
}

/// `migrate`'s settings, and what it found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MigrateParams {
    /// Real-time tasks, one more than the CPUs they may run on.
    pub tasks: usize,
    /// The CPUs they may run on (a key of its own: `cpus` is the measuring threads').
    pub task_cpus: Vec<usize>,
    /// The lowest task's FIFO priority; each next one is one higher.
    pub base_priority: i32,
    /// How long each task runs in an interval, and how long an interval lasts.
    pub run_ms: u64,
    pub interval_ms: u64,
    /// How long a higher task may wait while a lower one runs before it counts.
    pub max_wait_us: u64,
    /// The control: the two highest tasks pinned to one CPU, so one of them must wait.
    pub inject: bool,
    /// Intervals checked, and their violations: intervals in which a higher-priority task
    /// waited longer than `max_wait_us` while a lower one ran (absent until the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<u64>,
    /// Of those, the ones in intervals where the hypervisor stole time (/proc/stat): not the
    /// kernel's to answer for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations_in_steal: Option<u64>,
    /// The first few violations, each said in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_violations: Vec<String>,
}

/// `pi`'s settings, and what it found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PiParams {
    /// Each group's low thread's FIFO priority; the medium and high ones are the next two.
    pub base_priority: i32,
    /// How long a group may end no round before it counts as deadlocked.
    pub deadlock_ms: u64,
    /// The control: mutexes without priority inheritance, which must deadlock.
    pub inject: bool,
    /// Rounds every group ended (each an inversion the kernel resolved), and the deadlocks
    /// seen (absent until the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inversions: Option<u64>,
    /// Over the time the groups went through rounds, all groups together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inversions_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadlocks: Option<u64>,
    /// Each deadlock in words, its threads named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_deadlocks: Vec<String>,
}

/// One thread of an application `watch` followed, and what it saw of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WatchParams {
    /// The application as the user named it: `--pid 1234`, `--comm NAME`, `--cgroup PATH`.
    pub target: String,
    /// The thread and its process.
    pub tid: u32,
    pub pid: u32,
    pub comm: String,
    /// Its policy and real-time priority when the watch began (none for a thread it started
    /// while watched), and the kernel priority last seen (0–99 real-time, 100–139 the others).
    /// Named apart from the shared `policy` and `priority`, which say how the run measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_priority: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_priority: Option<u32>,
    /// The CPUs it was allowed when the watch began.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_cpus: Vec<usize>,
    /// Its time on a CPU, its switches in, the times it was preempted (each wait to run again
    /// timed as a wake-up's) and its migrations while watched.
    pub runtime_ns: u64,
    pub switches_in: u64,
    #[serde(default)]
    pub preemptions: u64,
    pub migrations: u64,
    /// The worst wake-up latency's end, CLOCK_MONOTONIC ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_at_ns: Option<u64>,
    /// After each absolute sleep on CLOCK_MONOTONIC, how late it ran past the time it asked
    /// (its period's jitter, as the thread itself would measure it); none when it slept no
    /// such sleep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness: Option<Lateness>,
    /// Its period, inferred from the times between its runs after a wake-up, and their spread;
    /// none when those times do not look periodic (fewer than 10, or a tenth of them more than
    /// a quarter off the median either side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    /// Its waits longer than a bound, and what ran on its CPU in them instead, in the terms of
    /// `noise --classify`; none when not asked or not known here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instead: Option<RanInstead>,
    /// The runs of the watch that stored this one (one per thread), this one among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watch_runs: Vec<i64>,
    /// The scheduler's events read for the whole watch, and those lost to a full buffer.
    pub events: u64,
    pub lost_events: u64,
    /// Where they came from: BPF programs, or an ftrace instance and why.
    pub source: String,
    /// The mistakes found that name this thread, each with its evidence and fix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// How late a watched thread ran after the times its absolute sleeps asked, ns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Lateness {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// A watched thread's period inferred from its wake-ups: the median time between its runs
/// after a wake-up, and those times' spread, ns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Period {
    pub intervals: u64,
    pub period_ns: u64,
    pub p1_ns: u64,
    pub p99_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

/// A watched thread's waits longer than `above_ns`, each classified by what ran on its CPU
/// between its wake-up and its switch in (as `noise --classify` classifies a gap).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RanInstead {
    pub above_ns: u64,
    pub count: u64,
    /// By what ran: the most time first within each class.
    pub totals: Vec<super::ClassTotal>,
    /// The longest of them, `t_ns` since the watch began.
    pub longest: Vec<super::LongGap>,
    /// Where the events came from.
    pub source: String,
}

/// `gtod`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GtodParams {
    /// Pairs per thread; null when a duration bounds the run. Always stored, so required.
    #[serde(deserialize_with = "Option::deserialize")]
    pub pairs: Option<u64>,
}

/// `response`'s settings (the logger's) and what it learnt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResponseParams {
    /// The target's address.
    pub target: String,
    pub period_ns: u64,
    pub timeout_ns: u64,
    /// Whether the target was rtbench's own (a study's echo server on loopback). Runs stored
    /// before rtbench said do not: resume reads their command line instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_peer: Option<bool>,
    /// The target's host name, as its hello said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_host: Option<String>,
    /// Where the target's thread runs, when it is an rtbench target that says (runs stored
    /// before rtbench split it off kept it in `target_host`, after a line break).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_placement: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_triggers: Option<u64>,
    /// Answers that came later than a period after their trigger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_answers: Option<u64>,
}

/// `noise`'s settings and what each thread saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoiseParams {
    pub threshold_ns: u64,
    /// How the thread stays clear of RT throttling, in words; null when throttling is off.
    #[serde(default)]
    pub throttling_pauses: Option<String>,
    /// A monitor's window: its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor_window_s: Option<f64>,
    /// One entry per thread, stored at the run's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Vec<ThreadNoise>>,
}

/// One noise thread's account: how long it watched, how much of that was noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadNoise {
    pub thread: usize,
    pub measured_ns: u64,
    pub noise_ns: u64,
    /// The share of the CPU the thread had, as osnoise's %available.
    pub available_percent: f64,
    pub pauses: u64,
}

/// `synthetic`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyntheticParams {
    pub seed: u64,
    pub interval_us: u64,
    pub median_ns: u64,
}

/// No probe part: stored as nothing, read only from nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct Absent {}

impl<'de> Deserialize<'de> for Absent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let keys = serde_json::Map::deserialize(d)?;
        match keys.keys().next() {
            None => Ok(Absent {}),
            Some(key) => Err(serde::de::Error::custom(format!("'{key}' is no probe's parameter"))),
        }
    }
}

impl ProbeParams {
    /// The address of the probe's peer (a ping-pong's echo server, a response's target).
    pub fn peer(&self) -> Option<&str> {
        match self {
            ProbeParams::Pingpong(p) => Some(&p.peer),
            ProbeParams::Response(p) => Some(&p.target),
            _ => None,
        }
    }

    /// Whether the peer was rtbench's own; `None` for a probe without one, or a run stored
    /// before rtbench said.
    pub fn own_peer(&self) -> Option<bool> {
        match self {
            ProbeParams::Pingpong(p) => p.own_peer,
            ProbeParams::Response(p) => p.own_peer,
            _ => None,
        }
    }

    /// Which of its measurements a probe that makes several made: runs of two variants are
    /// different cells of a report, never compared with each other.
    pub fn variant(&self) -> Option<&'static str> {
        match self {
            ProbeParams::Ipc(p) => Some(p.via.name()),
            _ => None,
        }
    }

    /// Says whether the peer is rtbench's own, for a probe that has one.
    pub fn set_own_peer(&mut self, own: bool) {
        match self {
            ProbeParams::Pingpong(p) => p.own_peer = Some(own),
            ProbeParams::Response(p) => p.own_peer = Some(own),
            _ => {}
        }
    }

    /// Records a monitor's window length. The monitor runs the timer or the noise probe; the
    /// others have no such field.
    pub fn set_monitor_window(&mut self, seconds: f64) {
        match self {
            ProbeParams::Timer(p) => p.monitor_window_s = Some(seconds),
            ProbeParams::Noise(p) => p.monitor_window_s = Some(seconds),
            _ => debug_assert!(false, "only timer and noise windows are monitored"),
        }
    }

    /// A resumed run's parameters: its settings as `asked` (the whole run's, where the new
    /// part was built for the rest), what `now` (the new part) learnt where it is a list or
    /// a record, and the run's single values where it had them, as rtbench always kept them.
    pub fn as_asked(asked: &ProbeParams, now: &ProbeParams) -> ProbeParams {
        match (asked, now) {
            (ProbeParams::Pingpong(a), ProbeParams::Pingpong(n)) => ProbeParams::Pingpong(a.as_asked(n)),
            (ProbeParams::Response(a), ProbeParams::Response(n)) => ProbeParams::Response(ResponseParams {
                target_host: a.target_host.clone().or_else(|| n.target_host.clone()),
                target_placement: a.target_placement.clone().or_else(|| n.target_placement.clone()),
                lost_triggers: a.lost_triggers.or(n.lost_triggers),
                late_answers: a.late_answers.or(n.late_answers),
                ..a.clone()
            }),
            (ProbeParams::Noise(a), ProbeParams::Noise(n)) => {
                ProbeParams::Noise(NoiseParams { noise: n.noise.clone(), ..a.clone() })
            }
            (ProbeParams::Absent(_), n) => n.clone(),
            (a, _) => a.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::RunParams;
    use super::*;

    /// The settings every run shares, as runs store them before the probe part.
    const SHARED: &str = r#""threads":1,"cpus":[0],"policy":"fifo","priority":95,"mlock":true,"loops":null,"duration_s":2.0,"envelope_interval_ns":1000000000,"samples_file":null"#;

    /// Probe parts as rtbench stored them before they were typed (their keys and order), with
    /// the variant each must read as.
    const OLD: [(&str, &str); 10] = [
        ("timer", r#""interval_us":1000,"distance_us":0"#),
        ("timer window", r#""interval_us":20000,"distance_us":0,"monitor_window_s":1.0"#),
        ("gtod", r#""pairs":null"#),
        (
            "pingpong",
            r#""transport":"udp","peer":"127.0.0.1:17700","size_bytes":1,"sample":"one-way = RTT/2","warmup_round_trips":1000,"busy_poll":false,"peer_host":"lab","peer_placement":"pinned to CPU 1, fifo/95","thread0_cold_rtt_ns":81234,"thread0_warmup":{"round_trips":1000,"min_rtt_ns":20000,"mean_rtt_ns":31000.5,"max_rtt_ns":90000},"thread1_cold_rtt_ns":null,"thread1_warmup":{"round_trips":0,"min_rtt_ns":0,"mean_rtt_ns":0.0,"max_rtt_ns":0}"#,
        ),
        (
            "response",
            r#""target":"127.0.0.1:17700","period_ns":1000000,"timeout_ns":100000000,"target_host":"lab","lost_triggers":2,"late_answers":0"#,
        ),
        (
            "noise",
            r#""threshold_ns":1000,"throttling_pauses":null,"noise":[{"thread":0,"measured_ns":2000000000,"noise_ns":5000,"available_percent":99.99975,"pauses":0}]"#,
        ),
        ("noise killed", r#""threshold_ns":5000,"throttling_pauses":"RT throttling allows 950000 of 1000000 µs""#),
        ("synthetic", r#""seed":1,"interval_us":1000,"median_ns":5000"#),
        ("sysbench-op", r#""op":"null-call","group":"processes","iterations":29256,"min_repetition_ms":2.0"#),
        ("sysbench-total", r#""load_item":"none","baseline":"old","operations":1,"iterations":{"null-call":29263}"#),
    ];

    fn variant(p: &ProbeParams) -> &'static str {
        match p {
            ProbeParams::Timer(_) => "timer",
            ProbeParams::Timerlat(_) => "timerlat",
            ProbeParams::Gtod(_) => "gtod",
            ProbeParams::Pingpong(_) => "pingpong",
            ProbeParams::Response(_) => "response",
            ProbeParams::Noise(_) => "noise",
            ProbeParams::Synthetic(_) => "synthetic",
            ProbeParams::SysbenchOp(_) => "sysbench-op",
            ProbeParams::SysbenchTotal(_) => "sysbench-total",
            ProbeParams::Ipc(_) => "ipc",
            ProbeParams::Migrate(_) => "migrate",
            ProbeParams::Deadline(_) => "deadline",
            ProbeParams::Pi(_) => "pi",
            ProbeParams::Watch(_) => "watch",
            ProbeParams::Absent(_) => "absent",
        }
    }

    /// Each old probe part (no tag) reads as its probe's typed parameters, and is written back
    /// key for key after its tag: an export of an old run is what it was, and says whose its
    /// part is. Written back, it reads the same by its tag.
    #[test]
    fn old_probe_parts_read_as_their_probe_s_and_write_back_unchanged_after_their_tag() {
        for (what, part) in OLD {
            let probe = what.split(' ').next().unwrap();
            let read: RunParams = serde_json::from_str(&format!("{{{SHARED},{part}}}")).unwrap();
            let m = read.measured().unwrap_or_else(|| panic!("{what}: not read as measured: {read:?}"));
            assert_eq!(variant(&m.probe), probe, "{what}");
            let written = serde_json::to_string(&read).unwrap();
            assert_eq!(written, format!("{{{SHARED},\"probe\":\"{probe}\",{part}}}"), "{what}");
            assert_eq!(serde_json::from_str::<RunParams>(&written).unwrap(), read, "{what}");
        }
        let none: RunParams = serde_json::from_str(&format!("{{{SHARED}}}")).unwrap();
        assert_eq!(none.measured().map(|m| variant(&m.probe)), Some("absent"));
        // A probe part no rtbench wrote is not taken for one: the row is kept as it is.
        let odd: RunParams = serde_json::from_str(&format!("{{{SHARED},\"interval_us\":5}}")).unwrap();
        assert!(matches!(odd, RunParams::Unknown(_)), "{odd:?}");
    }

    /// A tagged part reads as its tag says, even where its keys alone would say another probe
    /// (a timerlat run has the timer's keys); a tag no rtbench wrote, or a part that is not
    /// what its tag says, leaves the row as it is.
    #[test]
    fn a_tagged_part_reads_by_its_tag() {
        let timer = r#""interval_us":1000,"distance_us":0"#;
        let read = |part: &str| serde_json::from_str::<RunParams>(&format!("{{{SHARED},{part}}}")).unwrap();
        let tagged = read(&format!("\"probe\":\"timerlat\",{timer}"));
        assert_eq!(tagged.measured().map(|m| variant(&m.probe)), Some("timerlat"));
        assert_eq!(read(timer).measured().map(|m| variant(&m.probe)), Some("timer"), "untagged: by its keys");
        for odd in [
            format!("\"probe\":\"oslat\",{timer}"),
            format!("\"probe\":\"gtod\",{timer}"),
            format!("\"probe\":7,{timer}"),
        ] {
            assert!(matches!(read(&odd), RunParams::Unknown(_)), "{odd}");
        }
        let p = ProbeParams::Timerlat(TimerParams { interval_us: 500, distance_us: 0, monitor_window_s: None });
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(text, r#"{"probe":"timerlat","interval_us":500,"distance_us":0}"#);
        assert_eq!(serde_json::from_str::<ProbeParams>(&text).unwrap(), p);
        assert_eq!(serde_json::to_string(&ProbeParams::default()).unwrap(), "{}");
    }

    #[test]
    fn a_ping_pong_s_round_trips_apart_read_by_thread() {
        let (_, part) = OLD[3];
        let ProbeParams::Pingpong(p) = serde_json::from_str(&format!("{{{part}}}")).unwrap() else { panic!() };
        let cold: Vec<_> = p.threads.0.iter().map(|t| (t.thread, t.cold_rtt_ns, t.warmup.round_trips)).collect();
        assert_eq!(cold, [(0, Some(81_234), 1000), (1, None, 0)]);
        assert_eq!((p.peer_host.as_deref(), p.own_peer), (Some("lab"), None), "stored before rtbench said");
    }

    /// A resumed run keeps its settings and the values it had, and takes the new part's lists.
    #[test]
    fn a_resumed_probe_part_keeps_the_run_s_settings() {
        let read = |i: usize| serde_json::from_str::<ProbeParams>(&format!("{{{}}}", OLD[i].1)).unwrap();
        let (ProbeParams::Noise(asked), ProbeParams::Noise(mut now)) = (read(6), read(5)) else { panic!() };
        now.threshold_ns = 9000;
        let whole = ProbeParams::as_asked(&ProbeParams::Noise(asked.clone()), &ProbeParams::Noise(now.clone()));
        let ProbeParams::Noise(whole) = whole else { panic!() };
        assert_eq!((whole.threshold_ns, whole.noise), (asked.threshold_ns, now.noise));
        let ProbeParams::Response(mut asked) = read(4) else { panic!() };
        asked.lost_triggers = None;
        let now = ResponseParams { lost_triggers: Some(7), late_answers: Some(1), ..asked.clone() };
        let whole = ProbeParams::as_asked(&ProbeParams::Response(asked), &ProbeParams::Response(now));
        let ProbeParams::Response(whole) = whole else { panic!() };
        assert_eq!((whole.lost_triggers, whole.late_answers), (Some(7), Some(0)));
    }
}
