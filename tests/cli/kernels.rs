//! `rtbench kernels`: Debian's standard and PREEMPT_RT kernels booted in QEMU guests (TCG here:
//! this machine's /dev/kvm cannot run a guest), measured side by side in one command.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{assert_rejected, is_root, skip, text, Lab};

const EMULATED: &str = "emulated CPU (TCG): these latencies are the emulator's, not the kernel's";

/// The package `linux-image-amd64` (or `-rt-amd64`) depends on now: Debian's current 6.1
/// kernel, whatever its ABI number.
fn current_package(meta: &str) -> Option<String> {
    let out = Command::new("apt-cache").args(["depends", meta]).output().ok()?;
    text(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: linux-image-").map(|p| format!("linux-image-{p}")))
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What this test needs: root (FIFO threads in the guest), QEMU, virtme-ng, apt's lists.
fn prerequisites() -> Option<(String, String)> {
    if !is_root() {
        skip("booting guests and measuring at FIFO in them needs root");
        return None;
    }
    for tool in ["qemu-system-x86_64", "vng", "apt-get"] {
        if !have(tool) {
            skip(&format!("{tool} is not installed (scripts/setup.sh installs it)"));
            return None;
        }
    }
    let found = current_package("linux-image-amd64").zip(current_package("linux-image-rt-amd64"));
    if found.is_none() {
        skip("apt knows no linux-image-amd64 / linux-image-rt-amd64 (apt-get update)");
    }
    found
}

/// The tests that boot guests run one at a time: each finds "its" QEMU among the processes and
/// checks that none is left, so another test's guest beside it would be taken for its own (CI
/// saw the performance-mode test watch the side-by-side test's QEMU and never its own).
fn one_guest_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static GUESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GUESTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Our guests' QEMU processes: their 9p share is under a `rtbench-kernels-` directory.
fn our_qemus() -> Vec<String> {
    let out = Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains("qemu-system") && l.contains("rtbench-kernels-"))
        .map(str::to_string)
        .collect()
}

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

#[test]
fn debians_standard_and_rt_kernels_side_by_side_in_tcg_guests() {
    let Some((standard, rt)) = prerequisites() else { return };
    let _alone = one_guest_test_at_a_time();
    let release = |p: &str| p.trim_start_matches("linux-image-").to_string();
    let lab = Lab::new();
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
    interrupted_during_the_second_boot(&k1, &k2);
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

/// A child killed when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The host settings performance mode changes, as they read now.
fn host_settings() -> Vec<String> {
    ["/proc/sys/kernel/sched_rt_runtime_us", "/sys/module/kvm/parameters/halt_poll_ns"]
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default().trim().to_string())
        .collect()
}

/// Our guest QEMU's vCPU threads: (name, allowed CPUs, policy, priority) from the host's /proc.
fn vcpu_threads() -> Vec<(String, String, String, String)> {
    let Some(qemu) = our_qemus().first().and_then(|l| l.split_whitespace().next().map(str::to_string)) else {
        return Vec::new();
    };
    let tasks = std::fs::read_dir(format!("/proc/{qemu}/task")).map(|d| d.flatten().collect()).unwrap_or(Vec::new());
    let mut found = Vec::new();
    for task in tasks {
        let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default();
        let name = read("comm").trim().to_string();
        if !name.starts_with("CPU ") {
            continue;
        }
        let allowed =
            read("status").lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:").map(|v| v.trim().to_string()));
        // After the command name's closing parenthesis, field 3 is the 1st: rt_priority is the
        // 40th field, policy the 41st.
        let stat = read("stat");
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
        let field = |n: usize| fields.get(n - 3).unwrap_or(&"").to_string();
        found.push((name, allowed.unwrap_or_default(), field(41), field(40)));
    }
    found
}

/// Performance mode under TCG: while the guest runs, its vCPU thread is pinned to the host CPU
/// given at FIFO and RT throttling is off; after the command, and after a SIGKILL and the next
/// command, the host's settings are as before.
#[test]
fn performance_mode_pins_the_vcpu_at_fifo_and_puts_the_host_back() {
    let Some((standard, _)) = prerequisites() else { return };
    let _alone = one_guest_test_at_a_time();
    let before = host_settings();
    let lab = Lab::new();
    let kernel = format!("deb:{standard}");
    let host_cpu =
        crate::helpers::text(&Command::new("nproc").output().unwrap().stdout).trim().parse::<usize>().unwrap() - 1;
    let cpu = host_cpu.to_string();
    let report = lab.path("report");
    let report = report.to_str().unwrap();
    let args =
        ["kernels", &kernel, "--allow-emulated", "--cpus", "1", "--host-cpus", &cpu, "--memory", "512M", "-o", report];
    let log = lab.path("out.log");
    let spawn = |extra: &[&str]| {
        let child = lab.cmd(&[&args[..], extra].concat()).stdout(std::fs::File::create(&log).unwrap()).spawn().unwrap();
        Killed(child)
    };
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut child = spawn(&["--", "timer", "-D", "5s", "-q"]);
    // (SCHED_FIFO is policy 1.)
    let pinned = vec![("CPU 0/TCG".to_string(), cpu.clone(), "1".to_string(), "1".to_string())];
    let until = Instant::now() + Duration::from_secs(300);
    while vcpu_threads() != pinned {
        assert!(Instant::now() < until && child.0.try_wait().unwrap().is_none(), "{:?} {}", vcpu_threads(), said());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(host_settings()[0], "-1", "RT throttling is off while the guest runs");
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", said());
    assert_eq!(host_settings(), before, "the host's settings are put back after the command");
    let runs = lab.runs();
    let vm = &runs[0]["system"]["vm"];
    assert_eq!((vm["host_cpus"].as_str(), vm["vcpu_fifo"].as_u64()), (Some(cpu.as_str()), Some(1)), "{vm}");

    // Killed while it holds the host: the next command puts it back and stops the guest.
    let mut child = spawn(&["--", "timer", "-D", "5s", "-q"]);
    while vcpu_threads() != pinned {
        assert!(Instant::now() < until && child.0.try_wait().unwrap().is_none(), "{}", said());
        std::thread::sleep(Duration::from_millis(200));
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    assert_ne!(host_settings(), before, "a SIGKILL leaves the host changed");
    let next = lab.run(&["runs"]);
    assert!(text(&next.stderr).contains("ended in performance mode"), "{}", text(&next.stderr));
    assert_eq!(host_settings(), before, "the next command puts the host's settings back");
    // SIGKILL is sent; a QEMU with locked memory takes a moment to go.
    let until = Instant::now() + Duration::from_secs(20);
    while !our_qemus().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(our_qemus(), Vec::<String>::new(), "and stops the guest");
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
