//! One label against a baseline, per probe × load, and the `--fail-if` conditions that let CI
//! gate a kernel change on it.

use std::fmt::Write;

use anyhow::Result;
use schemars::JsonSchema;
use serde::Serialize;

use crate::invalid;
use crate::model::{Better, Metric, Unit};
use crate::report::page::figures::load_name;
use crate::report::select::RunView;
use crate::report::text::compare_noise::ClassPair;
use crate::stats::Stats;
use crate::units::us;

/// The statistics compared, by the names conditions use.
const STATS: &[&str] = &["min", "avg", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "max"];

/// A statistic of a run by the name conditions use ("max", "avg", "p99.9").
pub(crate) fn value(s: &Stats, stat: &str) -> f64 {
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
    /// What the threshold is compared with: the ratio, or the label's own value.
    fn compared(&self, base: f64, cand: f64) -> f64 {
        if !self.ratio {
            cand
        } else if base > 0.0 {
            cand / base
        } else {
            f64::INFINITY
        }
    }

    fn holds(&self, base: f64, cand: f64) -> bool {
        let v = self.compared(base, cand);
        match self.op.as_str() {
            ">" => v > self.threshold,
            ">=" => v >= self.threshold,
            "<" => v < self.threshold,
            _ => v <= self.threshold,
        }
    }
}

/// A statistic of one probe × load in both labels, in the run's unit (ns for latencies).
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatRatio {
    pub stat: String,
    pub baseline: f64,
    pub label: f64,
    /// label / baseline; `None` when the baseline is 0.
    pub ratio: Option<f64>,
}

/// What a `--fail-if` condition says of one probe × load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// Conditions are on latencies; a cost or bandwidth (`sysbench`) compares by its median.
    Skip,
}

/// One condition checked on one probe × load, with the numbers it was decided on.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Check {
    /// The condition as written back, e.g. `p99 > 1.1x`.
    pub condition: String,
    pub verdict: Verdict,
    /// The baseline's and the label's value of the statistic, in the runs' unit.
    pub baseline: f64,
    pub label: f64,
    /// What the threshold was compared with: the ratio, or the label's latency in ns; `None`
    /// when skipped, or for a ratio over a baseline of 0.
    pub value: Option<f64>,
    /// One line for people: the condition and the numbers.
    pub message: String,
}

/// One probe × load present in both labels.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Pair {
    pub probe: String,
    pub load: String,
    pub unit: Unit,
    pub better: Better,
    pub stats: Vec<StatRatio>,
    pub checks: Vec<Check>,
}

/// One label against a baseline: every pair of runs compared, and the table of them.
pub struct Comparison {
    pub baseline: String,
    pub label: String,
    pub pairs: Vec<Pair>,
    pub table: String,
    /// `noise --classify`: the pairs classified in both labels, by class.
    pub classes: Vec<ClassPair>,
}

impl Comparison {
    /// Every check, in pair order.
    pub fn checks(&self) -> impl Iterator<Item = &Check> {
        self.pairs.iter().flat_map(|p| &p.checks)
    }

    /// The checks whose condition holds, in pair order.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks().filter(|c| c.verdict == Verdict::Fail)
    }
}

/// What `compare --json` prints (schema: `schema/compare.schema.json`).
#[derive(Serialize, JsonSchema)]
pub struct Document<'a> {
    pub baseline: &'a str,
    pub label: &'a str,
    /// True when a `--fail-if` condition holds somewhere (the exit code is then 1).
    pub failed: bool,
    /// Every probe × load of both labels.
    pub pairs: &'a [Pair],
    /// `noise --classify`: each probe × load classified in both labels, the share of its noise
    /// and the noise per second of each class that made any (`hardware`: nothing the kernel saw).
    #[serde(skip_serializing_if = "<[ClassPair]>::is_empty")]
    pub noise_classes: &'a [ClassPair],
}

pub fn document(c: &Comparison) -> Document<'_> {
    let failed = c.failures().next().is_some();
    Document { baseline: &c.baseline, label: &c.label, failed, pairs: &c.pairs, noise_classes: &c.classes }
}

/// Compares `label` against `baseline` over `runs`, pairing runs by probe, load and length (a
/// study's extended cells compare with each other).
pub fn compare(runs: &[RunView], baseline: &str, label: &str, conditions: &[Condition]) -> Result<Comparison> {
    let pairs = matched(runs, baseline, label);
    if pairs.is_empty() {
        return Err(invalid!("labels '{baseline}' and '{label}' share no probe × load to compare"));
    }
    let classes = crate::report::text::compare_noise::pairs(&pairs);
    let pairs: Vec<Pair> = pairs.iter().map(|(b, c)| pair(b, c, conditions)).collect();
    let mut table =
        format!("{:<10} {:<14} {:<10} {:>14} {:>14} {:>8}\n", "probe", "load", "stat", baseline, label, "ratio");
    for p in &pairs {
        table_rows(p, &mut table);
    }
    Ok(Comparison { baseline: baseline.into(), label: label.into(), pairs, table, classes })
}

/// The runs of `baseline` and `label` that compare: the same probe, load and length, in the
/// baseline's order.
pub fn matched<'a>(runs: &'a [RunView], baseline: &str, label: &str) -> Vec<(&'a RunView, &'a RunView)> {
    let length = |r: &RunView| r.data.header.params.duration_s().map(f64::to_bits);
    let pick = |b: &RunView| {
        runs.iter()
            .find(|r| r.label() == label && r.probe() == b.probe() && r.load() == b.load() && length(r) == length(b))
    };
    runs.iter().filter(|r| r.label() == baseline).filter_map(|b| pick(b).map(|c| (b, c))).collect()
}

/// The statistics of one pair of runs and the conditions checked on them.
fn pair(b: &RunView, c: &RunView, conditions: &[Condition]) -> Pair {
    let metric = b.data.header.metric;
    let ratio = |vb: f64, vc: f64| (vb > 0.0).then(|| vc / vb);
    let (probe, load) = (b.probe().to_string(), load_name(&b.load()));
    if metric != Metric::LATENCY {
        let (vb, vc) = (b.data.total.percentile(0.5) as f64, c.data.total.percentile(0.5) as f64);
        let stats = vec![StatRatio { stat: "median".into(), baseline: vb, label: vc, ratio: ratio(vb, vc) }];
        let checks = conditions
            .iter()
            .map(|cond| Check {
                condition: cond.to_string(),
                verdict: Verdict::Skip,
                baseline: vb,
                label: vc,
                value: None,
                message: format!("{probe} {load}: {cond} not checked: --fail-if applies to latencies"),
            })
            .collect();
        return Pair { probe, load, unit: metric.unit, better: metric.better, stats, checks };
    }
    let ratios = |prefix: &str, sb: &Stats, sc: &Stats| -> Vec<StatRatio> {
        STATS
            .iter()
            .map(|stat| {
                let (vb, vc) = (value(sb, stat), value(sc, stat));
                StatRatio { stat: format!("{prefix}{stat}"), baseline: vb, label: vc, ratio: ratio(vb, vc) }
            })
            .collect()
    };
    let mut stats = ratios("", &b.data.total, &c.data.total);
    // Both runs split (`--split`): which side of the wake-up changed, the interrupt's too.
    if let (Some(ib), Some(ic)) = (b.data.irq_total(), c.data.irq_total()) {
        stats.extend(ratios("irq ", &ib, &ic));
    }
    let checks = conditions.iter().map(|cond| cond.check(&probe, &load, &b.data.total, &c.data.total)).collect();
    Pair { probe, load, unit: metric.unit, better: metric.better, stats, checks }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ratio {
            write!(f, "{} {} {}x", self.stat, self.op, self.threshold)
        } else {
            write!(f, "{} {} {} µs", self.stat, self.op, self.threshold / 1000.0)
        }
    }
}

impl Condition {
    /// This condition on one probe × load: `base` is the baseline's run, `cand` the label's.
    fn check(&self, probe: &str, load: &str, base: &Stats, cand: &Stats) -> Check {
        let (vb, vc) = (value(base, &self.stat), value(cand, &self.stat));
        let holds = self.holds(vb, vc);
        Check {
            condition: self.to_string(),
            verdict: if holds { Verdict::Fail } else { Verdict::Pass },
            baseline: vb,
            label: vc,
            value: Some(self.compared(vb, vc)).filter(|v| v.is_finite()),
            message: format!("{probe} {load}: {self} ({} µs vs {} µs)", us(vc), us(vb)),
        }
    }
}

/// The table's lines of one pair.
fn table_rows(p: &Pair, table: &mut String) {
    let ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.3}"));
    if (Metric { unit: p.unit, better: p.better }) != Metric::LATENCY {
        let _ = writeln!(table, "{}", cost_row(p));
        return;
    }
    for s in &p.stats {
        let (vb, vc) = (us(s.baseline), us(s.label));
        let _ = writeln!(
            table,
            "{:<10} {:<14} {:<10} {:>14} {:>14} {:>8}",
            p.probe,
            p.load,
            s.stat,
            vb,
            vc,
            ratio(s.ratio)
        );
    }
}

/// A cost or a bandwidth (`sysbench`): the medians in the table's units and the change in the
/// metric's direction, as LMbench comparisons give it.
fn cost_row(p: &Pair) -> String {
    let metric = Metric { unit: p.unit, better: p.better };
    let (vb, vc) = (p.stats[0].baseline, p.stats[0].label);
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
        p.probe,
        p.load,
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

    const COMMITTED: &str = "schema/compare.schema.json";

    /// The committed schema of `compare --json` is the one its types generate. After changing
    /// them, `RTBENCH_BLESS=1 cargo test --lib report::text::compare` writes it anew (review its diff).
    #[test]
    fn the_committed_schema_is_generated_from_the_document() {
        let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
        let schema = settings.into_generator().into_root_schema_for::<Document>();
        let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
        if std::env::var_os("RTBENCH_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(committed == generated, "{COMMITTED} differs from the schema the types generate; bless it");
    }

    #[test]
    fn a_check_carries_its_numbers_and_a_zero_baseline_has_no_ratio() {
        let stats = |v: u64| {
            let mut s = Stats::default();
            s.record(v);
            s
        };
        let c = parse_conditions("max > 1.5x, max > 1us").unwrap();
        let check = c[0].check("timer", "idle", &stats(2000), &stats(4000));
        assert_eq!(check.verdict, Verdict::Fail);
        assert_eq!((check.baseline, check.label, check.value), (2000.0, 4000.0, Some(2.0)));
        assert_eq!(check.message, "timer idle: max > 1.5x (4.000 µs vs 2.000 µs)");
        assert_eq!(c[1].check("timer", "idle", &stats(2000), &stats(900)).verdict, Verdict::Pass);
        let zero = c[0].check("timer", "idle", &stats(0), &stats(5));
        assert_eq!((zero.verdict, zero.value), (Verdict::Fail, None));
    }

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
