//! Imports of other tools' results: sockperf's full log and rtla's histograms (cyclictest's are
//! in `report`, beside the exports they round-trip with).

use crate::helpers::*;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_sockperf_full_log_gives_the_percentiles_of_its_own_samples() {
    let lab = Lab::new();
    let log = fixture("sockperf-full-log.csv");
    lab.ok(&["import", &log, "--label", "sp"]);
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["probe"], "pingpong");
    // Nearest rank on the file's latency column (sockperf's RTT/2, µs to the ns), computed
    // exactly with fractions, so no float rounding picks the neighbouring rank.
    let script = r#"
import json, math, sys
from fractions import Fraction
rows = open(sys.argv[1]).read().split("latency(usec)\n", 1)[1].splitlines()
ns = sorted(int(Fraction(r.split(",")[3].strip()) * 1000) for r in rows if r.strip() and not r.startswith("---"))
q = ["50", "90", "99", "99.9", "99.99", "99.999", "99.9999", "100"]
p = {k: ns[max(math.ceil(Fraction(k) / 100 * len(ns)), 1) - 1] for k in q}
print(json.dumps({"count": len(ns), "min": ns[0], "max": ns[-1], "sum": sum(ns), "p": p}))
"#;
    let out = std::process::Command::new("python3").args(["-c", script, &log]).output().expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = &doc["total"];
    assert!(want["count"].as_u64().unwrap() > 500, "the fixture holds the samples: {want}");
    assert_eq!(total["count"], want["count"]);
    assert_eq!(total["min_ns"], want["min"]);
    assert_eq!(total["max_ns"], want["max"]);
    let mean = want["sum"].as_f64().unwrap() / want["count"].as_f64().unwrap();
    assert!((total["mean_ns"].as_f64().unwrap() - mean).abs() <= mean * 1e-12, "mean: {total} vs {mean}");
    for (key, want) in want["p"].as_object().unwrap() {
        let (got, want) = (total["percentiles_ns"][key].as_f64().unwrap(), want.as_f64().unwrap());
        assert!(
            (got - want).abs() <= want * 0.001,
            "p{key}: rtbench {got}, nearest rank {want} (HDR precision is 0.1 %)"
        );
    }
}

#[test]
fn an_rtla_timerlat_histogram_imports_per_cpu_with_its_irq_side_as_the_split() {
    let lab = Lab::new();
    lab.ok(&["import", &fixture("rtla-timerlat-hist.txt"), "--label", "rtla"]);
    let doc = lab.export_json(lab.last_run());
    assert_valid_export(&doc);
    assert_eq!(doc["run"]["probe"], "timer");
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "one thread per CPU");
    // (cpu, Thr max µs, IRQ max µs): each CPU's own columns, the `over:` sample at the max.
    for (t, (cpu, max, irq_max)) in threads.iter().zip([(0, 40_000, 3000), (1, 25_000, 3000)]) {
        assert_eq!(t["cpu"], cpu);
        assert_eq!(t["count"], 6000);
        assert_eq!(t["max_ns"], max);
        assert_eq!(t["min_ns"], 1000);
        assert_eq!(t["irq"]["count"], 6000, "the IRQ column is the thread's split: {t}");
        assert_eq!(t["irq"]["max_ns"], irq_max);
        assert_eq!(t["irq"]["unmatched"], 0);
    }
    assert!(doc["run"]["warnings"].to_string().contains("rtla timerlat hist"), "an import says so");

    lab.ok(&["import", &fixture("rtla-osnoise-hist.txt"), "--label", "rtla"]);
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["probe"], "noise");
    let per_cpu: Vec<_> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["cpu"].clone(), t["count"].clone(), t["max_ns"].clone()))
        .collect();
    assert_eq!(per_cpu, [(0.into(), 543.into(), 30_000.into()), (1.into(), 530.into(), 50_000.into())]);
    assert!(doc["threads"][0]["irq"].is_null(), "osnoise has no IRQ side");
}

#[test]
fn a_broken_rtla_or_sockperf_file_is_refused() {
    let lab = Lab::new();
    let rtla = lab.path("rtla.txt");
    std::fs::write(&rtla, "# RTLA timerlat histogram\nIndex   IRQ-000   Thr-000\n0 5\n").unwrap();
    assert_rejected(&lab.run(&["import", rtla.to_str().unwrap(), "--label", "x"]), "line 3 is '0 5'");
    let sockperf = lab.path("sp.csv");
    std::fs::write(&sockperf, "packet, txTime(sec), rxTime(sec), latency(usec)\n0, 1.0, 1.1, fast\n").unwrap();
    assert_rejected(
        &lab.run(&["import", sockperf.to_str().unwrap(), "--label", "x"]),
        "sample 1 is '0, 1.0, 1.1, fast'",
    );
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "nothing stored");
}
