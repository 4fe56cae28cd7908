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
