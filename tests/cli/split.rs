//! `--split`: every timer sample split into its IRQ and scheduling parts from hrtimer trace
//! events, checked sample by sample, and the split's trace instance never left behind.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::breach::{can_trace, run_ended_by, tracing_state, HOG, TRACEFS, TRACING};
use crate::helpers::*;

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

#[test]
fn idle_nearly_every_sample_is_matched_and_no_irq_part_exceeds_its_sample() {
    if !can_trace() {
        return;
    }
    let _one = TRACING.lock().unwrap_or_else(|e| e.into_inner());
    let before = tracing_state();
    let lab = Lab::new();
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
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

#[test]
fn a_real_time_burst_is_blamed_on_scheduling_not_on_the_interrupt() {
    if !can_trace() {
        return;
    }
    let _one = TRACING.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    let script = lab.path("hog.py");
    std::fs::write(&script, HOG).unwrap();
    let mut hog = Command::new("python3")
        .args([script.to_str().unwrap(), "1", "5", "0.005"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The breach tracer beside the split: its windows give the run's start on CLOCK_MONOTONIC.
    let json = lab.path("run.json");
    lab.ok(&[&RUN[..], &[json.to_str().unwrap(), "--breach", "2000", "--breach-max", "30"]].concat());
    let bursts: Vec<(u64, u64)> = BufReader::new(hog.stdout.take().unwrap())
        .lines()
        .map(|l| {
            let l = l.unwrap();
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert!(hog.wait().unwrap().success(), "the busy loop ran");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let b = &doc["breaches"][0];
    let start = b["mono_ns"].as_u64().expect("a breach during a burst") - b["t_ns"].as_u64().unwrap();
    let mut blamed = 0;
    for &(t, latency, irq) in &samples(&lab, lab.last_run())[&0] {
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

#[test]
fn a_killed_split_run_leaves_its_instance_to_the_next_command_which_removes_it() {
    if !can_trace() {
        return;
    }
    let _one = TRACING.lock().unwrap_or_else(|e| e.into_inner());
    let before = tracing_state();
    let lab = Lab::new();
    let state = lab.path("state");
    run_ended_by(&lab, &state, "-INT", &["--split"]);
    assert_eq!(tracing_state(), before, "SIGINT: tracing is as it was");

    let pid = run_ended_by(&lab, &state, "-KILL", &["--split", "--breach", "100000"]);
    let split = Path::new(TRACEFS).join("instances").join(format!("rtbench-split-{pid}"));
    assert!(split.is_dir(), "a killed run cannot remove its instance: {}", split.display());
    assert!(state.join(format!("split-trace-{pid}.json")).is_file(), "its journal says so");
    assert!(state.join(format!("trace-{pid}.json")).is_file(), "beside the breach tracer's");
    let out = lab.cmd(&["runs"]).env("RTBENCH_STATE_DIR", &state).output().unwrap();
    let said = text(&out.stderr);
    assert_eq!(said.matches("removed the trace instance").count(), 2, "{said}");
    assert!(!split.exists(), "the next command removed it");
    assert!(!state.join(format!("split-trace-{pid}.json")).exists(), "and its journal");
    assert_eq!(tracing_state(), before, "SIGKILL and one more command: tracing is as it was");
}

#[test]
fn split_is_refused_for_a_probe_without_a_timer() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["gtod", "--split", "-l", "10"]), "--split");
}
