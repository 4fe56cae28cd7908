//! rtbench's own JSON document (schema: `schema/run.schema.json`).

use serde_json::{json, Value};

use crate::report::Run;
use crate::stats::Stats;

/// Version of the exported document's layout.
pub const EXPORT_SCHEMA_VERSION: u32 = 1;

fn stats_fields(s: &Stats) -> serde_json::Map<String, Value> {
    match serde_json::to_value(s.summary()) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// The whole document for one run.
pub fn document(run: &Run) -> Value {
    let threads: Vec<Value> = run
        .threads
        .iter()
        .map(|t| {
            let mut m = serde_json::Map::new();
            m.insert("thread".into(), t.thread.into());
            m.insert("cpu".into(), t.cpu.into());
            m.extend(stats_fields(&t.stats));
            Value::Object(m)
        })
        .collect();
    let mut doc = json!({
        "schema_version": EXPORT_SCHEMA_VERSION,
        "tool_version": env!("CARGO_PKG_VERSION"),
        "run": run.header,
        "threads": threads,
        "total": stats_fields(&run.total),
    });
    if let (Some(wcet), Value::Object(m)) = (worst_case(run), &mut doc) {
        m.insert("wcet".into(), wcet);
    }
    doc
}

/// The extreme-value estimate from the run's histogram, for latency runs (`rtbench wcet` adds
/// the sample log, the envelope's checks and steal time).
fn worst_case(run: &Run) -> Option<Value> {
    if run.header.metric != crate::model::Metric::LATENCY {
        return None;
    }
    let rate = run.header.params.duration_s().filter(|d| *d > 0.0).map(|d| run.total.count as f64 / d);
    let input = crate::evt::Input { hist: &run.total.hist, rate, raw: None, maxima: Vec::new(), steal_ns: 0 };
    serde_json::to_value(crate::evt::estimate(&input)).ok()
}
