//! `compare`'s noise by class (`noise --classify`): for each probe × load whose runs were
//! classified in both labels, each class's share of the noise and its noise per second, as
//! rtla osnoise top's columns. A section of its own: these are shares and rates, not the µs
//! statistics of compare's rows.

use std::fmt::Write;

use schemars::JsonSchema;
use serde::Serialize;

use crate::model::{NoiseClass, RunHeader};
use crate::report::page::figures::load_name;
use crate::report::select::RunView;

/// One class in one label's run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassShare {
    /// The class's part of the run's noise (all its gaps' time), 0 … 1.
    pub share: f64,
    /// The class's noise per second of the run, ns.
    pub ns_per_s: f64,
}

/// One class in both labels.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassRow {
    pub class: NoiseClass,
    pub baseline: ClassShare,
    pub label: ClassShare,
}

/// One probe × load classified in both labels: the classes that made noise in either.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassPair {
    pub probe: String,
    pub load: String,
    pub classes: Vec<ClassRow>,
    /// The classification's BPF programs' own time in each run (by their own clock), as a part
    /// of its noise and per second: they run inside the gaps they classify, so that much of the
    /// classes' noise is theirs, and a kernel with more interrupts runs them more. Absent where
    /// either run did not count it (ftrace, runs made before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub programs: Option<OwnRow>,
}

/// The classification's own time in both labels' runs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OwnRow {
    pub baseline: ClassShare,
    pub label: ClassShare,
}

/// The classified pairs among `matched` (baseline's run, label's run).
pub fn pairs(matched: &[(&RunView, &RunView)]) -> Vec<ClassPair> {
    matched
        .iter()
        .filter_map(|(b, c)| {
            let ((sb, ob), (sc, oc)) = (shares(b)?, shares(c)?);
            let rows = NoiseClass::ALL.into_iter().zip(sb.into_iter().zip(sc));
            let classes = rows
                .filter(|(_, (b, c))| b.share > 0.0 || c.share > 0.0)
                .map(|(class, (baseline, label))| ClassRow { class, baseline, label })
                .collect();
            let programs = ob.zip(oc).map(|(baseline, label)| OwnRow { baseline, label });
            Some(ClassPair { probe: b.probe().to_string(), load: load_name(&b.load()), classes, programs })
        })
        .collect()
}

/// A classified run's classes in [`NoiseClass::ALL`]'s order, and its programs' own time where
/// it counted it; `None` when it was not classified or its length is not known.
fn shares(r: &RunView) -> Option<(Vec<ClassShare>, Option<ClassShare>)> {
    let h = &r.data.header;
    let c = h.params.measured()?.classify.as_ref().filter(|c| c.skipped.is_none())?;
    let seconds = seconds(h)?;
    let ns = NoiseClass::ALL.map(|k| c.class(k).1 as f64);
    let total: f64 = ns.iter().sum();
    let of = |v: f64| ClassShare { share: if total > 0.0 { v / total } else { 0.0 }, ns_per_s: v / seconds };
    Some((ns.into_iter().map(of).collect(), c.programs_ns.map(|p| of(p as f64))))
}

/// How long the run measured: its `-D`, else from its start to its end.
fn seconds(h: &RunHeader) -> Option<f64> {
    let asked = h.params.duration_s();
    let elapsed = || Some(crate::timefmt::parse_rfc3339(h.end.as_ref()?)? - crate::timefmt::parse_rfc3339(&h.start)?);
    asked.or_else(elapsed).filter(|s| *s > 0.0)
}

/// The section as `compare` prints it; empty when no pair was classified in both labels.
pub fn table(pairs: &[ClassPair], baseline: &str, label: &str) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = "\nnoise by class (--classify): share of the noise, and noise per second (µs/s)\n".to_string();
    let _ = writeln!(
        out,
        "{:<10} {:<14} {:<14} {:>14} {:>14} {:>12} {:>12}",
        "probe",
        "load",
        "class",
        format!("{baseline} %"),
        format!("{label} %"),
        format!("{baseline} µs/s"),
        format!("{label} µs/s")
    );
    for p in pairs {
        let own = p.programs.as_ref().map(|o| ("its BPF's own", &o.baseline, &o.label));
        for (class, baseline, label) in p.classes.iter().map(|r| (r.class.heading(), &r.baseline, &r.label)).chain(own)
        {
            let pct = |s: &ClassShare| format!("{:.1}", s.share * 100.0);
            let rate = |s: &ClassShare| crate::units::fmt_ns_as_us(s.ns_per_s);
            let _ = writeln!(
                out,
                "{:<10} {:<14} {:<14} {:>14} {:>14} {:>12} {:>12}",
                p.probe,
                p.load,
                class,
                pct(baseline),
                pct(label),
                rate(baseline),
                rate(label)
            );
        }
    }
    if pairs.iter().any(|p| p.programs.is_some()) {
        out.push_str(
            "its BPF's own: the classification's programs' own time, inside the gaps above (part of their noise)\n",
        );
    }
    out
}
