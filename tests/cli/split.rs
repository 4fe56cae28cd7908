//! `--split`: every timer sample split into its IRQ and scheduling parts from hrtimer trace
//! events, checked sample by sample, and the split's trace instance never left behind.

use std::collections::HashMap;
use std::process::Stdio;

use crate::breach::{
    held_hog, hog_bursts, measuring, only_the_breach_tracer_was_left, release, run_ended_by, succeeded, traced,
    tracing_state,
};
use crate::helpers::*;
use rtbench_testkit::needs;

/// 2000 samples at 2.5 ms: about 5 s, every sample kept in the store (and so in the export).
const RUN: [&str; 12] = ["timer", "-t", "1", "-a", "1", "--split", "-i", "2500", "-l", "2000", "-q", "--json"];

/// Per thread, the stored samples: (time offset, latency, IRQ latency if matched).
fn samples(lab: &Lab, id: i64) -> HashMap<u64, Vec<(u64, u64, Option<u64>)>> {
    let csv = lab.ok(&["export", &id.to_string(), "--format", "samples"]);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("thread,t_ns,latency_ns,irq_ns"), "a split run's samples carry their IRQ part");
    let mut out: HashMap<u64, Vec<_>> = HashMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let irq = (!f[3].is_empty()).then(|| f[3].parse().unwrap());
        out.entry(f[0].parse().unwrap()).or_default().push((f[1].parse().unwrap(), f[2].parse().unwrap(), irq));
    }
    out
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn idle_nearly_every_sample_is_matched_and_no_irq_part_exceeds_its_sample() {
    let (lab, before) = traced();
    let json = lab.path("run.json");
    lab.ok(&[&RUN[..], &[json.to_str().unwrap()]].concat());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid_export(&doc);
    let (t, irq) = (&doc["threads"][0], &doc["threads"][0]["irq"]);
    let (count, matched, unmatched) =
        (t["count"].as_u64().unwrap(), irq["count"].as_u64().unwrap(), irq["unmatched"].as_u64().unwrap());
    assert_eq!(matched + unmatched, count, "every sample is matched or counted unmatched");
    assert!(matched as f64 >= 0.99 * count as f64, "{matched} of {count} matched");
    let samples = &samples(&lab, lab.last_run())[&0];
    assert_eq!(samples.len() as u64, count);
    assert_eq!(samples.iter().filter(|s| s.2.is_some()).count() as u64, matched);
    for &(t, latency, irq) in samples {
        // The handler runs before the thread it wakes reads the clock: no clock-read slack.
        if let Some(irq) = irq {
            assert!(irq <= latency, "sample at {t} ns: IRQ {irq} ns > thread {latency} ns");
        }
    }
    let shown = lab.ok(&["show", &lab.last_run().to_string()]);
    let irq_line = shown.lines().find(|l| l.trim_start().starts_with("IRQ")).expect("an IRQ line");
    assert!(irq_line.contains(&format!("C:{matched:>10}")) && irq_line.contains("Unmatched:"), "{shown}");
    // Where the expiries came from is said: BPF here, an ftrace instance where BPF cannot load.
    assert!(shown.lines().any(|l| l.starts_with("IRQ latency from BPF")), "{shown}");
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_real_time_burst_is_blamed_on_scheduling_not_on_the_interrupt() {
    let (lab, _) = traced();
    // The breach tracer beside the split: its windows give the run's start on CLOCK_MONOTONIC.
    let json = lab.path("run.json");
    let mut hog = held_hog(&lab, "1", "5", "0.005");
    // 7 s (RUN's 2000 wake-ups, all kept raw, 3.5 ms apart: still less than a burst), not 5.
    let args = [&RUN[..7], &["3500", "-l", "2000", "-q", "--json", json.to_str().unwrap(), "--breach", "2000"]];
    let run = measuring(&lab, lab.cmd(&[&args.concat()[..], &["--breach-max", "30"]].concat()));
    // Once the run measures (its first checkpoint: a busy machine may take seconds to set up the
    // split, and the fast tier once saw every burst fall before the first sample), five bursts,
    // the last 4.5 s on: all within the 7 s run.
    release(&mut hog);
    let bursts = hog_bursts(&mut hog);
    succeeded(run);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let b = &doc["breaches"][0];
    let start = b["mono_ns"].as_u64().expect("a breach during a burst") - b["t_ns"].as_u64().unwrap();
    let samples = &samples(&lab, lab.last_run())[&0];
    // Each breach says its split, the same as its stored sample's.
    for b in doc["breaches"].as_array().unwrap() {
        let t = b["t_ns"].as_u64().unwrap();
        let sample = samples.iter().find(|s| s.0 == t).expect("the breach's sample is stored");
        let irq = b["irq_ns"].as_u64().expect("a breach of a split run has its IRQ part");
        assert_eq!(Some(irq), sample.2, "the breach's split is its sample's");
        let verdict = b["verdict"].as_str().unwrap();
        assert!(verdict.contains("the timer interrupt ran") && verdict.contains("the thread ran"), "{verdict}");
    }
    let mut blamed = 0;
    for &(t, latency, irq) in samples {
        let due = start + t;
        // Due while the busy loop held the CPU, at least 1 ms before it let go: the thread
        // waited for the CPU, whatever its interrupt did.
        if !bursts.iter().any(|&(a, end)| due >= a && due + 1_000_000 <= end) {
            continue;
        }
        let irq = irq.unwrap_or_else(|| panic!("the sample at {t} ns during a burst was matched"));
        assert!((latency - irq) * 5 >= latency * 4, "sample at {t} ns: IRQ {irq} of {latency} ns");
        blamed += 1;
    }
    assert!(blamed >= 3, "samples due during the bursts: {blamed}");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_killed_split_run_leaves_nothing_of_its_own_and_the_next_command_removes_the_breach_tracer_s() {
    let (lab, before) = traced();
    let state = lab.path("state");
    run_ended_by(&lab, &state, "-INT", &["--split"]);
    assert_eq!(tracing_state(), before, "SIGINT: tracing is as it was");

    // The split's BPF program and maps are fds: the kernel frees them with the process.
    let pid = run_ended_by(&lab, &state, "-KILL", &["--split", "--breach", "100000"]);
    only_the_breach_tracer_was_left(&lab, &state, pid, "split");
    assert_eq!(tracing_state(), before, "SIGKILL and one more command: tracing is as it was");
}

#[test]
fn split_is_refused_for_a_probe_without_a_timer() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["gtod", "--split", "-l", "10"]), "--split");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn compare_sets_the_irq_part_of_two_split_labels_beside_their_wake_up_latency() {
    let (lab, _) = traced();
    for label in ["a", "b"] {
        lab.ok(&["timer", "-t", "1", "-a", "1", "--split", "-l", "300", "-q", "--label", label]);
    }
    lab.ok(&["timer", "-t", "1", "-a", "1", "-l", "300", "-q", "--label", "plain"]);
    let table = lab.ok(&["compare", "--baseline", "a", "b"]);
    let irq_p99 = table.lines().find(|l| l.contains("irq p99 ")).unwrap_or_else(|| panic!("{table}"));
    let stored = |label: &str| {
        let runs = lab.runs();
        let id = runs.as_array().unwrap().iter().find(|r| r["label"] == label).unwrap()["id"].as_i64().unwrap();
        lab.export_json(id)["threads"][0]["irq"]["percentiles_ns"]["99"].as_u64().unwrap()
    };
    let us = |ns: u64| format!("{:.3}", ns as f64 / 1000.0);
    assert!(irq_p99.contains(&us(stored("a"))) && irq_p99.contains(&us(stored("b"))), "{irq_p99}");
    let unsplit = lab.ok(&["compare", "--baseline", "a", "plain"]);
    assert!(!unsplit.contains("irq "), "a label not split has no IRQ part to compare: {unsplit}");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_study_splits_its_timer_cells_by_default_and_only_those() {
    let (lab, _) = traced();
    lab.ok(&["study", "--no-qualify", "-D", "1s", "--load", "none", "--no-sysbench", "-q", "--no-report"]);
    let runs = lab.runs();
    let probe_of = |r: &serde_json::Value| r["probe"].as_str().unwrap().to_string();
    let mut seen_timer = false;
    for r in runs.as_array().unwrap() {
        let doc = lab.export_json(r["id"].as_i64().unwrap());
        let split = doc["threads"].as_array().unwrap().iter().all(|t| t["irq"]["count"].as_u64().is_some());
        let timer = probe_of(r) == "timer";
        seen_timer |= timer;
        assert_eq!(split, timer, "{} cell split: {split}", probe_of(r));
    }
    assert!(seen_timer, "the study has a timer cell");
}

/// A split run's part of the report, and the findings sentence, from a real `timer --split`
/// run; a run not split beside it gets none of it.
#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn the_report_overlays_both_sides_tables_their_shares_and_says_where_the_p99_went() {
    let (lab, _) = traced();
    lab.ok(&["timer", "-t", "1", "-a", "1", "--split", "-D", "2s", "-q", "--label", "k"]);
    let id = lab.last_run();
    lab.ok(&["timer", "-t", "1", "-a", "1", "-l", "300", "-q", "--label", "plain"]);
    let plain = lab.last_run();
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let doc = lab.export_json(id);
    let (thread, irq) = (&doc["threads"][0], &doc["threads"][0]["irq"]);
    let (count, matched) = (thread["count"].as_u64().unwrap(), irq["count"].as_u64().unwrap());
    let p99 = |side: &serde_json::Value| side["percentiles_ns"]["99"].as_u64().unwrap();
    let max = |side: &serde_json::Value| side["max_ns"].as_u64().unwrap();

    // The overlay: both histograms drawn (bars in each side's colour), both named in the legend.
    let svg = std::fs::read_to_string(out.join("figures").join(format!("run{id}-split.svg"))).unwrap();
    for color in ["#1f77b4", "#ff7f0e"] {
        assert!(svg.contains(&format!(r#"fill="{color}" fill-opacity="0.55""#)), "bars in {color}: {svg}");
    }
    assert!(svg.contains(&format!(">thread latency: {count} samples, max ")), "{svg}");
    assert!(svg.contains(&format!(">IRQ latency: {matched} matched, max ")), "{svg}");
    assert!(!out.join("figures").join(format!("run{plain}-split.svg")).exists(), "a run not split has no overlay");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains(&format!(r#"<figure id="run{id}-split">"#)), "the overlay is on the page");

    // The table: in the timer section, the label's row with the shares from the exported stats.
    let table_at = html.find(r#"<h4 id="split-timer-k">"#).expect("the label's table of shares");
    assert!(html[..table_at].contains(r#"<h2 id="probe-timer">"#), "in the timer section");
    assert!(html.contains("ratio of percentiles") && html.contains("not a per-sample split"), "it says what it is");
    let table = &html[table_at..table_at + html[table_at..].find("</table>").unwrap()];
    let pct = |part: u64, whole: u64| format!("<td>{:.1} %</td>", part as f64 / whole as f64 * 100.0);
    let row = format!("<tr><td>idle</td><td>{id}</td>");
    assert!(table.contains(&row) && table.contains(&pct(p99(irq), p99(thread))), "{table}");
    assert!(table.contains(&pct(max(irq), max(thread))), "{table}");
    assert!(!html.contains("split-timer-plain"), "a label not split has no table");

    // The sentence: its numbers are the export's, and it links to the table.
    let findings: serde_json::Value = serde_json::from_str(&lab.ok(&["report", "--findings", "--json"])).unwrap();
    let split: Vec<&serde_json::Value> =
        findings["findings"].as_array().unwrap().iter().filter(|f| f["topic"] == "split").collect();
    assert_eq!(split.len(), 1, "one sentence, for the split label only: {split:?}");
    let f = split[0];
    let number =
        |name: &str| f["numbers"].as_array().unwrap().iter().find(|n| n["name"] == name).unwrap()["value"].clone();
    let us = |ns: u64| serde_json::json!(ns as f64 / 1000.0);
    assert_eq!(number("p99"), us(p99(thread)));
    assert_eq!(number("irq p99"), us(p99(irq)));
    let scheduling = p99(thread) as f64 - p99(irq) as f64;
    assert_eq!(number("scheduling p99"), serde_json::json!(scheduling / 1000.0), "thread − IRQ, as exported");
    assert_eq!((number("max"), number("irq max")), (us(max(thread)), us(max(irq))));
    assert_eq!(f["link"], "split-timer-k");
    let sentence = f["sentence"].as_str().unwrap();
    let side = if p99(irq) * 2 > p99(thread) { "the interrupt" } else { "scheduling" };
    assert!(sentence.contains("of the p99 of ") && sentence.contains("the timer interrupt took"), "{sentence}");
    assert!(sentence.contains(&format!("came mostly from {side}")), "{sentence}");
    assert!(html.contains(r##"<a href="#split-timer-k">Where the latency went, k timer idle"##), "linked on the page");
}

/// Two traced runs at once: the first mounts tracefs and ends while the second still traces;
/// the second, which found it mounted, is the last to go and unmounts it. Before, it was left
/// mounted.
#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn two_traced_runs_at_once_leave_tracefs_as_it_was() {
    let (lab, before) = traced();
    let first = lab
        .cmd(&["timer", "-t", "1", "-a", "1", "--breach", "100000", "-D", "2s", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    lab.ok(&["timer", "-t", "1", "-a", "1", "--split", "-D", "3s", "-q"]);
    assert!(first.wait_with_output().unwrap().status.success(), "the first traced run ended well");
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

/// The same run in both modes (forced): the IRQ statistics are built either way, from records
/// paired one by one or from the kernel's histograms, every sample matched or counted
/// unmatched (the histogram may also hold the last sleep, whose sample the run's end cut), and
/// the mode and why are stored, exported and shown.
#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn both_modes_build_the_irq_statistics_and_say_which_was_used_and_why() {
    let (_lab, _before) = traced();
    for mode in ["per-sample", "aggregate"] {
        let lab = Lab::new();
        let json = lab.path("run.json");
        let args = ["timer", "-t", "1", "-a", "1", "--split", "--split-mode", mode, "-i", "1000", "-l", "1500", "-q"];
        let out = lab.cmd(&[&args[..], &["--json", json.to_str().unwrap()]].concat()).output();
        assert!(out.as_ref().is_ok_and(|o| o.status.success()), "{mode}: {out:?}");
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_valid_export(&doc);
        let split = &doc["run"]["params"]["split"];
        assert_eq!(split["mode"], mode, "{split}");
        assert!(split["mode_reason"].as_str().is_some_and(|r| r.contains("asked")), "{split}");
        let (t, irq) = (&doc["threads"][0], &doc["threads"][0]["irq"]);
        let (count, matched, unmatched) =
            (t["count"].as_u64().unwrap(), irq["count"].as_u64().unwrap(), irq["unmatched"].as_u64().unwrap());
        assert!((matched + unmatched).abs_diff(count) <= 1, "{mode}: {matched} + {unmatched} vs {count}");
        assert!(matched as f64 >= 0.99 * count as f64, "{mode}: {matched} of {count} matched");
        assert!(irq["percentiles_ns"]["99"].as_u64().is_some_and(|p| p >= irq["min_ns"].as_u64().unwrap()), "{irq}");
        assert!(irq["max_ns"].as_u64() <= t["max_ns"].as_u64(), "{mode}: no IRQ part exceeds the thread's max");
        let aggregated = split["aggregated"].as_u64().unwrap_or(0);
        assert_eq!(aggregated > 0, mode == "aggregate", "{split}");
        let shown = lab.ok(&["show", &lab.last_run().to_string()]);
        assert!(shown.lines().any(|l| l.starts_with(&format!("split mode: {mode} ("))), "{shown}");
    }
}

/// In the aggregate mode the kernel hands on every expiry at or over the breach threshold:
/// each breach learns its IRQ part, or that it was under the threshold, never nothing.
#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn aggregated_a_breach_still_learns_its_irq_part() {
    let (lab, _before) = traced();
    let json = lab.path("run.json");
    let args = ["timer", "-t", "1", "-a", "1", "--split", "--split-mode", "aggregate", "-i", "1000", "-l", "800"];
    let traced = ["--breach", "1", "--breach-max", "3", "-q", "--json", json.to_str().unwrap()];
    lab.ok(&[&args[..], &traced].concat());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let split = &doc["run"]["params"]["split"];
    assert_eq!(split["mode"], "aggregate", "{split}");
    assert!(split["mode_reason"].as_str().is_some_and(|r| r.contains("(the breach threshold)")), "{split}");
    let breaches = doc["breaches"].as_array().expect("breaches");
    assert_eq!(breaches.len(), 3, "every sample is over 1 µs");
    for b in breaches {
        let verdict = b["verdict"].as_str().unwrap();
        let known = b["irq_ns"].is_u64() || verdict.contains("ran less than 1 µs late");
        assert!(known && verdict.contains("the timer interrupt ran"), "{b}");
    }
}

#[test]
fn an_unknown_split_mode_or_one_without_split_is_refused_in_one_line() {
    let lab = Lab::new();
    for (args, says) in
        [(&["--split", "--split-mode", "fast"][..], "fast"), (&["--split-mode", "aggregate"], "--split")]
    {
        let out = lab.cmd(&[&["timer", "-l", "10", "-q"], args].concat()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{err}");
    }
}
