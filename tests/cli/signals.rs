//! Nothing lost: a run stopped by a signal keeps what it measured; a killed run is recovered.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::helpers::*;

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success();
    assert!(ok, "kill {sig} {pid}");
}

/// Starts a 60 s timer run, lets it measure for `secs`, sends `sig`, and returns (exit code, run).
fn interrupt(sig: &str, secs: f64) -> (Option<i32>, serde_json::Value, Lab) {
    let lab = Lab::new();
    let mut child = lab
        .cmd(&["timer", "-t", "1", "-i", "1000", "-D", "60s", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_for_runs(1, Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs_f64(secs));
    signal(child.id(), sig);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "rtbench did not stop after {sig}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let id = lab.last_run();
    (status.code(), lab.export_json(id), lab)
}

fn seconds_between(start: &str, end: &str) -> f64 {
    let secs = |s: &str| -> f64 {
        let h: f64 = s[11..13].parse().unwrap();
        let m: f64 = s[14..16].parse().unwrap();
        let sec: f64 = s[17..23].parse().unwrap();
        h * 3600.0 + m * 60.0 + sec
    };
    (secs(end) - secs(start)).rem_euclid(86_400.0)
}

#[test]
fn sigint_saves_an_interrupted_run_with_every_sample() {
    let (code, doc, _lab) = interrupt("-INT", 2.5);
    assert_eq!(code, Some(130));
    assert_eq!(doc["run"]["status"], "interrupted");
    let elapsed = seconds_between(doc["run"]["start"].as_str().unwrap(), doc["run"]["end"].as_str().unwrap());
    let t = &doc["threads"][0];
    let periods = t["count"].as_f64().unwrap() + t["overruns"].as_f64().unwrap();
    // One period per ms of measuring; start-up and saving take a little of the stored span.
    let expected = elapsed * 1000.0;
    assert!(
        periods > expected * 0.7 && periods <= expected + 50.0,
        "{periods} periods in {elapsed:.3} s of run (expected about {expected:.0})"
    );
    let warnings = doc["run"]["warnings"].to_string();
    assert!(warnings.contains("interrupted"), "{warnings}");
}

#[test]
fn sigterm_ends_with_143_and_keeps_the_run() {
    let (code, doc, _lab) = interrupt("-TERM", 1.5);
    assert_eq!(code, Some(143));
    assert_eq!(doc["run"]["status"], "interrupted");
    assert!(doc["total"]["count"].as_u64().unwrap() > 0);
}

#[test]
fn sigkill_leaves_an_aborted_run_with_its_last_checkpoint() {
    let (code, doc, lab) = interrupt("-KILL", 3.0);
    assert_eq!(code, None, "killed by a signal");
    // The next command noticed the process is gone.
    assert_eq!(doc["run"]["status"], "aborted");
    let count = doc["total"]["count"].as_u64().unwrap();
    assert!(count >= 1000, "at least the checkpoints of the first seconds survive, got {count}");
    let warnings = doc["run"]["warnings"].to_string();
    assert!(warnings.contains("last checkpoint"), "{warnings}");
    assert_valid_export(&doc);
    let id = doc["run"]["id"].to_string();
    assert!(lab.ok(&["show", &id]).contains("aborted"));
    lab.ok(&["export", &id, "--format", "cyclictest-hist"]);
}

#[test]
fn a_running_run_of_a_live_process_is_left_alone() {
    let lab = Lab::new();
    let mut child = lab.cmd(&["timer", "-t", "1", "-D", "4s", "-q"]).stdout(Stdio::null()).spawn().unwrap();
    let runs = lab.wait_for_runs(1, Duration::from_secs(3));
    assert_eq!(runs[0]["status"], "running", "another command must not abort a live run");
    assert!(child.wait().unwrap().success());
    assert_eq!(lab.runs()[0]["status"], "complete");
}

#[test]
fn a_second_sigint_aborts_at_once() {
    let lab = Lab::new();
    // A 3 s period keeps the threads asleep after the first signal, so the second one lands
    // while the run is still stopping.
    let child = lab
        .cmd(&["timer", "-t", "1", "-i", "3000000", "-D", "60s", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id(), "-INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(text(&out.stderr).contains("second signal"), "{}", text(&out.stderr));
    let runs = lab.runs();
    assert_eq!(runs[0]["status"], "aborted", "the next command finds the abandoned run");
}
