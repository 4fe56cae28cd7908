//! Which accelerator a guest runs on, honestly: KVM only when `/dev/kvm` can really run a
//! guest, since on some hosts it opens and then cannot (here QEMU stops on an MSR, or the guest
//! hangs after the BIOS). Under TCG every instruction is emulated: the latencies measured are
//! the emulator's, not the kernel's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::group::{Group, Waited};

/// How long a kernel under KVM may take to print its banner: it does so in well under a
/// second; TCG, emulating, takes about one.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// What the probe found: KVM runs guests, or why not.
pub type Probe = Result<Duration, String>;

/// Boots `image` under KVM with no root file system: a kernel that runs prints its banner on the
/// serial console and panics at once (QEMU then exits: -no-reboot). Ok: how long the banner
/// took; Err: why KVM cannot be used. `scratch` holds the console log.
pub fn probe_kvm(image: &Path, scratch: &Path) -> Result<Probe> {
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm") {
        return Ok(Err(format!("/dev/kvm: {e}")));
    }
    let log = scratch.join("kvm-probe.log");
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-accel", "kvm", "-cpu", "host", "-m", "256", "-display", "none", "-no-reboot", "-serial"])
        .arg(format!("file:{}", log.display()))
        .arg("-kernel")
        .arg(image)
        .args(["-append", "console=ttyS0 panic=-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut group = Group::spawn(&mut cmd, scratch)?;
    let banner = || std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Linux version"));
    let waited = group.wait(banner, Some(started + PROBE_TIMEOUT))?;
    let took = started.elapsed();
    group.stop();
    Ok(match waited {
        Waited::Ready => Ok(took),
        Waited::Exited(_) if banner() => Ok(took),
        Waited::Exited(status) => Err(format!("QEMU ended ({status}) before the kernel printed anything")),
        Waited::TimedOut => Err(format!("no kernel banner within {} s: the guest hangs", PROBE_TIMEOUT.as_secs())),
        Waited::Signal(sig) => return Err(super::Stopped(sig).into()),
    })
}
