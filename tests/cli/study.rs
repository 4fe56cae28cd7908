//! The study when its parts fail: a peer that cannot be reached, a cell that fails or stops
//! making progress, and the gate over a study with failed cells (issue 29).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::helpers::*;
use crate::report::{count_attr, elements, figures_in};
use rtbench_testkit::needs;

/// An echo server of the test's own, as a second machine runs `rtbench pingpong --serve`, and
/// its address.
fn peer(lab: &Lab) -> (Srv, String) {
    let srv = server(lab.cmd(&["pingpong", "--serve", "127.0.0.1:0"]));
    let addr = srv.addr();
    (srv, addr)
}

/// A server the test stops with SIGSTOP: resumed and killed however the test ends.
struct Stoppable(Srv);

impl Stoppable {
    fn signal(&self, sig: &str) {
        let pid = self.0.child.id().to_string();
        assert!(Command::new("kill").args([sig, &pid]).status().unwrap().success(), "kill {sig} {pid}");
    }
}

impl Drop for Stoppable {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.child.id().to_string()]).status();
        let _ = self.0.child.kill();
        let _ = self.0.child.wait();
    }
}

/// Waits for a line of a running command that starts with `prefix`; the lines before it too.
fn wait_line(lines: &std::sync::mpsc::Receiver<String>, prefix: &str, said: &mut Vec<String>) {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) else { continue };
        let found = line.starts_with(prefix);
        said.push(line);
        if found {
            return;
        }
    }
    panic!("no line starting with '{prefix}' in:\n{}", said.join("\n"));
}

#[test]
fn an_unreachable_peer_is_refused_before_the_first_cell() {
    let lab = Lab::new();
    let out = lab.path("study-report");
    // A port this test held and let go: nothing answers there.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let peer = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let run = lab.run(&[
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "-D",
        "1s",
        "--no-sysbench",
        "-q",
        "--peer",
        &peer,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_rejected(&run, &format!("--peer: cannot reach {peer}"));
    assert!(!text(&run.stdout).contains("== cell"), "no cell ran: {}", text(&run.stdout));
    assert!(!lab.db().exists() && !out.exists(), "nothing was stored or drawn");
    assert!(started.elapsed() < Duration::from_secs(10), "refused at once, not after the cells");
}

/// Runs a study against a peer of the test's own that goes away once the study has checked it:
/// its network cells (3 and 4) fail. Returns its exit code and what it printed.
fn study_losing_its_peer(lab: &Lab, extra: &[&str]) -> (Option<i32>, String, String) {
    let (mut srv, peer) = peer(lab);
    let args = [
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "-D",
        "1s",
        "--load",
        "none",
        "--no-sysbench",
        "-q",
        "--peer",
        &peer,
    ];
    let (study, lines) = spawn_lines(lab.cmd(&[&args[..], extra].concat()));
    let mut said = Vec::new();
    wait_line(&lines, "== cell 1 of 5", &mut said);
    srv.child.kill().unwrap();
    srv.child.wait().unwrap();
    let result = study.wait_with_output().unwrap();
    said.extend(lines.iter());
    (result.status.code(), said.join("\n"), peer)
}

#[test]
fn a_study_goes_on_when_a_cell_fails_and_says_which() {
    let lab = Lab::alone();
    let out = lab.path("study-report");
    // The peer answered the study's check, then goes away before its cells (issue 29).
    let (code, said, peer) = study_losing_its_peer(&lab, &["-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(1), "a failed cell is not a complete study: {said}");
    // The network cells fail, each said with its reason; the others run after them.
    for (k, probe) in [(3, "pingpong"), (4, "response")] {
        let line =
            said.lines().find(|l| l.starts_with(&format!("cell {k} failed: "))).unwrap_or_else(|| panic!("{said}"));
        assert!(line.contains(&peer), "{probe}'s reason names the peer: {line}");
    }
    assert!(said.contains("study: 2 of 5 cells failed: 3 (pingpong idle), 4 (response idle)"), "{said}");
    let runs = lab.runs();
    let stored = probes_and_statuses(&runs);
    assert_eq!(stored, [("timer", "complete"), ("gtod", "complete"), ("noise", "complete")]);
    assert!(said.contains("Appendix III"), "{said}");
    assert!(out.join("index.html").is_file(), "the report covers the cells that ran");
    assert!(figures_in(&out).iter().any(|f| f == "noise-nines.svg"), "the cell after the failures is drawn");
}

#[test]
fn a_gated_study_with_failed_cells_prints_the_gate_and_writes_them_as_junit_errors() {
    let lab = Lab::alone();
    let junit = lab.path("study.xml");
    lab.ok(&["timer", "-D", "1s", "-q", "--label", "base"]);
    let gate = ["--label", "new", "--baseline", "base", "--fail-if", "max < 0ns", "--junit", junit.to_str().unwrap()];
    let (code, said, _) = study_losing_its_peer(&lab, &[&gate[..], &["--no-report"]].concat());
    assert_eq!(code, Some(1), "{said}");
    // The cells that ran are compared; no condition holds on them.
    assert!(said.contains("study: label new against baseline base"), "{said}");
    assert!(said.contains("no --fail-if condition holds"), "{said}");
    assert!(said.contains("ERROR: pingpong idle: the cell failed: "), "{said}");
    let xml = std::fs::read_to_string(&junit).expect("--junit is written for the cells that ran");
    let parsed = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    let root = parsed.root_element();
    let cases = elements(root, "testcase");
    let names: Vec<_> = cases.iter().map(|c| c.attribute("name").unwrap()).collect();
    assert_eq!(
        names,
        ["timer idle: max < 0 µs", "pingpong idle: the cell ran", "response idle: the cell ran"],
        "{xml}"
    );
    let errors = elements(root, "error");
    assert_eq!(errors.len(), 2, "{xml}");
    assert!(errors.iter().all(|e| e.attribute("message").unwrap().contains("cannot reach")), "{xml}");
    assert_eq!((count_attr(root, "errors"), count_attr(root, "failures"), count_attr(root, "tests")), (2, 0, 3));
}

#[needs(full = "a study of five 9-second cells")]
#[test]
fn a_cell_whose_peer_stops_answering_fails_on_the_watchdog_and_the_study_goes_on() {
    let lab = Lab::alone();
    let (srv, peer) = peer(&lab);
    let srv = Stoppable(srv);
    // Longer than the moment the peer stops and the watchdog's margin (5 s) after it.
    let cell = Duration::from_secs(9);
    let args =
        ["study", "--no-qualify", "--no-split", "--no-classify", "-D", "9s", "--load", "none", "--no-sysbench", "-q"];
    let (study, lines) = spawn_lines(lab.cmd(&[&args[..], &["--peer", &peer, "--no-report"]].concat()));
    let mut said = Vec::new();
    wait_line(&lines, "== cell 3 of 5: pingpong idle", &mut said);
    let began = Instant::now();
    // Its round trips counted by the runner (it collects every second), the peer stops
    // answering: every round trip is lost from now on.
    std::thread::sleep(Duration::from_millis(1500));
    srv.signal("-STOP");
    wait_line(&lines, "cell 3 failed: ", &mut said);
    let failed_after = began.elapsed();
    // The peer answers again for the next cell: the study went on.
    srv.signal("-CONT");
    let result = study.wait_with_output().unwrap();
    said.extend(lines.iter());
    let said = said.join("\n");
    let line = said.lines().find(|l| l.starts_with("cell 3 failed: ")).unwrap();
    assert!(line.contains("no progress: no sample for "), "the watchdog's reason: {line}");
    assert!(failed_after < cell + Duration::from_secs(5), "ended within its duration and the margin: {failed_after:?}");
    assert_eq!(result.status.code(), Some(1), "{said}");
    assert!(said.contains("study: 1 of 5 cells failed: 3 (pingpong idle)"), "{said}");
    let runs = lab.runs();
    let stored = probes_and_statuses(&runs);
    let want = [("timer", "complete"), ("gtod", "complete"), ("pingpong", "failed")];
    assert_eq!(stored, [&want[..], &[("response", "complete"), ("noise", "complete")]].concat());
    let pingpong = lab.export_json(runs[2]["id"].as_i64().unwrap());
    let warnings = pingpong["run"]["warnings"].to_string();
    assert!(warnings.contains("the run failed: no progress: no sample for "), "{warnings}");
    assert!(pingpong["run"]["status"] == "failed" && pingpong["total"]["count"].as_u64() > Some(0), "{pingpong}");
}

/// Each stored run's (probe, status), in the order stored.
fn probes_and_statuses(runs: &serde_json::Value) -> Vec<(&str, &str)> {
    runs.as_array().unwrap().iter().map(|r| (r["probe"].as_str().unwrap(), r["status"].as_str().unwrap())).collect()
}
