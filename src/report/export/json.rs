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
    // What the samples measure: ns latencies, ps per operation or KB/s (`sysbench`).
    let (unit, better) = run.header.metric.names();
    if let Some(Value::Object(r)) = doc.get_mut("run") {
        r.insert("unit".into(), unit.into());
        r.insert("better".into(), better.into());
    }
    // The extreme-value estimate from the run's histogram, for latency runs.
    let wcet = crate::evt::for_run(run, crate::evt::sample_rate(run, &[])).and_then(|e| serde_json::to_value(e).ok());
    if let (Some(wcet), Value::Object(m)) = (wcet, &mut doc) {
        m.insert("wcet".into(), wcet);
    }
    if let (false, Value::Object(m)) = (run.breaches.is_empty(), &mut doc) {
        m.insert("breaches".into(), serde_json::to_value(&run.breaches).unwrap_or_default());
    }
    doc
}
