//! `migrate`: rt-migrate-test's check, every interval and every pair of tasks.

use rtbench_testkit::needs;

use crate::helpers::{assert_rejected, Lab};

/// The control: the two highest tasks pinned to one CPU, one of them waits every interval
/// while the lowest runs on another CPU, and each interval says so with both tasks named. At
/// rest every interval is checked and counted (how many violations this VM shows is the
/// benchmark's to say: a vCPU the hypervisor takes away makes a task wait). One test, alone:
/// its FIFO tasks take both CPUs a fifth of the time.
#[needs(root, two_cpus)]
#[test]
fn an_injected_wait_is_caught_in_every_interval_and_every_interval_at_rest_is_checked() {
    let lab = Lab::alone();
    lab.ok(&["migrate", "-l", "6", "--inject", "--tasks", "3"]);
    let doc = lab.export_json(lab.last_run());
    let p = &doc["run"]["params"];
    assert_eq!((p["probe"].as_str(), p["intervals"].as_u64()), (Some("migrate"), Some(6)), "{p}");
    assert_eq!(p["violations"], 6, "one an interval: {p}");
    let first = p["first_violations"][0].as_str().unwrap();
    assert!(first.starts_with("interval 1: the task at FIFO 3 waited "), "{first}");
    assert!(first.contains("while the one at FIFO 2 ran on CPU "), "{first}");
    assert_eq!(doc["total"]["count"], 6, "a sample an interval");
    let shown = lab.ok(&["show", &lab.last_run().to_string()]);
    assert!(shown.contains("violations: 6 in 6 intervals"), "{shown}");

    lab.ok(&["migrate", "-l", "6"]);
    let doc = lab.export_json(lab.last_run());
    let p = &doc["run"]["params"];
    assert_eq!(p["intervals"], 6, "{p}");
    assert!(p["violations"].is_u64() && p["violations_in_steal"].is_u64(), "{p}");
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(p["tasks"].as_u64(), Some(cpus + 1), "one more than the CPUs: {p}");
    assert_eq!(doc["threads"][0]["priority"], 95, "the measuring thread above the tasks: {}", doc["threads"][0]);
}

#[test]
fn settings_that_cannot_make_the_test_are_refused() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["migrate", "--run-ms", "60", "-l", "1"]), "leaves the lowest task no time to run");
    assert_rejected(&lab.run(&["migrate", "--inject", "--tasks", "2", "-l", "1"]), "at least 3 tasks");
    assert_rejected(&lab.run(&["migrate", "--base-priority", "90", "--tasks", "9", "-l", "1"]), "pass 98");
}
