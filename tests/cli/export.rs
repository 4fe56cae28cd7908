//! Every export format carries the same numbers as the store.

use crate::helpers::*;
use rtbench_testkit::needs;

/// A two-thread synthetic run and its JSON export.
fn run() -> (Lab, String, serde_json::Value) {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-t", "2", "-l", "200000", "-q", "--label", "exp"]);
    let id = lab.last_run();
    let doc = lab.export_json(id);
    (lab, id.to_string(), doc)
}

#[test]
fn json_export_matches_the_schema_and_its_totals() {
    let (_lab, _id, doc) = run();
    assert_valid_export(&doc);
    let threads = doc["threads"].as_array().unwrap();
    let sum: u64 = threads.iter().map(|t| t["count"].as_u64().unwrap()).sum();
    assert_eq!(doc["total"]["count"].as_u64().unwrap(), sum);
    let max = threads.iter().map(|t| t["max_ns"].as_u64().unwrap()).max().unwrap();
    assert_eq!(doc["total"]["max_ns"].as_u64().unwrap(), max);
    assert_eq!(doc["total"]["percentiles_ns"]["100"].as_u64().unwrap(), max);
    let p = &doc["total"]["percentiles_ns"];
    let keys = ["50", "90", "99", "99.9", "99.99", "99.999", "99.9999", "100"];
    for w in keys.windows(2) {
        assert!(p[w[0]].as_u64() <= p[w[1]].as_u64(), "percentiles ascend: {p}");
    }
}

#[test]
fn csv_carries_the_json_numbers() {
    let (lab, id, doc) = run();
    let csv = lab.ok(&["export", &id, "--format", "csv"]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "two threads and the total");
    let col = |row: &Vec<&str>, name: &str| row[header.iter().position(|h| *h == name).unwrap()].to_string();
    let total = &rows[2];
    assert_eq!(col(total, "thread"), "all");
    assert_eq!(col(total, "count"), doc["total"]["count"].to_string());
    assert_eq!(col(total, "p99.99_ns"), doc["total"]["percentiles_ns"]["99.99"].to_string());
    assert_eq!(col(&rows[1], "max_ns"), doc["threads"][1]["max_ns"].to_string());
}

#[test]
fn hgrm_ends_at_the_max_with_every_sample() {
    let (lab, id, doc) = run();
    let hgrm = lab.ok(&["export", &id, "--format", "hgrm"]);
    assert!(hgrm.starts_with("       Value     Percentile TotalCount 1/(1-Percentile)"), "{hgrm}");
    let rows: Vec<Vec<f64>> = hgrm
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.contains("Value"))
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    let last = rows.last().unwrap();
    assert_eq!(last[1], 1.0);
    assert_eq!(last[2] as u64, doc["total"]["count"].as_u64().unwrap());
    let max_us = doc["total"]["max_ns"].as_f64().unwrap() / 1000.0;
    assert!((last[0] - max_us).abs() < 0.001, "{} vs {max_us}", last[0]);
    assert!(hgrm.contains(&format!("Total count    = {:>12}", doc["total"]["count"].as_u64().unwrap())));
}

#[test]
fn cyclictest_histogram_counts_every_sample_and_parses_like_rteval() {
    let (lab, id, doc) = run();
    let hist = lab.ok(&["export", &id, "--format", "cyclictest-hist", "--buckets", "200"]);
    let mut sums = [0u64; 2];
    let mut overflows = vec![];
    let mut maxes = vec![];
    for line in hist.lines() {
        if let Some(rest) = line.strip_prefix("# Histogram Overflows:") {
            overflows = rest.split_whitespace().map(|x| x.parse::<u64>().unwrap()).collect();
        } else if let Some(rest) = line.strip_prefix("# Max Latencies:") {
            maxes = rest.split_whitespace().map(|x| x.parse::<u64>().unwrap()).collect();
        } else if !line.starts_with('#') && !line.is_empty() {
            // rteval's reading: whitespace-split, bucket index then one count per thread.
            let vals: Vec<u64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
            assert!(line.starts_with(&format!("{:06} ", vals[0])), "{line}");
            sums[0] += vals[1];
            sums[1] += vals[2];
        }
    }
    for t in 0..2 {
        let count = doc["threads"][t]["count"].as_u64().unwrap();
        assert_eq!(sums[t] + overflows[t], count, "thread {t}: rows + overflows = samples");
        assert_eq!(maxes[t], doc["threads"][t]["max_ns"].as_u64().unwrap() / 1000);
    }
    assert!(overflows.iter().any(|&o| o > 0), "the synthetic tail passes 200 µs");
}

#[test]
fn cyclictest_json_uses_cyclictest_names() {
    let (lab, id, doc) = run();
    let out = lab.ok(&["export", &id, "--format", "cyclictest-json", "--buckets", "5000"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in ["file_version", "cmdline:", "start_time", "end_time", "return_code", "sysinfo", "num_threads", "thread"]
    {
        assert!(v.get(key).is_some(), "missing {key}: {out}");
    }
    assert_eq!(v["num_threads"], 2);
    assert_eq!(v["return_code"], 0);
    let t0 = &v["thread"]["0"];
    assert_eq!(t0["cycles"], doc["threads"][0]["count"]);
    assert_eq!(t0["max"].as_u64().unwrap(), doc["threads"][0]["max_ns"].as_u64().unwrap() / 1000);
    let in_hist: u64 = t0["histogram"].as_object().unwrap().values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(in_hist, t0["cycles"].as_u64().unwrap(), "5000 buckets hold every sample");
}

#[test]
fn export_to_a_file_writes_it_whole() {
    let (lab, id, doc) = run();
    let path = lab.path("out.json");
    lab.ok(&["export", &id, "-o", path.to_str().unwrap()]);
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written, doc);
    let leftovers: Vec<_> = std::fs::read_dir(lab.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("rtbench-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file is left");
}

#[test]
fn timer_histfile_is_written_in_cyclictest_format() {
    let lab = Lab::new();
    let hf = lab.path("hist.txt");
    lab.ok(&["timer", "-t", "1", "-l", "300", "-q", "-h", "20000", "--histfile", hf.to_str().unwrap()]);
    let text = std::fs::read_to_string(&hf).unwrap();
    assert!(text.starts_with("# Histogram\n"));
    let rows: u64 = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    let over: u64 =
        text.lines().find_map(|l| l.strip_prefix("# Histogram Overflows:")).map(|r| r.trim().parse().unwrap()).unwrap();
    assert_eq!(rows + over, 300);
}

#[needs(numpy)]
#[test]
fn reported_statistics_match_numpy_on_the_same_samples() {
    let python = std::path::Path::new("python3");
    let lab = Lab::new();
    // Two threads of 2000 samples each, so the store keeps every sample: a synthetic run with a
    // heavy tail, and a real timer run.
    lab.ok(&["synthetic", "-t", "2", "-l", "2000", "--seed", "7", "--median", "4000", "-q"]);
    check_against_numpy(&lab, python, lab.last_run());
    lab.ok(&["timer", "-t", "2", "-i", "200", "-l", "2000", "-q"]);
    check_against_numpy(&lab, python, lab.last_run());
}

fn check_against_numpy(lab: &Lab, python: &std::path::Path, id: i64) {
    let id = id.to_string();
    let csv = lab.path(&format!("samples-{id}.csv"));
    lab.ok(&["export", &id, "-f", "samples", "-o", csv.to_str().unwrap()]);
    let script = r#"
import json, sys
import numpy as np
a = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, dtype=np.int64)[:, 2]
# Nearest rank, from the fractions themselves: np.percentile(a, 99.9) computes 99.9 / 100 * 4000
# as 3996.0000000000005 and takes rank 3997.
q = {"50": 0.5, "90": 0.9, "99": 0.99, "99.9": 0.999, "99.99": 0.9999, "99.999": 0.99999, "99.9999": 0.999999, "100": 1.0}
p = {k: int(np.quantile(a, f, method="inverted_cdf")) for k, f in q.items()}
print(json.dumps({"count": int(a.size), "mean": float(a.mean()), "std": float(a.std()), "p": p}))
"#;
    let out = std::process::Command::new(python).args(["-c", script, csv.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let np: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = &lab.export_json(id.parse().unwrap())["total"];
    assert_eq!(total["count"], np["count"]);
    for (key, want) in np["p"].as_object().unwrap() {
        let (got, want) = (total["percentiles_ns"][key].as_f64().unwrap(), want.as_f64().unwrap());
        assert!((got - want).abs() <= want * 0.001, "p{key}: rtbench {got}, numpy {want} (HDR precision is 0.1 %)");
    }
    for (ours, theirs) in [("mean_ns", "mean"), ("stddev_ns", "std")] {
        let (got, want) = (total[ours].as_f64().unwrap(), np[theirs].as_f64().unwrap());
        assert!((got - want).abs() <= want * 1e-12, "{ours}: rtbench {got}, numpy {want}");
    }
}
