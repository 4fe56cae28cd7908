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

/// rtla's own summary of a histogram file: per column name (`IRQ-000`), its `count:`, `min:`,
/// `avg:` and `max:` lines (µs).
fn rtla_summary(path: &str) -> std::collections::HashMap<String, [u64; 4]> {
    let text = std::fs::read_to_string(path).unwrap();
    let names: Vec<&str> = text.lines().find(|l| l.starts_with("Index")).unwrap().split_whitespace().skip(1).collect();
    let row = |key: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect()
    };
    let (count, min, avg, max) = (row("count:"), row("min:"), row("avg:"), row("max:"));
    names.iter().enumerate().map(|(i, n)| (n.to_string(), [count[i], min[i], avg[i], max[i]])).collect()
}

/// The imported `stats` (an export's thread or its `irq`) are rtla's `want` (count, min, avg,
/// max in µs): count, min and max exactly; the mean from the buckets' lower bounds, so below
/// rtla's exact average by less than a bucket (rtla truncates its average to the µs).
fn same_as_rtla(stats: &serde_json::Value, want: [u64; 4], bucket_us: f64, what: &str) {
    let [count, min, avg, max] = want;
    assert!(count > 1000, "{what}: a real capture has samples: {want:?}");
    assert_eq!(stats["count"], count, "{what}: {stats}");
    assert_eq!(stats["min_ns"], min * 1000, "{what}: {stats}");
    assert_eq!(stats["max_ns"], max * 1000, "{what}: {stats}");
    let mean_us = stats["mean_ns"].as_f64().unwrap() / 1000.0;
    let avg = avg as f64;
    assert!(mean_us <= avg + 1.0 && avg < mean_us + bucket_us, "{what}: mean {mean_us} µs, rtla's avg {avg} µs");
}

#[test]
fn an_rtla_timerlat_histogram_imports_per_cpu_with_its_irq_side_as_the_split() {
    let lab = Lab::new();
    // The real captures of tests/fixtures/README.md, made with `-b 100`.
    let timerlat = fixture("rtla-timerlat-hist.txt");
    lab.ok(&["import", &timerlat, "--label", "rtla"]);
    let doc = lab.export_json(lab.last_run());
    assert_valid_export(&doc);
    assert_eq!(doc["run"]["probe"], "timer");
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "one thread per CPU");
    let summary = rtla_summary(&timerlat);
    for (t, cpu) in threads.iter().zip([0, 1]) {
        assert_eq!(t["cpu"], cpu);
        same_as_rtla(t, summary[&format!("Thr-00{cpu}")], 100.0, &format!("thread latency of CPU {cpu}"));
        same_as_rtla(&t["irq"], summary[&format!("IRQ-00{cpu}")], 100.0, &format!("IRQ latency of CPU {cpu}"));
        // The last activation's IRQ can be counted before its thread woke: never a negative.
        let unmatched = t["count"].as_u64().unwrap().saturating_sub(t["irq"]["count"].as_u64().unwrap());
        assert_eq!(t["irq"]["unmatched"], unmatched, "{t}");
    }
    assert!(doc["run"]["warnings"].to_string().contains("rtla timerlat hist"), "an import says so");

    let osnoise = fixture("rtla-osnoise-hist.txt");
    lab.ok(&["import", &osnoise, "--label", "rtla"]);
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["probe"], "noise");
    let summary = rtla_summary(&osnoise);
    for (t, cpu) in doc["threads"].as_array().unwrap().iter().zip([0, 1]) {
        assert_eq!(t["cpu"], cpu);
        same_as_rtla(t, summary[&format!("CPU-00{cpu}")], 100.0, &format!("noise of CPU {cpu}"));
        assert!(t["irq"].is_null(), "osnoise has no IRQ side");
    }
}

#[test]
fn rtla_timerlat_top_output_is_refused_in_one_line_as_it_holds_no_distribution() {
    let lab = Lab::new();
    // With or without its auto-analysis: the analysis comes in with `hist -a` output.
    for file in ["rtla-timerlat-top.txt", "rtla-timerlat-top-aa.txt"] {
        let out = lab.run(&["import", &fixture(file), "--label", "rtla"]);
        assert_rejected(&out, "timerlat top");
        assert!(text(&out.stderr).contains("with -a"), "{file}: says where the analysis comes from");
    }
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "nothing stored");
}

/// The real `rtla timerlat hist -a` capture of tests/fixtures/README.md: a FIFO 99 busy loop
/// (python3, pid 273) on the measured CPU stopped it.
#[test]
fn rtla_timerlat_auto_analysis_is_stored_with_the_run_shown_and_exported() {
    let lab = Lab::new();
    lab.ok(&["import", &fixture("rtla-timerlat-hist-aa.txt"), "--label", "rtla"]);
    let id = lab.last_run();
    let doc = lab.export_json(id);
    assert_valid_export(&doc);
    let a = &doc["run"]["params"]["timerlat_analysis"];
    assert_eq!(a["cpu"], 1, "{a}");
    assert_eq!((&a["irq_handler_delay_ns"], &a["exit_from_idle"]), (&642_220.into(), &true.into()), "{a}");
    assert_eq!(a["irq_latency_ns"], 657_150);
    assert_eq!(a["timer_irq_duration_ns"], 119_440);
    // The timer fired into idle: the idle task is what rtla calls blocking, and the busy loop
    // that then ran before the timerlat thread is its thread interference.
    assert_eq!(a["blocking_thread"], serde_json::json!({"name": "swapper/1", "id": 0, "duration_ns": 40_390}));
    assert_eq!(a["irq_interference_ns"], 38_529_150);
    assert_eq!(a["thread_interference_ns"], 284_275_870);
    let listed = a["interference"].as_array().unwrap();
    assert_eq!(listed.iter().filter(|i| i["class"] == "irq" && i["name"] == "local_timer").count(), 22);
    let thread: Vec<_> = listed.iter().filter(|i| i["class"] == "thread").collect();
    assert_eq!(
        thread,
        [&serde_json::json!({"class": "thread", "name": "python3", "id": 273, "duration_ns": 284_275_870})]
    );
    // The activation analysed is the run's worst: the histogram's max is its thread latency.
    assert_eq!(a["thread_latency_ns"], 323_671_840);
    assert_eq!(doc["threads"][0]["max_ns"], 323_671_000, "rtla's max (µs) is the analysed activation's");
    let said = lab.ok(&["show", &id.to_string()]);
    for want in
        ["auto-analysis", "IRQ handler delay (exit from idle)", "blocking thread swapper/1 (pid 0)", "python3:273"]
    {
        assert!(said.contains(want), "show says '{want}':\n{said}");
    }
    let total = said.lines().find(|l| l.trim_start().starts_with("thread latency")).expect("the total");
    assert!(total.contains("323671.84") && total.ends_with("100.00 %"), "{total}");
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
