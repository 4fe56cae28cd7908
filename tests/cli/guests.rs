//! What the tests that boot guests share: their prerequisites, their QEMU processes, a child
//! killed when a test ends. Used by `kernels` here and by the performance-mode test, which has a
//! test binary of its own (`tests/vm_perf.rs`).

use std::process::{Command, Stdio};

use crate::helpers::{is_root, skip, text};

/// The package `linux-image-amd64` (or `-rt-amd64`) depends on now: Debian's current 6.1
/// kernel, whatever its ABI number.
pub(crate) fn current_package(meta: &str) -> Option<String> {
    let out = Command::new("apt-cache").args(["depends", meta]).output().ok()?;
    text(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: linux-image-").map(|p| format!("linux-image-{p}")))
}

pub(crate) fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What this test needs: root (FIFO threads in the guest), QEMU, virtme-ng, apt's lists.
pub(crate) fn prerequisites() -> Option<(String, String)> {
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

/// Our guests' QEMU processes: their 9p share is under a `rtbench-kernels-` directory.
pub(crate) fn our_qemus() -> Vec<String> {
    let out = Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains("qemu-system") && l.contains("rtbench-kernels-"))
        .map(str::to_string)
        .collect()
}

/// A child killed when the test ends, passed or not.
pub(crate) struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
