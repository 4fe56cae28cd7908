//! rtbench on the kernel of an ARM board, without a board: Debian's arm64 PREEMPT_RT kernel
//! booted under QEMU (TCG) on an arm64 root, the arm64 build of rtbench inside, its
//! instruments run there and the runs brought back labelled with the kernel and architecture.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::helpers::{assert_rejected, Lab};
use rtbench_testkit::needs;

const EMULATED: &str = "emulated CPU (TCG): these latencies are the emulator's, not the kernel's";

/// The arm64 rtbench, cross-built with Debian's toolchain (scripts/cross.sh) unless CI's
/// package step already built it.
fn arm64_rtbench() -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(repo.join("scripts/cross.sh"))
        .args(["arm64", "build", "--release", "--quiet"])
        .current_dir(&repo)
        .status()
        .expect("scripts/cross.sh runs");
    assert!(built.success(), "the arm64 build failed");
    repo.join("target/cross/aarch64-unknown-linux-gnu/release/rtbench")
}

#[needs(
    full = "cross-builds rtbench for arm64 (unless built) and boots an arm64 TCG guest",
    root,
    "vng",
    "qemu-system-aarch64",
    "mmdebstrap",
    "/usr/bin/cargo",
    "aarch64-linux-gnu-gcc",
    arm64_kernel
)]
#[test]
fn timer_split_classified_noise_and_timerlat_on_debians_arm64_rt_kernel() {
    let bin = arm64_rtbench();
    let lab = Lab::for_guests();
    let out = lab.path("report");
    let guest_binary = format!("arm64={}", bin.display());
    let started = Instant::now();
    let said = lab.ok(&[
        "kernels",
        "deb:linux-image-rt-arm64",
        "--allow-emulated",
        "--guest-binary",
        &guest_binary,
        "--label",
        "{release} on {arch}",
        "-o",
        out.to_str().unwrap(),
        "--",
        "timer",
        "-D",
        "3s",
        "--split",
        "-q",
        "--",
        "noise",
        "-D",
        "3s",
        "--classify",
        "-q",
        "--",
        "timerlat",
        "-D",
        "3s",
        "-q",
        "--",
        "audit",
    ]);
    let booted = said.lines().find(|l| l.contains(": booted in ")).unwrap_or("");
    eprintln!("arm64 RT guest, three probes: {:.1} s ({booted})", started.elapsed().as_secs_f64());
    assert!(
        said.contains("0 failed") && said.contains("(6.1") && said.contains(", arm64): booting under tcg"),
        "{said}"
    );

    // The audit's own ARM checks, and no x86 check failed there.
    let audit = |check: &str| -> String {
        let line = said.lines().find(|l| l.trim_start_matches([' ', '>']).split_whitespace().nth(1) == Some(check));
        line.unwrap_or_else(|| panic!("no {check} check in: {said}")).trim_start_matches([' ', '>']).to_string()
    };
    assert!(audit("clocksource").starts_with("ok       clocksource        arch_sys_counter: the architected timer"));
    assert!(audit("virtualization").contains("virtual machine (QEMU virt board)"), "{said}");
    assert!(audit("smi").starts_with("ok       smi                no SMIs"), "{said}");
    assert!(audit("kvm-hints").starts_with("ok "), "{said}");

    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    let probes: Vec<&str> = runs.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["timer", "noise", "timerlat"], "{said}");
    for r in runs {
        let label = r["label"].as_str().unwrap();
        assert!(label.contains("-rt-arm64") && label.ends_with(" on arm64"), "kernel and architecture: {label}");
        assert_eq!(r["status"], "complete", "{r}");
        let system = &r["system"];
        assert_eq!(system["arch"], "aarch64", "{system}");
        assert_eq!(system["vm"]["accelerator"], "tcg", "{system}");
        assert_eq!(system["preemption"]["sys_kernel_realtime"], true, "{system}");
        let warnings = r["warnings"].as_array().unwrap();
        assert!(warnings.iter().any(|w| w == EMULATED), "{warnings:?}");
        let doc = lab.export_json(r["id"].as_i64().unwrap());
        let threads = doc["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "a thread on each vCPU: {doc}");
        assert!(threads.iter().all(|t| t["count"].as_u64() > Some(0)), "every thread has samples");
        let params = &doc["run"]["params"];
        match r["probe"].as_str().unwrap() {
            // The split on arm64: the hrtimer tracepoints are every architecture's.
            "timer" => {
                assert_eq!(
                    (&params["split"]["lost_events"], &params["split"]["skipped"]),
                    (&0.into(), &None::<()>.into())
                );
                for t in threads {
                    let (count, matched) = (t["count"].as_u64().unwrap(), t["irq"]["count"].as_u64().unwrap());
                    assert!(matched as f64 >= 0.99 * count as f64, "{matched} of {count} matched");
                }
            }
            // ARM's timer interrupt is the architected timer's, named as such in the classes.
            "noise" => {
                let classify = &params["classify"];
                assert_eq!((&classify["lost_events"], &classify["skipped"]), (&0.into(), &None::<()>.into()));
                let totals = classify["threads"][0]["totals"].as_array().unwrap();
                let timer =
                    totals.iter().find(|t| t["class"] == "irq" && t["name"].as_str().unwrap().contains("arch_timer"));
                assert!(timer.is_some_and(|t| t["count"].as_u64() > Some(0)), "{totals:?}");
            }
            // The kernel's own timerlat tracer, in Debian's arm64 RT kernel.
            _ => {
                for t in threads {
                    assert_eq!(t["irq"]["count"], t["count"], "each activation's IRQ latency: {t}");
                }
            }
        }
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("aarch64") && html.contains(EMULATED), "the report names the architecture and the emulation");
}

/// An arm64 kernel without the flag that accepts emulation, without an arm64 rtbench, or with
/// a program of another architecture: one line each, exit 2, before any boot, store as it was.
#[needs(arm64_kernel, "dpkg-deb", "vng")]
#[test]
fn an_arm64_kernel_is_refused_before_booting_without_what_its_guest_needs() {
    let lab = Lab::new();
    let before = lab.runs();
    let kernel = "deb:linux-image-rt-arm64";
    assert_rejected(&lab.run(&["kernels", kernel, "--", "timer", "-D", "2s"]), "can only emulate it (TCG)");
    assert_rejected(
        &lab.run(&["kernels", kernel, "--allow-emulated"]),
        "kernel deb:linux-image-rt-arm64 is for arm64: give an arm64 rtbench with --guest-binary arm64=PATH",
    );
    let host = format!("arm64={}", env!("CARGO_BIN_EXE_rtbench"));
    assert_rejected(
        &lab.run(&["kernels", kernel, "--allow-emulated", "--guest-binary", &host]),
        &format!("--guest-binary '{host}': not an arm64 program"),
    );
    for bad in ["arm64", "sparc=/bin/sh", "arm64=/no/such/file"] {
        let out = lab.run(&["kernels", kernel, "--allow-emulated", "--guest-binary", bad]);
        assert_rejected(&out, &format!("--guest-binary '{bad}': "));
    }
    assert_eq!(lab.runs(), before, "the store is unchanged");
}
