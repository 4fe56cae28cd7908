//! `ipc`: a thread woken by another through a mutex, a signal, a System V semaphore, a POSIX
//! message queue or a futex, as rt-tests' ptsematest, sigwaittest, svsematest and pmqtest.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rtbench_testkit::needs;

use crate::breach::{begun, probe_ended_by};
use crate::helpers::{assert_rejected, text, Lab};

/// The System V semaphore sets of rtbench process `pid` on the machine, by key, as
/// `/proc/sysvipc/sem` lists them (its keys carry its pid).
fn semaphores_of(pid: u32) -> Vec<i64> {
    let table = std::fs::read_to_string("/proc/sysvipc/sem").unwrap_or_default();
    let keys = table.lines().skip(1).filter_map(|l| l.split_whitespace().next()?.parse::<i64>().ok());
    keys.filter(|k| k >> 9 == i64::from(pid & 0x3f_ffff)).collect()
}

/// Runs rtbench to its end, successfully; its pid.
fn ran(lab: &Lab, args: &[&str]) -> u32 {
    let child = lab.cmd(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    pid
}

/// The POSIX message queues named by rtbench, as /dev/mqueue lists them (empty when it is not
/// mounted: the names are then nowhere to be seen either).
fn rtbench_queues() -> Vec<String> {
    let dir = std::fs::read_dir("/dev/mqueue").into_iter().flatten().flatten();
    dir.map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("rtbench-")).collect()
}

/// Every way wakes every receiver: each thread has all its samples within a bound far above
/// what they take (a receiver never woken would have none), every sample a wake-up that took
/// time, and nothing is left of the semaphores and queues.
#[needs(root, two_cpus)]
#[test]
fn every_way_wakes_every_receiver_and_leaves_nothing_behind() {
    let lab = Lab::new();
    for via in ["mutex", "signal", "sem", "mq", "futex"] {
        let pid = ran(&lab, &["ipc", "--via", via, "-t", "2", "-l", "300", "-i", "200", "-D", "20s", "-q"]);
        let doc = lab.export_json(lab.last_run());
        assert_eq!(doc["run"]["status"], "complete", "{via}");
        assert_eq!(doc["run"]["params"]["probe"], "ipc", "{via}");
        assert_eq!(doc["run"]["params"]["via"], via);
        assert_eq!(doc["run"]["params"]["distance_us"], 500, "the rt-tests tools' default -d");
        for t in doc["threads"].as_array().unwrap() {
            assert_eq!(t["count"], 300, "{via}: {t}");
            assert!(t["min_ns"].as_u64().unwrap() > 0, "{via}: a wake-up takes time: {t}");
        }
        assert_eq!(semaphores_of(pid), Vec::<i64>::new(), "{via}: no semaphore left");
        assert!(rtbench_queues().is_empty(), "{via}: no queue left: {:?}", rtbench_queues());
    }
    // Five cells of one label, not one: the report draws each way apart.
    let dir = lab.path("report");
    lab.ok(&["report", "-o", dir.to_str().unwrap()]);
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for via in ["mutex", "signal", "sem", "mq", "futex"] {
        assert!(page.contains(&format!("id=\"ipc-{via}-bars\"")), "no ipc-{via} figure");
    }
}

/// The sender a receiver starts runs where it does, at its policy and priority (the pair the
/// rt-tests tools pin with -a), and is gone with the run.
#[needs(root, two_cpus)]
#[test]
fn the_sender_runs_on_its_receiver_s_cpu_at_its_priority() {
    let lab = Lab::new();
    let mut child = begun(&lab, lab.cmd(&["ipc", "--via", "futex", "-a", "1", "-p", "93", "-D", "30s", "-q"]));
    let tasks = Path::new("/proc").join(child.id().to_string()).join("task");
    let deadline = Instant::now() + Duration::from_secs(20);
    let sender = loop {
        let named = std::fs::read_dir(&tasks)
            .unwrap()
            .flatten()
            .find(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "rtbench-ipc-tx"));
        if let Some(task) = named {
            break task.path();
        }
        assert!(Instant::now() < deadline, "no sender thread in {}", tasks.display());
        std::thread::sleep(Duration::from_millis(50));
    };
    let stat = std::fs::read_to_string(sender.join("stat")).unwrap();
    // After the command's closing parenthesis: field 3 is the state; 40 rt_priority, 41 policy.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    assert_eq!((fields[37], fields[38]), ("93", "1"), "FIFO at 93: {stat}");
    let status = std::fs::read_to_string(sender.join("status")).unwrap();
    let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
    assert_eq!(allowed, "1", "{status}");
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130), "ended by SIGINT, saved");
    assert_eq!(lab.export_json(lab.last_run())["run"]["status"], "interrupted");
}

/// A killed run's System V semaphores outlive it; its journal names them, and the next command
/// removes them and says so.
#[needs(root, two_cpus)]
#[test]
fn a_killed_run_s_semaphores_are_removed_by_the_next_command() {
    let lab = Lab::new();
    let state = lab.path("state");
    let pid = probe_ended_by(&lab, &state, "-KILL", &["ipc", "--via", "sem", "-t", "2"]);
    let journal = state.join(format!("ipc-semaphores-{pid}.json"));
    assert!(journal.is_file(), "the journal of {pid}'s semaphores");
    assert_eq!(semaphores_of(pid).len(), 2, "a killed run cannot remove its semaphores");
    let out = lab.cmd(&["runs"]).env("RTBENCH_STATE_DIR", &state).output().unwrap();
    let said = text(&out.stderr);
    assert!(said.contains(&format!("removed 2 System V semaphore set(s) of killed process {pid}")), "{said}");
    assert!(!journal.exists(), "and its journal");
    assert_eq!(semaphores_of(pid), Vec::<i64>::new(), "the next command removed them");
}

#[test]
fn an_unknown_way_is_refused_with_the_ways_there_are() {
    let lab = Lab::new();
    let out = lab.run(&["ipc", "--via", "pipe", "-l", "10"]);
    assert_rejected(&out, "invalid value 'pipe' for '--via <VIA>'");
}
