//! rtbench's own JSON document, typed: [`Document`] is what `export --format json` and
//! `timer --json FILE` write, and `schema/run.schema.json` is generated from it (a test below
//! fails when the committed schema differs).

use schemars::JsonSchema;
use serde::Serialize;

use crate::evt::Estimate;
use crate::model::{Better, Breach, ClassInterval, Gap, Policy, RunHeader, Unit};
use crate::report::Run;
use crate::stats::Summary;

/// Version of the exported document's layout.
pub const EXPORT_SCHEMA_VERSION: u32 = 1;

/// One stored run as written by `rtbench export RUN --format json` and `rtbench timer --json FILE`.
#[derive(Serialize, JsonSchema)]
#[schemars(
    title = "rtbench run export",
    description = "One stored run as written by `rtbench export RUN --format json` and `rtbench timer --json FILE`. Latencies are integer nanoseconds; mean and standard deviation are float nanoseconds."
)]
pub struct Document<'a> {
    #[schemars(schema_with = "schema_version")]
    schema_version: u32,
    tool_version: &'static str,
    run: RunPart<'a>,
    threads: Vec<ThreadPart>,
    total: Summary,
    /// Extreme-value estimate of the worst case from the run's histogram (see `rtbench wcet`), for
    /// latency runs. Levels are float nanoseconds; hi_ns null means no upper bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Estimate")]
    wcet: Option<Estimate>,
    /// Latency breaches traced with --breach: when, how late, what delayed the thread (causes
    /// largest first) and the trace window around it (times in ns from the intended wake-up).
    #[serde(skip_serializing_if = "<[Breach]>::is_empty")]
    breaches: &'a [Breach],
    /// Where `rtbench resume` continued the run: the spans it did not measure, from its last
    /// checkpoint before it stopped to when it measured again (RFC 3339 UTC, and seconds). The
    /// statistics hold nothing of them.
    #[serde(skip_serializing_if = "<[Gap]>::is_empty")]
    gaps: &'a [Gap],
    /// `noise --classify`: each thread's gaps per envelope interval (`index` from the run's
    /// start, each `run.params.envelope_interval_ns` long) and class (what ran in them; `hardware`: nothing the kernel
    /// saw), with their count and total length.
    #[serde(skip_serializing_if = "<[ClassInterval]>::is_empty")]
    noise_intervals: &'a [ClassInterval],
}

/// The run's header and what its samples measure.
#[derive(Serialize, JsonSchema)]
struct RunPart<'a> {
    #[serde(flatten)]
    header: &'a RunHeader,
    /// What a sample is: ns (latency), ps (cost of one operation), KB/s (bandwidth). Statistics
    /// keep their *_ns names and are in this unit.
    unit: Unit,
    better: Better,
}

/// One thread's statistics, and where and how it ran.
#[derive(Serialize, JsonSchema)]
struct ThreadPart {
    thread: u32,
    cpu: Option<u32>,
    /// The policy the thread ran at (SCHED_OTHER when its real-time policy was refused); absent
    /// for imported runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<Policy>,
    /// Its real-time priority; 0 at SCHED_OTHER.
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<i32>,
    #[serde(flatten)]
    stats: Summary,
    /// `--split`: the IRQ latency of the samples matched with their timer's expiry (when the
    /// expiry handler ran − when the timer was due), the same fields as the thread's own
    /// (`count`: how many were matched); the thread's latency minus it is the scheduling part.
    #[serde(skip_serializing_if = "Option::is_none")]
    irq: Option<IrqPart>,
}

/// A thread's IRQ latencies (`--split`).
#[derive(Serialize, JsonSchema)]
struct IrqPart {
    /// Samples with no expiry event to match (a lost event, a full buffer): counted, never
    /// guessed.
    unmatched: u64,
    #[serde(flatten)]
    stats: Summary,
}

/// The document's layout version, and only it.
fn schema_version(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "const": EXPORT_SCHEMA_VERSION })
}

/// The whole document for one run.
pub fn document(run: &Run) -> Document<'_> {
    let h = &run.header;
    let threads = run.threads.iter().map(|t| {
        let ran = h.params.ran_at(t.thread, h.rt_priority);
        let (policy, priority) = (ran.map(|r| r.0), ran.map(|r| r.1));
        let irq = t.irq.as_ref().map(|x| IrqPart { unmatched: x.unmatched, stats: x.stats.summary() });
        ThreadPart { thread: t.thread, cpu: t.cpu, policy, priority, stats: t.stats.summary(), irq }
    });
    Document {
        schema_version: EXPORT_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION"),
        run: RunPart { header: &run.header, unit: run.header.metric.unit, better: run.header.metric.better },
        threads: threads.collect(),
        total: run.total.summary(),
        wcet: crate::evt::for_run(run, crate::evt::sample_rate(run, &[]))
            .filter(|_| run.without_distribution().is_none()),
        breaches: &run.breaches,
        gaps: &run.gaps,
        noise_intervals: &run.noise,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{LoadRecord, Metric, RunKind, RunParams, RunStatus, SystemSnapshot, ThreadResult};
    use crate::stats::Stats;

    const COMMITTED: &str = "schema/run.schema.json";

    /// The JSON Schema of [`Document`]: how it serializes, not what it would accept back.
    fn schema() -> schemars::Schema {
        let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
        settings.into_generator().into_root_schema_for::<Document>()
    }

    /// The committed schema is the one the types generate. After changing the document's types,
    /// `RTBENCH_BLESS=1 cargo test --lib report::formats::export::json` writes it anew (review its diff).
    #[test]
    fn the_committed_schema_is_generated_from_the_document() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
        let generated = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
        if std::env::var_os("RTBENCH_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{COMMITTED} differs from the schema the export's types generate; run \
             `RTBENCH_BLESS=1 cargo test --lib report::formats::export::json` and review the diff"
        );
    }

    fn keys(v: &serde_json::Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    /// A stored timer run of one thread with samples of 1 to 100 ns, as tests elsewhere need one.
    pub(crate) fn run(metric: Metric) -> Run {
        let header = RunHeader {
            id: 3,
            label: "k".into(),
            probe: "timer".into(),
            kind: RunKind::Probe,
            status: RunStatus::Complete,
            start: "2026-01-01T00:00:00Z".into(),
            end: None,
            params: RunParams::Unknown(serde_json::json!({})),
            load: LoadRecord::idle(),
            system: SystemSnapshot::default(),
            rt_priority: true,
            warnings: vec![],
            command_line: "rtbench timer".into(),
            tool_version: "0.1.0".into(),
            envelope_ns: 0,
            metric,
        };
        let mut stats = Stats::default();
        (1..=100).for_each(|ns| stats.record(ns));
        Run::new(header, vec![ThreadResult { thread: 0, cpu: Some(1), stats, irq: None }])
    }

    /// The typed document keeps the layout the `json!` one had: keys in this order, the header's
    /// fields then unit and better, a thread's place then its statistics.
    #[test]
    fn the_document_keeps_its_layout() {
        let mut traced = run(Metric::LATENCY);
        let (verdict, causes, window) = (String::new(), vec![], vec![]);
        traced.breaches.push(Breach {
            seq: 1,
            thread: 0,
            cpu: None,
            t_ns: 0,
            mono_ns: 0,
            latency_ns: 9,
            irq_ns: None,
            verdict,
            causes,
            window,
            timerlat_analysis: None,
        });
        traced.gaps.push(Gap {
            start: "2026-01-01T00:00:30.000Z".into(),
            end: "2026-01-01T00:01:00.500Z".into(),
            seconds: 30.5,
            start_ns: 30_000_000_000,
            end_ns: 60_500_000_000,
        });
        let doc = serde_json::to_value(document(&traced)).unwrap();
        assert_eq!(
            keys(&doc),
            ["schema_version", "tool_version", "run", "threads", "total", "wcet", "breaches", "gaps"]
        );
        assert_eq!(
            doc["gaps"],
            serde_json::json!([{"start": "2026-01-01T00:00:30.000Z", "end": "2026-01-01T00:01:00.500Z", "seconds": 30.5}]),
            "a gap's wall times and length; its offsets stay in the store"
        );
        let header = ["id", "label", "probe", "status", "start", "end", "params", "load", "system"];
        let tail = ["rt_priority", "warnings", "command_line", "tool_version", "unit", "better"];
        assert_eq!(keys(&doc["run"]), [&header[..], &tail[..]].concat());
        assert_eq!((&doc["run"]["unit"], &doc["run"]["better"]), (&"ns".into(), &"smaller".into()));
        assert_eq!(keys(&doc["threads"][0])[..3], ["thread", "cpu", "count"]);
        assert_eq!(keys(&doc["total"]), keys(&serde_json::to_value(Stats::default().summary()).unwrap()));
        let cost = Metric { unit: Unit::Picoseconds, better: Better::Smaller };
        let doc = serde_json::to_value(document(&run(cost))).unwrap();
        assert_eq!(keys(&doc), ["schema_version", "tool_version", "run", "threads", "total"], "no wcet of a cost");
        assert_eq!(doc["run"]["unit"], "ps");
    }
}
