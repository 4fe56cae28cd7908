//! `noise --classify`: every gap classified by what ran in it, checked against a real-time
//! busy loop of known times, and the instance never left behind.

use std::path::Path;

use crate::breach::{hog_bursts, probe_ended_by, start_hog, traced, tracing_state, TRACEFS};
use crate::helpers::*;

#[test]
fn gaps_during_a_fifo_burst_are_the_burst_s_task_never_the_hardware() {
    let Some((_one, before)) = traced() else { return };
    let lab = Lab::new();
    // A FIFO-99 burst of 2 ms once a second on CPU 1, five times.
    let mut hog = start_hog(&lab, "1", "5", "0.002");
    // Gaps over 500 µs only, so the store keeps every one; the breach tracer beside it: its
    // window gives the run's start on CLOCK_MONOTONIC.
    let json = lab.path("run.json");
    let run = [
        "noise",
        "-a",
        "1",
        "--threshold",
        "500",
        "--classify",
        "-D",
        "7s",
        "-q",
        "--breach",
        "1500",
        "--breach-max",
        "1",
    ];
    lab.ok(&[&run[..], &["--json", json.to_str().unwrap()]].concat());
    let bursts = hog_bursts(&mut hog);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid_export(&doc);
    let b = &doc["breaches"][0];
    let start = b["mono_ns"].as_u64().expect("a breach during a burst") - b["t_ns"].as_u64().unwrap();
    let csv = lab.ok(&["export", &lab.last_run().to_string(), "--format", "samples"]);
    // The gaps that overlap a burst, each as long as the CPU was taken.
    let overlapping: Vec<u64> = csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<u64> = l.split(',').map(|v| v.parse().unwrap()).collect();
            let (t0, t1) = (start + f[1], start + f[1] + f[2]);
            bursts.iter().any(|&(a, end)| t0 < end && t1 > a).then_some(f[2])
        })
        .collect();
    assert!(overlapping.len() >= 3, "gaps during the bursts: {overlapping:?}");
    let totals = doc["run"]["params"]["classify"]["threads"][0]["totals"].as_array().expect("classified").clone();
    let hog_pid = format!("pid {},", hog.id());
    let named: u64 = totals
        .iter()
        .filter(|t| t["class"] == "thread" && t["name"] == "python3")
        .filter(|t| t["detail"].as_str().is_some_and(|d| d.starts_with(&hog_pid) && d.ends_with(" 99")))
        .map(|t| t["count"].as_u64().unwrap())
        .sum();
    assert!(named * 10 >= overlapping.len() as u64 * 9, "{named} of {} named: {totals:?}", overlapping.len());
    // Every hardware gap is shorter than any the bursts made: none of them went there.
    let hardware_max = totals.iter().filter(|t| t["class"] == "hardware").map(|t| t["max_ns"].as_u64().unwrap()).max();
    let shortest = *overlapping.iter().min().unwrap();
    assert!(hardware_max.unwrap_or(0) < shortest, "a hardware gap of {hardware_max:?} ns, bursts' {overlapping:?}");
    assert_intervals_add_up(&doc, &totals);
    let shown = lab.ok(&["show", &lab.last_run().to_string()]);
    let line = shown.lines().find(|l| l.starts_with("thread ")).expect("a thread line");
    assert!(line.contains("python3 (pid"), "{shown}");
    assert!(shown.lines().any(|l| l.starts_with("HW/hypervisor")), "{shown}");
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let svg = std::fs::read_to_string(out.join("figures").join("noise-classes.svg")).expect("the noise-by-class bar");
    assert!(svg.contains("noise: noise by class") && svg.contains("HW/hypervisor"), "{svg}");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("share of the noise by what ran in each gap"), "the page shows it");
    let over_time = out.join("figures").join(format!("noise-classes-{}.svg", lab.last_run()));
    let svg = std::fs::read_to_string(over_time).expect("the run's noise by class over time");
    assert!(svg.contains(r#"class="noise-thread""#), "the bursts' task is drawn over time: {svg}");
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

/// The export's per-interval counts ("per class per second") add up to the run's totals of
/// each class, and every interval lies within the run.
fn assert_intervals_add_up(doc: &serde_json::Value, totals: &[serde_json::Value]) {
    let intervals = doc["noise_intervals"].as_array().expect("the gaps per interval");
    for class in ["irq", "softirq", "thread", "hardware", "unknown"] {
        let sum = |rows: &[serde_json::Value], field: &str| -> u64 {
            rows.iter().filter(|r| r["class"] == class).map(|r| r[field].as_u64().unwrap()).sum()
        };
        let want = (sum(totals, "count"), sum(totals, "ns"));
        assert_eq!((sum(intervals, "count"), sum(intervals, "ns")), want, "{class}: {intervals:?}");
    }
    assert!(intervals.iter().all(|r| r["index"].as_u64().unwrap() < 8), "a 7 s run: {intervals:?}");
    assert!(intervals.iter().any(|r| r["class"] == "thread"), "the bursts' intervals: {intervals:?}");
}

#[test]
fn a_killed_classified_run_leaves_its_instance_to_the_next_command_which_removes_it() {
    let Some((_one, before)) = traced() else { return };
    let lab = Lab::new();
    let state = lab.path("state");
    let pid = probe_ended_by(&lab, &state, "-KILL", &["noise", "-a", "1", "--classify"]);
    let dir = Path::new(TRACEFS).join("instances").join(format!("rtbench-classify-{pid}"));
    assert!(dir.is_dir(), "a killed run cannot remove its instance: {}", dir.display());
    assert!(state.join(format!("classify-trace-{pid}.json")).is_file(), "its journal says so");
    let out = lab.cmd(&["runs"]).env("RTBENCH_STATE_DIR", &state).output().unwrap();
    assert!(text(&out.stderr).contains("removed the trace instance"), "{}", text(&out.stderr));
    assert!(!dir.exists(), "the next command removed it");
    assert_eq!(tracing_state(), before, "SIGKILL and one more command: tracing is as it was");
}

#[test]
fn classify_is_refused_for_a_probe_without_gaps() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["timer", "--classify", "-l", "10"]), "--classify");
}

/// A stored classified run of `label`: 10 s long, its gaps `totals` (class, ns).
fn classified(lab: &Lab, label: &str, totals: &[(&str, u64)]) {
    lab.ok(&["synthetic", "-l", "2000", "-q", "--label", label]);
    let rows: Vec<String> = totals
        .iter()
        .map(|(class, ns)| {
            format!(
                r#"{{"class":"{class}","name":"","detail":null,"count":4,"ns":{ns},"max_ns":{ns},"over_budget":0}}"#
            )
        })
        .collect();
    let classify = format!(
        r#"{{"lost_events":0,"budget_ns":null,"skipped":null,"threads":[{{"thread":0,"totals":[{}]}}]}}"#,
        rows.join(",")
    );
    crate::findings::sql(
        lab,
        &format!("UPDATE runs SET params = json_set(params, '$.duration_s', 10.0, '$.classify', json('{classify}')) WHERE id = ?1"),
        lab.last_run(),
    );
}

#[test]
fn compare_gives_each_class_s_share_of_the_noise_and_noise_per_second_in_both_labels() {
    let lab = Lab::new();
    // k-a: 1 ms of IRQ and 3 ms nothing the kernel saw in 10 s; k-b: 2 ms of IRQ, 2 ms of a thread.
    classified(&lab, "k-a", &[("irq", 1_000_000), ("hardware", 3_000_000)]);
    classified(&lab, "k-b", &[("irq", 2_000_000), ("thread", 2_000_000)]);
    let text = lab.ok(&["compare", "--baseline", "k-a", "k-b"]);
    let section = text.split_once("noise by class").unwrap_or_else(|| panic!("no section: {text}")).1;
    let row = |class: &str| -> Vec<String> {
        let line = section
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(class))
            .unwrap_or_else(|| panic!("{class}: {text}"));
        line.split_whitespace().skip(3).map(String::from).collect()
    };
    assert_eq!(row("IRQ"), ["25.0", "50.0", "100", "200"], "{text}");
    assert_eq!(row("HW/hypervisor"), ["75.0", "0.0", "300", "0"], "{text}");
    assert_eq!(row("thread"), ["0.0", "50.0", "0", "200"], "{text}");
    assert!(!section.lines().any(|l| l.contains("softirq")), "a class neither label saw is left out: {text}");
    assert!(text.starts_with("(µs)\n"), "the µs rows come first, as before: {text}");
    let doc: serde_json::Value =
        serde_json::from_str(&lab.ok(&["compare", "--baseline", "k-a", "k-b", "--json"])).unwrap();
    assert_matches_schema(&doc, "compare.schema.json");
    let pair = &doc["noise_classes"][0];
    assert_eq!(
        (pair["probe"].as_str(), pair["load"].as_str()),
        (Some("synthetic"), Some(doc["pairs"][0]["load"].as_str().unwrap()))
    );
    let hw = pair["classes"].as_array().unwrap().iter().find(|c| c["class"] == "hardware").expect("hardware");
    assert_eq!((hw["baseline"]["share"].as_f64(), hw["baseline"]["ns_per_s"].as_f64()), (Some(0.75), Some(300_000.0)));
    assert_eq!((hw["label"]["share"].as_f64(), hw["label"]["ns_per_s"].as_f64()), (Some(0.0), Some(0.0)));
}

#[test]
fn compare_of_runs_not_classified_has_no_noise_section() {
    let lab = Lab::new();
    for label in ["k-a", "k-b"] {
        lab.ok(&["synthetic", "-l", "2000", "-q", "--label", label]);
    }
    assert!(!lab.ok(&["compare", "--baseline", "k-a", "k-b"]).contains("noise by class"));
    let doc: serde_json::Value =
        serde_json::from_str(&lab.ok(&["compare", "--baseline", "k-a", "k-b", "--json"])).unwrap();
    assert!(doc.get("noise_classes").is_none(), "{doc}");
}
