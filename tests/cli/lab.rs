//! What a lab's controller asks of rtbench after a campaign (issue 39), without Ansible: every
//! host's label against one baseline in one JUnit file, and the hosts that have no results
//! said among the report's findings.

use crate::helpers::*;
use crate::report::{count_attr, elements};
use rtbench_testkit::needs;

/// A baseline and two hosts' labels of synthetic runs; host b's body is 30 % slower.
fn three_labels(lab: &Lab) {
    for (label, median) in [("base", "5000"), ("rack/a", "5000"), ("rack/b", "6500")] {
        lab.ok(&["synthetic", "-l", "100000", "-q", "--label", label, "--median", median, "--seed", "3"]);
    }
}

/// Both hosts against the baseline under `conditions`, the checks written as JUnit (and
/// `extra`): the lab, the output, and the JUnit file. Host b's p50 condition holds: exit 1.
fn gate_both(conditions: &str, extra: &[&str]) -> (Lab, std::process::Output, std::path::PathBuf) {
    let lab = Lab::new();
    three_labels(&lab);
    let junit = lab.path("lab.xml");
    let gate = ["compare", "--baseline", "base", "rack/a", "rack/b", "--fail-if", conditions, "--junit"];
    let out = lab.run(&[&gate[..], &[junit.to_str().unwrap()], extra].concat());
    assert_eq!(out.status.code(), Some(1), "b's condition holds: {}", text(&out.stderr));
    (lab, out, junit)
}

#[test]
fn compare_writes_every_label_against_the_baseline_into_one_junit_file() {
    let (lab, out, junit) = gate_both("p50 > 1.2x", &[]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("label rack/a against baseline base") && stdout.contains("label rack/b"), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let parsed = roxmltree::Document::parse(&xml).unwrap();
    let suites = elements(parsed.root_element(), "testsuite");
    let names: Vec<&str> = suites.iter().map(|s| s.attribute("name").unwrap()).collect();
    assert_eq!(names, ["rack/a vs base", "rack/b vs base"], "{xml}");
    assert_eq!(count_attr(suites[0], "failures"), 0, "{xml}");
    assert_eq!(count_attr(suites[1], "failures"), count_attr(suites[1], "tests"), "{xml}");
    assert_eq!(count_attr(parsed.root_element(), "failures"), count_attr(suites[1], "failures"));

    // Only b against the baseline: a passing gate.
    assert_eq!(lab.run(&["compare", "--baseline", "base", "rack/a", "--fail-if", "p50 > 1.2x"]).status.code(), Some(0));
    // One JSON document is one comparison.
    assert_rejected(&lab.run(&["compare", "--baseline", "base", "rack/a", "rack/b", "--json"]), "--json");
    assert_rejected(&lab.run(&["compare", "--baseline", "base", "rack/a", ""]), "LABEL");
}

#[test]
fn report_says_its_caveats_first_among_the_findings() {
    let lab = Lab::new();
    three_labels(&lab);
    let caveat = "rack/c: unreachable: no results";
    let found = lab.ok(&["report", "--findings", "--caveat", caveat, "--caveat", "rack/d: the study failed"]);
    let first: Vec<&str> = found.lines().skip(1).take(2).collect();
    assert!(first[0].contains(caveat) && first[1].contains("rack/d: the study failed"), "{found}");
    let doc: serde_json::Value =
        serde_json::from_str(&lab.ok(&["report", "--findings", "--json", "--caveat", caveat])).unwrap();
    assert_eq!(doc["findings"][0]["topic"], "given", "{doc}");
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap(), "--caveat", caveat]);
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let findings = &page[page.find(r#"<section id="findings">"#).unwrap()..];
    assert!(findings.split("</li>").next().unwrap().contains(caveat), "the first finding is the caveat");
    for bad in ["", "  ", "two\nlines"] {
        assert_rejected(&lab.run(&["report", "--findings", "--caveat", bad]), "--caveat");
    }
    // Without caveats the findings are what the runs say, nothing given.
    assert!(!lab.ok(&["report", "--findings"]).contains("unreachable"));
}

#[test]
fn a_study_without_its_report_stores_its_runs_and_writes_no_page() {
    let lab = Lab::alone();
    // The qualification cells run in the full tier's every-cell study, their skips in the
    // unprivileged study's test.
    let study =
        ["study", "--no-qualify", "--no-split", "--no-classify", "-D", "1s", "--load", "none", "--no-sysbench", "-q"];
    let cwd = lab.path("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let out = lab.cmd(&[&study[..], &["--label", "host", "--no-report"]].concat()).current_dir(&cwd).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0, "no report, no file");
    assert!(!labels(&lab.runs()).is_empty());
    assert!(!text(&out.stdout).contains("report:"), "{}", text(&out.stdout));
    assert_rejected(&lab.run(&[&study[..], &["--no-report", "-o", "x"]].concat()), "--no-report");

    // A study gated on the first prints its checks as LAVA test cases; its code follows them.
    let gate = ["--label", "host2", "--no-report", "--baseline", "host", "--fail-if", "p50 > 3x", "--lava"];
    let out = lab.cmd(&[&study[..], &gate[..]].concat()).current_dir(&cwd).output().unwrap();
    let lava = lava_cases(&text(&out.stdout));
    assert!(!lava.is_empty() && lava.iter().all(|(id, ..)| id.starts_with("host2_")), "{lava:?}");
    let failed = lava.iter().any(|(_, result, _)| result == "fail");
    assert_eq!(out.status.code(), Some(i32::from(failed)), "{}", text(&out.stderr));
}

fn labels(runs: &serde_json::Value) -> Vec<&str> {
    runs.as_array().unwrap().iter().filter_map(|r| r["label"].as_str()).collect()
}

/// The `--lava` lines of an output: (test case id, result, measurement).
fn lava_cases(out: &str) -> Vec<(String, String, Option<String>)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("<LAVA_SIGNAL_TESTCASE ")?.strip_suffix('>'))
        .map(|l| {
            let field = |k: &str| l.split(' ').find_map(|f| f.strip_prefix(k)).map(String::from);
            (field("TEST_CASE_ID=").unwrap(), field("RESULT=").unwrap(), field("MEASUREMENT="))
        })
        .collect()
}

#[test]
fn lava_lines_are_the_junit_checks_with_the_compared_values() {
    let (lab, out, junit) = gate_both("p50 > 1.2x, max > 10s", &["--lava"]);
    let lava = lava_cases(&text(&out.stdout));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let parsed = roxmltree::Document::parse(&xml).unwrap();
    let cases = elements(parsed.root_element(), "testcase");
    assert_eq!(lava.len(), cases.len(), "one line per JUnit case: {lava:?}\n{xml}");
    // The same values as compare --json, label by label, in the same order as the JUnit cases.
    let mut expected = Vec::new();
    for label in ["rack/a", "rack/b"] {
        let json = lab.run(&["compare", "--baseline", "base", label, "--fail-if", "p50 > 1.2x, max > 10s", "--json"]);
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        for pair in doc["pairs"].as_array().unwrap() {
            for check in pair["checks"].as_array().unwrap() {
                expected.push((check["verdict"].as_str().unwrap().to_string(), check["label"].as_f64().unwrap()));
            }
        }
    }
    assert_eq!(expected.len(), cases.len());
    for ((case, (id, result, measurement)), (verdict, value)) in cases.iter().zip(&lava).zip(&expected) {
        let failed = case.children().any(|n| n.has_tag_name("failure"));
        assert_eq!(result, if failed { "fail" } else { "pass" }, "{id}: as in the JUnit file");
        assert_eq!(result.as_str(), verdict.as_str(), "{id}: as compare --json says");
        let measured: f64 = measurement.as_deref().unwrap().parse().unwrap();
        assert!((measured - value / 1000.0).abs() < 0.001, "{id}: {measured} µs, compare says {value} ns");
        let suite = case.parent_element().unwrap().attribute("name").unwrap();
        let host = suite.split(' ').next().unwrap().replace('/', "-");
        assert!(id.starts_with(&format!("{host}_synthetic_")), "{id} names its label, probe and load");
        assert!(!id.contains(' '), "{id}");
    }
    let ids: std::collections::BTreeSet<&String> = lava.iter().map(|(id, ..)| id).collect();
    assert_eq!(ids.len(), lava.len(), "every case id is its own: {lava:?}");
    assert_rejected(&lab.run(&["compare", "--baseline", "base", "rack/a", "--lava"]), "--fail-if");
}

/// Eight hosts in two racks; the higher the host's number, the slower its body.
fn two_racks(lab: &Lab) -> Vec<String> {
    let mut labels = Vec::new();
    for (i, rack) in ["rack1", "rack2"].iter().enumerate() {
        for h in 1..=4 {
            let label = format!("{rack}/h{h}");
            let median = (4000 + (i * 4 + h) * 400).to_string();
            lab.ok(&["synthetic", "-l", "20000", "-q", "--label", &label, "--median", &median, "--seed", "5"]);
            labels.push(label);
        }
    }
    labels
}

#[needs("chromium")]
#[test]
fn a_report_of_many_labels_opens_with_one_table_worst_first_and_a_pattern_picks_a_rack() {
    let lab = Lab::new();
    let labels = two_racks(&lab);
    let out = lab.path("campaign");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let table =
        html.split(r#"<table class="hosts">"#).nth(1).expect("the labels table").split("</table>").next().unwrap();
    let order: Vec<&str> = labels.iter().rev().map(String::as_str).collect();
    let at: Vec<usize> = order.iter().map(|l| table.find(&format!(">{l}</a>")).unwrap_or(usize::MAX)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "every label, the slowest first: {at:?}");
    assert!(html.contains("<h1>rtbench report: 8 labels, rack1/h1 to rack2/h4</h1>"), "a title, not 8 labels in a row");
    let table_at = html.find(r#"<table class="hosts">"#);
    assert!(table_at < html.find(r#"<nav class="toc">"#), "the findings, then the table, then the contents");
    let figs = crate::report::figures_in(&out);
    assert!(!figs.iter().any(|f| f.starts_with("run")), "no figure per run: {figs:?}");
    assert!(figs.iter().any(|f| f == "synthetic-bars.svg"), "the probe with every label: {figs:?}");
    // Eight labels in eight colours would be a guess: the worst three are named, the rest grey.
    let nines = std::fs::read_to_string(out.join("figures/synthetic-nines.svg")).unwrap();
    let named: Vec<&str> = labels.iter().map(String::as_str).filter(|l| nines.contains(&format!(">{l} · "))).collect();
    assert_eq!(named, ["rack2/h2", "rack2/h3", "rack2/h4"], "the slowest three in the legend");
    assert!(nines.contains(">5 more labels (grey)</text>"), "and how many are not named");
    no_sideways_scroll(&lab, &out);

    let rack = lab.path("rack1");
    lab.ok(&["report", "--label", "rack1/*", "-o", rack.to_str().unwrap()]);
    let html = std::fs::read_to_string(rack.join("index.html")).unwrap();
    assert!(html.contains("rack1/h4") && !html.contains("rack2/"), "the pattern's labels only");
    assert!(!html.contains(r#"<table class="hosts">"#), "four labels draw each run as before");
    assert!(crate::report::figures_in(&rack).iter().any(|f| f.starts_with("run")));

    let none = lab.cmd(&["report", "--label", "rack9/*", "-o", rack.to_str().unwrap()]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(text(&none.stderr).contains("no label matches 'rack9/*'"), "{}", text(&none.stderr));
}

/// The page fits a narrow window: every figure, however many labels it has, shrinks to it.
fn no_sideways_scroll(lab: &Lab, out: &std::path::Path) {
    let chromium = chromium().expect("chromium (the test needs it)");
    let url = format!("file://{}", out.join("index.html").display());
    let flags = ["--dump-dom".into(), "--virtual-time-budget=3000".into(), "--window-size=800,800".into()];
    let page = text(&headless(chromium, lab, &url, &flags).stdout);
    assert!(page_attr(&page, "data-figures") > 0, "figures on the page");
    assert_eq!(page_attr(&page, "data-overflow-x"), 0, "nothing to scroll sideways in an 800 px window");
}
