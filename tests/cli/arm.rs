//! rtbench on the kernels of ARM boards, without a board: Debian's arm64 and armhf PREEMPT_RT
//! kernels booted under QEMU (TCG) on a root of their architecture, the ARM build of rtbench
//! inside, its instruments run there and the runs brought back labelled with the kernel and
//! architecture.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::helpers::{assert_rejected, Lab};
use rtbench_testkit::needs;

const EMULATED: &str = "emulated CPU (TCG): these latencies are the emulator's, not the kernel's";

/// An ARM architecture as these tests boot it.
struct Arm {
    /// Debian's name, as `--guest-binary` and `{arch}` take it.
    arch: &'static str,
    /// Rust's target, under which scripts/cross.sh builds.
    target: &'static str,
    /// Debian's RT kernel metapackage for it.
    kernel: &'static str,
    /// How its kernels' releases end.
    flavour: &'static str,
    /// `uname -m` in its guest.
    machine: &'static str,
}

const ARM64: Arm = Arm {
    arch: "arm64",
    target: "aarch64-unknown-linux-gnu",
    kernel: "linux-image-rt-arm64",
    flavour: "-rt-arm64",
    machine: "aarch64",
};

const ARMHF: Arm = Arm {
    arch: "armhf",
    target: "armv7-unknown-linux-gnueabihf",
    kernel: "linux-image-rt-armmp",
    flavour: "-rt-armmp",
    machine: "armv7l",
};

/// The ARM rtbench, cross-built with Debian's toolchain (scripts/cross.sh) unless CI's package
/// step already built it.
fn arm_rtbench(arm: &Arm) -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(repo.join("scripts/cross.sh"))
        .args([arm.arch, "build", "--release", "--quiet"])
        .current_dir(&repo)
        .status()
        .expect("scripts/cross.sh runs");
    assert!(built.success(), "the {} build failed", arm.arch);
    repo.join("target/cross").join(arm.target).join("release/rtbench")
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
    instruments_on(&ARM64);
}

/// The 32-bit boards: Debian's armmp kernel has no BTF, so the split and the classes come from
/// an ftrace instance there.
#[needs(
    full = "cross-builds rtbench for armhf (unless built) and boots an armhf TCG guest",
    root,
    "vng",
    "qemu-system-arm",
    "mmdebstrap",
    "/usr/bin/cargo",
    "arm-linux-gnueabihf-gcc",
    armhf_kernel
)]
#[test]
fn timer_split_classified_noise_and_timerlat_on_debians_armhf_rt_kernel() {
    instruments_on(&ARMHF);
}

/// `timer --split`, `noise --classify`, `timerlat` and the audit in a guest of `arm`'s RT kernel.
fn instruments_on(arm: &Arm) {
    let bin = arm_rtbench(arm);
    let lab = Lab::for_guests();
    let out = lab.path("report");
    let guest_binary = format!("{}={}", arm.arch, bin.display());
    let kernel = format!("deb:{}", arm.kernel);
    let started = Instant::now();
    let said = lab.ok(&[
        "kernels",
        &kernel,
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
    eprintln!("{} RT guest, three probes: {:.1} s ({booted})", arm.arch, started.elapsed().as_secs_f64());
    let booting = format!(", {}): booting under tcg", arm.arch);
    assert!(said.contains("0 failed") && said.contains("(6.1") && said.contains(&booting), "{said}");

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
        let on = format!(" on {}", arm.arch);
        assert!(label.contains(arm.flavour) && label.ends_with(&on), "kernel and architecture: {label}");
        assert_eq!(r["status"], "complete", "{r}");
        let system = &r["system"];
        assert_eq!(system["arch"], arm.machine, "{system}");
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
            // The split on ARM: the hrtimer tracepoints are every architecture's.
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
            // The kernel's own timerlat tracer, in Debian's ARM RT kernels.
            _ => {
                for t in threads {
                    assert_eq!(t["irq"]["count"], t["count"], "each activation's IRQ latency: {t}");
                }
            }
        }
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains(arm.machine) && html.contains(EMULATED),
        "the report names the architecture and the emulation"
    );
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
    assert_rejected(
        &lab.run(&["kernels", kernel, "--allow-emulated", "--guest-binary", "sparc=/bin/sh"]),
        "--guest-binary 'sparc=/bin/sh': ARCH is one of amd64, arm64, armhf",
    );
    for bad in ["arm64", "arm64=/no/such/file"] {
        let out = lab.run(&["kernels", kernel, "--allow-emulated", "--guest-binary", bad]);
        assert_rejected(&out, &format!("--guest-binary '{bad}': "));
    }
    assert_eq!(lab.runs(), before, "the store is unchanged");
}
