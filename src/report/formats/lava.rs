//! `compare --lava`, `study --lava`: the `--fail-if` checks as LAVA test cases, one signal line
//! each, as Linaro's rt-tests wrappers print them, so a LAVA job's results show rtbench's
//! checks. The same checks as the JUnit file ([`crate::report::formats::junit`]): one per probe × load ×
//! condition, and a failed cell of a study as a failed case.

use std::fmt::Write;

use crate::model::Unit;
use crate::report::formats::junit::Errored;
use crate::report::text::compare::{Check, Comparison, Pair, Verdict};

/// The signal lines of every check of `comparisons`, then of every failed cell.
pub fn render(comparisons: &[Comparison], errored: &[Errored]) -> String {
    let mut out = String::new();
    for c in comparisons {
        for pair in &c.pairs {
            for check in &pair.checks {
                line(c, pair, check, &mut out);
            }
        }
    }
    for e in errored {
        let id = case_id(&[&e.label, &e.probe, &e.load, "ran"]);
        let _ = writeln!(out, "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={id} RESULT=fail>");
    }
    out
}

/// One check: pass or fail with the label's value of the statistic in µs; a skipped check
/// (a cost, not a latency) has no measurement.
fn line(c: &Comparison, pair: &Pair, check: &Check, out: &mut String) {
    let id = case_id(&[&c.label, &pair.probe, &pair.load, &check.condition]);
    let result = match check.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Skip => "skip",
    };
    if check.verdict == Verdict::Skip || pair.unit != Unit::Nanoseconds {
        let _ = writeln!(out, "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={id} RESULT={result}>");
        return;
    }
    let measurement = format!("{:.3}", check.label / 1000.0);
    let _ =
        writeln!(out, "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={id} RESULT={result} MEASUREMENT={measurement} UNITS=us>");
}

/// A test case id LAVA keeps whole: the parts joined by `_`, each with `>` and `<` spelled
/// `gt` and `lt`, and every character but letters, digits, `.` and `-` made `-` (a space
/// would end the id; a label holds `/` and spaces).
pub fn case_id(parts: &[&str]) -> String {
    let part = |p: &str| {
        let words = p.replace('>', " gt ").replace('<', " lt ");
        let kept: String = words.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' }).collect();
        kept.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
    };
    parts.iter().map(|p| part(p)).collect::<Vec<_>>().join("_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Better;

    fn check(condition: &str, verdict: Verdict) -> Check {
        Check {
            condition: condition.into(),
            verdict,
            baseline: 1000.0,
            label: 2500.0,
            value: Some(2.5),
            message: "m".into(),
        }
    }

    #[test]
    fn one_line_per_check_with_the_label_s_value_in_microseconds() {
        let pair = |probe: &str, unit, checks| Pair {
            probe: probe.into(),
            load: "paper".into(),
            unit,
            better: Better::Smaller,
            stats: vec![],
            checks,
        };
        let c = Comparison {
            baseline: "base".into(),
            label: "rack1/host 7".into(),
            pairs: vec![
                pair(
                    "timer",
                    Unit::Nanoseconds,
                    vec![check("p99 > 2x", Verdict::Fail), check("max < 1us", Verdict::Pass)],
                ),
                pair("sysbench.null-call", Unit::Picoseconds, vec![check("p99 > 2x", Verdict::Skip)]),
            ],
            table: String::new(),
            classes: vec![],
        };
        let errored = [Errored { label: "k".into(), probe: "gtod".into(), load: "none".into(), reason: "r".into() }];
        let lines: Vec<String> = render(&[c], &errored).lines().map(String::from).collect();
        assert_eq!(
            lines,
            [
                "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=rack1-host-7_timer_paper_p99-gt-2x RESULT=fail MEASUREMENT=2.500 UNITS=us>",
                "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=rack1-host-7_timer_paper_max-lt-1us RESULT=pass MEASUREMENT=2.500 UNITS=us>",
                "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=rack1-host-7_sysbench.null-call_paper_p99-gt-2x RESULT=skip>",
                "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=k_gtod_none_ran RESULT=fail>",
            ]
        );
    }
}
