//! Imports of other tools' results: sockperf's full log, rtla's histograms and rt-tests' summaries (cyclictest's are
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

/// rt-tests' qualification tools, run here for a moment each, write `--json` files that import
/// as runs of rtbench's probes (an IPC tool's as its way's cell): the count, min, average and
/// max the file holds, no percentile and no standard deviation (the tools keep no distribution:
/// the export says so with an empty set and a null, and still matches the schema), the tool's
/// own verdict and pi_stress's inversions in `show`. What needs a distribution refuses them in
/// one line (a histogram export, the worst-case estimate) or leaves them out and says so (the
/// report).
#[rtbench_testkit::needs(
    root,
    "ptsematest",
    "sigwaittest",
    "svsematest",
    "pmqtest",
    "cyclicdeadline",
    "pi_stress",
    "rt-migrate-test"
)]
#[test]
fn rt_tests_qualification_tools_import_as_summaries_of_their_probes() {
    let lab = Lab::alone();
    let json = |tool: &str| lab.path(&format!("{tool}.json")).to_str().unwrap().to_string();
    let ipc = ["-a", "1", "-p", "90", "-i", "1000", "-l", "100", "-q"];
    let tools: [(&str, Vec<&str>, &str, Option<&str>); 7] = [
        ("ptsematest", ipc.to_vec(), "ipc", Some("mutex")),
        ("sigwaittest", ipc.to_vec(), "ipc", Some("signal")),
        ("svsematest", ipc.to_vec(), "ipc", Some("sem")),
        ("pmqtest", ipc.to_vec(), "ipc", Some("mq")),
        ("cyclicdeadline", vec!["-t", "1", "-i", "4000", "-D", "1", "-q"], "deadline", None),
        ("rt-migrate-test", vec!["-c", "-l", "2"], "migrate", None),
        ("pi_stress", vec!["-D", "1", "-q"], "pi", None),
    ];
    for (tool, args, probe, variant) in &tools {
        let out = std::process::Command::new(tool).args(args).arg(format!("--json={}", json(tool))).output().unwrap();
        assert!(std::path::Path::new(&json(tool)).exists(), "{tool} wrote no JSON: {}", text(&out.stderr));
        lab.ok(&["import", &json(tool), "--label", "rt-tests"]);
        let id = lab.last_run();
        let doc = lab.export_json(id);
        assert_valid_export(&doc);
        assert_eq!(doc["run"]["probe"], *probe, "{tool}");
        // The way of an IPC tool, as rtbench's own ipc runs say it: the same cell of a report.
        assert_eq!(doc["run"]["params"]["variant"].as_str(), *variant, "{tool}");
        let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json(tool)).unwrap()).unwrap();
        assert_eq!(doc["run"]["params"]["summary"]["tool"], *tool);
        assert_eq!(doc["run"]["params"]["summary"]["return_code"], file["return_code"], "{tool}");
        let shown = lab.ok(&["show", &id.to_string()]);
        assert!(shown.contains(&format!("{tool} 2.")) && shown.contains("its own test (exit "), "{shown}");
        let refused = lab.run(&["export", &id.to_string(), "--format", "hgrm"]);
        assert_rejected(&refused, &format!("run {id} holds {tool}'s "));
        assert_rejected(&lab.run(&["wcet", &id.to_string()]), "no distribution");
        if *tool == "pi_stress" {
            assert_eq!(doc["run"]["params"]["summary"]["inversions"], file["inversion"]);
            assert!(shown.contains("; inversions: "), "{shown}");
            continue;
        }
        // The file's own numbers: its first thread (an IPC tool's receiver), µs to ns.
        let t = &file["thread"]["0"];
        let (part, count) = match *tool {
            "cyclicdeadline" => (t, t["cycles"].as_u64()),
            "rt-migrate-test" => (t, Some((t["total"].as_f64().unwrap() / t["avg"].as_f64().unwrap()).round() as u64)),
            _ => (&t["receiver"], t["sender"]["samples"].as_u64()),
        };
        let got = &doc["threads"][0];
        assert_eq!(got["count"].as_u64(), count, "{tool}: {got}");
        assert_eq!(got["min_ns"].as_f64(), part["min"].as_f64().map(|us| us * 1000.0), "{tool}");
        assert_eq!(got["max_ns"].as_f64(), part["max"].as_f64().map(|us| us * 1000.0), "{tool}");
        let avg = part["avg"].as_f64().unwrap() * 1000.0;
        assert!((got["mean_ns"].as_f64().unwrap() - avg).abs() < 1.0, "{tool}: {got} vs {avg}");
        assert!(got["stddev_ns"].is_null() && got["percentiles_ns"] == serde_json::json!({}), "{tool}: {got}");
        assert!(shown.contains("        -          -"), "{tool}: no percentile shown: {shown}");
    }
    let runs = lab.runs();
    let cells: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(cells, tools.iter().map(|t| t.2).collect::<Vec<_>>(), "one run per file");
    let report = lab.path("report");
    let out = lab.run(&["report", "-o", report.to_str().unwrap()]);
    let said = text(&out.stderr);
    for (id, (tool, ..)) in tools.iter().enumerate() {
        assert!(said.contains(&format!("run {} holds {tool}'s ", id + 1)), "{said}");
    }
}
