//! `rtbench resume RUN`: a run stopped before its end (SIGKILL, SIGINT) continues into the same
//! run with its parameters; the gap is recorded and the statistics cover only measured time.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

/// Starts rtbench in the background and waits until its run is in the store; returns when it
/// appeared.
fn start(lab: &Lab, args: &[&str], runs_before: usize) -> (Child, Instant) {
    let child = lab.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("rtbench starts");
    lab.wait_for_runs(runs_before + 1, Duration::from_secs(30));
    (child, Instant::now())
}

fn signal(child: &mut Child, sig: &str) {
    assert!(std::process::Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success());
    child.wait().unwrap();
}

/// Resumes run `id` (the store's only one) in the background, its stderr piped; returns once
/// the run is running again.
fn resuming(lab: &Lab, id: &str) -> Child {
    let child = lab.cmd(&["resume", id, "-q"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while lab.runs()[0]["status"] != "running" {
        assert!(Instant::now() < until, "the resumed run never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// The run's JSON export, checked against the committed schema.
fn export(lab: &Lab, id: i64) -> serde_json::Value {
    let doc = lab.export_json(id);
    assert_valid_export(&doc);
    doc
}

/// The issue's check: a timer run SIGKILLed after 30 s and resumed for 30 s. At 1 ms per
/// period a thread's periods (samples and overruns) are its measured time; the 2 s the test
/// waits between the kill and the resume are in the gap and not in the count. The kill loses at
/// most the second since the last checkpoint, and the test sees the run up to 0.2 s after it
/// began.
#[needs(full = "a 60-second run killed at 30 s and resumed for 30 s")]
#[test]
fn a_timer_run_killed_after_30_s_and_resumed_for_30_s_has_60_s_of_samples_and_one_gap() {
    let lab = Lab::new();
    let (mut child, seen) = start(&lab, &["timer", "-D", "60s", "-q", "-i", "1000", "--label", "res"], 0);
    std::thread::sleep(Duration::from_secs(30).saturating_sub(seen.elapsed()));
    signal(&mut child, "-KILL");
    std::thread::sleep(Duration::from_secs(2));
    let id = lab.last_run();
    assert_eq!(lab.runs()[0]["status"], "aborted", "a killed run reads as aborted");
    let out = lab.ok(&["resume", &id.to_string(), "-D", "30s", "-q"]);
    assert!(out.contains(&format!("stored as run {id}")), "{out}");
    assert_eq!(lab.runs().as_array().unwrap().len(), 1, "the same run, no new one");

    let doc = export(&lab, id);
    assert_eq!(doc["run"]["status"], "complete");
    assert_eq!(doc["run"]["params"]["duration_s"], 60.0, "the run keeps the duration it was asked");
    let gaps = doc["gaps"].as_array().expect("the gap is exported");
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    let gap_s = gaps[0]["seconds"].as_f64().unwrap();
    assert!((2.0..20.0).contains(&gap_s), "the gap holds the 2 s between kill and resume: {gap_s}");
    for t in doc["threads"].as_array().unwrap() {
        // A wake-up later than the next period skips it, as cyclictest does, and counts an overrun.
        let measured_s = (t["count"].as_f64().unwrap() + t["overruns"].as_f64().unwrap()) / 1000.0;
        assert!((58.7..=60.5).contains(&measured_s), "thread {}: {measured_s} s of samples", t["thread"]);
    }
    let wall = run_seconds(&doc);
    assert!(wall > 60.0 + 2.0, "the run spans its gap ({wall} s) while its samples do not");

    // The statistics are the samples': the histogram holds every one, up to the exact max.
    let hgrm = lab.ok(&["export", &id.to_string(), "--format", "hgrm"]);
    let last: Vec<f64> = hgrm
        .lines()
        .rev()
        .find(|l| l.trim().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .unwrap();
    assert_eq!(last[2] as u64, doc["total"]["count"].as_u64().unwrap(), "{hgrm}");
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    let envelope: i64 = c.query_row("SELECT sum(count) FROM envelope WHERE run_id = ?1", [id], |r| r.get(0)).unwrap();
    let total = doc["total"]["count"].as_i64().unwrap();
    assert!(envelope <= total && envelope >= total - 4_000, "the intervals hold the samples: {envelope} of {total}");

    let show = lab.ok(&["show", &id.to_string()]);
    assert!(
        show.contains("resumed 1 time: ") && show.contains(&format!("  gap {} – ", gaps[0]["start"].as_str().unwrap())),
        "{show}"
    );
}

/// A resumed run stopped again, by SIGINT this time, stays resumable and keeps what it measured;
/// without -D each part measures what is left of the run's duration.
#[needs(full = "two kill trials and two resumes of one run")]
#[test]
fn a_run_stopped_twice_is_resumed_twice_to_its_duration_with_two_gaps() {
    let lab = Lab::new();
    let (mut child, seen) = start(&lab, &["synthetic", "-D", "8s", "-q", "--label", "twice"], 0);
    std::thread::sleep(Duration::from_millis(2500).saturating_sub(seen.elapsed()));
    signal(&mut child, "-KILL");
    let id = lab.last_run().to_string();
    let before = lab.export_json(id.parse().unwrap())["total"]["count"].as_u64().unwrap();
    assert!(before > 0, "the first part's checkpoints are stored");

    let mut again = resuming(&lab, &id);
    std::thread::sleep(Duration::from_secs(2));
    signal(&mut again, "-INT");
    let doc = export(&lab, id.parse().unwrap());
    assert_eq!(doc["run"]["status"], "interrupted");
    let middle = doc["total"]["count"].as_u64().unwrap();
    assert!(middle > before, "the interrupted part kept what it measured: {before} then {middle}");

    let out = lab.ok(&["resume", &id, "-q"]);
    assert!(out.contains("resumed 2 times: "), "{out}");
    let doc = export(&lab, id.parse().unwrap());
    assert_eq!(doc["run"]["status"], "complete");
    assert!(doc["total"]["count"].as_u64().unwrap() > middle);
    let gaps = doc["gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 2);
    let not_measured: f64 = gaps.iter().map(|g| g["seconds"].as_f64().unwrap()).sum();
    let measured = run_seconds(&doc) - not_measured;
    assert!((6.5..=9.5).contains(&measured), "8 s measured in three parts: {measured} s");
    let warnings = doc["run"]["warnings"].to_string();
    assert!(!warnings.contains("interrupted by signal") && !warnings.contains("killed"), "{warnings}");
    let report = lab.path("report");
    lab.ok(&["report", "--run", &id, "-o", report.to_str().unwrap()]);
    let svg = std::fs::read_to_string(report.join(format!("figures/run{id}-scatter.svg"))).unwrap();
    assert!(svg.contains("not measured (the run was resumed)"), "the scatter figure shows the gap");
}

/// A run that completed, one that does not exist, one imported: one line, exit 2, nothing
/// written.
#[test]
fn what_cannot_be_resumed_is_refused_in_one_line_and_the_store_is_unchanged() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "1000", "-q", "--label", "done"]);
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sockperf-full-log.csv");
    lab.ok(&["import", file.to_str().unwrap(), "--label", "theirs"]);
    let snapshot = || (lab.runs(), lab.export_json(1), std::fs::read(lab.db()).unwrap().len());
    let before = snapshot();
    assert_rejected(&lab.run(&["resume", "1"]), "run 1 is complete: there is nothing to resume");
    assert_rejected(&lab.run(&["resume", "2"]), "run 2 is complete");
    assert_rejected(&lab.run(&["resume", "99"]), "no run with id 99");
    assert_rejected(&lab.run(&["resume", "1", "-D", "soon"]), "-D");
    assert_eq!(snapshot(), before);
}

/// A server that stops however the test ends: a failed assertion must not leave it serving.
struct Serving(Srv);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.child.kill();
        let _ = self.0.child.wait();
    }
}

/// The run's envelope: the highest interval index, and the samples of the intervals after
/// `after` (all of them with `None`).
fn envelope(lab: &Lab, id: i64, after: Option<i64>) -> (i64, i64) {
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    c.query_row(
        "SELECT max(idx), coalesce(sum(CASE WHEN idx > ?2 THEN count ELSE 0 END), 0) FROM envelope WHERE run_id = ?1",
        rusqlite::params![id, after.unwrap_or(-1)],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// The run of `probe` that has stored a checkpoint with samples, if one has.
fn checkpointed(lab: &Lab, probe: &str) -> Option<i64> {
    let c = rusqlite::Connection::open(lab.db()).ok()?;
    let sql = "SELECT r.id FROM runs r JOIN threads t ON t.run_id = r.id WHERE r.probe = ?1 AND t.count > 0";
    c.query_row(sql, [probe], |r| r.get(0)).ok()
}

/// A resumed network run's checks: one gap, complete, `integrity_check` ok, and its counts add
/// up: the new part's intervals hold exactly the samples added to the stored ones.
fn resumed_adds_up(lab: &Lab, id: i64, before: &serde_json::Value, last_index: i64) -> serde_json::Value {
    let doc = export(lab, id);
    assert_eq!(doc["run"]["status"], "complete");
    assert_eq!(doc["gaps"].as_array().map(Vec::len), Some(1), "{}", doc["gaps"]);
    let (count, earlier) = (doc["total"]["count"].as_i64().unwrap(), before["total"]["count"].as_i64().unwrap());
    assert!(earlier > 0 && count > earlier, "the stored part and the new one: {earlier} then {count}");
    let (_, new_part) = envelope(lab, id, Some(last_index));
    assert_eq!(new_part, count - earlier, "the new part's intervals hold the samples it added");
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    doc
}

/// A study served its network cells from an echo server of its own on loopback: its pingpong
/// cell, killed with the study mid-cell, resumes against a new one (on a new port), and
/// `--peer` is refused for it.
#[needs(full = "a kill trial of a study and its resume")]
#[test]
fn a_study_pingpong_cell_killed_mid_run_resumes_with_an_echo_server_of_its_own_again() {
    let lab = Lab::alone();
    let report = lab.path("report");
    let args =
        ["study", "--no-qualify", "-D", "4s", "--load", "none", "--no-split", "--no-classify", "--no-sysbench", "-q"];
    let mut study = lab
        .cmd(&[&args[..], &["--label", "s", "-o", report.to_str().unwrap()]].concat())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed at the cell's first checkpoint, about 1 s into its 4 s.
    let until = Instant::now() + Duration::from_secs(60);
    let id = loop {
        if let Some(id) = checkpointed(&lab, "pingpong") {
            break id;
        }
        assert!(Instant::now() < until, "the study's pingpong cell never stored a checkpoint");
        std::thread::sleep(Duration::from_millis(20));
    };
    signal(&mut study, "-KILL");
    let before = lab.export_json(id);
    let (last_index, _) = envelope(&lab, id, None);
    assert_rejected(&lab.run(&["resume", &id.to_string(), "--peer", "127.0.0.1"]), "leave --peer out");

    let out = lab.run(&["resume", &id.to_string(), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("its own echo server again on 127.0.0.1:"), "{}", text(&out.stderr));
    let doc = resumed_adds_up(&lab, id, &before, last_index);
    assert_eq!(doc["run"]["params"]["duration_s"], 4.0);
    // What the study's own server says of itself: the new part's peer was rtbench's own.
    assert_eq!(doc["run"]["params"]["peer_placement"], "unpinned, fifo/95");
}

/// A response run's target was started by hand, not by rtbench: resume refuses without it and
/// continues with it given again (`--peer`). At 1 ms per period its triggers (answered and
/// lost) are its measured time.
#[test]
fn a_response_run_killed_mid_run_needs_its_target_again_and_continues_with_it() {
    let lab = Lab::new();
    let target = Serving(server(lab.cmd(&["response", "--target", "127.0.0.1:0"])));
    let addr = target.0.addr();
    let addr = addr.as_str();
    let (mut child, seen) = start(&lab, &["response", "--logger", addr, "-D", "4s", "-q", "--label", "r"], 0);
    std::thread::sleep(Duration::from_millis(2000).saturating_sub(seen.elapsed()));
    signal(&mut child, "-KILL");
    let id = lab.last_run();
    let before = lab.export_json(id);
    let (last_index, _) = envelope(&lab, id, None);
    let refused = lab.run(&["resume", &id.to_string(), "-q"]);
    assert_rejected(&refused, &format!("run {id} (response) measured against {addr}, a peer rtbench did not start"));
    assert!(text(&refused.stderr).contains("--peer HOST[:PORT]"), "it names what is missing");
    assert_eq!(lab.export_json(id), before, "a refusal writes nothing");

    // The target moved: the run keeps the one it was made with, and says where it went on.
    drop(target);
    let target = Serving(server(lab.cmd(&["response", "--target", "127.0.0.1:0"])));
    let moved = target.0.addr();
    let moved = moved.as_str();
    lab.ok(&["resume", &id.to_string(), "-q", "--peer", moved]);
    drop(target);
    let doc = resumed_adds_up(&lab, id, &before, last_index);
    let said = format!("the part after gap 1 measured against {moved}, not the run's {addr}");
    assert!(doc["run"]["warnings"].to_string().contains(&said), "{}", doc["run"]["warnings"]);
    let gap_s = doc["gaps"][0]["seconds"].as_f64().unwrap();
    let t = &doc["threads"][0];
    let measured_s = (t["count"].as_f64().unwrap() + t["overruns"].as_f64().unwrap()) / 1000.0;
    assert!((2.9..=4.5).contains(&measured_s), "{measured_s} s of triggers, {gap_s} s not measured");
    assert_eq!(doc["run"]["params"]["target"], addr);
}

/// A run with a sample log goes on logging into the same file (the format has no trailer):
/// its new part's samples come after the gap on the run's time axis, as many as the store
/// added. A log that cannot take more (here, not a log any more) is left alone: the next part
/// goes to FILE.resumed-N, and the run's warnings say so.
#[test]
fn a_killed_run_with_a_sample_log_appends_its_next_part_to_the_same_log() {
    use rtbench::store::samplelog::{read_blocks, scan};
    let lab = Lab::new();
    let log = lab.path("s.rtb");
    let run = ["timer", "-t", "1", "-D", "6s", "-q", "--label", "log", "--samples", log.to_str().unwrap()];
    let (mut child, seen) = start(&lab, &run, 0);
    std::thread::sleep(Duration::from_millis(2000).saturating_sub(seen.elapsed()));
    signal(&mut child, "-KILL");
    let id = lab.last_run();
    let before = lab.export_json(id)["total"]["count"].as_u64().unwrap();
    // The next part, stopped by SIGINT about a second in: its last samples are logged and stored.
    let mut again = resuming(&lab, &id.to_string());
    std::thread::sleep(Duration::from_secs(1));
    signal(&mut again, "-INT");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut again.stderr.take().unwrap(), &mut said).unwrap();
    // No warning about the log (its fallback file is named FILE.resumed-N); the hypervisor's
    // steal warnings of this VM may come and go.
    assert!(!said.lines().any(|l| l.contains("WARNING") && (l.contains("resumed-") || l.contains("log"))), "{said}");

    let doc = export(&lab, id);
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    let gap_end: i64 = c.query_row("SELECT end_ns FROM gaps WHERE run_id = ?1", [id], |r| r.get(0)).unwrap();
    let index = scan(&log).expect("still a sample log");
    assert_eq!(index.truncated_at, None);
    let (mut first, mut next) = (0u64, 0u64);
    read_blocks(&log, index.step_ns, &index.blocks, |_, t, _| if t >= gap_end as u64 { next += 1 } else { first += 1 })
        .unwrap();
    let added = doc["total"]["count"].as_u64().unwrap() - before;
    assert!(first > 0 && added > 0, "both parts logged: {first}, then {added} stored");
    assert_eq!(next, added, "the log holds the new part's samples, after the gap");
    assert_eq!(doc["run"]["params"]["samples_file"], log.to_str().unwrap());

    std::fs::write(&log, "not a log").unwrap();
    let out = lab.run(&["resume", &id.to_string(), "-D", "1s", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let other = format!("{}.resumed-2", log.display());
    let warnings = export(&lab, id)["run"]["warnings"].to_string();
    let said = format!("the samples after gap 2 are logged in '{other}'");
    assert!(warnings.contains("is not an rtbench sample log") && warnings.contains(&said), "{warnings}");
    assert!(!scan(std::path::Path::new(&other)).unwrap().blocks.is_empty());
    assert_eq!(std::fs::read(&log).unwrap(), b"not a log", "left alone");
}

/// A `--split` timer run killed mid-run resumes split: its IRQ part goes on, and the matched
/// samples add up. At 2.5 ms per period the new part's samples are all kept raw with their IRQ
/// part, so its matched samples are counted apart: the stored IRQ count grew by them. The
/// samples the kill left unpaired count unmatched.
#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_killed_split_timer_run_resumes_split_and_its_matched_samples_add_up() {
    let (lab, tracing_before) = crate::breach::traced();
    let run = ["timer", "-t", "1", "-a", "1", "--split", "-i", "2500", "-D", "4s", "-q", "--label", "split"];
    let (mut child, seen) = start(&lab, &run, 0);
    std::thread::sleep(Duration::from_millis(2000).saturating_sub(seen.elapsed()));
    signal(&mut child, "-KILL");
    let id = lab.last_run();
    let before = lab.export_json(id)["threads"][0]["irq"]["count"].as_u64().expect("the first part is split");
    lab.ok(&["resume", &id.to_string(), "-q"]);

    let doc = resumed_split(&lab, id);
    let t = &doc["threads"][0];
    let (count, matched) = (t["count"].as_u64().unwrap(), t["irq"]["count"].as_u64().unwrap());
    assert_eq!(matched + t["irq"]["unmatched"].as_u64().unwrap(), count, "every sample is matched or unmatched");
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    let gap_end: i64 = c.query_row("SELECT end_ns FROM gaps WHERE run_id = ?1", [id], |r| r.get(0)).unwrap();
    // The new part's raw samples (all kept: it ended cleanly), each with its IRQ part if matched.
    let sql = "SELECT count(*) FROM samples WHERE run_id = ?1 AND t_ns >= ?2 AND irq_ns IS NOT NULL";
    let matched_after: i64 = c.query_row(sql, [id, gap_end], |r| r.get(0)).unwrap();
    assert!(before > 0 && matched_after > 0, "both parts matched samples: {before}, then {matched_after}");
    assert_eq!(matched, before + matched_after as u64, "the IRQ part adds the new part's matched samples");
    assert_eq!(crate::breach::tracing_state(), tracing_before, "tracing is as it was");
}

/// A resumed split run's export: complete, one gap, still split.
fn resumed_split(lab: &Lab, id: i64) -> serde_json::Value {
    let doc = export(lab, id);
    assert_eq!(doc["run"]["status"], "complete");
    assert_eq!(doc["gaps"].as_array().map(Vec::len), Some(1));
    assert_eq!(doc["run"]["params"]["split"]["skipped"], serde_json::Value::Null, "{}", doc["run"]["params"]);
    doc
}
