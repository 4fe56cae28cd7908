//! `deadline`: SCHED_DEADLINE wake-ups, as cyclicdeadline measures them.

use rtbench_testkit::needs;

use crate::helpers::{text, Lab};

/// Each thread gets its own period (the interval plus the step per thread), wakes once a period
/// for every sample asked, and the run keeps its settings.
#[needs(root, two_cpus)]
#[test]
fn every_thread_wakes_once_a_period_of_its_own() {
    let lab = Lab::new();
    lab.ok(&["deadline", "-t", "2", "-i", "4000", "-s", "1000", "-l", "200", "-q"]);
    let doc = lab.export_json(lab.last_run());
    let p = &doc["run"]["params"];
    assert_eq!(
        (p["probe"].as_str(), p["interval_us"].as_u64(), p["step_us"].as_u64()),
        (Some("deadline"), Some(4000), Some(1000))
    );
    assert_eq!(doc["run"]["status"], "complete");
    for t in doc["threads"].as_array().unwrap() {
        assert_eq!(t["count"], 200, "{t}");
        // As the kernel held it once the probe had set it up: unpinned, under SCHED_DEADLINE.
        assert_eq!((t["policy"].as_str(), t["cpu"].is_null()), (Some("deadline"), true), "{t}");
    }
    // 200 periods of 4 ms and of 5 ms: the run lasted at least the longer thread's.
    let secs = crate::helpers::run_seconds(&doc);
    assert!(secs >= 0.99, "200 periods of 5 ms take a second: {secs} s");
}

/// A reservation the kernel's admission control refuses is said in words, with the thread and
/// its share, before anything is stored; the bandwidth is free again for the next run. It asks
/// for more than the machine's deadline bandwidth: alone, so no other test's deadline thread is
/// refused meanwhile.
#[needs(root, two_cpus)]
#[test]
fn a_reservation_the_kernel_refuses_is_said_before_anything_is_stored() {
    let lab = Lab::alone();
    let out = lab.run(&["deadline", "-t", "3", "--runtime-percent", "100", "-l", "10"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err.lines().find(|l| l.contains("refused")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("the kernel refused SCHED_DEADLINE (thread "), "{line}");
    assert!(line.contains("admission control has no bandwidth left"), "{line}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(lab.runs().as_array().map(Vec::len), Some(0), "nothing stored");
    lab.ok(&["deadline", "-t", "1", "-i", "4000", "-l", "20", "-q"]);
}
