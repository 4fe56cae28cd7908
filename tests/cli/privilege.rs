//! Without root: rtbench says how each thread really ran, and does as well as the privileges
//! allow (issue 28).

use std::process::{Command, Output};

use crate::helpers::*;
use rtbench_testkit::needs;

/// Runs `bin` (rtbench or a copy of it) as nobody, with no inherited capabilities, on the lab's
/// store (the test needs root and setpriv).
fn as_nobody(lab: &Lab, bin: &std::path::Path, args: &[&str]) -> Command {
    std::fs::set_permissions(lab.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(bin)
        .args(args)
        .env("RTBENCH_DB", lab.db())
        .env_remove("XDG_DATA_HOME");
    c
}

fn rtbench() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_rtbench"))
}

fn ok(out: Output) -> (String, String) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (stdout, stderr)
}

#[needs(root, "setpriv")]
#[test]
fn unprivileged_threads_are_shown_at_the_policy_they_ran_at() {
    let lab = Lab::new();
    let mut cmd = as_nobody(&lab, rtbench(), &["timer", "-t", "2", "-l", "200"]);
    let (summary, _) = ok(cmd.output().unwrap());
    assert!(summary.contains("P:other") && !summary.contains("P:fifo"), "{summary}");
    let id = lab.last_run();
    let shown = lab.ok(&["show", &id.to_string()]);
    assert!(shown.contains("P:other") && !shown.contains("P:fifo"), "{shown}");
    let doc = lab.export_json(id);
    assert_valid_export(&doc);
    assert_eq!(doc["run"]["params"]["policy"], "fifo", "what was asked is kept");
    for t in doc["threads"].as_array().unwrap() {
        assert_eq!((&t["policy"], &t["priority"]), (&"other".into(), &0.into()), "{t}");
    }
    let ran = doc["run"]["params"]["ran"].as_array().unwrap();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(ran.iter().all(|r| r["policy"] == "other"), "{ran:?}");
}

#[needs(root)]
#[test]
fn privileged_threads_are_shown_at_their_real_time_priority() {
    let lab = Lab::new();
    let summary = lab.ok(&["timer", "-t", "1", "-l", "100", "-p", "42"]);
    assert!(summary.contains("P:fifo/42"), "{summary}");
    let doc = lab.export_json(lab.last_run());
    assert_eq!((&doc["threads"][0]["policy"], &doc["threads"][0]["priority"]), (&"fifo".into(), &42.into()));
}

/// The timer slack of the process's thread named `name`, once it has one below the default.
fn thread_slack(pid: u32, name: &str, until: std::time::Instant) -> Option<u64> {
    let mut seen = None;
    while std::time::Instant::now() < until {
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() == name {
                // Only /proc/TID has it, not /proc/PID/task/TID.
                let tid = task.file_name().to_string_lossy().into_owned();
                let slack = std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns")).unwrap_or_default();
                seen = slack.trim().parse().ok();
                if seen == Some(1) {
                    return seen;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    seen
}

#[needs(root, "setpriv")]
#[test]
fn unprivileged_threads_measure_with_a_timer_slack_of_1_ns() {
    let lab = Lab::new();
    let mut cmd = as_nobody(&lab, rtbench(), &["timer", "-t", "1", "-D", "4s", "-q"]);
    let child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // setpriv execs rtbench: same process.
    let slack = thread_slack(child.id(), "rtbench-0", std::time::Instant::now() + std::time::Duration::from_secs(3));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(slack, Some(1), "the measuring thread's timerslack_ns while it measured");
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["params"]["ran"][0]["timer_slack_ns"], 1);
}

#[needs(root, "setpriv")]
#[test]
fn unprivileged_warnings_name_their_fixes() {
    let lab = Lab::new();
    let mut cmd = as_nobody(&lab, rtbench(), &["timer", "-t", "1", "-l", "100", "-q"]);
    let (_, err) = ok(cmd.output().unwrap());
    let line =
        |what: &str| err.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("{what}: {err}")).to_string();
    let memlock = line("memory not locked");
    assert!(
        memlock.contains("ulimit -l") && memlock.contains("limits.d") && memlock.contains("cap_ipc_lock"),
        "{memlock}"
    );
    let fifo = line("ran at SCHED_OTHER");
    assert!(fifo.contains("cap_sys_nice") && fifo.contains("rtprio") && fifo.contains("root"), "{fifo}");
    let dma = line("/dev/cpu_dma_latency not set");
    assert!(dma.contains("permissions") && dma.contains("root"), "{dma}");
    // And the stored warnings say the same.
    let doc = lab.export_json(lab.last_run());
    let stored = doc["run"]["warnings"].to_string();
    assert!(stored.contains("cap_sys_nice") && stored.contains("ulimit -l"), "{stored}");
}

/// A copy of rtbench given `caps` as file capabilities, in the lab (the test needs setcap).
fn with_capabilities(lab: &Lab, caps: &str) -> std::path::PathBuf {
    let copy = lab.path("rtbench-caps");
    std::fs::copy(rtbench(), &copy).unwrap();
    let out = Command::new("setcap").args([caps, copy.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "setcap {caps}: {}", text(&out.stderr));
    copy
}

#[needs(root, "setcap", "setpriv")]
#[test]
fn capabilities_give_an_unprivileged_user_fifo_and_locked_memory() {
    let lab = Lab::new();
    let bin = with_capabilities(&lab, "cap_sys_nice,cap_ipc_lock+ep");
    let mut cmd = as_nobody(&lab, &bin, &["timer", "-t", "1", "-l", "100", "-p", "80"]);
    let (summary, err) = ok(cmd.output().unwrap());
    assert!(summary.contains("P:fifo/80"), "{summary}");
    assert!(!err.contains("memory not locked") && !err.contains("SCHED_OTHER"), "{err}");
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["rt_priority"], true);
    assert_eq!((&doc["threads"][0]["policy"], &doc["threads"][0]["priority"]), (&"fifo".into(), &80.into()));
    let warnings = doc["run"]["warnings"].to_string();
    assert!(!warnings.contains("memory not locked"), "memory was locked: {warnings}");
    // /dev/cpu_dma_latency follows its permissions (root's): no capability opens it.
    assert_eq!(doc["run"]["params"]["lacked"], serde_json::json!(["cpu_dma_latency"]));
}

#[needs(root, "setcap", "setpriv")]
#[test]
fn what_only_root_may_do_is_refused_up_front() {
    let lab = Lab::new();
    let bin = with_capabilities(&lab, "cap_sys_nice,cap_ipc_lock+ep");
    let cases: [(&[&str], &str); 4] = [
        (&["timer", "-t", "1", "-l", "100", "--breach", "50"], "--breach needs root"),
        (&["timer", "-t", "1", "-l", "100", "--shield", "0"], "--shield needs root"),
        (&["study", "-D", "1s", "--preempt", "full"], "--preempt needs root"),
        (&["study", "-D", "1s", "--shield", "0"], "--shield needs root"),
    ];
    for (args, needle) in cases {
        let mut cmd = as_nobody(&lab, &bin, args);
        assert_rejected(&cmd.output().unwrap(), needle);
    }
    assert!(!lab.db().exists() || lab.runs().as_array().is_none_or(|a| a.is_empty()), "nothing was half-done");
}

#[needs(root, "setpriv")]
#[test]
fn an_unprivileged_study_marks_each_cell_with_what_it_lacked() {
    let lab = Lab::alone();
    let report = lab.path("report");
    let args = ["study", "-D", "1s", "--load", "none", "--no-sysbench", "-q", "-o", report.to_str().unwrap()];
    let mut cmd = as_nobody(&lab, rtbench(), &args);
    let (out, _) = ok(cmd.output().unwrap());
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Appendix III"))
        .skip(2)
        .take_while(|l| !l.is_empty() && !l.starts_with("report:"))
        .collect();
    assert!(rows.len() >= 2, "{out}");
    // The qualification checks that need what it lacks are skipped, each with why; ipc runs.
    for (probe, why) in [
        ("deadline", "the kernel refused SCHED_DEADLINE (thread 0: 100 µs of every 10000 µs): not permitted"),
        ("migrate", "its tasks need real-time priority (run as root)"),
        ("pi", "its groups need real-time priorities (run as root)"),
    ] {
        assert!(out.contains(&format!("study: skipping {probe}: {why}")), "{probe}: {out}");
    }
    assert!(rows.iter().any(|r| r.starts_with("ipc")), "{out}");
    for row in &rows {
        assert!(row.contains("lacked rt policy, mlock, cpu_dma_latency"), "{row}");
    }
    let doc = lab.export_json(lab.last_run());
    assert_eq!(
        doc["run"]["params"]["lacked"],
        serde_json::json!(["real_time_policy", "memory_lock", "cpu_dma_latency"])
    );
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.contains("lacked rt policy, mlock, cpu_dma_latency"), "the report's caveats say it too");
}
