//! Loads run as owned processes and leave nothing behind, however rtbench ends.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

/// A small but real load: every kind of process a generator makes (threads, make and cc,
/// forked hackbench children, a raw or UDP socket).
const LOAD: &str = "cpu,memcopy,hackbench,compile,pingflood,disk";

/// Pids of live processes whose environment carries `mark` (every load process inherits it).
fn marked(mark: &str) -> Vec<u32> {
    let needle = format!("RTBENCH_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

fn leftovers(lab: &Lab) -> Vec<String> {
    std::fs::read_dir(lab.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rtbench-load"))
        .collect()
}

/// After rtbench has ended: within 2 s no marked process and no temporary file is left.
fn assert_clean_within_2s(lab: &Lab, mark: &str) {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let procs = marked(mark);
        let files = leftovers(lab);
        if procs.is_empty() && files.is_empty() {
            return;
        }
        if Instant::now() > until {
            let names: Vec<String> =
                procs.iter().map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default()).collect();
            panic!("left behind after 2 s: processes {names:?}, files {files:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `rtbench load` and waits until its generators are up.
fn start(lab: &Lab, mark: &str, extra_env: &[(&str, &str)]) -> std::process::Child {
    let tmp = lab.dir.path().to_str().unwrap();
    let mut cmd = lab.cmd(&["load", LOAD, "-D", "60s", "-q", "--tmpdir", tmp, "--hackbench-groups", "2"]);
    cmd.env("RTBENCH_TEST_MARK", mark).stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while marked(mark).len() < 4 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

fn wait(child: &mut std::process::Child) -> Option<i32> {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        assert!(Instant::now() < until, "rtbench did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(pid: u32, sig: &str) {
    assert!(std::process::Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
}

fn case(sig: Option<&str>, expect_code: Option<i32>, name: &str) {
    let lab = Lab::alone();
    let mark = format!("{name}-{}", std::process::id());
    let mut child = start(&lab, &mark, &[]);
    assert!(marked(&mark).len() >= 4, "the load started its processes: {:?}", marked(&mark));
    assert!(!leftovers(&lab).is_empty(), "the load has a temporary directory");
    if let Some(sig) = sig {
        kill(child.id(), sig);
    }
    assert_eq!(wait(&mut child), expect_code);
    assert_clean_within_2s(&lab, &mark);
}

#[test]
fn nothing_is_left_after_sigint() {
    case(Some("-INT"), Some(130), "int");
}

#[needs(full = "a kill trial of the load (SIGINT is in the fast tier)")]
#[test]
fn nothing_is_left_after_sigterm() {
    case(Some("-TERM"), Some(143), "term");
}

#[needs(full = "a kill trial of the load (SIGINT is in the fast tier)")]
#[test]
fn nothing_is_left_after_sigkill() {
    case(Some("-KILL"), None, "kill");
}

/// A panic while a load runs, provoked as a user would: rtbench's stderr is a pipe whose reader
/// has gone (`rtbench timer … 2>&1 | head -1`), so the first message after the load is up, the
/// `--policy other` warning once the settling ends, panics in `eprintln!`.
#[needs(full = "a kill trial of the load: a panic after 8 s of settling")]
#[test]
fn nothing_is_left_after_a_panic() {
    use std::io::BufRead;
    let lab = Lab::alone();
    let mark = format!("panic-{}", std::process::id());
    let tmp = lab.dir.path().to_str().unwrap();
    let mut child = lab
        .cmd(&["timer", "-D", "60s", "--policy", "other", "--load", LOAD, "--settle", "8s", "--tmpdir", tmp])
        .args(["--hackbench-groups", "2"])
        .env("RTBENCH_TEST_MARK", &mark)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(first.contains("settling"), "the load started: {first}");
    let until = Instant::now() + Duration::from_secs(6);
    while marked(&mark).len() < 4 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(marked(&mark).len() >= 4, "the load's processes run: {:?}", marked(&mark));
    drop(stderr);
    assert_eq!(wait(&mut child), Some(101), "a panic exits with 101");
    assert_clean_within_2s(&lab, &mark);
}

#[test]
fn nothing_is_left_after_a_normal_end_and_the_report_says_what_ran() {
    let lab = Lab::alone();
    let mark = format!("end-{}", std::process::id());
    let tmp = lab.dir.path().to_str().unwrap();
    let out = lab
        .cmd(&["load", "cpu,memcopy,pingflood", "-D", "2s", "--tmpdir", tmp])
        .env("RTBENCH_TEST_MARK", &mark)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("MB copied") && report.contains("echo replies"), "{report}");
    assert!(report.contains("CPU0") && report.contains("context switches"), "{report}");
    assert_clean_within_2s(&lab, &mark);
}

#[test]
fn a_measured_run_stores_what_the_load_did_and_the_load_never_runs_at_rt_priority() {
    let lab = Lab::alone();
    let mark = format!("timer-{}", std::process::id());
    let tmp = lab.dir.path().to_str().unwrap();
    let mut child = lab
        .cmd(&["timer", "-D", "3s", "-q", "--load", "cpu,hackbench", "--hackbench-groups", "1", "--settle", "1s"])
        .args(["--tmpdir", tmp])
        .env("RTBENCH_TEST_MARK", &mark)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let me = child.id();
    let mut seen = 0;
    for pid in marked(&mark).into_iter().filter(|p| *p != me) {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        // Fields after the command: nice is the 17th, policy the 39th (0 = SCHED_OTHER).
        assert_eq!(fields[38], "0", "load process {pid} runs at SCHED_OTHER: {stat}");
        seen += 1;
    }
    assert!(seen >= 2, "load processes were seen while measuring");
    assert_eq!(wait(&mut child), Some(0));
    assert_clean_within_2s(&lab, &mark);
    let doc = lab.export_json(lab.last_run());
    assert_valid_export(&doc);
    let load = &doc["run"]["load"];
    assert_eq!(load["profile"], "cpu,hackbench");
    let gens = load["generators"].as_array().unwrap();
    assert_eq!(gens.len(), 2);
    assert!(gens.iter().all(|g| g["ran"] == true), "{load}");
    assert!(gens[0]["iterations"].as_u64().unwrap() > 0, "the cpu generator spun: {load}");
    let busy = load["activity"]["cpu_busy_percent"].as_array().unwrap();
    assert!(!busy.is_empty() && load["activity"]["context_switches_per_s"].as_f64().unwrap() > 0.0, "{load}");
}

#[test]
fn bad_loads_are_rejected_before_anything_runs() {
    let lab = Lab::new();
    let out = lab.run(&["timer", "-l", "10", "--load", "cpu,warp-drive"]);
    assert_rejected(&out, "unknown load 'warp-drive'");
    assert!(text(&out.stderr).contains("paper") && text(&out.stderr).contains("fswalk"), "lists the known ones");
    assert_rejected(&lab.run(&["load", "bogus", "-D", "1s"]), "unknown load 'bogus'");
    assert_rejected(
        &lab.run(&["timer", "-l", "10", "--load", "compile", "--kernel-tree", "/nonexistent-tree"]),
        "no makefile",
    );
    assert_rejected(&lab.run(&["timer", "-l", "10", "--load", "cpu", "--tmpdir", "/nonexistent-dir"]), "cannot write");
    if std::process::Command::new("stress-ng").arg("--version").output().is_err() {
        assert_rejected(&lab.run(&["load", "stress-ng:--cpu 1", "-D", "1s"]), "stress-ng is not installed");
    }
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "nothing was measured");
}

/// A directory for PATH whose `stress-ng` is the installed one if there is one, else a stand-in
/// that answers bad arguments as stress-ng does (getopt's message, exit 1) and otherwise runs.
fn stress_ng_path(lab: &Lab) -> String {
    let bin = lab.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    if std::process::Command::new("stress-ng").arg("--version").output().is_err() {
        let script = "#!/bin/sh\ncase \"$1\" in --cpu) exec sleep 60;; esac\n\
                      echo \"stress-ng: unrecognized option '$1'\" >&2\nexit 1\n";
        std::fs::write(bin.join("stress-ng"), script).unwrap();
        std::fs::set_permissions(bin.join("stress-ng"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// Issue 26: a stress-ng given bad arguments used to be restarted every second while rtbench
/// measured "under load" with nothing loading, and exited 0.
#[test]
fn a_load_that_fails_in_its_first_second_stops_the_command_and_stores_nothing() {
    let lab = Lab::alone();
    let path = stress_ng_path(&lab);
    let mark = format!("failing-{}", std::process::id());
    let tmp = lab.dir.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = lab.cmd(args);
        cmd.args(["--tmpdir", tmp]).env("PATH", &path).env("RTBENCH_TEST_MARK", &mark);
        cmd.output().unwrap()
    };
    let out = run(&["load", "stress-ng:--nosuchflag", "-D", "5s"]);
    assert_rejected(&out, "load generator 'stress-ng' failed");
    assert!(text(&out.stderr).contains("nosuchflag"), "stress-ng's own message: {}", text(&out.stderr));
    assert_clean_within_2s(&lab, &mark);
    let out = run(&["timer", "-D", "2s", "-q", "--load", "stress-ng:--nosuchflag"]);
    assert_rejected(&out, "load generator 'stress-ng' failed");
    assert_clean_within_2s(&lab, &mark);
    let out = run(&[
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "-D",
        "1s",
        "--load",
        "stress-ng:--nosuchflag",
        "--no-sysbench",
    ]);
    assert_rejected(&out, "load generator 'stress-ng' failed");
    assert!(!text(&out.stdout).contains("cell 1"), "refused before its first cell: {}", text(&out.stdout));
    assert_clean_within_2s(&lab, &mark);
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "no run stored: {}", lab.runs());
    // A stress-ng that runs is still a load.
    let out = run(&["load", "stress-ng:--cpu 1", "-D", "2s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("stress-ng"), "{}", text(&out.stdout));
    assert_clean_within_2s(&lab, &mark);
}

/// The same for a generator of rtbench's own: a kernel tree whose build stops at once.
#[test]
fn a_compile_whose_tree_fails_at_once_stops_the_command() {
    let lab = Lab::alone();
    let tree = lab.path("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("Makefile"), "$(error no .config in this tree)\n").unwrap();
    let tmp = lab.dir.path().to_str().unwrap();
    let out = lab.run(&["load", "compile", "--kernel-tree", tree.to_str().unwrap(), "-D", "5s", "--tmpdir", tmp]);
    assert_rejected(&out, "load generator 'compile' failed");
    assert!(text(&out.stderr).contains("no .config in this tree"), "make's own message: {}", text(&out.stderr));
    assert!(leftovers(&lab).is_empty(), "{:?}", leftovers(&lab));
}
