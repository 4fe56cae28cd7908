//! Which accelerator a guest runs on, honestly: KVM only when `/dev/kvm` can really run a
//! guest, since on some hosts it opens and then cannot (here QEMU stops on an MSR, or the guest
//! hangs after the BIOS). Under TCG every instruction is emulated: the latencies measured are
//! the emulator's, not the kernel's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::group::{Group, Waited};
use super::image::Arch;

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

/// Boots `image`, a kernel of `arch` (rtbench's own), under KVM with no root file system: a
/// kernel that runs prints its banner on the serial console and panics at once (QEMU then
/// exits: -no-reboot). Ok: how long the banner took; Err: why KVM cannot be used. `scratch`
/// holds the console log.
pub fn probe_kvm(image: &Path, arch: Arch, scratch: &Path) -> Result<Probe> {
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm") {
        return Ok(Err(format!("/dev/kvm: {e}")));
    }
    let log = scratch.join("kvm-probe.log");
    let mut cmd = probe_command(image, arch, &log);
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

/// The QEMU that boots `image` under KVM with its serial console into `log`: an x86 PC, or
/// ARM's virt board (which has no default machine) with its PL011 console.
fn probe_command(image: &Path, arch: Arch, log: &Path) -> Command {
    let (machine, console): (&[&str], &str) = match arch {
        Arch::Amd64 => (&[], "ttyS0"),
        Arch::Arm64 | Arch::Armhf => (&["-M", "virt"], "ttyAMA0"),
    };
    let mut cmd = Command::new(arch.qemu());
    cmd.args(machine)
        .args(["-accel", "kvm", "-cpu", "host", "-m", "256", "-display", "none", "-no-reboot", "-serial"])
        .arg(format!("file:{}", log.display()))
        .arg("-kernel")
        .arg(image)
        .args(["-append", &format!("console={console} panic=-1")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_is_probed_with_the_kernels_own_qemu_board_and_console() {
        let args = |arch| {
            let cmd = probe_command(Path::new("/k"), arch, Path::new("/l"));
            let words: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
            (cmd.get_program().to_string_lossy().into_owned(), words.join(" "))
        };
        let (qemu, words) = args(Arch::Arm64);
        assert_eq!(qemu, "qemu-system-aarch64");
        assert!(
            words.starts_with("-M virt -accel kvm -cpu host") && words.ends_with("console=ttyAMA0 panic=-1"),
            "{words}"
        );
        let (qemu, words) = args(Arch::Amd64);
        assert_eq!(qemu, "qemu-system-x86_64");
        assert!(words.starts_with("-accel kvm") && words.ends_with("console=ttyS0 panic=-1"), "{words}");
    }
}
