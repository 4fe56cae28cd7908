//! The `timerlat` source: the kernel's own timer latency, read where the kernel has the tracer
//! (Debian's PREEMPT_RT kernel, booted in a guest) and refused in one line where it has not.

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
fn the_rt_kernel_in_a_guest_gives_timerlat_runs_with_irq_and_thread_latency() {
    let Some((_, rt)) = prerequisites() else { return };
    let lab = Lab::new();
    let kernel = format!("deb:{rt}");
    let report = lab.path("report");
    let o = report.to_str().unwrap();
    let args = ["kernels", &kernel, "--allow-emulated", "-o", o, "--", "timerlat", "-D", "5s", "-q", "--", "timer"];
    let said = lab.ok(&[&args[..], &["--split", "-D", "5s", "-q"]].concat());
    assert!(said.contains("0 failed"), "{said}");
    let runs = lab.runs();
    let probes: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["timerlat", "timer"], "both ran and were stored");
    for run in runs.as_array().unwrap() {
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
