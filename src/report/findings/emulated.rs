//! Runs made on an emulated CPU (`kernels --allow-emulated` under TCG): their latencies and
//! costs are the emulator's, so no kernel is ranked on them nor held to the rule of thumb, and
//! what is left unranked for that one cause is said once, its cells listed (issue 40: a TCG
//! report opened with ten sentences saying the same thing, one per probe × load). What is
//! still said of such a run speaks of the emulator, never of the kernel or a hypervisor.

use super::{Finding, Number, Topic, Unit};
use crate::model::EMULATED_WARNING;
use crate::report::page::tables::rule_of_thumb;
use crate::report::select::RunView;
use crate::report::text::compare::matched;

/// Ran on an emulated CPU: every such run carries the warning (the store's writer adds it).
pub fn is(r: &RunView) -> bool {
    r.data.header.warnings.iter().any(|w| w == EMULATED_WARNING)
}

/// The caveat of a finding on `r` when it ran on an emulated CPU.
pub fn caveat(r: &RunView) -> Option<String> {
    is(r).then(|| EMULATED_WARNING.to_string())
}

/// Whether the sysbench costs of `label` against `baseline` ran on an emulated CPU: then their
/// price is not ranked.
pub fn in_costs(costs: &[RunView], baseline: &str, label: &str) -> bool {
    matched(costs, baseline, label).iter().any(|(b, c)| is(b) || is(c))
}

/// What one cause left unranked: a pair's cells or the rule of thumb of some labels, and the
/// element of the page that shows the first of them.
pub struct Unranked {
    text: String,
    link: String,
    cells: usize,
}

/// The cells of `label` against `baseline` not ranked because a run of them was emulated.
pub fn cells(runs: &[RunView], costs: &[RunView], baseline: &str, label: &str) -> Option<Unranked> {
    let mut names: Vec<String> = Vec::new();
    let mut link = None;
    for (b, _) in super::pairs::cells(runs, baseline, label).into_iter().filter(|(b, c)| is(b) || is(c)) {
        link.get_or_insert_with(|| format!("{}-bars", b.probe()));
        let name = super::cell(b);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if in_costs(costs, baseline, label) {
        link.get_or_insert_with(|| "sysbench-costs".to_string());
        names.push("sysbench".into());
    }
    let text = format!("{label} against {baseline}: {}", names.join(", "));
    Some(Unranked { text, link: link?, cells: names.len() })
}

/// The labels whose emulated runs are kept from the rule of thumb (an emulated CPU's stalls
/// are not its kernel's, however many cycles they last).
pub fn unjudged(runs: &[RunView]) -> Option<Unranked> {
    let labels = super::labels(runs.iter().filter(|r| is(r) && rule_of_thumb(r).is_some()));
    (!labels.is_empty()).then(|| Unranked {
        text: format!("the emulated runs of {} against the rule of thumb", labels.join(", ")),
        link: "rule-of-thumb".into(),
        cells: labels.len(),
    })
}

/// The one finding of everything left unranked because it was emulated; `None` when nothing was.
pub fn finding(unranked: Vec<Unranked>) -> Option<Finding> {
    let link = unranked.first()?.link.clone();
    let listed: Vec<&str> = unranked.iter().map(|u| u.text.as_str()).collect();
    let sentence = format!(
        "Not ranked: emulated (TCG) — {}. Those runs ran on an emulated CPU, whose latencies are the emulator's, \
         not the kernel's; boot the kernels under KVM to rank them.",
        listed.join("; ")
    );
    let count = unranked.iter().map(|u| u.cells).sum::<usize>();
    Some(Finding {
        weight: 900,
        topic: Topic::Unranked,
        sentence,
        numbers: vec![Number::new("not ranked", count as f64, Unit::Count)],
        link,
        caveats: Vec::new(),
    })
}
