//! What a lab's controller asks of rtbench after a campaign (issue 39), without Ansible: every
//! host's label against one baseline in one JUnit file, and the hosts that have no results
//! said among the report's findings.

use crate::helpers::*;
use crate::report::{count_attr, elements};

/// A baseline and two hosts' labels of synthetic runs; host b's body is 30 % slower.
fn three_labels(lab: &Lab) {
    for (label, median) in [("base", "5000"), ("rack/a", "5000"), ("rack/b", "6500")] {
        lab.ok(&["synthetic", "-l", "100000", "-q", "--label", label, "--median", median, "--seed", "3"]);
    }
}

#[test]
fn compare_writes_every_label_against_the_baseline_into_one_junit_file() {
    let lab = Lab::new();
    three_labels(&lab);
    let junit = lab.path("lab.xml");
    let gate = ["compare", "--baseline", "base", "rack/a", "rack/b", "--fail-if", "p50 > 1.2x"];
    let out = lab.run(&[&gate[..], &["--junit", junit.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "b's condition holds: {}", text(&out.stderr));
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
    let lab = Lab::new();
    let study = ["study", "--no-split", "--no-classify", "-D", "1s", "--load", "none", "--no-sysbench", "-q"];
    let cwd = lab.path("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let out = lab.cmd(&[&study[..], &["--label", "host", "--no-report"]].concat()).current_dir(&cwd).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0, "no report, no file");
    assert!(!labels(&lab.runs()).is_empty());
    assert!(!text(&out.stdout).contains("report:"), "{}", text(&out.stdout));
    assert_rejected(&lab.run(&[&study[..], &["--no-report", "-o", "x"]].concat()), "--no-report");
}

fn labels(runs: &serde_json::Value) -> Vec<&str> {
    runs.as_array().unwrap().iter().filter_map(|r| r["label"].as_str()).collect()
}
