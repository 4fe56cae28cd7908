//! Where the kernels to boot come from: an image on disk, a Debian kernel package file, or a
//! package name that apt downloads. Packages are unpacked once, with their modules where
//! virtme-ng looks for them (beside the image, under `lib/modules/RELEASE`), into a cache that
//! later commands reuse.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use super::image::{self, Arch};

/// A kernel as the user named it.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A `vmlinuz` file.
    Image(PathBuf),
    /// A Debian kernel package file (`.deb`).
    Deb(PathBuf),
    /// `deb:PACKAGE`: a Debian package, downloaded with `apt-get download`.
    Package(String),
}

impl Source {
    /// Reads one KERNEL argument; a package name apt could not take is an input error.
    pub fn parse(arg: &str) -> Result<Source> {
        if let Some(name) = arg.strip_prefix("deb:") {
            let fine = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c);
            if name.len() < 2 || !name.starts_with(|c: char| c.is_ascii_alphanumeric()) || !name.chars().all(fine) {
                return Err(crate::invalid!("kernel '{arg}': '{name}' is not a Debian package name"));
            }
            return Ok(Source::Package(name.to_string()));
        }
        let path = PathBuf::from(arg);
        if !path.is_file() {
            return Err(crate::invalid!("kernel '{arg}': no such file"));
        }
        Ok(if arg.ends_with(".deb") { Source::Deb(path) } else { Source::Image(path) })
    }
}

/// A kernel ready to boot.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// What the user wrote, for messages.
    pub name: String,
    /// The image to give virtme-ng; its modules sit beside it (`../lib/modules/RELEASE`) or in
    /// the host's `/lib/modules`.
    pub image: PathBuf,
    pub release: String,
    /// What it runs on: another architecture than rtbench's boots under emulation, with a
    /// root of its own (`vm::root`).
    pub arch: Arch,
    /// Its modules are where virtme-ng looks: beside the image, or in the host's /lib/modules.
    pub has_modules: bool,
}

/// The kernel cache: `$XDG_CACHE_HOME/rtbench/kernels`, else `~/.cache/rtbench/kernels`.
pub fn dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into())).join(".cache"));
    base.join("rtbench").join("kernels")
}

/// Makes `source` bootable: downloads and unpacks packages into `cache`; an image with
/// `modules` gets a layout in `scratch` that shows virtme-ng its modules.
pub fn resolve(source: &Source, name: &str, modules: Option<&Path>, cache: &Path, scratch: &Path) -> Result<Kernel> {
    let image = match source {
        Source::Image(path) => std::path::absolute(path)?,
        Source::Deb(deb) => unpack(deb, cache)?,
        Source::Package(package) => {
            let deb = download(package, cache)?;
            // linux-image-amd64 and its kind hold no kernel: they name the current one.
            let deb = match meta_target(&deb) {
                Some(kernel) => download(&kernel, cache)?,
                None => deb,
            };
            unpack(&deb, cache)?
        }
    };
    let image::Image { release, arch } = image::inspect(&image)?;
    let image = match (source, modules) {
        (Source::Image(_), Some(dir)) => beside(&image, &release, dir, scratch)?,
        _ => image,
    };
    let has_modules = modules_of(&image, &release).is_some();
    Ok(Kernel { name: name.to_string(), image, release, arch, has_modules })
}

/// Where virtme-ng finds the modules of `image`: `lib/modules/RELEASE` in the nearest directory
/// above the image that has a `lib/modules`, the host's own at the top.
fn modules_of(image: &Path, release: &str) -> Option<PathBuf> {
    let root = image.ancestors().skip(1).find(|d| d.join("lib/modules").is_dir())?;
    Some(root.join("lib/modules").join(release)).filter(|m| m.is_dir())
}

/// The newest downloaded file of `package` in the cache, downloaded first when there is none.
fn download(package: &str, cache: &Path) -> Result<PathBuf> {
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs)?;
    if let Some(found) = cached_deb(&debs, package) {
        return Ok(found);
    }
    run_tool(Command::new("apt-get").args(["download", "-q", &qualified(package)]).current_dir(&debs))
        .map_err(|why| crate::invalid!("kernel 'deb:{package}': apt-get download failed: {why}"))?;
    cached_deb(&debs, package)
        .ok_or_else(|| crate::invalid!("kernel 'deb:{package}': apt-get downloaded no package file"))
}

/// `package` as apt names it: Debian's kernel packages end in their architecture or flavour
/// (linux-image-rt-arm64, linux-image-rt-armmp), and one for another architecture than
/// rtbench's is asked for with it (`linux-image-rt-arm64:arm64`; apt knows it once dpkg has
/// that architecture: scripts/setup-arm.sh).
fn qualified(package: &str) -> String {
    let foreign = Arch::ALL
        .into_iter()
        .find(|&a| a.package_suffixes().iter().any(|end| package.ends_with(end)) && Some(a) != Arch::own());
    match foreign {
        Some(arch) => format!("{package}:{}", arch.name()),
        None => package.to_string(),
    }
}

/// The kernel package a metapackage such as linux-image-amd64 depends on, when `deb` holds no
/// kernel image itself.
fn meta_target(deb: &Path) -> Option<String> {
    let dpkg_deb = |args: &[&str]| {
        let out = Command::new("dpkg-deb").args(args).stdin(std::process::Stdio::null()).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let deb = deb.to_str()?;
    if dpkg_deb(&["-c", deb])?.contains("/boot/vmlinuz-") {
        return None;
    }
    depended_kernel(&dpkg_deb(&["-f", deb, "Depends"])?)
}

/// The one `linux-image-*` package of a Depends field.
fn depended_kernel(depends: &str) -> Option<String> {
    let mut kernels = depends
        .split([',', '|'])
        .filter_map(|d| d.split_whitespace().next())
        .filter(|name| name.starts_with("linux-image-"));
    let first = kernels.next()?.to_string();
    kernels.next().is_none().then_some(first)
}

fn cached_deb(debs: &Path, package: &str) -> Option<PathBuf> {
    let prefix = format!("{package}_");
    let mut found: Vec<PathBuf> = std::fs::read_dir(debs)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    found.sort();
    found.pop()
}

/// Unpacks a kernel package into the cache once (with `depmod` run on its modules) and
/// returns its image.
fn unpack(deb: &Path, cache: &Path) -> Result<PathBuf> {
    let stem = deb.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let root = cache.join(&stem);
    if !root.join("boot").is_dir() {
        std::fs::create_dir_all(cache)?;
        let tmp = cache.join(format!(".{stem}.{}.tmp", std::process::id()));
        let unpacked = unpack_into(deb, &tmp);
        if let Err(e) = unpacked.and_then(|()| Ok(std::fs::rename(&tmp, &root)?)) {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    }
    boot_image(&root).ok_or_else(|| crate::invalid!("kernel '{}': the package holds no boot/vmlinuz-*", deb.display()))
}

fn unpack_into(deb: &Path, tmp: &Path) -> Result<()> {
    let named = |why: String| crate::invalid!("kernel '{}': {why}", deb.display());
    run_tool(Command::new("dpkg-deb").arg("-x").arg(deb).arg(tmp)).map_err(named)?;
    let image = boot_image(tmp).ok_or_else(|| named("the package holds no boot/vmlinuz-*".into()))?;
    let release = image::inspect(&image)?.release;
    if tmp.join("lib/modules").join(&release).is_dir() {
        run_tool(Command::new("depmod").arg("-b").arg(tmp).arg(&release)).map_err(named)?;
    }
    Ok(())
}

fn boot_image(root: &Path) -> Option<PathBuf> {
    let boot = std::fs::read_dir(root.join("boot")).ok()?;
    let mut found: Vec<PathBuf> = boot
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("vmlinuz-")))
        .collect();
    found.sort();
    found.pop()
}

/// A root in `scratch` where `image` and `modules` sit as virtme-ng looks for them:
/// `boot/vmlinuz-RELEASE` and `lib/modules/RELEASE`, both links.
fn beside(image: &Path, release: &str, modules: &Path, scratch: &Path) -> Result<PathBuf> {
    let modules = std::path::absolute(modules)?;
    let modules = if modules.join(release).is_dir() { modules.join(release) } else { modules };
    if !modules.is_dir() {
        return Err(crate::invalid!("--modules '{}': no such directory", modules.display()));
    }
    let root = tempfile::Builder::new().prefix("modules-").tempdir_in(scratch)?.keep();
    std::fs::create_dir_all(root.join("boot"))?;
    std::fs::create_dir_all(root.join("lib/modules"))?;
    let linked = root.join("boot").join(format!("vmlinuz-{release}"));
    std::os::unix::fs::symlink(image, &linked)?;
    std::os::unix::fs::symlink(&modules, root.join("lib/modules").join(release))?;
    Ok(linked)
}

/// Runs a tool to its end; Err: its last line of error output (or its exit status).
pub(crate) fn run_tool(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.stdin(std::process::Stdio::null()).output().map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let last = text.lines().rev().find(|l| !l.trim().is_empty() && !l.starts_with("W:"));
    Err(last.map_or_else(|| out.status.to_string(), |l| l.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_arguments_name_their_kind() {
        assert_eq!(Source::parse("deb:linux-image-rt-amd64").unwrap(), Source::Package("linux-image-rt-amd64".into()));
        for bad in ["deb:", "deb:-x", "deb:a b", "deb:Linux"] {
            let e = Source::parse(bad).unwrap_err().to_string();
            assert!(e.contains("is not a Debian package name"), "{bad}: {e}");
        }
        let e = Source::parse("/no/such/vmlinuz").unwrap_err().to_string();
        assert_eq!(e, "kernel '/no/such/vmlinuz': no such file");
        let dir = tempfile::tempdir().unwrap();
        let deb = dir.path().join("k.deb");
        std::fs::write(&deb, b"x").unwrap();
        assert_eq!(Source::parse(deb.to_str().unwrap()).unwrap(), Source::Deb(deb));
    }

    #[test]
    fn modules_are_found_beside_the_image_as_virtme_ng_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("pkg/boot/vmlinuz-9.9.9-test");
        std::fs::create_dir_all(image.parent().unwrap()).unwrap();
        assert_eq!(modules_of(&image, "9.9.9-test"), None, "none here, and none of that release on the host");
        std::fs::create_dir_all(dir.path().join("pkg/lib/modules/9.9.9-test")).unwrap();
        assert_eq!(modules_of(&image, "9.9.9-test"), Some(dir.path().join("pkg/lib/modules/9.9.9-test")));
        assert_eq!(modules_of(&image, "9.9.9-other"), None, "another release's are not its own");
    }

    #[test]
    fn a_package_of_another_architecture_is_asked_for_with_it() {
        let (own, other) = match Arch::own() {
            Some(Arch::Arm64) => ("arm64", "amd64"),
            _ => ("amd64", "arm64"),
        };
        let mine = format!("linux-image-rt-{own}");
        assert_eq!(qualified(&mine), mine);
        let theirs = format!("linux-image-6.1.0-57-rt-{other}");
        assert_eq!(qualified(&theirs), format!("{theirs}:{other}"));
        if Arch::own() != Some(Arch::Armhf) {
            assert_eq!(
                qualified("linux-image-rt-armmp"),
                "linux-image-rt-armmp:armhf",
                "a flavour, not an architecture"
            );
            assert_eq!(qualified("linux-image-6.1.0-50-armmp-lpae"), "linux-image-6.1.0-50-armmp-lpae:armhf");
        }
        assert_eq!(
            qualified("linux-image-6.1.0-57-rt-sparc64"),
            "linux-image-6.1.0-57-rt-sparc64",
            "not a kind rtbench boots"
        );
    }

    #[test]
    fn a_metapackage_leads_to_the_one_kernel_it_depends_on() {
        let field = "linux-image-6.1.0-56-rt-amd64 (= 6.1.192-2)";
        assert_eq!(depended_kernel(field).as_deref(), Some("linux-image-6.1.0-56-rt-amd64"));
        assert_eq!(depended_kernel("kmod, linux-base (>= 4.3~)"), None);
        assert_eq!(depended_kernel("linux-image-a, linux-image-b"), None, "two kernels: not a pointer to one");
    }

    #[test]
    fn the_newest_cached_file_of_a_package_is_taken_and_no_other_packages() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["linux-image-x_1.0_amd64.deb", "linux-image-x_1.1_amd64.deb", "linux-image-x-rt_9_amd64.deb"] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        let found = cached_deb(dir.path(), "linux-image-x").unwrap();
        assert!(found.ends_with("linux-image-x_1.1_amd64.deb"), "{found:?}");
        assert_eq!(cached_deb(dir.path(), "linux-image"), None);
    }
}
