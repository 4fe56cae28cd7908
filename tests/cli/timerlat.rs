//! The `timerlat` source: the kernel's own timer latency, read where the kernel has the tracer
//! (Debian's PREEMPT_RT kernel, booted in a guest) and refused in one line where it has not;
//! a study runs it as a cell there and says why it has none here.

use crate::guests::prerequisites;
use crate::helpers::*;

fn host_has_timerlat() -> bool {
    std::fs::read_to_string("/sys/kernel/tracing/available_tracers").is_ok_and(|t| t.contains("timerlat"))
}

#[test]
fn a_kernel_without_the_tracer_refuses_the_timerlat_source_in_one_line() {
    if host_has_timerlat() {
        skip("this kernel has the timerlat tracer: nothing to refuse");
        return;
    }
    let lab = Lab::new();
    let out = lab.run(&["timerlat", "-D", "1s"]);
    // Without root tracefs may not be readable; the refusal then says that instead.
    let why = if is_root() {
        "the kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)"
    } else {
        "timerlat cannot run here"
    };
    assert_rejected(&out, why);
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "nothing stored");
}

#[test]
fn the_rt_kernel_in_a_guest_gives_timerlat_runs_with_irq_and_thread_latency_and_a_study_cell() {
    let Some((_, rt)) = prerequisites() else { return };
    let lab = Lab::new();
    let kernel = format!("deb:{rt}");
    let report = lab.path("report");
    let o = report.to_str().unwrap();
    let args = ["kernels", &kernel, "--allow-emulated", "-o", o, "--", "timerlat", "-D", "5s", "-q", "--", "timer"];
    // No report in the guest (under TCG its fits and figures take minutes); the study's runs
    // come back with the others.
    let study = ["study", "-D", "1s", "--load", "none", "--no-sysbench", "--no-split", "--no-classify", "-q"];
    let said = lab.ok(&[&args[..], &["--split", "-D", "5s", "-q", "--"], &study, &["--no-report"]].concat());
    assert!(said.contains("0 failed"), "{said}");
    assert!(!said.contains("skipping timerlat"), "the RT kernel has the tracer: {said}");
    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    let probes: Vec<&str> = runs.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes[..2], ["timerlat", "timer"], "both ran and were stored");
    let cells: Vec<&str> = probes[2..].iter().copied().filter(|p| !p.starts_with("sysbench")).collect();
    assert_eq!(cells, ["timer", "timerlat", "gtod", "pingpong", "response", "noise"], "the study's cells");
    for run in runs.iter().take(2).chain(runs.iter().skip(2).filter(|r| r["probe"] == "timerlat")) {
        assert_eq!(run["status"], "complete", "{run}");
        let doc = lab.export_json(run["id"].as_i64().unwrap());
        let threads = doc["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "one per vCPU: {doc}");
        for t in threads {
            assert!(t["count"].as_u64().unwrap() > 0, "thread latencies: {t}");
            assert!(t["irq"]["count"].as_u64().unwrap() > 0, "IRQ latencies: {t}");
        }
    }
}

#[test]
fn a_study_on_a_kernel_without_the_tracer_says_why_it_has_no_timerlat_cell() {
    if host_has_timerlat() || !is_root() {
        skip("the tracer is here, or tracefs is not readable: the reason would be another");
        return;
    }
    let lab = Lab::new();
    let report = lab.path("report");
    let args = ["study", "-D", "1s", "--load", "none", "--no-sysbench", "--no-split", "--no-classify", "-q", "-o"];
    let said = lab.ok(&[&args[..], &[report.to_str().unwrap()]].concat());
    let why = "study: skipping timerlat: the kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)";
    assert!(said.lines().any(|l| l == why), "{said}");
    assert!(!said.contains("cell 1 of 6") && said.contains("cell 5 of 5"), "no timerlat cell: {said}");
    let runs = lab.runs();
    let probes: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["timer", "gtod", "pingpong", "response", "noise"], "the other cells ran and were stored");
}

/// What runs in the RT guest, in the lab's directory (shared writable): the timerlat source and
/// `timer --split` on CPU 1; a `--breach` run during which the busy loop spins; then rtla's
/// timerlat with auto-analysis while the loop spins again (started once rtla's kernel thread
/// exists: rtla takes seconds to set up under TCG). The store lives in the guest's /tmp (no
/// SQLite locks over 9p) and is copied back.
const GUEST: &str = r#"
cd "$LAB" || exit 1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
db=/tmp/guest.db
t() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >> steps; }
t start
"$RTBENCH" timerlat -D 3s -q --db $db > timerlat.out 2>&1
t timerlat
"$RTBENCH" timer --split -a 1 -D 3s -q --db $db > split.out 2>&1
t split
"$RTBENCH" timer -a 1 -t 1 --breach 100000 --breach-stop -D 20s -q --db $db > breach.out 2>&1 &
run=$!
# rtbench takes tens of seconds to start under TCG: the loop spins from its start to the
# first breach window stored, which ends the run.
python3 hog.py 1 120 0.3 > hog-breach.txt &
echo $! > hog-breach.pid
wait $run
kill $(cat hog-breach.pid)
wait
t breach
(until pgrep -x timerlat/1 > /dev/null; do sleep 0.2; done; sleep 2; exec python3 hog.py 1 120 0.3 > hog-rtla.txt) &
echo $! > hog-rtla.pid
"$RTLA" timerlat top -a 100000 -c 1 -d 40s > rtla.out 2>&1
t rtla
kill $(cat hog-rtla.pid) 2> /dev/null
wait
cp $db rtbench.db && echo done > finished
t copied
"#;

/// An rtla with timerlat's auto-analysis (rtla 6.3 and later; Debian 12's is 6.1): `$RTBENCH_RTLA`,
/// else the one on PATH.
fn rtla_with_analysis() -> Option<String> {
    let rtla = std::env::var("RTBENCH_RTLA").unwrap_or_else(|_| "rtla".into());
    let help = std::process::Command::new(&rtla).args(["timerlat", "top", "-h"]).output().ok()?;
    let said = text(&help.stdout) + &text(&help.stderr);
    said.contains("--no-aa").then_some(rtla)
}

/// The Debian RT kernel's vmlinuz, as `rtbench kernels deb:PACKAGE` unpacked it into its cache.
fn cached_vmlinuz(package: &str) -> Option<std::path::PathBuf> {
    let cache = std::path::Path::new(&std::env::var("HOME").ok()?).join(".cache/rtbench/kernels");
    let dir = std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&format!("{package}_")))?;
    std::fs::read_dir(dir.path().join("boot"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-")))
}

// Not in CI yet: Debian 12's rtla (6.1) has no auto-analysis, and here (TCG on a shared 2-CPU
// host, the debug binary) the guest takes over 5 minutes: boot 55-92 s, each rtbench run 25-60 s
// of start-up. Run it with `RTBENCH_RTLA=<rtla 6.3+> cargo test --test cli timerlat -- --ignored`.
#[test]
#[ignore = "needs an rtla with auto-analysis (RTBENCH_RTLA) and over 5 minutes of TCG guest here"]
fn in_the_rt_guest_rtbench_and_rtla_timerlat_both_blame_the_hog_for_the_breach_it_makes() {
    let Some((_, rt)) = prerequisites() else { return };
    let Some(rtla) = rtla_with_analysis() else {
        skip("no rtla with timerlat auto-analysis (6.3 or later): set RTBENCH_RTLA to one");
        return;
    };
    let lab = Lab::new();
    if cached_vmlinuz(&rt).is_none() {
        // `kernels` fetches and unpacks the package into its cache (one boot more, once).
        lab.ok(&["kernels", &format!("deb:{rt}"), "--allow-emulated", "--", "timerlat", "-D", "1s", "-q"]);
    }
    let vmlinuz = cached_vmlinuz(&rt).expect("the RT kernel in rtbench's cache");
    std::fs::write(lab.path("hog.py"), crate::breach::HOG).unwrap();
    std::fs::write(lab.path("guest.sh"), GUEST).unwrap();
    let dir = lab.dir.path().to_str().unwrap();
    let env = format!("env LAB={dir} RTBENCH={} RTLA={rtla} bash {dir}/guest.sh", env!("CARGO_BIN_EXE_rtbench"));
    let vng = std::process::Command::new("timeout")
        .args([
            "300",
            "vng",
            "-r",
            vmlinuz.to_str().unwrap(),
            "--disable-kvm",
            "--cpus",
            "2",
            "--rwdir",
            dir,
            "--exec",
            &env,
        ])
        .output()
        .unwrap();
    let read = |f: &str| std::fs::read_to_string(lab.path(f)).unwrap_or_default();
    let said = ["steps", "timerlat.out", "split.out", "breach.out", "rtla.out"].map(|f| format!("{f}: {}", read(f)));
    eprintln!("in the guest (uptime in s): {}", read("steps"));
    assert!(
        lab.path("finished").exists(),
        "the guest ran it all: {}{}\n{}",
        said.join("\n"),
        text(&vng.stdout),
        text(&vng.stderr)
    );
    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    let probes: Vec<&str> = runs.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["timerlat", "timer", "timer"], "{}{}", read("timerlat.out"), read("split.out"));
    for run in &runs[..2] {
        let doc = lab.export_json(run["id"].as_i64().unwrap());
        assert_eq!(doc["run"]["status"], "complete", "{doc}");
        assert!(
            doc["threads"][0]["count"].as_u64().unwrap() > 0 && doc["threads"][0]["irq"]["count"].as_u64().unwrap() > 0,
            "{doc}"
        );
    }
    // rtbench: a breach during the busy loop names it.
    let hog = read("hog-breach.pid").trim().to_string();
    let doc = lab.export_json(runs[2]["id"].as_i64().unwrap());
    let breaches = doc["breaches"].as_array().cloned().unwrap_or_default();
    let blamed = breaches.iter().filter(|b| {
        b["causes"][0]["kind"] == "task"
            && b["causes"][0]["detail"].as_str().unwrap_or("").contains(&format!("pid {hog},"))
    });
    assert!(
        blamed.count() >= 1,
        "rtbench names the busy loop (pid {hog}) for a breach: {breaches:#?}\n{}",
        read("breach.out")
    );
    // rtla: its analysis of the activation that stopped it names the loop, as the blocking
    // thread or (when the timer fired into idle) as the thread that ran before timerlat's.
    let out = read("rtla.out");
    let analysis =
        out.split("hit stop tracing, analyzing it").nth(1).unwrap_or_else(|| panic!("rtla stopped on a breach: {out}"));
    let hog = read("hog-rtla.pid").trim().to_string();
    let named = analysis
        .lines()
        .take_while(|l| !l.starts_with("Max timerlat"))
        .any(|l| l.split_whitespace().next() == Some(&format!("python3:{hog}")));
    assert!(named, "rtla names the busy loop (python3:{hog}): {analysis}");
}
