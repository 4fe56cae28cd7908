//! `rtbench kernels`: Debian's standard and PREEMPT_RT kernels booted in QEMU guests (TCG here:
//! this machine's /dev/kvm cannot run a guest), measured side by side in one command.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::guests::{kernels, our_qemus, Killed};
use crate::helpers::{assert_rejected, Lab};
use rtbench_testkit::needs;

const EMULATED: &str = "emulated CPU (TCG): these latencies are the emulator's, not the kernel's";

fn scratch_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("rtbench-kernels-"))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

#[needs(full = "boots two TCG guests", root, "qemu-system-x86_64", "vng", kernels)]
#[test]
fn debians_standard_and_rt_kernels_side_by_side_in_tcg_guests() {
    let (standard, rt) = kernels();
    let release = |p: &str| p.trim_start_matches("linux-image-").to_string();
    let lab = Lab::for_guests();
    let out = lab.path("report");
    let (k1, k2) = (format!("deb:{standard}"), format!("deb:{rt}"));
    let o = out.to_str().unwrap();
    let args = [
        &k1,
        &k2,
        "--allow-emulated",
        "-o",
        o,
        "--",
        "timer",
        "-D",
        "2s",
        "-q",
        "--",
        "gtod",
        "-D",
        "2s",
        "-q",
        "--",
        "audit",
    ];
    let said = lab.ok(&[&["kernels"][..], &args].concat());
    assert!(said.contains("0 failed"), "{said}");
    // The audit in each guest has its virtualisation checks: a guest, not bare metal.
    for check in ["virtualization", "guest-idle", "kvm-hints"] {
        let lines: Vec<&str> = said.lines().filter(|l| l.split_whitespace().nth(2) == Some(check)).collect();
        assert_eq!(lines.len(), 2, "{check} once in each guest: {said}");
        assert!(lines.iter().all(|l| !l.contains("bare metal")), "{lines:?}");
    }

    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    let mut labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    labels.dedup();
    assert_eq!(labels, [release(&standard), release(&rt)], "each kernel's runs under its release");
    for r in runs {
        let probes: Vec<&str> =
            runs.iter().filter(|x| x["label"] == r["label"]).map(|x| x["probe"].as_str().unwrap()).collect();
        assert_eq!(probes, ["timer", "gtod"], "both commands ran in {}", r["label"]);
        let warnings: Vec<&str> = r["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert!(warnings.contains(&EMULATED), "run {} lacks the emulation warning: {warnings:?}", r["id"]);
        let system = &r["system"];
        assert_eq!(system["vm"]["accelerator"], "tcg", "{system}");
        assert_eq!(system["vm"]["vcpus"], 2, "{system}");
        assert_eq!(
            system["vm"]["host_kernel"].as_str(),
            std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().as_deref().map(str::trim)
        );
        let realtime = system["preemption"]["sys_kernel_realtime"] == true;
        assert_eq!(realtime, r["label"] == release(&rt).as_str(), "only the RT guest says realtime: {system}");
    }
    let show = lab.ok(&["show", &runs[0]["id"].to_string()]);
    assert!(show.contains(EMULATED), "show prints the warning: {show}");
    assert!(show.contains("ran in a virtual machine: qemu (tcg), 2 vCPUs, host "), "and where it ran: {show}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains(&format!("{} vs {}", release(&standard), release(&rt))),
        "the report sets both kernels side by side"
    );
    assert!(html.contains(EMULATED), "the report carries the warning");

    bad_kernels_change_nothing(&lab, &standard);
    audit_alone_stores_nothing_and_is_no_failure(&lab, &k2);
    interrupted_during_the_second_boot(&k1, &k2);
}

/// Commands that store no run (the audit alone) finish the guest as well as a probe does: what
/// they said is shown, nothing is merged, and the command succeeds.
fn audit_alone_stores_nothing_and_is_no_failure(lab: &Lab, kernel: &str) {
    let before = lab.runs();
    let said = lab.ok(&["kernels", kernel, "--allow-emulated", "--", "audit"]);
    assert!(said.contains("its commands stored no run") && said.contains("0 failed"), "{said}");
    assert!(said.lines().any(|l| l.split_whitespace().nth(2) == Some("preemption")), "the audit is shown: {said}");
    assert_eq!(lab.runs(), before, "nothing merged");
}

/// A cut image and a package apt does not know: one line naming them, exit 2, store as it was.
fn bad_kernels_change_nothing(lab: &Lab, standard: &str) {
    let before = lab.runs();
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"))
        .join("rtbench/kernels");
    let unpacked = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&format!("{standard}_")));
    let boot = unpacked.expect("the package was unpacked into the cache").path().join("boot");
    let image = std::fs::read_dir(boot)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"))
        .unwrap();
    let bytes = std::fs::read(image.path()).unwrap();
    let cut = lab.path("vmlinuz-cut");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut = cut.to_str().unwrap();
    assert_rejected(
        &lab.run(&["kernels", cut, "--allow-emulated", "--", "timer", "-D", "2s"]),
        &format!("kernel '{cut}': truncated"),
    );
    let nosuch = "deb:linux-image-0.0.0-no-such-kernel";
    assert_rejected(
        &lab.run(&["kernels", nosuch, "--allow-emulated"]),
        &format!("kernel '{nosuch}': apt-get download failed"),
    );
    assert_eq!(lab.runs(), before, "the store is unchanged");
}

/// SIGINT while the second kernel boots: the guest is stopped (no QEMU left), the first
/// kernel's runs are kept, the temporary files are gone.
fn interrupted_during_the_second_boot(k1: &str, k2: &str) {
    let lab = Lab::new();
    let dirs_before = scratch_dirs();
    let log = lab.path("out.log");
    let child = lab
        .cmd(&["kernels", k1, k2, "--allow-emulated", "--", "timer", "-D", "2s", "-q"])
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let said = || std::fs::read_to_string(&log).unwrap();
    // virtme-ng starts QEMU some seconds after it starts: wait for the second kernel's QEMU.
    let until = Instant::now() + Duration::from_secs(600);
    while !said().contains(&format!("{k2} (")) || our_qemus().is_empty() {
        assert!(Instant::now() < until && child.0.try_wait().unwrap().is_none(), "{}", said());
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    // The first guest completed (CI once saw it taken for ended before its store came back:
    // the host had read its status file while the guest had created it but not yet written
    // it), the second is still booting.
    assert_eq!(said().matches("booted in").count(), 1, "the first kernel ran, the second boots: {}", said());
    Command::new("kill").args(["-INT", &child.0.id().to_string()]).status().unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", said());
    assert_eq!(our_qemus(), Vec::<String>::new(), "no QEMU is left");
    assert_eq!(scratch_dirs(), dirs_before, "the temporary files are gone");
    let runs = lab.runs();
    assert_eq!(runs.as_array().unwrap().len(), 1, "the first kernel's run is kept: {runs}");
}

#[test]
fn host_cpus_must_name_one_online_cpu_per_vcpu() {
    let lab = Lab::new();
    let kernel = std::env::current_exe().unwrap();
    let kernel = kernel.to_str().unwrap();
    assert_rejected(
        &lab.run(&["kernels", kernel, "--cpus", "2", "--host-cpus", "0"]),
        "--host-cpus 0: 1 host CPUs for 2 vCPUs (--cpus)",
    );
    assert_rejected(&lab.run(&["kernels", kernel, "--cpus", "1", "--host-cpus", "4095"]), "CPU 4095 is not online");
    assert_rejected(&lab.run(&["kernels", kernel, "--cpus", "1", "--host-cpus", "x"]), "is not a CPU list");
}
