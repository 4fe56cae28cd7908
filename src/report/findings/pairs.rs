//! One label against its baseline, per probe and load: the change in max, p99.9 and average,
//! as the ØMQ study states it ("cut the loaded max from A to B (N×) while the average rose
//! from C to D").

use super::{emulated, factor, us, Finding, Number, Topic, Unit};
use crate::model::Metric;
use crate::report::select::RunView;
use crate::report::text::compare::{matched, value};

/// The pairs (baseline, label) to compare: every other label against the baseline named, else
/// each PREEMPT_RT label (by its system snapshot) against each of the others, else every label
/// against the first. One label: none.
pub fn choose(runs: &[RunView], costs: &[RunView], baseline: Option<&str>) -> Vec<(String, String)> {
    let labels = super::labels(runs.iter().chain(costs));
    let against = |b: &str| labels.iter().filter(|l| **l != b).map(|l| (b.to_string(), l.to_string())).collect();
    if let Some(b) = baseline.filter(|b| labels.contains(b)) {
        return against(b);
    }
    let realtime = |label: &str| {
        let newest = runs.iter().chain(costs).filter(|r| r.label() == label).max_by_key(|r| r.data.header.id);
        newest.is_some_and(|r| r.data.header.system.preemption.is_realtime())
    };
    let (rt, other): (Vec<&str>, Vec<&str>) = labels.iter().partition(|l| realtime(l));
    if !rt.is_empty() && !other.is_empty() {
        return other.iter().flat_map(|o| rt.iter().map(|r| (o.to_string(), r.to_string()))).collect();
    }
    labels.first().map_or_else(Vec::new, |b| against(b))
}

/// A statistic's change from the baseline's `b` to the label's `c`, in words: the verb, the
/// values and the factor.
fn change(what: &str, b: f64, c: f64) -> String {
    if c < b {
        let by = if c > 0.0 { format!(" ({})", factor(b / c)) } else { String::new() };
        format!("cut the {what} from {} to {} µs{by}", us(b), us(c))
    } else if c > b {
        let by = if b > 0.0 { format!(" ({})", factor(c / b)) } else { String::new() };
        format!("raised the {what} from {} to {} µs{by}", us(b), us(c))
    } else {
        format!("left the {what} at {} µs", us(b))
    }
}

/// The sentences of `label` against `baseline`, one per probe × load both measured on a real
/// CPU (the emulated ones are said once, by `emulated`).
pub fn sentences(runs: &[RunView], baseline: &str, label: &str) -> Vec<Finding> {
    cells(runs, baseline, label)
        .into_iter()
        .filter(|(b, c)| !emulated::is(b) && !emulated::is(c))
        .map(|(b, c)| sentence(b, c))
        .collect()
}

/// The latency runs of `baseline` and `label` that compare, one pair per probe × load × length.
pub fn cells<'a>(runs: &'a [RunView], baseline: &str, label: &str) -> Vec<(&'a RunView, &'a RunView)> {
    newest(matched(runs, baseline, label))
        .into_iter()
        .filter(|(b, _)| b.data.header.metric == Metric::LATENCY)
        .collect()
}

/// One pair per probe × load × length: the baseline's newest run (a report may hold older ones
/// asked for by id), in the order given.
pub fn newest<'a>(pairs: Vec<(&'a RunView, &'a RunView)>) -> Vec<(&'a RunView, &'a RunView)> {
    let key = |r: &RunView| (r.probe().to_string(), r.load(), r.data.header.params.duration_s().map(f64::to_bits));
    let kept: Vec<i64> = pairs
        .iter()
        .filter(|(b, _)| !pairs.iter().any(|(o, _)| key(o) == key(b) && o.data.header.id > b.data.header.id))
        .map(|(b, _)| b.data.header.id)
        .collect();
    pairs.into_iter().filter(|(b, _)| kept.contains(&b.data.header.id)).collect()
}

fn sentence(b: &RunView, c: &RunView) -> Finding {
    let stat = |r: &RunView, s: &str| value(&r.data.total, s);
    let (max, p999, avg) =
        ((stat(b, "max"), stat(c, "max")), (stat(b, "p99.9"), stat(c, "p99.9")), (stat(b, "avg"), stat(c, "avg")));
    let worst = if max.1 < max.0 {
        change("max", max.0, max.1)
    } else {
        format!("the worst case is not better: it {}", change("max", max.0, max.1))
    };
    let tail = change("p99.9", p999.0, p999.1);
    // "while" where the average went the other way than the max, "and" where it went along.
    let joint = if (avg.1 > avg.0) == (max.1 < max.0) { "while" } else { "and" };
    let mean = match avg.1.partial_cmp(&avg.0) {
        Some(std::cmp::Ordering::Greater) => format!("the average rose from {} to {} µs", us(avg.0), us(avg.1)),
        Some(std::cmp::Ordering::Less) => format!("the average fell from {} to {} µs", us(avg.0), us(avg.1)),
        _ => format!("the average stayed at {} µs", us(avg.0)),
    };
    let sentence = format!(
        "{label} against {base}, {cell}: {worst}, {tail}, {joint} {mean}.",
        label = c.label(),
        base = b.label(),
        cell = super::cell(b)
    );
    let mut numbers = Vec::new();
    for (name, (vb, vc)) in [("max", max), ("p99.9", p999), ("avg", avg)] {
        numbers.push(Number::us(format!("{name} {}", b.label()), vb));
        numbers.push(Number::us(format!("{name} {}", c.label()), vc));
        if vb > 0.0 {
            numbers.push(Number::new(format!("{name} ratio"), vc / vb, Unit::Ratio));
        }
    }
    let caveats = [b, c].into_iter().filter_map(super::steal::caveat).collect();
    let loaded = b.load() != "none";
    Finding {
        weight: if loaded { 800 } else { 700 },
        topic: Topic::Pair,
        sentence,
        numbers,
        link: format!("{}-bars", b.probe()),
        caveats,
    }
}
