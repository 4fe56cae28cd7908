//! The live view appears on a terminal only, and never with -q.

use crate::helpers::*;
use rtbench_testkit::needs;

/// Runs rtbench under a pseudo-terminal (util-linux `script`) and returns what the terminal saw.
fn on_terminal(lab: &Lab, args: &str) -> String {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_rtbench"));
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("RTBENCH_DB", lab.db())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[needs("script")]
#[test]
fn live_lines_and_progress_on_a_terminal() {
    let lab = Lab::new();
    let screen = on_terminal(&lab, "timer -t 2 -D 1500ms");
    assert!(screen.contains("T:  0") && screen.contains("T:  1"), "a line per thread: {screen}");
    assert!(screen.contains("Act:"), "{screen}");
    assert!(screen.contains("left"), "a progress bar with time left: {screen}");
    assert!(screen.contains("\x1b[2K"), "lines are redrawn in place");
}

#[needs("script")]
#[test]
fn quiet_or_piped_shows_no_live_view() {
    let lab = Lab::new();
    let screen = on_terminal(&lab, "timer -t 1 -D 1s -q");
    assert!(!screen.contains("left") && !screen.contains("\x1b[2K"), "{screen}");
    let piped = lab.ok(&["timer", "-t", "1", "-D", "1s"]);
    assert!(!piped.contains("left") && !piped.contains("\x1b["), "{piped}");
}

#[needs("script")]
#[test]
fn live_lines_say_the_policy_each_thread_runs_at() {
    let lab = Lab::new();
    let screen = on_terminal(&lab, "timer -t 1 -D 1500ms --policy other");
    // The live lines, not the summary printed after them.
    let live: Vec<&str> = screen.split("\x1b[2KT:").skip(1).map(|l| l.lines().next().unwrap_or("")).collect();
    // A line drawn before its thread has set itself up says `P:-`.
    assert!(live.iter().any(|l| l.contains("P:other")), "{live:?}");
    assert!(live.iter().all(|l| l.contains("P:other") || l.contains("P:-")), "{live:?}");
}
