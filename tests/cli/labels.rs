//! Labels that cannot be lost (issue 40): a label no report can select or show is refused by
//! every command that stores runs under it, imports and merges included, with one line and
//! exit 2, before anything is stored or booted.

use crate::helpers::*;

/// The longest label rtbench stores (`model::LABEL_MAX_CHARS`).
const MAX: usize = 64;

/// A lab's label: host and kernel, as a fleet names its runs.
const LAB_LABEL: &str = "rack1-host07/6.1.0-56-rt-amd64";

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Every command that stores runs under a label it takes, given `label`: each must refuse it
/// naming the label, on one line, and leave no store behind.
fn refused_everywhere(label: &str, needle: &str) {
    let lab = Lab::new();
    let log = fixture("sockperf-full-log.csv");
    let commands: &[&[&str]] = &[
        &["synthetic", "-l", "10", "-q", "--label", label],
        &["timer", "-l", "10", "-q", "--label", label],
        &["gtod", "-l", "10", "-q", "--label", label],
        &["import", &log, "--label", label],
        &["sysbench", "--quick", "--only", "null-call", "--label", label],
        &["monitor", "-D", "1s", "--label", label],
        &["study", "--no-qualify", "-D", "1s", "--label", label],
        &["kernels", "deb:linux-image-amd64", "--label", label],
        &["kernels", "deb:linux-image-amd64", "--", "timer", "-D", "1s", "--label", label],
    ];
    for args in commands {
        let out = lab.run(args);
        assert_rejected(&out, needle);
        assert!(text(&out.stderr).contains("label"), "{args:?}: the message names the label");
        assert!(!lab.db().exists(), "{args:?}: a refused label created the store");
    }
}

#[test]
fn an_empty_label_is_refused_by_every_command_that_stores_runs() {
    refused_everywhere("", "cannot be empty");
}

#[test]
fn a_blank_label_is_refused_by_every_command_that_stores_runs() {
    refused_everywhere(" \t ", "only whitespace");
}

#[test]
fn a_label_with_a_control_character_is_refused_on_one_line() {
    // The newline would split the message: it is shown escaped.
    refused_everywhere("6.1.0\nrt", "control character (it holds '\\n')");
    refused_everywhere("6.1.0\u{1b}[31m", "control character");
}

#[test]
fn a_label_longer_than_the_report_shows_is_refused() {
    refused_everywhere(&"k".repeat(MAX + 1), &format!("at most {MAX} characters"));
}

#[test]
fn an_empty_label_selects_nothing_and_is_refused_as_a_filter() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "10", "-q", "--label", "k"]);
    for args in [
        &["report", "--findings", "--label", ""][..],
        &["report", "--findings", "--label", "k", "--label", "  "],
        &["compare", "--baseline", "", "k"],
        &["compare", "--baseline", "k", " "],
        &["study", "--no-qualify", "-D", "1s", "--label", "k", "--baseline", ""],
    ] {
        assert_rejected(&lab.run(args), "label");
    }
    assert_eq!(lab.runs().as_array().unwrap().len(), 1, "nothing was stored");
}

#[test]
fn lab_labels_up_to_the_longest_are_stored_and_selected() {
    let lab = Lab::new();
    let longest = format!("{LAB_LABEL}/{}", "x".repeat(MAX - LAB_LABEL.len() - 1));
    assert_eq!(longest.chars().count(), MAX);
    for label in [LAB_LABEL, longest.as_str()] {
        lab.ok(&["synthetic", "-l", "10", "-q", "--label", label]);
    }
    lab.ok(&["import", &fixture("sockperf-full-log.csv"), "--label", "host/kernel/2026-11-26"]);
    let labels: Vec<String> =
        lab.runs().as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap().to_string()).collect();
    assert_eq!(labels, [LAB_LABEL, &longest, "host/kernel/2026-11-26"]);
    let out = lab.path("rep");
    lab.ok(&["report", "--label", LAB_LABEL, "--label", &longest, "-o", out.to_str().unwrap()]);
    assert!(std::fs::read_to_string(out.join("index.html")).unwrap().contains(&longest), "the report shows it");
}

#[test]
fn a_merge_refuses_a_store_holding_a_label_that_would_be_lost() {
    let lab = Lab::new();
    let theirs = lab.path("theirs.db");
    let their = |args: &[&str]| {
        let out = lab.cmd(args).env("RTBENCH_DB", &theirs).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    };
    their(&["synthetic", "-l", "10", "-q", "--label", "fine"]);
    their(&["synthetic", "-l", "10", "-q", "--label", "to-be-lost"]);
    lab.ok(&["synthetic", "-l", "10", "-q", "--label", "ours"]);
    // As a store written before labels were checked holds them.
    for (bad, needle) in [
        ("", "cannot be empty"),
        ("   ", "only whitespace"),
        ("a\rb", "control character"),
        (&*"k".repeat(MAX + 1), "at most"),
    ] {
        let c = rusqlite::Connection::open(&theirs).unwrap();
        c.execute("UPDATE runs SET label = ?1 WHERE id = 2", [bad]).unwrap();
        let out = lab.run(&["merge", theirs.to_str().unwrap()]);
        assert_rejected(&out, needle);
        assert!(text(&out.stderr).contains("run 2 is labelled"), "{}", text(&out.stderr));
        let labels: Vec<serde_json::Value> =
            lab.runs().as_array().unwrap().iter().map(|r| r["label"].clone()).collect();
        assert_eq!(labels, ["ours"], "nothing was merged");
    }
    let fresh = lab.path("fresh.db");
    let out = lab.cmd(&["merge", theirs.to_str().unwrap()]).env("RTBENCH_DB", &fresh).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!fresh.exists(), "a refused merge creates no store");
    rusqlite::Connection::open(&theirs)
        .unwrap()
        .execute("UPDATE runs SET label = 'now-fine' WHERE id = 2", [])
        .unwrap();
    assert!(lab.ok(&["merge", theirs.to_str().unwrap()]).contains("merged 2 runs"));
}
