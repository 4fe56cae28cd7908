//! `compare --junit FILE`: the `--fail-if` checks as JUnit XML, the format CI systems read
//! (Jenkins, GitLab, GitHub test reporters): one test case per probe × load × condition.

use std::fmt::Write;

use crate::report::text::compare::{Check, Comparison, Pair, Verdict};
use crate::units::us;

/// A cell of a study that did not run to its end, so none of its checks could be made: a JUnit
/// `<error>` in its label's suite.
pub struct Errored {
    pub label: String,
    pub probe: String,
    pub load: String,
    /// Why the cell failed.
    pub reason: String,
}

/// Tests, failures, errors and skips among `checks` and `errored`, as the JUnit attributes
/// count them.
fn counts<'a>(checks: impl Iterator<Item = &'a Check>, errored: usize) -> String {
    let (mut tests, mut failures, mut skipped) = (errored, 0, 0);
    for k in checks {
        tests += 1;
        failures += usize::from(k.verdict == Verdict::Fail);
        skipped += usize::from(k.verdict == Verdict::Skip);
    }
    format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"{errored}\" skipped=\"{skipped}\"")
}

/// The comparisons' checks as a JUnit document: one suite per comparison (`LABEL vs
/// BASELINE`), one test case per check, named by the condition and classed by probe and load;
/// a holding condition is a `<failure>` whose message has the numbers. A study's cell that
/// failed is an `<error>` case in its label's suite.
pub fn render(comparisons: &[Comparison], errored: &[Errored]) -> String {
    let all = comparisons.iter().flat_map(|c| c.checks());
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(x, "<testsuites name=\"rtbench compare\" {}>", counts(all, errored.len()));
    for c in comparisons {
        let errors: Vec<&Errored> = errored.iter().filter(|e| e.label == c.label).collect();
        suite(c, &errors, &mut x);
    }
    x.push_str("</testsuites>\n");
    x
}

fn suite(c: &Comparison, errors: &[&Errored], x: &mut String) {
    let name = esc(&format!("{} vs {}", c.label, c.baseline));
    let _ = writeln!(x, "  <testsuite name=\"{name}\" {}>", counts(c.checks(), errors.len()));
    let _ = writeln!(x, "    <properties>");
    let _ = writeln!(x, "      <property name=\"baseline\" value=\"{}\"/>", esc(&c.baseline));
    let _ = writeln!(x, "      <property name=\"label\" value=\"{}\"/>", esc(&c.label));
    let _ = writeln!(x, "    </properties>");
    for pair in &c.pairs {
        for check in &pair.checks {
            testcase(c, pair, check, x);
        }
    }
    for e in errors {
        let name = esc(&format!("{} {}: the cell ran", e.probe, e.load));
        let class = esc(&format!("rtbench.compare.{}.{}", e.probe, e.load));
        let message = esc(&e.reason);
        let _ = writeln!(
            x,
            "    <testcase name=\"{name}\" classname=\"{class}\" time=\"0\">\n      <error message=\"{message}\" type=\"cell-failed\"/>\n    </testcase>"
        );
    }
    x.push_str("  </testsuite>\n");
}

fn testcase(c: &Comparison, pair: &Pair, check: &Check, x: &mut String) {
    let name = esc(&format!("{} {}: {}", pair.probe, pair.load, check.condition));
    let class = esc(&format!("rtbench.compare.{}.{}", pair.probe, pair.load));
    let open = format!("    <testcase name=\"{name}\" classname=\"{class}\" time=\"0\"");
    let message = esc(&check.message);
    match check.verdict {
        Verdict::Pass => {
            let _ = writeln!(x, "{open}/>");
        }
        Verdict::Skip => {
            let _ = writeln!(x, "{open}>\n      <skipped message=\"{message}\"/>\n    </testcase>");
        }
        Verdict::Fail => {
            let detail = esc(&format!(
                "{}: {} {} µs, {} {} µs, ratio {}",
                check.condition,
                c.label,
                us(check.label),
                c.baseline,
                us(check.baseline),
                if check.baseline > 0.0 { format!("{:.3}", check.label / check.baseline) } else { "-".into() }
            ));
            let _ = writeln!(
                x,
                "{open}>\n      <failure message=\"{message}\" type=\"fail-if\">{detail}</failure>\n    </testcase>"
            );
        }
    }
}

/// Text fit for an XML attribute or element: the SVG figures' escaping (JUnit is XML too),
/// after the control characters XML cannot hold at all are dropped.
fn esc(s: &str) -> String {
    let kept: String = s.chars().filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')).collect();
    crate::report::page::svg::esc(&kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Better, Unit};
    use crate::report::text::compare::{Check, Pair};

    fn check(condition: &str, verdict: Verdict) -> Check {
        let message = format!("{condition} said <so> & \"so\"");
        Check { condition: condition.into(), verdict, baseline: 1000.0, label: 3000.0, value: Some(3.0), message }
    }

    fn pair(probe: &str, unit: Unit, checks: Vec<Check>) -> Pair {
        Pair { probe: probe.into(), load: "paper".into(), unit, better: Better::Smaller, stats: vec![], checks }
    }

    #[test]
    fn names_survive_escaping_and_the_counts_match_the_cases() {
        let c = Comparison {
            baseline: "6.1 <rt> & 'co'".into(),
            label: "k\"new\"\u{1}".into(),
            pairs: vec![
                pair(
                    "timer",
                    Unit::Nanoseconds,
                    vec![
                        check("p99 > 2x", Verdict::Fail),
                        check("max < 1us", Verdict::Pass),
                        check("max > 2x", Verdict::Fail),
                    ],
                ),
                pair("sysbench.null-call", Unit::Picoseconds, vec![check("p99 > 2x", Verdict::Skip)]),
            ],
            table: String::new(),
            classes: vec![],
        };
        let xml = render(&[c], &[]);
        let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
        let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
        assert_eq!(suite.attribute("name"), Some("k\"new\" vs 6.1 <rt> & 'co'"));
        let attrs = |n: roxmltree::Node| ["tests", "failures", "skipped"].map(|a| n.attribute(a).unwrap().to_string());
        assert_eq!(attrs(suite), ["4", "2", "1"]);
        assert_eq!(attrs(doc.root_element()), ["4", "2", "1"]);
        let failure = doc.descendants().find(|n| n.has_tag_name("failure")).unwrap();
        assert_eq!(failure.attribute("message"), Some("p99 > 2x said <so> & \"so\""));
        assert_eq!(failure.parent_element().unwrap().attribute("name"), Some("timer paper: p99 > 2x"));
        assert!(failure.text().unwrap().contains("3.000 µs") && failure.text().unwrap().contains("3.000"));
        let skipped = doc.descendants().find(|n| n.has_tag_name("skipped")).unwrap();
        assert_eq!(
            skipped.parent_element().unwrap().attribute("classname"),
            Some("rtbench.compare.sysbench.null-call.paper")
        );
    }
}
