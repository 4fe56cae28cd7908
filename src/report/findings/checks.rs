//! The verdicts of the qualification checks that pass or fail rather than measure (`migrate`'s
//! violations, `pi`'s deadlocks): a kernel that fails one fails what the run was for, whatever
//! its latencies; one that passes says what it went through. A control run (`--inject`) must be
//! caught: one that is not says the check cannot be trusted. And the mistakes `watch` found in
//! an application, each once.

use super::{Finding, Number, Topic, Unit};
use crate::model::ProbeParams;
use crate::report::select::RunView;

/// A kernel's failed check: above every comparison of latencies.
const FAILED: u32 = 850;
const PASSED: u32 = 300;
const CONTROL_CAUGHT: u32 = 200;
/// A mistake in a watched application: what to fix before reading its latencies.
const MISTAKE: u32 = 800;

pub fn sentences(runs: &[RunView]) -> Vec<Finding> {
    let mut out: Vec<Finding> = runs.iter().filter_map(verdict).collect();
    out.extend(mistakes(runs));
    out
}

/// The mistakes `watch` found, each once per label (one naming two threads is in both runs).
fn mistakes(runs: &[RunView]) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for r in runs {
        let Some(ProbeParams::Watch(w)) = r.data.header.params.measured().map(|m| &m.probe) else { continue };
        for said in &w.findings {
            let sentence = format!("Mistake in the watched application ({}, {}): {said}", r.label(), w.target);
            if out.iter().any(|f| f.sentence == sentence) {
                continue;
            }
            out.push(Finding {
                weight: MISTAKE,
                topic: Topic::Check,
                sentence,
                numbers: Vec::new(),
                link: format!("probe-{}", r.probe()),
                caveats: super::emulated::caveat(r).into_iter().collect(),
            });
        }
    }
    out
}

/// What a run's check found: whether it was the control, how many failures it counted, and
/// what it went through in words.
struct Verdict {
    control: bool,
    found: u64,
    sentence: String,
    numbers: Vec<Number>,
}

fn verdict(r: &RunView) -> Option<Finding> {
    let v = match &r.data.header.params.measured()?.probe {
        ProbeParams::Migrate(m) => migrate(m)?,
        ProbeParams::Pi(p) => pi(p)?,
        _ => return None,
    };
    let at = format!("{} {}", r.label(), super::cell(r));
    let (weight, sentence) = match (v.control, v.found > 0) {
        (false, false) => (PASSED, format!("Passed ({at}): {}", v.sentence)),
        (false, true) => (FAILED, format!("Failed ({at}): {}", v.sentence)),
        (true, true) => (CONTROL_CAUGHT, format!("The control was caught ({at}, --inject): {}", v.sentence)),
        (true, false) => (
            FAILED,
            format!("The control was not caught ({at}, --inject): the check cannot be trusted — {}", v.sentence),
        ),
    };
    Some(Finding {
        weight,
        topic: Topic::Check,
        sentence,
        numbers: v.numbers,
        link: format!("probe-{}", r.probe()),
        caveats: super::emulated::caveat(r).into_iter().collect(),
    })
}

fn migrate(m: &crate::model::MigrateParams) -> Option<Verdict> {
    let (violations, intervals) = (m.violations?, m.intervals?);
    let in_steal = m.violations_in_steal.unwrap_or(0);
    let steal = match in_steal {
        0 => String::new(),
        n => format!(" ({n} of them in intervals where the hypervisor stole time)"),
    };
    let first = m.first_violations.first().map_or(String::new(), |f| format!("; the first: {f}"));
    let sentence = format!(
        "in {intervals} intervals of {} FIFO tasks, a higher one waited over {} µs while a lower one ran {violations} \
         time(s){steal}{first}",
        m.tasks, m.max_wait_us
    );
    Some(Verdict {
        control: m.inject,
        found: violations,
        sentence,
        numbers: vec![
            Number::new("intervals", intervals as f64, Unit::Count),
            Number::new("violations", violations as f64, Unit::Count),
            Number::new("violations in steal", in_steal as f64, Unit::Count),
        ],
    })
}

fn pi(p: &crate::model::PiParams) -> Option<Verdict> {
    let (inversions, deadlocks) = (p.inversions?, p.deadlocks?);
    let sentence = match p.first_deadlocks.first() {
        Some(first) => first.clone(),
        None => format!("{inversions} priority inversions, each resolved by priority inheritance, no deadlock"),
    };
    Some(Verdict {
        control: p.inject,
        found: deadlocks,
        sentence,
        numbers: vec![
            Number::new("inversions", inversions as f64, Unit::Count),
            Number::new("deadlocks", deadlocks as f64, Unit::Count),
        ],
    })
}
