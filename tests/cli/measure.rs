//! The measuring commands run, store what they measured, and say how they ran.

use crate::helpers::*;
use rtbench_testkit::needs;

#[test]
fn timer_runs_stores_and_writes_json() {
    let lab = Lab::new();
    let json = lab.path("run.json");
    let out = lab.ok(&[
        "timer",
        "-t",
        "2",
        "-i",
        "500",
        "-l",
        "400",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--label",
        "lab-a",
    ]);
    assert!(out.contains("stored as run"), "{out}");
    assert!(out.contains("p99.9999"), "summary has the tail percentiles: {out}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid_export(&doc);
    assert_eq!(doc["run"]["probe"], "timer");
    assert_eq!(doc["run"]["label"], "lab-a");
    assert_eq!(doc["run"]["status"], "complete");
    assert_eq!(doc["threads"].as_array().unwrap().len(), 2);
    for t in doc["threads"].as_array().unwrap() {
        assert_eq!(t["count"], 400, "each thread takes -l samples");
    }
    assert_eq!(doc["total"]["count"], 800);
    assert_eq!(doc["run"]["params"]["interval_us"], 500);
    let sys = &doc["run"]["system"];
    assert!(sys["kernel_release"].is_string() && sys["rt_throttling"].is_object(), "{sys}");
    // The file export and the store agree.
    assert_eq!(lab.export_json(doc["run"]["id"].as_i64().unwrap()), doc);
}

#[test]
fn timer_envelope_has_a_point_per_interval() {
    let lab = Lab::new();
    lab.ok(&["timer", "-t", "1", "-i", "1000", "-D", "2500ms", "--envelope-interval", "500ms", "-q"]);
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    let (points, samples): (i64, i64) =
        db.query_row("SELECT count(*), sum(count) FROM envelope", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    let stored: i64 = db.query_row("SELECT count FROM threads", [], |r| r.get(0)).unwrap();
    assert!((4..=6).contains(&points), "2.5 s in 500 ms points gives about 5, got {points}");
    assert_eq!(samples, stored, "the envelope accounts for every sample");
}

#[test]
fn gtod_takes_the_requested_pairs() {
    let lab = Lab::new();
    lab.ok(&["gtod", "-n", "50000", "-q"]);
    let doc = lab.export_json(lab.last_run());
    assert_valid_export(&doc);
    assert_eq!(doc["run"]["probe"], "gtod");
    assert_eq!(doc["total"]["count"], 50_000);
    assert!(doc["total"]["min_ns"].as_u64().unwrap() > 0, "two clock reads are never 0 ns apart");
}

#[test]
fn synthetic_is_deterministic() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "300000", "--seed", "7", "-q"]);
    let a = lab.export_json(lab.last_run());
    lab.ok(&["synthetic", "-l", "300000", "--seed", "7", "-q"]);
    let b = lab.export_json(lab.last_run());
    lab.ok(&["synthetic", "-l", "300000", "--seed", "8", "-q"]);
    let c = lab.export_json(lab.last_run());
    assert_eq!(a["total"], b["total"], "same seed, same samples");
    assert_ne!(a["total"], c["total"], "another seed, other samples");
    assert_eq!(a["run"]["rt_priority"], false, "synthetic needs no privilege");
}

#[needs(root, "setpriv")]
#[test]
fn without_privilege_runs_at_sched_other_and_says_so() {
    let lab = Lab::new();
    std::fs::set_permissions(lab.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(env!("CARGO_BIN_EXE_rtbench"))
        .args(["timer", "-t", "1", "-l", "100", "-q"])
        .env("RTBENCH_DB", lab.db())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("WARNING") && err.contains("SCHED_OTHER"), "says so loudly: {err}");
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["rt_priority"], false);
    assert_eq!(doc["run"]["params"]["policy"], "fifo", "what was asked is kept");
    let warnings = doc["run"]["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("not real-time numbers")), "{warnings:?}");
    // Tracing needs root too: --breach is refused up front (issue 28), see privilege.rs.
}

#[test]
fn runs_and_show_list_what_was_stored() {
    let lab = Lab::new();
    assert!(lab.ok(&["runs"]).contains("no runs"));
    lab.ok(&["synthetic", "-l", "1000", "-q", "--label", "k1"]);
    lab.ok(&["synthetic", "-l", "2000", "-q", "--label", "k2"]);
    let table = lab.ok(&["runs"]);
    assert!(table.contains("k1") && table.contains("k2"), "{table}");
    let runs = lab.runs();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_eq!(runs[1]["samples"], 2000);
    let shown = lab.ok(&["show", &runs[1]["id"].to_string()]);
    assert!(shown.contains("k2") && shown.contains("p99.99"), "{shown}");
}

#[test]
fn store_path_follows_xdg_data_home() {
    let lab = Lab::new();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtbench"))
        .args(["synthetic", "-l", "100", "-q"])
        .env_remove("RTBENCH_DB")
        .env("XDG_DATA_HOME", lab.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(lab.dir.path().join("rtbench/rtbench.db").is_file());
}

#[test]
fn noise_counts_every_gap_above_its_threshold_and_the_share_of_the_cpu_left() {
    let lab = Lab::alone();
    lab.ok(&["noise", "-t", "1", "-a", "0", "--threshold", "2", "-D", "2s", "-q"]);
    let id = lab.last_run();
    let doc = lab.export_json(id);
    assert_valid_export(&doc);
    let p = &doc["run"]["params"];
    assert_eq!(p["threshold_ns"], 2000);
    let t = &doc["threads"][0];
    if t["count"].as_u64().unwrap() > 0 {
        assert!(t["min_ns"].as_u64().unwrap() > 2000, "only gaps above the threshold are samples: {t}");
    }
    let noise = &p["noise"][0];
    let measured = noise["measured_ns"].as_u64().unwrap();
    assert!(measured > 1_000_000_000 && measured <= 2_500_000_000, "about 2 s watched, pauses left out: {noise}");
    // The noise total and the envelope's sums count the same gaps.
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    let env_sum: i64 =
        db.query_row("SELECT coalesce(sum(sum_ns), 0) FROM envelope WHERE run_id = ?1", [id], |r| r.get(0)).unwrap();
    assert_eq!(noise["noise_ns"].as_i64().unwrap(), env_sum);
    let avail = noise["available_percent"].as_f64().unwrap();
    let expect = 100.0 * (1.0 - env_sum as f64 / measured as f64);
    assert!((avail - expect).abs() < 1e-9, "{avail} vs {expect}");
    // Pauses exactly when RT throttling would otherwise stop a busy FIFO thread.
    let throttling = &doc["run"]["system"]["rt_throttling"];
    let (runtime, period) =
        (throttling["sched_rt_runtime_us"].as_i64().unwrap(), throttling["sched_rt_period_us"].as_i64().unwrap());
    let throttled = runtime >= 0 && runtime < period;
    assert_eq!(p["throttling_pauses"].is_string(), throttled, "{p}");
    assert_eq!(noise["pauses"].as_u64().unwrap() > 0, throttled, "{noise}");
    assert_rejected(&lab.run(&["noise", "--threshold", "0"]), "at least 1");
}

/// A cpuset of the test's own (cgroup v1, as this kind of machine has), removed when dropped.
struct Cpuset(std::path::PathBuf);

impl Drop for Cpuset {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[needs(root, cpuset_v1, two_cpus)]
#[test]
fn a_thread_that_cannot_be_on_its_cpu_measures_nothing_and_the_run_goes_on() {
    let root = std::path::Path::new("/sys/fs/cgroup/cpuset");
    let set = Cpuset(root.join(format!("rtbench-test-{}", std::process::id())));
    std::fs::create_dir(&set.0).unwrap();
    std::fs::write(set.0.join("cpuset.cpus"), "0").unwrap();
    std::fs::write(set.0.join("cpuset.mems"), std::fs::read_to_string(root.join("cpuset.mems")).unwrap()).unwrap();
    // CPU 1 is online but outside rtbench's cpuset: pinning thread 1 there fails, as it would
    // for a CPU unplugged under the run.
    let lab = Lab::new();
    let script = format!(
        "echo $$ > {}/tasks && exec {} timer -t 2 -a 0-1 -l 200 -q",
        set.0.display(),
        env!("CARGO_BIN_EXE_rtbench")
    );
    let out = std::process::Command::new("sh").args(["-c", &script]).env("RTBENCH_DB", lab.db()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["status"], "complete");
    assert_eq!(doc["threads"][0]["count"], 200, "the other thread measured");
    assert_eq!(doc["threads"][1]["count"], 0, "the unpinnable one measured nothing, not another CPU");
    let warnings = doc["run"]["warnings"].to_string();
    assert!(warnings.contains("thread 1 measured nothing: could not pin a thread to CPU 1"), "{warnings}");
}

/// `--main-affinity` as cyclictest's `--mainaffinity`: the collector runs there, and the stored
/// run, `show` and the JSON export say so; without it, the CPUs not measured, or a caveat.
#[needs(two_cpus)]
#[test]
fn the_collector_runs_where_it_is_put_and_the_run_says_where() {
    let online = rtbench::sysinfo::online_cpus();
    let (main, measured) = (online[0].to_string(), online[1].to_string());
    let lab = Lab::new();
    let run = |extra: &[&str]| {
        let mut args = vec!["timer", "-i", "500", "-l", "100", "-q"];
        args.extend(extra);
        let out = lab.ok(&args);
        (out, lab.export_json(lab.last_run()))
    };
    let (out, doc) = run(&["-a", &measured, "--main-affinity", &main]);
    assert_eq!(doc["run"]["params"]["collector"], serde_json::json!({"cpus": [online[0]], "chosen": "asked"}));
    assert!(out.contains(&format!("store writes): CPU {main} (--main-affinity)")), "{out}");
    let shown = lab.ok(&["show", &doc["run"]["id"].to_string()]);
    assert!(shown.contains(&format!("store writes): CPU {main} (--main-affinity)")), "{shown}");
    // By default, the online CPUs not measured.
    let (_, doc) = run(&["-a", &measured]);
    let collector = &doc["run"]["params"]["collector"];
    assert_eq!(collector["chosen"], "housekeeping", "{collector}");
    let on = collector["cpus"].as_array().unwrap();
    assert!(!on.is_empty() && !on.contains(&serde_json::json!(online[1])), "off CPU {measured}: {collector}");
    // Every online CPU measured: unpinned, and the run says it shared them.
    let every = rtbench::units::format_cpu_list(&online);
    let (out, doc) = run(&["-a", &every]);
    assert_eq!(doc["run"]["params"]["collector"]["chosen"], "unpinned");
    let warnings = doc["run"]["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().starts_with("collector shares measured CPUs")), "{warnings:?}");
    assert!(out.contains("WARNING: collector shares measured CPUs"), "{out}");
}
