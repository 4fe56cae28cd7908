//! What the extreme-value estimate says of each label's loaded timer cell: the latency
//! exceeded once in 10⁹ samples with its interval, or why there is none. The estimate is the
//! one the run's tail figure draws (from the histogram).

use super::{us, Finding, Number, Topic, Unit};
use crate::evt::{self, Verdict};
use crate::report::select::RunView;

/// The probability of the level stated.
const LEVEL: &str = "1e-9";
/// A level rarer than this many times the run's samples is an extrapolation.
const EXTRAPOLATED: f64 = 1000.0;

pub fn sentences(runs: &[RunView]) -> Vec<Finding> {
    let cells = runs.iter().filter(|r| r.probe() == "timer" && r.load() != "none");
    // Per label, its loaded timer run with the most samples: an extended cell where there is one.
    let best = |label: &str| cells.clone().filter(|r| r.label() == label).max_by_key(|r| r.data.total.count);
    super::labels(cells.clone()).into_iter().filter_map(best).filter_map(sentence).collect()
}

fn sentence(r: &RunView) -> Option<Finding> {
    let e = r.estimate()?;
    let head = format!("Worst case, {} {}", r.label(), super::cell(r));
    let samples = e.samples as f64;
    let mut numbers =
        vec![Number::new("samples", samples, Unit::Count), Number::us("observed max", e.observed_max_ns as f64)];
    let mut caveats: Vec<String> = super::emulated::caveat(r).into_iter().collect();
    let level = e.levels.iter().find(|l| l.name == LEVEL).filter(|_| e.verdict != Verdict::TooFew);
    let observed = us(e.observed_max_ns as f64);
    let sentence = match level {
        // An unsettled shape gives levels that mean nothing (10¹⁸ µs and beyond): none is stated.
        Some(_) if !e.stable => format!(
            "{head}: the tail's shape did not settle over the thresholds tried (ξ = {:.2}), so no level is stated; the observed max is {observed} µs.",
            e.xi.unwrap_or(f64::NAN)
        ),
        None => format!(
            "{head}: too few exceedances in its {} samples for an extreme-value estimate; the observed max is {observed} µs.",
            e.samples
        ),
        // A level beyond 1000× what was seen bounds nothing a reader can use.
        Some(l) if l.bounds_nothing(e.observed_max_ns) => {
            numbers.push(Number::us("level", l.ns));
            format!(
                "{head}: the fitted tail is so heavy that the 1e-9 level lies beyond {:.0}× the observed max of {observed} µs: no useful bound.",
                evt::BEYOND
            )
        }
        Some(l) => {
            let hi = l.hi_ns.map_or("unbounded".to_string(), |h| format!("{} µs", us(h)));
            numbers.push(Number::new("probability", l.probability, Unit::Probability));
            numbers.push(Number::us("level", l.ns));
            numbers.push(Number::us("level low", l.lo_ns));
            numbers.extend(l.hi_ns.map(|h| Number::us("level high", h)));
            let shape = match e.verdict {
                Verdict::HeavyTail => "heavy tail (ξ > 0): no finite worst case, rarer events are larger".to_string(),
                _ => format!("bounded tail, estimated endpoint {} µs", e.endpoint_ns.map_or("?".into(), us)),
            };
            let rarer = 1.0 / l.probability / samples.max(1.0);
            if rarer > EXTRAPOLATED {
                numbers.push(Number::new("rarer than the samples", rarer, Unit::Ratio));
                caveats.push(format!(
                    "an extrapolation: a 1e-9 level is {rarer:.0}× rarer than the run's {} samples",
                    e.samples
                ));
            }
            format!(
                "{head}: the latency exceeded once in 10⁹ samples is estimated at {} µs (95 %: {} to {hi}); {shape}.",
                us(l.ns),
                us(l.lo_ns)
            )
        }
    };
    Some(Finding {
        weight: 600,
        topic: Topic::WorstCase,
        sentence,
        numbers,
        link: format!("run{}-tail", r.data.header.id),
        caveats,
    })
}
