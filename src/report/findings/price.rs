//! The throughput price of one label against its baseline, from `sysbench`: the total time of
//! the operations under each load (the I-pipe study's table) and the operations that changed
//! most.

use super::{Finding, Number, Topic, Unit};
use crate::model::{Metric, RunKind};
use crate::report::page::tables::{load_item, total_seconds, totals};
use crate::report::select::RunView;
use crate::report::text::compare::matched;

/// How many operations the sentence names.
const OPS: usize = 3;

/// The price of `label` against `baseline`; none when their costs ran on an emulated CPU (the
/// emulator's costs rank no kernel: `emulated` says so).
pub fn sentences(costs: &[RunView], baseline: &str, label: &str) -> Vec<Finding> {
    if super::emulated::in_costs(costs, baseline, label) {
        return Vec::new();
    }
    total(costs, baseline, label).into_iter().chain(operations(costs, baseline, label)).collect()
}

/// `sysbench --total`: % per load against the baseline.
fn total(costs: &[RunView], baseline: &str, label: &str) -> Option<Finding> {
    let totals = totals(costs);
    let mut loads: Vec<String> = Vec::new();
    for r in &totals {
        if !loads.contains(&load_item(r)) {
            loads.push(load_item(r));
        }
    }
    let mut said = Vec::new();
    let mut numbers = Vec::new();
    for load in &loads {
        if let (Some(c), Some(b)) = (total_seconds(&totals, label, load), total_seconds(&totals, baseline, load)) {
            let pct = (c / b - 1.0) * 100.0;
            said.push(format!("{pct:+.1} % under {load} ({b:.2} → {c:.2} s)"));
            numbers.push(Number::new(format!("total time {load}"), pct, Unit::Percent));
        }
    }
    (!said.is_empty()).then(|| Finding {
        weight: 750,
        topic: Topic::Price,
        sentence: format!(
            "The price, {label} against {baseline}: the total time of the sysbench operations changed {}.",
            said.join(", ")
        ),
        numbers,
        link: "sysbench-total".into(),
        caveats: Vec::new(),
    })
}

/// The operations whose median changed most, in the metric's direction.
fn operations(costs: &[RunView], baseline: &str, label: &str) -> Option<Finding> {
    let mut changed: Vec<(String, f64, &str)> = super::pairs::newest(matched(costs, baseline, label))
        .into_iter()
        .filter(|(b, _)| b.kind() == RunKind::SysbenchOp)
        .filter_map(|(b, c)| {
            let (vb, vc) = (b.data.total.percentile(0.5) as f64, c.data.total.percentile(0.5) as f64);
            let metric: Metric = b.data.header.metric;
            let load = if b.load() == "none" { String::new() } else { format!(" under {}", b.load()) };
            let op = b.sysbench_op().filter(|_| vb > 0.0)?;
            let direction = if vc == vb {
                "unchanged"
            } else if metric.worse(vb, vc) {
                "worse"
            } else {
                "better"
            };
            Some((format!("{op}{load}"), (vc / vb - 1.0) * 100.0, direction))
        })
        .collect();
    changed.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    changed.truncate(OPS);
    if changed.is_empty() {
        return None;
    }
    let said: Vec<String> =
        changed.iter().map(|(op, pct, direction)| format!("{op} {pct:+.1} % ({direction})")).collect();
    Some(Finding {
        weight: 740,
        topic: Topic::Price,
        sentence: format!(
            "The price, {label} against {baseline}: the operations that changed most are {}.",
            said.join(", ")
        ),
        numbers: changed.iter().map(|(op, pct, _)| Number::new(op.clone(), *pct, Unit::Percent)).collect(),
        link: "sysbench-costs".into(),
        caveats: Vec::new(),
    })
}
