//! The raw sample log: compact, exact, and readable after a crash.

use std::io::{Seek, SeekFrom, Write};

use crate::helpers::*;

/// A synthetic run with a sample log; returns (lab, log path, stored export).
fn logged_run(samples: &str) -> (Lab, std::path::PathBuf, serde_json::Value) {
    let lab = Lab::new();
    let log = lab.path("samples.rtb");
    lab.ok(&["synthetic", "-t", "2", "-l", samples, "-q", "--samples", log.to_str().unwrap()]);
    let doc = lab.export_json(lab.last_run());
    (lab, log, doc)
}

#[test]
fn analyze_reproduces_the_stored_statistics_exactly() {
    let (lab, log, doc) = logged_run("400000");
    let out = lab.ok(&["analyze", "--json", log.to_str().unwrap()]);
    let analyzed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(analyzed["total"], doc["total"], "log → analyze equals recorder → store");
    for i in 0..2 {
        let a = &analyzed["threads"][i];
        let s = &doc["threads"][i];
        assert_eq!(a["percentiles_ns"], s["percentiles_ns"]);
        assert_eq!(a["count"], s["count"]);
    }
    let table = lab.ok(&["analyze", log.to_str().unwrap()]);
    assert!(table.contains("p99.9999"), "{table}");
}

#[test]
fn log_takes_at_most_four_bytes_per_sample() {
    let (_lab, log, doc) = logged_run("500000");
    let bytes = std::fs::metadata(&log).unwrap().len() as f64;
    let per = bytes / doc["total"]["count"].as_f64().unwrap();
    assert!(per <= 4.0, "{per:.2} bytes per sample");
}

#[test]
fn a_torn_tail_is_refused_unless_salvaged() {
    let (lab, log, doc) = logged_run("300000");
    let len = std::fs::metadata(&log).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(len - 1000).unwrap();
    let p = log.to_str().unwrap();
    assert_rejected(&lab.run(&["analyze", p]), "truncated");
    let out = lab.run(&["analyze", "--json", "--salvage", p]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cut off"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = v["total"]["count"].as_u64().unwrap();
    let all = doc["total"]["count"].as_u64().unwrap();
    assert!(got > 0 && got < all, "a prefix: {got} of {all}");
}

#[test]
fn a_corrupt_block_is_an_error() {
    let (lab, log, _) = logged_run("300000");
    let len = std::fs::metadata(&log).unwrap().len();
    let mut f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    f.seek(SeekFrom::Start(len / 2)).unwrap();
    f.write_all(&[0xAA; 16]).unwrap();
    drop(f);
    assert_rejected(&lab.run(&["analyze", log.to_str().unwrap()]), "corrupt");
}

#[test]
fn a_file_that_is_not_a_log_is_an_error() {
    let lab = Lab::new();
    let p = lab.path("not-a-log");
    std::fs::write(&p, b"hello, this is text").unwrap();
    assert_rejected(&lab.run(&["analyze", p.to_str().unwrap()]), "not an rtbench sample log");
    assert_rejected(&lab.run(&["analyze", lab.path("missing").to_str().unwrap()]), "cannot be read");
}
