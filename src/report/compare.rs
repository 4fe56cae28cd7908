//! One label against a baseline, per probe × load, and the `--fail-if` conditions that let CI
//! gate a kernel change on it.

use std::fmt::Write;

use anyhow::Result;

use super::figures::load_name;
use super::select::RunView;
use crate::invalid;
use crate::model::{Metric, Unit};
use crate::stats::Stats;
use crate::units::us;

/// The statistics compared, by the names conditions use.
const STATS: &[&str] = &["min", "avg", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "max"];

fn value(s: &Stats, stat: &str) -> f64 {
    match stat {
        "min" => {
            if s.count == 0 {
                0.0
            } else {
                s.min as f64
            }
        }
        "avg" | "mean" => s.mean(),
        "stddev" => s.stddev(),
        "max" | "p100" => s.max as f64,
        p => {
            p.strip_prefix('p').and_then(|q| q.parse::<f64>().ok()).map_or(f64::NAN, |q| s.percentile(q / 100.0) as f64)
        }
    }
}

/// One parsed condition: `stat op threshold`, the threshold a ratio (`1.1x`) or a latency.
#[derive(Debug, PartialEq)]
pub struct Condition {
    pub stat: String,
    pub op: String,
    pub threshold: f64,
    pub ratio: bool,
}

/// Parses `'p99 > 1.10x'`, `'max > 2x, avg >= 1.2x'`, `'p99.9 > 500us'` (units ns, us, ms, s).
pub fn parse_conditions(expr: &str) -> Result<Vec<Condition>> {
    let bad = |part: &str, why: &str| {
        invalid!("--fail-if '{part}': {why}; expected STAT OP VALUE like 'p99 > 1.10x' or 'max > 500us' (STAT one of {}, OP one of > >= < <=)", STATS.join(" "))
    };
    let mut out = Vec::new();
    for part in expr.split([',', ';']).flat_map(|p| p.split(" or ")).map(str::trim) {
        if part.is_empty() {
            return Err(bad(expr, "empty condition"));
        }
        let op =
            [">=", "<=", ">", "<"].into_iter().find(|o| part.contains(o)).ok_or_else(|| bad(part, "no comparison"))?;
        let (stat, val) = part.split_once(op).unwrap();
        let stat = stat.trim().to_lowercase();
        let stat = if stat == "mean" { "avg".into() } else { stat };
        if !STATS.contains(&stat.as_str()) && stat != "p100" {
            return Err(bad(part, &format!("unknown statistic '{stat}'")));
        }
        let val = val.trim().to_lowercase();
        // A ratio, or a latency in the grammar of every latency flag; a bare number is neither.
        let (threshold, ratio) = match val.strip_suffix('x') {
            Some(n) => (n.trim().parse::<f64>().map_err(|_| bad(part, &format!("'{n}' is not a number")))?, true),
            None if val.parse::<f64>().is_ok() => {
                return Err(bad(part, "the value needs a unit: x for a ratio, or ns, us, ms, s"))
            }
            None => (
                crate::parse::time_ns(&val, None).ok_or_else(|| bad(part, &format!("'{val}' is not a latency")))?,
                false,
            ),
        };
        if !threshold.is_finite() || threshold < 0.0 {
            return Err(bad(part, "the value must be a non-negative number"));
        }
        out.push(Condition { stat, op: op.to_string(), threshold, ratio });
    }
    Ok(out)
}

impl Condition {
    fn holds(&self, base: f64, cand: f64) -> bool {
        let v = if self.ratio {
            if base > 0.0 {
                cand / base
            } else {
                f64::INFINITY
            }
        } else {
            cand
        };
        match self.op.as_str() {
            ">" => v > self.threshold,
            ">=" => v >= self.threshold,
            "<" => v < self.threshold,
            _ => v <= self.threshold,
        }
    }
}

/// One label against a baseline: the table of every compared statistic, and the conditions
/// that hold.
pub struct Comparison {
    pub table: String,
    /// One line per condition that holds, per probe × load.
    pub failures: Vec<String>,
}

/// Compares `label` against `baseline` over `runs`, pairing runs by probe, load and length (a
/// study's extended cells compare with each other).
pub fn compare(runs: &[RunView], baseline: &str, label: &str, conditions: &[Condition]) -> Result<Comparison> {
    let length = |r: &RunView| r.data.header.params.duration_s().map(f64::to_bits);
    let pick = |b: &RunView| {
        runs.iter()
            .find(|r| r.label() == label && r.probe() == b.probe() && r.load() == b.load() && length(r) == length(b))
    };
    let pairs: Vec<(&RunView, &RunView)> =
        runs.iter().filter(|r| r.label() == baseline).filter_map(|b| pick(b).map(|c| (b, c))).collect();
    if pairs.is_empty() {
        return Err(invalid!("labels '{baseline}' and '{label}' share no probe × load to compare"));
    }
    let mut table =
        format!("{:<10} {:<14} {:<10} {:>14} {:>14} {:>8}\n", "probe", "load", "stat", baseline, label, "ratio");
    let mut failures = Vec::new();
    for (b, c) in &pairs {
        let load = load_name(&b.load());
        let metric = b.data.header.metric;
        if metric != Metric::LATENCY {
            let _ = writeln!(table, "{}", cost_row(b, c, metric, &load));
            continue;
        }
        for stat in STATS {
            let (vb, vc) = (value(&b.data.total, stat), value(&c.data.total, stat));
            let ratio = if vb > 0.0 { format!("{:.3}", vc / vb) } else { "-".into() };
            let _ = writeln!(
                table,
                "{:<10} {:<14} {:<10} {:>14} {:>14} {:>8}",
                b.probe(),
                load,
                stat,
                us(vb),
                us(vc),
                ratio
            );
        }
        for cond in conditions {
            let (vb, vc) = (value(&b.data.total, &cond.stat), value(&c.data.total, &cond.stat));
            if cond.holds(vb, vc) {
                failures.push(format!(
                    "{} {load}: {} {} {}{} ({} µs vs {} µs)",
                    b.probe(),
                    cond.stat,
                    cond.op,
                    if cond.ratio { cond.threshold } else { cond.threshold / 1000.0 },
                    if cond.ratio { "x" } else { " µs" },
                    us(vc),
                    us(vb)
                ));
            }
        }
    }
    Ok(Comparison { table, failures })
}

/// A cost or a bandwidth (`sysbench`): the medians in the table's units and the change in the
/// metric's direction, as LMbench comparisons give it.
fn cost_row(b: &RunView, c: &RunView, metric: Metric, load: &str) -> String {
    let (vb, vc) = (b.data.total.percentile(0.5) as f64, c.data.total.percentile(0.5) as f64);
    let (scale, unit) = match metric.unit {
        Unit::KilobytesPerSecond => (1e3, "MB/s"),
        Unit::Picoseconds => (1e6, "µs"),
        Unit::Nanoseconds => (1e3, "µs"),
    };
    let change = if vb > 0.0 { (vc / vb - 1.0) * 100.0 } else { f64::NAN };
    let verdict = if change.abs() < 0.05 {
        "same"
    } else if metric.worse(vb, vc) {
        "worse"
    } else {
        "better"
    };
    format!(
        "{:<10} {:<14} {:<10} {:>14} {:>14} {:>8}  {change:+.1} % {verdict} ({unit}, {} is better)",
        b.probe(),
        load,
        "median",
        format!("{:.4}", vb / scale),
        format!("{:.4}", vc / scale),
        if vb > 0.0 { format!("{:.3}", vc / vb) } else { "-".into() },
        metric.names().1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_and_reject() {
        let c = parse_conditions("p99 > 1.10x, max >= 500us").unwrap();
        assert_eq!(c[0], Condition { stat: "p99".into(), op: ">".into(), threshold: 1.10, ratio: true });
        assert_eq!(c[1].threshold, 500_000.0);
        assert!(!c[1].ratio);
        assert!(c[0].holds(100.0, 111.0) && !c[0].holds(100.0, 109.0));
        for bad in ["p99 1.1x", "p42x > 1x", "p99 > fast", "p99 > 1.1", ""] {
            assert!(parse_conditions(bad).is_err(), "{bad} accepted");
        }
    }
}
