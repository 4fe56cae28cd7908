//! What the tests that boot guests share (their needs are in their `#[needs]`): Debian's kernel
//! packages, their QEMU processes, a child killed when a test ends. Used by `kernels` here and by
//! the performance-mode test, which has a test binary of its own (`tests/vm_perf.rs`).

use std::process::Command;

use crate::helpers::text;

/// The package `linux-image-amd64` (or `-rt-amd64`) depends on now: Debian's current 6.1
/// kernel, whatever its ABI number.
pub(crate) fn current_package(meta: &str) -> Option<String> {
    let out = Command::new("apt-cache").args(["depends", meta]).output().ok()?;
    text(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: linux-image-").map(|p| format!("linux-image-{p}")))
}

/// Debian's current standard and RT kernel packages (what `#[needs(kernels)]` checked apt has).
pub(crate) fn kernels() -> (String, String) {
    let found = current_package("linux-image-amd64").zip(current_package("linux-image-rt-amd64"));
    found.expect("apt knows linux-image-amd64 and linux-image-rt-amd64")
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
