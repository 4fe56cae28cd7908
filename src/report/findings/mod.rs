//! The report's answer in words (issue 24): short sentences computed only from the stored runs a
//! report covers, each with the numbers behind it, the element of the page that shows it and
//! its caveats, the ones that matter most first. No sentence the data do not support: one label
//! has no comparison, a run without a CPU clock no rule of thumb.

mod absent;
mod checks;
mod emulated;
mod machine;
mod pairs;
mod price;
mod split;
mod steal;
mod tail;
#[cfg(test)]
mod tests;

use std::fmt::Write;

use serde::Serialize;

use super::page::svg::esc;
use super::select::{labels, RunView};

/// How many findings the page shows before folding the rest: the answer must fit the first
/// screen.
const SHOWN: usize = 8;

/// What a number of a finding counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Us,
    Percent,
    /// A factor: one value over another.
    Ratio,
    Count,
    /// Per sample.
    Probability,
}

/// One number behind a sentence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Number {
    pub name: String,
    pub value: f64,
    pub unit: Unit,
}

impl Number {
    pub fn new(name: impl Into<String>, value: f64, unit: Unit) -> Number {
        Number { name: name.into(), value, unit }
    }

    /// A latency in ns, kept in µs like every latency the report shows.
    pub fn us(name: impl Into<String>, ns: f64) -> Number {
        Number::new(name, ns / 1000.0, Unit::Us)
    }
}

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topic {
    /// One label against its baseline, per probe and load.
    Pair,
    /// sysbench: the throughput price.
    Price,
    RuleOfThumb,
    /// The extreme-value estimate of the loaded timer cell.
    WorstCase,
    FixFirst,
    /// `--split`: how much of the timer's p99 was the interrupt and how much scheduling.
    Split,
    /// What is not ranked, for one cause (runs made on an emulated CPU).
    Unranked,
    /// What the runs cannot tell, given with `report --caveat` (a lab's host that was
    /// unreachable).
    Given,
    /// A probe a study could not run under a label, and why.
    Absent,
    /// A qualification check's verdict (`migrate`'s violations, `pi`'s deadlocks).
    Check,
}

/// One sentence of the answer.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// How much it matters: findings are shown largest first.
    pub weight: u32,
    pub topic: Topic,
    pub sentence: String,
    pub numbers: Vec<Number>,
    /// The id of the element of the report's page that shows it.
    pub link: String,
    pub caveats: Vec<String>,
}

/// The findings over a report's runs, most important first. `baseline`: the label the others
/// are compared against when the command names one (`compare`, a gated study).
pub fn compute(runs: &[RunView], costs: &[RunView], baseline: Option<&str>) -> Vec<Finding> {
    let (mut out, mut unranked) = of_pairs(runs, costs, &pairs::choose(runs, costs, baseline));
    unranked.extend(emulated::unjudged(runs));
    out.extend(emulated::finding(unranked));
    out.extend(machine::rules(runs));
    out.extend(tail::sentences(runs));
    out.extend(split::sentences(runs));
    out.extend(checks::sentences(runs));
    out.extend(machine::fix_first(runs));
    out.sort_by_key(|f| std::cmp::Reverse(f.weight));
    out
}

/// The caveats given with `report --caveat`, as findings above every other: what is missing
/// from the runs changes how all of them read.
pub fn given(caveats: &[String]) -> Vec<Finding> {
    let finding = |c: &String| Finding {
        weight: u32::MAX,
        topic: Topic::Given,
        sentence: format!("⚠ {c}"),
        numbers: Vec::new(),
        link: "findings".into(),
        caveats: Vec::new(),
    };
    caveats.iter().map(finding).collect()
}

/// Adds to `found`, in weight order, the probes the store notes as not run under the report's
/// labels, with why (a study's `skipping` lines, kept), each linked to its probe's section
/// where others measured it.
pub fn add_absent(found: &mut Vec<Finding>, absent: &[crate::store::Absent], runs: &[RunView]) {
    found.extend(absent::sentences(absent, runs));
    found.sort_by_key(|f| std::cmp::Reverse(f.weight));
}

/// The findings of one label against another only (`compare`).
pub fn of_pair(runs: &[RunView], costs: &[RunView], baseline: &str, label: &str) -> Vec<Finding> {
    let (mut out, unranked) = of_pairs(runs, costs, &[(baseline.to_string(), label.to_string())]);
    out.extend(emulated::finding(unranked));
    out.sort_by_key(|f| std::cmp::Reverse(f.weight));
    out
}

/// The sentences of each (baseline, label) pair, and what of them is not ranked because it ran
/// on an emulated CPU (said once, over every pair, by [`emulated::finding`]).
fn of_pairs(
    runs: &[RunView],
    costs: &[RunView],
    pairs: &[(String, String)],
) -> (Vec<Finding>, Vec<emulated::Unranked>) {
    let mut out = Vec::new();
    let mut unranked = Vec::new();
    for (b, c) in pairs {
        out.extend(pairs::sentences(runs, b, c));
        out.extend(price::sentences(costs, b, c));
        unranked.extend(emulated::cells(runs, costs, b, c));
    }
    (out, unranked)
}

/// The findings for a terminal: one numbered sentence each, its caveats below it.
pub fn text(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "Findings: none the stored runs support\n".into();
    }
    let mut out = String::from("Findings\n");
    for (i, f) in findings.iter().enumerate() {
        let _ = writeln!(out, "{:>3}. {}", i + 1, f.sentence);
        for c in &f.caveats {
            let _ = writeln!(out, "     ⚠ {c}");
        }
    }
    out
}

/// What `report --findings --json` prints.
#[derive(Serialize)]
pub struct Document<'a> {
    pub findings: &'a [Finding],
}

/// The findings section of the page: each sentence links to what shows it; past the first few
/// they fold, so the answer fits the first screen.
///
/// A campaign's many labels say the same kind of thing once per host: there the first screen
/// shows the weightiest finding of each topic, saying how many more of its kind are folded.
pub fn html(findings: &[Finding], campaign: bool) -> String {
    let mut b = String::from(r#"<section id="findings"><h2>Findings</h2>"#);
    if findings.is_empty() {
        b.push_str(r#"<p class="note">None that the stored runs support.</p>"#);
    }
    let kin = |f: &Finding| findings.iter().filter(|o| o.topic == f.topic).count() - 1;
    let item = |f: &Finding, first: bool| {
        let caveats: String =
            f.caveats.iter().map(|c| format!(r#"<span class="caveat">⚠ {}</span>"#, esc(c))).collect();
        let more = match kin(f) {
            n if campaign && first && n > 0 => format!(" <em>({n} more of this kind below.)</em>"),
            _ => String::new(),
        };
        format!(r##"<li><a href="#{}">{}</a>{more}{caveats}</li>"##, esc(&f.link), esc(&f.sentence))
    };
    let (first, rest): (Vec<&Finding>, Vec<&Finding>) = if campaign {
        let mut seen = Vec::new();
        findings.iter().partition(|f| {
            let new = !seen.contains(&f.topic) && seen.len() < SHOWN;
            seen.push(f.topic);
            new
        })
    } else {
        let (a, b) = findings.split_at(findings.len().min(SHOWN));
        (a.iter().collect(), b.iter().collect())
    };
    let _ = write!(b, r#"<ol class="findings">{}</ol>"#, first.iter().map(|f| item(f, true)).collect::<String>());
    if !rest.is_empty() {
        let _ = write!(
            b,
            r#"<details><summary>{} more finding{}</summary><ol class="findings" start="{}">{}</ol></details>"#,
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            first.len() + 1,
            rest.iter().map(|f| item(f, false)).collect::<String>()
        );
    }
    b + "</section>"
}

/// A factor as the sentences print it: two decimals below 2×, one above.
pub fn factor(r: f64) -> String {
    if r < 2.0 {
        format!("{r:.2}×")
    } else {
        format!("{r:.1}×")
    }
}

/// A latency in ns as the sentences print it (as the tables do).
fn us(ns: f64) -> String {
    crate::units::fmt_ns_as_us(ns)
}

/// "timer loaded", "gtod idle".
fn cell(r: &RunView) -> String {
    let load = if r.load() == "none" { "idle".to_string() } else { format!("loaded ({})", r.load()) };
    format!("{} {load}", r.probe())
}
