//! `--shield`: the rest of the system leaves the shielded CPU for the run and everything comes
//! back afterwards, also when the run is killed. Each test takes the machine alone
//! (`Lab::alone`): no other test's measuring threads are moved by the shield.

#[allow(dead_code)]
#[path = "cli/helpers.rs"]
mod helpers;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use helpers::{text, Lab};
use rtbench_testkit::needs;

const CPUSET: &str = "/sys/fs/cgroup/cpuset";

/// What a shield changes, read from the system.
#[derive(Debug, PartialEq)]
struct State {
    cpusets: Vec<String>,
    irqs: BTreeMap<String, String>,
    default_affinity: String,
    workqueue_mask: Option<String>,
}

fn state() -> State {
    let mut cpusets: Vec<String> = std::fs::read_dir(CPUSET)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cpusets.sort();
    let irqs = std::fs::read_dir("/proc/irq")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let list = std::fs::read_to_string(e.path().join("smp_affinity_list")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), list.trim().to_string()))
        })
        .collect();
    let default_affinity = std::fs::read_to_string("/proc/irq/default_smp_affinity").unwrap().trim().to_string();
    let workqueue_mask = std::fs::read_to_string("/sys/devices/virtual/workqueue/cpumask").ok();
    State { cpusets, irqs, default_affinity, workqueue_mask }
}

/// Every process below `pid`, from the parent links in /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((p, ppid))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// The CPU each thread of `pid` last ran on (field 39 of its stat).
fn cpus_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .filter_map(|t| {
            let stat = std::fs::read_to_string(t.ok()?.path().join("stat")).ok()?;
            stat.rsplit_once(')')?.1.split_whitespace().nth(36)?.parse().ok()
        })
        .collect()
}

#[needs(full = "takes CPU 1 from the whole system for a shield", root, cpuset_v1, two_cpus)]
#[test]
fn a_load_never_runs_on_a_shielded_cpu_and_everything_comes_back() {
    let lab = Lab::alone();
    let before = state();
    let tmp = lab.dir.path().to_str().unwrap().to_string();
    let mut child = lab
        .cmd(&["timer", "--shield", "1", "-D", "4s", "-q", "--load", "cpu", "--settle", "1s", "--tmpdir", &tmp])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (mut samples, mut seen_shield, mut load_pids) = (0, false, std::collections::BTreeSet::new());
    let until = Instant::now() + Duration::from_secs(30);
    // Until rtbench has exited (its /proc entry stays until it is reaped: the loop waited out
    // its whole limit while it was there).
    while Instant::now() < until && child.try_wait().unwrap().is_none() {
        if std::path::Path::new(CPUSET).join("rtbench-shield").exists() {
            seen_shield = true;
        }
        for p in descendants(pid) {
            let cpus = cpus_of(p);
            assert!(!cpus.contains(&1), "load process {p} ran on the shielded CPU 1 ({cpus:?})");
            samples += cpus.len();
            load_pids.insert(p);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(seen_shield, "the shield's cpuset existed during the run");
    assert!(samples > 50 && !load_pids.is_empty(), "the load's CPUs were sampled: {samples} readings");
    assert_eq!(state(), before, "cpusets and IRQ affinities read back as before");

    let doc = lab.export_json(lab.last_run());
    let shield = &doc["run"]["params"]["shield"];
    assert_eq!(shield["cpus"], serde_json::json!([1]), "{shield}");
    assert_eq!(doc["run"]["params"]["cpus"], serde_json::json!([1]), "measured on the shielded CPU");
    assert!(doc["total"]["count"].as_u64().unwrap() > 1000, "the thread measured inside the shield");
}

#[needs(full = "takes CPU 1 from the whole system for a shield", root, cpuset_v1, two_cpus)]
#[test]
fn a_killed_shield_is_put_back_by_the_next_command() {
    let lab = Lab::alone();
    let before = state();
    let mut child = lab.cmd(&["timer", "--shield", "1", "-D", "60s", "-q"]).stdout(Stdio::null()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while !std::path::Path::new(CPUSET).join("rtbench-shield").exists() {
        assert!(Instant::now() < until, "no shield after 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    lab.wait_for_runs(1, Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(state(), before, "SIGKILL left the shield up");
    let out = lab.run(&["runs"]);
    assert!(out.status.success());
    let said = text(&out.stderr);
    assert!(said.contains("put back the shield of CPUs 1"), "{said}");
    assert_eq!(state(), before, "one more command put it all back");
    assert!(text(&lab.run(&["runs"]).stderr).is_empty(), "and only once");
}
