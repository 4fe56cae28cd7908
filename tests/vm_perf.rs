//! `kernels --host-cpus`: performance mode pins the guest's vCPU threads at FIFO with RT
//! throttling off, so a vCPU thread can hold its host CPU whole while the guest runs. A test
//! binary of its own: cargo runs test binaries one after another, so no other test measures on
//! that CPU meanwhile (in the CLI binary, tests beside it saw their runs stretched).

#[allow(dead_code)]
#[path = "cli/helpers.rs"]
mod helpers;

#[allow(dead_code)]
#[path = "cli/guests.rs"]
mod guests;

use std::process::Command;
use std::time::{Duration, Instant};

use guests::{kernels, our_qemus, Killed};
use helpers::{text, Lab};
use rtbench_testkit::needs;

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
#[needs(full = "boots a TCG guest pinned at FIFO", root, "qemu-system-x86_64", "vng", kernels)]
#[test]
fn performance_mode_pins_the_vcpu_at_fifo_and_puts_the_host_back() {
    let (standard, _) = kernels();
    let lab = Lab::for_guests();
    let before = host_settings();
    let kernel = format!("deb:{standard}");
    let host_cpu = text(&Command::new("nproc").output().unwrap().stdout).trim().parse::<usize>().unwrap() - 1;
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
    let mut child = spawn(&["--", "timer", "-D", "2s", "-q"]);
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
