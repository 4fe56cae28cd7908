//! `pi`: pi_stress's inversion groups around a priority-inheritance mutex.

use rtbench_testkit::needs;

use crate::helpers::{assert_rejected, text, Lab};

/// With priority inheritance every round ends: each is a sample (how long the high thread
/// waited), counted as an inversion, and no deadlock is reported; the group's threads stay
/// below the measuring thread, which runs at the run's priority on its CPU.
#[needs(root, two_cpus)]
#[test]
fn every_inversion_ends_with_priority_inheritance() {
    let lab = Lab::new();
    lab.ok(&["pi", "-t", "2", "-l", "5000", "-q"]);
    let doc = lab.export_json(lab.last_run());
    let p = &doc["run"]["params"];
    assert_eq!((p["probe"].as_str(), p["inject"].as_bool()), (Some("pi"), Some(false)), "{p}");
    assert_eq!((p["inversions"].as_u64(), p["deadlocks"].as_u64()), (Some(10_000), Some(0)), "{p}");
    assert!(p["inversions_per_s"].as_f64().is_some_and(|r| r > 0.0), "{p}");
    assert_eq!(doc["run"]["status"], "complete");
    for t in doc["threads"].as_array().unwrap() {
        assert_eq!((t["count"].as_u64(), t["priority"].as_i64()), (Some(5000), Some(95)), "{t}");
    }
    let shown = lab.ok(&["show", &lab.last_run().to_string()]);
    assert!(shown.contains("inversions: 10000 (") && shown.contains("deadlocks: 0"), "{shown}");
}

/// The control: without priority inheritance the first round deadlocks, and it is caught in 10
/// runs of 10 — a failed run (exit 1) with the three threads named and what they were doing:
/// the high one waiting, the medium one holding the CPU, the low one (the mutex's holder) ready
/// but never run. Every thread ends: the command returns.
#[needs(root, two_cpus)]
#[test]
fn the_control_without_inheritance_is_caught_as_a_deadlock_every_time() {
    let lab = Lab::new();
    for run in 1..=10 {
        let out = lab.run(&["pi", "--inject", "--deadlock-ms", "100", "-l", "1000", "-q"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "run {run}: {err}");
        assert!(err.contains("rtbench: FAILED: deadlock: group 0 on CPU "), "run {run}: {err}");
        for (role, prio, doing) in
            [("low", 2, "running or ready"), ("medium", 3, "running or ready"), ("high", 4, "waiting")]
        {
            let named = format!("{role} (TID ");
            let at = err.find(&named).unwrap_or_else(|| panic!("run {run}: no {role} thread named: {err}"));
            let said = &err[at..];
            assert!(said.contains(&format!(", FIFO {prio}: {doing}, CPU ")), "run {run}, {role}: {said}");
        }
        let doc = lab.export_json(lab.last_run());
        assert_eq!(doc["run"]["status"], "failed", "run {run}");
        assert_eq!(doc["run"]["params"]["deadlocks"], 1, "run {run}");
    }
}

#[test]
fn a_group_that_would_reach_its_measuring_thread_is_refused() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["pi", "-p", "4", "-l", "1"]), "it must run above the group");
    assert_rejected(&lab.run(&["pi", "--policy", "other", "-l", "1"]), "SCHED_OTHER");
}
