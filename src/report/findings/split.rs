//! Where each label's timer latency went (`--split`): of the p99, how much the timer interrupt
//! took and how much was left to scheduling, from the same stored statistics as the per-label
//! table the sentence links to.

use super::{us, Finding, Number, Topic, Unit};
use crate::report::page::split::{self, Shares};
use crate::report::select::RunView;

/// Below this share of samples matched with their timer's expiry, the IRQ side is a caveat.
const MATCHED: f64 = 0.99;

/// Per label and probe with split runs, a sentence on its loaded run with the most samples, or
/// its idle one when no loaded run was split.
pub fn sentences(runs: &[RunView]) -> Vec<Finding> {
    // A run without samples has no p99 to split.
    let split: Vec<(&RunView, Shares)> =
        runs.iter().filter(|r| r.data.total.count > 0).filter_map(|r| Some((r, Shares::of(r)?))).collect();
    let mut out = Vec::new();
    for label in super::labels(split.iter().map(|(r, _)| *r)) {
        let mine: Vec<&(&RunView, Shares)> = split.iter().filter(|(r, _)| r.label() == label).collect();
        for probe in crate::report::page::distinct(mine.iter().map(|(r, _)| r.probe().to_string())) {
            let best = mine
                .iter()
                .filter(|(r, _)| r.probe() == probe)
                .max_by_key(|(r, _)| (r.load() != "none", r.data.total.count));
            out.extend(best.map(|(r, s)| sentence(r, s)));
        }
    }
    out
}

fn sentence(r: &RunView, s: &Shares) -> Finding {
    let loaded = r.load() != "none";
    let sentence = format!(
        "Where the latency went, {} {}: of the p99 of {} µs, the timer interrupt took {} µs ({}); the rest, {} µs, \
         was scheduling: the worst case came mostly from {}. At the max of {} µs, the interrupt's own max was \
         {} µs.",
        r.label(),
        super::cell(r),
        us(s.thread_p99 as f64),
        us(s.irq_p99 as f64),
        split::percent(s.irq_share_p99()),
        us(s.scheduling_p99() as f64),
        s.p99_mostly(),
        us(s.thread_max as f64),
        us(s.irq_max as f64),
    );
    let mut caveats: Vec<String> = super::emulated::caveat(r).into_iter().collect();
    if s.matched < MATCHED {
        caveats.push(format!(
            "only {} of the samples were matched with their timer's expiry: the IRQ side is theirs alone",
            split::percent(s.matched)
        ));
    }
    Finding {
        weight: if loaded { 610 } else { 590 },
        topic: Topic::Split,
        sentence,
        numbers: vec![
            Number::us("p99", s.thread_p99 as f64),
            Number::us("irq p99", s.irq_p99 as f64),
            Number::us("scheduling p99", s.scheduling_p99() as f64),
            Number::new("irq share of p99", s.irq_share_p99() * 100.0, Unit::Percent),
            Number::us("max", s.thread_max as f64),
            Number::us("irq max", s.irq_max as f64),
            Number::new("matched", s.matched * 100.0, Unit::Percent),
        ],
        link: split::anchor(r.probe(), r.label()),
        caveats,
    }
}
