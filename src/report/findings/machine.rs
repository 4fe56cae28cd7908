//! Whether a label's machine is within the Geode paper's rule of thumb (worst case within 10⁵
//! CPU cycles), what explains it when not, and the audit's bad findings to fix first.

use super::{cell, steal, us, Finding, Number, Topic, Unit};
use crate::model::{Lacked, Policy, Severity};
use crate::report::page::tables::rule_of_thumb;
use crate::report::select::RunView;

/// Per label whose CPU clock is known: within the rule of thumb or not, and why.
pub fn rules(runs: &[RunView]) -> Vec<Finding> {
    super::labels(runs.iter()).into_iter().filter_map(|l| rule(runs, l)).collect()
}

/// The runs of `label` held to the rule of thumb, each with its budget in µs: those whose CPU
/// clock is known, on a real CPU (an emulated one's stalls are the emulator's: `emulated` says
/// so).
fn judged<'a>(runs: &'a [RunView], label: &str) -> Vec<(&'a RunView, f64)> {
    let real = runs.iter().filter(|r| r.label() == label && !super::emulated::is(r));
    real.filter_map(|r| rule_of_thumb(r).map(|(b, _)| (r, b))).collect()
}

fn rule(runs: &[RunView], label: &str) -> Option<Finding> {
    let judged = judged(runs, label);
    let worst = judged.iter().max_by_key(|(r, _)| r.data.total.max)?;
    let (budget_us, max_ns) = (worst.1, worst.0.data.total.max as f64);
    let budget_ns = budget_us * 1000.0;
    let over: Vec<&RunView> =
        judged.iter().filter(|(r, b)| r.data.total.max as f64 > b * 1000.0).map(|(r, _)| *r).collect();
    let mhz = worst.0.data.header.system.cpu_mhz.unwrap_or(0.0);
    let budget = format!("the 10⁵-cycle budget of {} µs ({mhz:.0} MHz)", crate::units::fmt_us(budget_us));
    let mut numbers = vec![
        Number::new("budget", budget_us, Unit::Us),
        Number::us("max", max_ns),
        Number::new("runs over budget", over.len() as f64, Unit::Count),
        Number::new("runs judged", judged.len() as f64, Unit::Count),
    ];
    let mut caveats = Vec::new();
    let mut because = Vec::new();
    because.extend(judged.iter().filter_map(|(r, _)| load_short(r)));
    let other: Vec<String> =
        judged.iter().filter(|(r, _)| at_sched_other(r)).map(|(r, _)| r.data.header.id.to_string()).collect();
    if !other.is_empty() {
        because.push(format!(
            "{} of {} runs were measured at SCHED_OTHER, not at real-time priority (run {})",
            other.len(),
            judged.len(),
            other.join(", ")
        ));
    }
    for lacked in [Lacked::MemoryLock, Lacked::CpuDmaLatency] {
        let ids: Vec<String> =
            judged.iter().filter(|(r, _)| lacked_by(r, lacked)).map(|(r, _)| r.data.header.id.to_string()).collect();
        if !ids.is_empty() {
            because.push(format!(
                "{} of {} runs lacked {} (run {})",
                ids.len(),
                judged.len(),
                lacked.short(),
                ids.join(", ")
            ));
        }
    }
    let link;
    let sentence = if over.is_empty() {
        caveats.append(&mut because);
        link = "rule-of-thumb".to_string();
        format!(
            "Rule of thumb, {label}: within it — the largest max, {} µs ({}), is within {budget}.",
            us(max_ns),
            cell(worst.0)
        )
    } else {
        let unseen = steal::unseen(&over);
        let (steal, steal_numbers) = steal_explains(&over, budget_ns, unseen.is_some());
        numbers.extend(steal_numbers);
        because.splice(0..0, steal);
        if let Some((unseen, kernel_max)) = unseen {
            because.insert(0, unseen);
            numbers.push(Number::us("largest gap the kernel made", kernel_max as f64));
        }
        because.extend(
            bad_audit(runs, label).iter().map(|(check, fix)| format!("the audit finds {check} bad (fix: {fix})")),
        );
        link = format!("run{}-scatter", worst.0.data.header.id);
        let why = if because.is_empty() { "nothing stored explains it".to_string() } else { because.join("; ") };
        format!(
            "Rule of thumb, {label}: not within it — {} reached {} µs, {:.1}× {budget}, in {} of {} runs. What explains it: {why}.",
            cell(worst.0),
            us(max_ns),
            max_ns / budget_ns,
            over.len(),
            judged.len()
        )
    };
    let weight = if over.is_empty() { 650 } else { 850 };
    Some(Finding { weight, topic: Topic::RuleOfThumb, sentence, numbers, link, caveats })
}

/// What steal explains over the runs beyond the budget: the share of their over-budget
/// intervals in which the hypervisor took the CPU, and the largest latency outside those.
/// Where a classified noise run saw stalls the kernel did not (`classified`), a latency outside
/// the steal intervals is not called the kernel's: steal time is too coarse to show them.
fn steal_explains(over: &[&RunView], budget_ns: f64, classified: bool) -> (Option<String>, Vec<Number>) {
    let found: Vec<steal::Steal> = over.iter().filter_map(|r| steal::of(r, budget_ns as u64)).collect();
    let (n, k) = found.iter().fold((0, 0), |(n, k), s| (n + s.over, k + s.over_explained));
    if k == 0 {
        return (None, Vec::new());
    }
    let outside = found.iter().filter_map(|s| s.outside_ns).max();
    let share = k as f64 / n as f64 * 100.0;
    let rest = match outside {
        Some(o) if o as f64 <= budget_ns => {
            format!("the largest latency outside them, {} µs, is within the budget", us(o as f64))
        }
        Some(_) if classified => "steal time, counted by the tick, is too coarse to show the other stalls".into(),
        Some(o) => format!("the largest latency outside them is {} µs, still over the budget", us(o as f64)),
        None => "no interval is outside them".into(),
    };
    let mut numbers = vec![Number::new("over-budget intervals explained by steal", share, Unit::Percent)];
    numbers.extend(outside.map(|o| Number::us("largest outside steal", o as f64)));
    (
        Some(format!(
            "the hypervisor took the CPU (steal) in {k} of the {n} intervals over budget ({share:.0} %); {rest}"
        )),
        numbers,
    )
}

/// The bad audit findings of the label's newest run that say how to fix them: (check, fix).
fn bad_audit(runs: &[RunView], label: &str) -> Vec<(String, String)> {
    let findings = shown_audit(runs, label).and_then(|r| r.data.header.system.audit.as_ref());
    findings
        .into_iter()
        .flatten()
        .filter(|f| f.severity == Severity::Bad)
        .filter_map(|f| f.fix.clone().map(|fix| (f.check.clone(), fix)))
        .collect()
}

/// The run whose audit the page shows for `label` (its last).
fn shown_audit<'a>(runs: &'a [RunView], label: &str) -> Option<&'a RunView> {
    runs.iter().rev().find(|r| r.label() == label)
}

/// The run's load that fell short of its CPU target, in words.
fn load_short(r: &RunView) -> Option<String> {
    let report = r.data.header.load.report()?;
    let (target, activity) = (report.cpu_target_percent?, report.activity.as_ref()?);
    let short: Vec<String> = activity
        .cpu_busy_percent
        .iter()
        .enumerate()
        .filter(|(_, b)| **b < target)
        .map(|(cpu, b)| format!("CPU {cpu} {b:.0} %"))
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "load '{}' of run {} did not reach its {target:.0} % target ({})",
            report.profile,
            r.data.header.id,
            short.join(", ")
        )
    })
}

/// True when the run measured without `what` (memory lock, `/dev/cpu_dma_latency`), as its
/// privileges allowed.
fn lacked_by(r: &RunView, what: Lacked) -> bool {
    r.data.header.params.measured().is_some_and(|m| m.lacked.contains(&what))
}

/// True when a thread of the run measured at SCHED_OTHER (rtbench's own runs only).
fn at_sched_other(r: &RunView) -> bool {
    let h = &r.data.header;
    r.data.threads.iter().any(|t| h.params.ran_at(t.thread, h.rt_priority).is_some_and(|(p, _)| p == Policy::Other))
}

/// The audit's bad findings with a fix, the same finding of several labels once.
pub fn fix_first(runs: &[RunView]) -> Vec<Finding> {
    let mut found: Vec<(String, String, Vec<String>, i64)> = Vec::new();
    for r in super::labels(runs.iter()).into_iter().filter_map(|l| shown_audit(runs, l)) {
        for (check, fix) in bad_audit(runs, r.label()) {
            match found.iter_mut().find(|f| f.0 == check && f.1 == fix) {
                Some(f) => f.2.push(r.label().to_string()),
                None => found.push((check, fix, vec![r.label().to_string()], r.data.header.id)),
            }
        }
    }
    let summary = |check: &str, id: i64| {
        let run = runs.iter().find(|r| r.data.header.id == id);
        let audit = run.and_then(|r| r.data.header.system.audit.as_ref());
        audit.into_iter().flatten().find(|f| f.check == check).map_or(String::new(), |f| f.summary.clone())
    };
    found
        .into_iter()
        .map(|(check, fix, labels, id)| Finding {
            weight: 560,
            topic: Topic::FixFirst,
            sentence: format!(
                "Fix first ({}): {check} is bad — {}; fix: {fix}",
                labels.join(", "),
                summary(&check, id).trim_end_matches('.')
            ),
            numbers: Vec::new(),
            link: format!("audit-run{id}"),
            caveats: Vec::new(),
        })
        .collect()
}
