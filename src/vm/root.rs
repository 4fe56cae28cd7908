//! The root file system of a guest of another architecture. A guest of rtbench's own
//! architecture reads the host's root; an ARM kernel needs ARM programs: a shell and the
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

/// The URI of the host's apt source of `suite` itself (not its -updates or -security), from
/// its one-line (`.list`) or deb822 (`.sources`) files.
fn archive_uri(suite: &str) -> Option<String> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    let listed = std::fs::read_dir("/etc/apt/sources.list.d").into_iter().flatten().flatten();
    files.extend(listed.map(|e| e.path()));
    files.iter().find_map(|file| {
        let text = std::fs::read_to_string(file).ok()?;
        match file.extension().and_then(|e| e.to_str()) {
            Some("list") => one_line_uri(&text, suite),
            Some("sources") => deb822_uri(&text, suite),
            _ => None,
        }
    })
}

/// `deb [OPTIONS] URI SUITE COMPONENTS…` lines.
fn one_line_uri(text: &str, suite: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.split('#').next()?.trim().strip_prefix("deb ")?;
        // Options are one bracketed group, which may hold spaces.
        let line = match line.trim_start().strip_prefix('[') {
            Some(options) => options.split_once(']')?.1,
            None => line,
        };
        let mut words = line.split_whitespace();
        let uri = words.next()?;
        (words.next()? == suite).then(|| uri.to_string())
    })
}

/// deb822 stanzas: `Types: deb`, `URIs: …`, `Suites: …`.
fn deb822_uri(text: &str, suite: &str) -> Option<String> {
    text.split("\n\n").find_map(|stanza| {
        let field = |name: &str| stanza.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
        let debs = field("Types:")?.split_whitespace().any(|t| t == "deb");
        let serves = field("Suites:")?.split_whitespace().any(|s| s == suite);
        let uri = field("URIs:")?.split_whitespace().next()?;
        (debs && serves).then(|| uri.to_string())
    })
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
    let suite = suite();
    let mmdebstrap = |sources: &[String]| {
        run_tool(
            Command::new("mmdebstrap")
                .args(["--quiet", "--variant=extract", &format!("--arch={}", arch.name())])
                .arg(format!("--include={}", PACKAGES.join(",")))
                .arg(&suite)
                .arg(dir)
                .args(sources),
        )
    };
    let named = |why: String| anyhow::anyhow!("could not make the {} guest root with mmdebstrap: {why}", arch.name());
    if let Err(why) = mmdebstrap(&[]) {
        // mmdebstrap takes the suite with its updates and security archives, and fails whole
        // when one index of this architecture cannot be read (a mirror caught mid-sync: seen
        // for bookworm-security's armhf one); the suite's own archive holds all a guest needs.
        let Some(uri) = archive_uri(&suite) else { return Err(named(why)) };
        println!(
            "kernels: mmdebstrap failed with its default archives ({why}): the {} root is made from {suite}'s main archive alone",
            arch.name()
        );
        let _ = std::fs::remove_dir_all(dir);
        mmdebstrap(&[format!("deb {uri} {suite} main")]).map_err(named)?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suites_own_archive_is_found_in_either_format_and_not_its_security_one() {
        let deb822 = "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n\
                      Types: deb-src deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n";
        assert_eq!(deb822_uri(deb822, "bookworm").as_deref(), Some("http://mirror.example/debian"));
        assert_eq!(deb822_uri(deb822, "trixie"), None);
        let list = "# deb http://old.example/debian bookworm main\ndeb-src http://src.example/debian bookworm main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\n";
        assert_eq!(one_line_uri(list, "bookworm").as_deref(), Some("http://mirror.example/debian"));
        assert_eq!(one_line_uri("deb http://m.example/debian bookworm-security main\n", "bookworm"), None);
    }
}
