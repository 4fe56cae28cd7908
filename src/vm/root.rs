//! The root file system of a guest of another architecture. A guest of rtbench's own
//! architecture reads the host's root; an arm64 kernel needs arm64 programs: a shell and the
//! tools virtme-ng's init runs, the libraries rtbench links, and the reference tools (rt-tests,
//! rtla) to hold it against. Made once with mmdebstrap from the Debian archive apt already
//! uses, unpacked only (`--variant=extract`: no maintainer script runs, so no emulator is
//! needed to make it), and kept in the kernel cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use super::cache::run_tool;
use super::image::Arch;

/// What a guest root holds: virtme-ng's init is a bash script over coreutils, util-linux and
/// kmod, and takes busybox for its initramfs from the root; rtbench links libstdc++ (libzmq)
/// and its fork helper libtirpc; the reference tools come with their libraries; the study's
/// load needs a C compiler.
const PACKAGES: &[&str] = &[
    "bash",
    "busybox-static",
    "coreutils",
    "util-linux",
    "mount",
    "kmod",
    "procps",
    "grep",
    "sed",
    "gawk",
    "findutils",
    "libgcc-s1",
    "libstdc++6",
    "libtirpc3",
    "rt-tests",
    "rtla",
    // The benchmarks that hold rtbench against those tools in the guest do their arithmetic
    // in Python (bench/rtla-guest.sh).
    "python3",
    // The seed studies' load compiles C (`--load paper`'s compile generator).
    "make",
    "gcc",
    "libc6-dev",
    // virtme-ng's init brings the loopback up with ip, which the ping flood and the ping-pong
    // measure on.
    "iproute2",
];

/// What the packages' maintainer scripts would have made (no script runs in an unpacked root):
/// the shell, a poweroff for the init's end (busybox's), the compiler's usual name.
const LINKS: &[(&str, &str)] = &[("bin/sh", "bash"), ("sbin/poweroff", "/bin/busybox"), ("usr/bin/cc", "gcc")];

/// The file in a root that lists what it was made with: a root made with another list is made
/// again.
const MADE_WITH: &str = ".rtbench-packages";

/// The Debian release the root is made of: the host's own (`/etc/os-release`), else bookworm.
fn suite() -> String {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let codename = text.lines().find_map(|l| l.strip_prefix("VERSION_CODENAME="));
    codename.map(|c| c.trim_matches('"').to_string()).filter(|c| !c.is_empty()).unwrap_or_else(|| "bookworm".into())
}

/// The root of `arch` in `cache`, made first when there is none.
pub fn ensure(arch: Arch, cache: &Path) -> Result<PathBuf> {
    let root = cache.join(format!("root-{}", arch.name()));
    let links: Vec<String> = LINKS.iter().map(|(at, to)| format!("{at} -> {to}")).collect();
    let wanted = format!("{}\n{}", PACKAGES.join("\n"), links.join("\n"));
    let made_with = || std::fs::read_to_string(root.join(MADE_WITH)).ok();
    if made_with().as_deref() == Some(wanted.as_str()) {
        return Ok(root);
    }
    if !crate::sysinfo::on_path("mmdebstrap") {
        return Err(crate::invalid!(
            "an {} kernel needs a root of its architecture, made with mmdebstrap: install it (scripts/setup-arm.sh)",
            arch.name()
        ));
    }
    std::fs::create_dir_all(cache)?;
    let tmp = cache.join(format!(".root-{}.{}.tmp", arch.name(), std::process::id()));
    let made = make(arch, &tmp).and_then(|()| {
        std::fs::write(tmp.join(MADE_WITH), &wanted)?;
        if root.exists() && made_with().as_deref() != Some(wanted.as_str()) {
            std::fs::remove_dir_all(&root)?;
        }
        Ok(std::fs::rename(&tmp, &root)?)
    });
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another rtbench made it meanwhile: its root is as good.
        if made_with().as_deref() == Some(wanted.as_str()) {
            return Ok(root);
        }
        return Err(e);
    }
    Ok(root)
}

fn make(arch: Arch, dir: &Path) -> Result<()> {
    let named = |why: String| anyhow::anyhow!("could not make the {} guest root with mmdebstrap: {why}", arch.name());
    run_tool(
        Command::new("mmdebstrap")
            .args(["--quiet", "--variant=extract", &format!("--arch={}", arch.name())])
            .arg(format!("--include={}", PACKAGES.join(",")))
            .arg(suite())
            .arg(dir),
    )
    .map_err(named)?;
    for (at, to) in LINKS {
        let at = dir.join(at);
        std::fs::create_dir_all(at.parent().unwrap_or(dir))?;
        std::os::unix::fs::symlink(to, at)?;
    }
    // The one user, as base-passwd's script would have written it.
    std::fs::write(dir.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    std::fs::write(dir.join("etc/group"), "root:x:0:\n")?;
    Ok(())
}
