//! One kernel booted in a virtual machine (virtme-ng on QEMU, the host's root file system read
//! only), rtbench run inside it, and its store brought back. The guest's store lives on a tmpfs
//! of its own: SQLite's WAL needs shared memory the 9p share does not give (a store there
//! received no runs). The share carries only the finished file back, and the markers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::accel::Accel;
use super::cache::Kernel;
use super::group::{Group, Waited};
use super::image::Arch;
use super::perf::{self, Perf};

/// Console lines shown for a kernel that failed.
const TAIL: usize = 15;

/// Drivers the guest's udev would load that a latency guest never uses: cpufreq, KVM, EDAC and
/// power-meter drivers whose alias matches every vCPU (powernow_k8 fails, so udev tried it again
/// for each one), crypto accelerators, watchdogs, the PC speaker, PS/2 input and the AHCI
/// controller q35 always has. Loading them was most of virtme-ng's wait for udev: 8 TCG vCPUs
/// settled in 50 s with them, 10 s without; it grows with the vCPUs.
const UNUSED_MODULES: &[&str] = &[
    "kvm",
    "kvm_amd",
    "kvm_intel",
    "powernow_k8",
    "acpi_cpufreq",
    "amd_freq_sensitivity",
    "intel_cstate",
    "intel_rapl_common",
    "intel_uncore",
    "rapl",
    "intel_pmc_core",
    "amd64_edac",
    "sb_edac",
    "aesni_intel",
    "ghash_clmulni_intel",
    "crc32c_intel",
    "crc32_pclmul",
    "crct10dif_pclmul",
    "sha1_ssse3",
    "sha256_ssse3",
    "sha512_ssse3",
    "pcspkr",
    "iTCO_wdt",
    "i6300esb",
    "i2c_i801",
    "lpc_ich",
    "ahci",
    "libahci",
    "libata",
    "psmouse",
    "serio_raw",
    "evdev",
    "button",
    "qemu_fw_cfg",
];

/// What an emulated (TCG) guest runs on: virtme-ng's `-cpu max` overridden (QEMU takes the last
/// `-cpu`) by the same model with Intel's vendor string. TCG's `max` says AMD and cannot offer
/// the invariant-TSC bit, so Linux takes the TSCs of a guest with several vCPUs for
/// unsynchronized ("Marking TSC unstable due to TSCs unsynchronized") and keeps time on the
/// emulated HPET: every clock read a device access under QEMU's one big lock. 72 vCPUs reading
/// it in busy loops on 2 host CPUs stalled the guest (RCU stalls, soft lockups, vCPUs stuck in
/// `read_hpet`). An Intel TSC Linux trusts unless a check fails, and TCG's TSC is the host's
/// own, one clock for every vCPU: the same guest keeps time on the TSC, read without a lock.
const TCG_CPU: [&str; 2] = ["--qemu-opt=-cpu", "--qemu-opt=max,vendor=GenuineIntel"];

/// The kernel command line of an emulated guest: its clocksource watchdog no longer checks the
/// TSC against the HPET, which under TCG lags behind real time once the guest is busy (a
/// 4-vCPU guest had its TSC marked unstable that way after 74 s, and went back to the HPET).
const TCG_PARAMS: [&str; 1] = ["tsc=nowatchdog"];

/// How a guest is made.
pub struct Machine {
    pub accel: Accel,
    pub cpus: u32,
    pub memory: String,
    /// The most a kernel may take from start to running the command.
    pub boot_timeout: Duration,
    /// Performance mode: the vCPUs pinned at FIFO, memory locked, the guest's idle polling.
    pub perf: Option<Perf>,
    /// Words the user adds to the kernel command line, after rtbench's own.
    pub kernel_params: Vec<String>,
}

impl Machine {
    /// What `kernel` boots under: a kernel of another architecture than rtbench's can only be
    /// emulated.
    pub fn accel_for(&self, kernel: &Kernel) -> Accel {
        if Some(kernel.arch) == Arch::own() {
            self.accel
        } else {
            Accel::Tcg
        }
    }
}

/// What a guest runs: the root it sees and the rtbench in it.
pub struct System {
    /// A root of the kernel's architecture (`vm::root`), or None: the host's own, read only.
    pub root: Option<PathBuf>,
    /// This rtbench for a guest of its own architecture; one built for the kernel's otherwise.
    pub binary: PathBuf,
}

/// What a guest did.
#[derive(Debug)]
pub enum Ended {
    /// The commands ran; `status` is the first non-zero exit of them (0: all well) and
    /// `store` holds their runs (None: they stored none, as `audit` alone).
    Ran { booted: Duration, took: Duration, status: i32, store: Option<PathBuf>, output: String },
    /// It never got to the end: why, and the last lines of its console.
    Failed { why: String, console: Vec<String> },
}

/// Boots `kernel`, runs each of `commands` (argument lists of `system`'s rtbench) inside, one
/// after another, and brings its store back through `share`, a directory of its own (inside
/// `system`'s root when it has one: virtme-ng shares only directories the guest's root holds).
pub fn run(
    kernel: &Kernel,
    machine: &Machine,
    system: &System,
    commands: &[Vec<String>],
    share: &Path,
) -> Result<Ended> {
    std::fs::create_dir_all(share)?;
    let (binary, seen) = match &system.root {
        None => (system.binary.clone(), share.to_path_buf()),
        Some(root) => {
            let copy = share.join("rtbench");
            std::fs::copy(&system.binary, &copy)?;
            let seen = |p: &Path| Path::new("/").join(p.strip_prefix(root).unwrap_or(p));
            (seen(&copy), seen(share))
        }
    };
    std::fs::write(share.join("guest.sh"), script_text(&binary, commands, &seen))?;
    let console = share.join("console.log");
    let mut cmd = vng(kernel, machine, system.root.as_deref(), share, &seen.join("guest.sh"));
    let log = std::fs::File::create(&console)?;
    cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    let started = Instant::now();
    let mut group = Group::spawn(&mut cmd, share.parent().unwrap_or(share))?;
    let deadline = started + machine.boot_timeout;
    let failed = |why: String| Ok(Ended::Failed { why, console: tail(&console) });
    let placed = match &machine.perf {
        Some(perf) => place(&mut group, perf, machine.cpus, deadline)?,
        None => Ok(()),
    };
    let booted_mark = share.join("booted");
    let waited = match placed {
        Ok(()) => group.wait(|| booted_mark.exists(), Some(deadline))?,
        Err(why) => return failed(why),
    };
    let booted = started.elapsed();
    match waited {
        Waited::Ready => {}
        Waited::Signal(sig) => return Err(super::Stopped(sig).into()),
        Waited::TimedOut => return failed(format!("did not boot within {} s", machine.boot_timeout.as_secs())),
        Waited::Exited(_) if !kernel.has_modules => {
            return failed(format!(
                "no modules for {} (in /lib/modules or --modules DIR): it cannot mount the host's root",
                kernel.release
            ))
        }
        Waited::Exited(_) => return failed("the guest ended before running the command".into()),
    }
    let (waited, status) = wait_status(&mut group, share)?;
    let took = started.elapsed();
    group.stop();
    if let Waited::Signal(sig) = waited {
        return Err(super::Stopped(sig).into());
    }
    let store = share.join("guest.db");
    let output = std::fs::read_to_string(share.join("output.txt")).unwrap_or_default();
    match status {
        Some(status) => {
            let store = store.exists().then_some(store);
            Ok(Ended::Ran { booted, took, status, store, output })
        }
        None => {
            let last = output.lines().rev().find(|l| !l.trim().is_empty());
            let said = last.map(|l| format!(" (its commands last said: {})", l.trim())).unwrap_or_default();
            failed(format!("the guest ended before its store was brought back{said}"))
        }
    }
}

/// Waits for QEMU to start its `cpus` vCPU threads, then pins them as `perf` says. The outer
/// Err is a stop signal; the inner one why the guest cannot run in performance mode.
fn place(group: &mut Group, perf: &Perf, cpus: u32, deadline: Instant) -> Result<Result<(), String>> {
    let pgid = group.id();
    let started = || perf::qemu_threads(pgid).is_some_and(|t| t.vcpus.len() == cpus as usize);
    match group.wait(started, Some(deadline))? {
        Waited::Ready => {}
        Waited::Signal(sig) => return Err(super::Stopped(sig).into()),
        Waited::TimedOut | Waited::Exited(_) => {
            let found = perf::qemu_threads(pgid).map(|t| (t.vcpus.len(), t.others.len()));
            return Ok(Err(format!(
                "QEMU did not start {cpus} vCPU threads of its own to pin (vCPU and other threads found: {found:?}; one thread for all of them is single-threaded TCG)"
            )));
        }
    }
    Ok(perf.place(&perf::qemu_threads(pgid).unwrap_or_default()))
}

/// Waits until the guest has written its exit status whole (or ended, or a signal came).
/// Its 9p share shows the host a file once the guest creates it, before the guest writes into
/// it: a `status` that merely exists may still be empty (seen empty for 5 ms on a loaded host,
/// and a look landing there took the guest for one that ended without its store, once in CI).
fn wait_status(group: &mut Group, share: &Path) -> Result<(Waited, Option<i32>)> {
    let status = || std::fs::read_to_string(share.join("status")).ok().and_then(|s| s.trim().parse().ok());
    let waited = group.wait(|| status().is_some(), None)?;
    Ok((waited, status()))
}

/// The virtme-ng command line of a guest. The kernel command line tells rtbench inside where
/// it runs (see `sysinfo::vm_placement`). `script`: the guest's path to its script.
fn vng(kernel: &Kernel, machine: &Machine, root: Option<&Path>, share: &Path, script: &Path) -> Command {
    let mut cmd = Command::new("vng");
    // Verbose: the kernel's own console, for the lines shown when it fails.
    cmd.arg("--verbose").arg("-r").arg(&kernel.image);
    if let Some(root) = root {
        cmd.args(["--arch", kernel.arch.name()]).arg("--root").arg(root);
    }
    let accel = machine.accel_for(kernel);
    // The x86 CPU model and clock fix below are for x86 guests; virtme-ng runs an arm64 one on
    // QEMU's virt machine with `-cpu max`, timed by the architected timer.
    let x86_tcg = accel == Accel::Tcg && kernel.arch == Arch::Amd64;
    if accel == Accel::Tcg {
        cmd.arg("--disable-kvm");
    }
    if x86_tcg {
        cmd.args(TCG_CPU);
    }
    cmd.args(["--cpus", &machine.cpus.to_string(), "--memory", &machine.memory]);
    cmd.arg(format!("--rwdir={}", share.display()));
    cmd.args(light_boot_args());
    let host = crate::sysinfo::kernel_release();
    let mut params = vec![
        "rtbench.vm=qemu".to_string(),
        format!("rtbench.accel={}", accel.name()),
        format!("rtbench.vcpus={}", machine.cpus),
        format!("rtbench.host={host}"),
    ];
    if x86_tcg {
        params.extend(TCG_PARAMS.map(String::from));
    }
    if let Some(perf) = &machine.perf {
        cmd.arg(format!("--qemu-opts={}", perf::QEMU_OPTS));
        params.extend(perf.guest_params());
    }
    params.extend(machine.kernel_params.iter().cloned());
    for param in params {
        cmd.args(["--append", &param]);
    }
    cmd.arg("--exec").arg(format!("sh {}", quote(&script.display().to_string())));
    cmd
}

/// The virtme-ng arguments that make a guest quick to boot, for every guest rtbench boots and
/// for tests that run `vng` themselves: the root over 9p (asked for, virtme-ng skips the ~5 s
/// it waits for a virtiofsd that does not start here); no CD-ROM, floppy or NIC (devices for
/// udev to settle and drivers for it to load); none of the unused modules above loaded.
pub fn light_boot_args() -> Vec<String> {
    let blacklist = format!("modprobe.blacklist={}", UNUSED_MODULES.join(","));
    ["--force-9p", "--qemu-opts=-nodefaults", "--append", &blacklist].map(String::from).to_vec()
}

/// The guest's shell script: a tmpfs for the store, the commands in it, the store copied out
/// whole, then the exit status (the host waits for that file).
fn script_text(binary: &Path, commands: &[Vec<String>], share: &Path) -> String {
    let share = quote(&share.display().to_string());
    // The status is written beside and renamed, as the store is: the host never reads a part.
    let mut s = format!(
        "# written by rtbench kernels\nshare={share}\n: > \"$share/booted\"\n\
         put_status() {{ echo $1 > \"$share/status.part\" && mv \"$share/status.part\" \"$share/status\"; }}\n\
         work=$(mktemp -d) && mount -t tmpfs rtbench-store \"$work\" && cd \"$work\" || {{ put_status 97; exit; }}\n\
         export RTBENCH_DB=\"$work/guest.db\"\nstatus=0\n"
    );
    for args in commands {
        let line: Vec<String> = std::iter::once(binary.display().to_string()).chain(args.iter().cloned()).collect();
        let line: Vec<String> = line.iter().map(|a| quote(a)).collect();
        s += &format!(
            "{} >> \"$share/output.txt\" 2>&1 || {{ rc=$?; [ $status -eq 0 ] && status=$rc; }}\n",
            line.join(" ")
        );
    }
    s += "[ -e \"$RTBENCH_DB\" ] && cp \"$RTBENCH_DB\" \"$share/guest.db.part\" && mv \"$share/guest.db.part\" \"$share/guest.db\"\n";
    s += "put_status $status\n";
    s
}

/// `s` as one shell word.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The end of a console log, without blank lines: from a few lines before the kernel's panic
/// (its cause, not the stack trace after it), else the last lines.
fn tail(console: &Path) -> Vec<String> {
    let text = std::fs::read(console).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    let from = match lines.iter().rposition(|l| l.contains("Kernel panic")) {
        Some(panic) => panic.saturating_sub(2),
        None => lines.len().saturating_sub(TAIL),
    };
    lines[from..].iter().take(TAIL).map(|l| l.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_every_command_and_keeps_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let share = dir.path().join("share");
        std::fs::create_dir_all(&share).unwrap();
        // A stand-in for rtbench: writes the store, fails on "bad".
        let fake = dir.path().join("fake");
        std::fs::write(&fake, "#!/bin/sh\necho \"$@\" >> \"$RTBENCH_DB\"\n[ \"$1\" != bad ]\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let commands = vec![vec!["timer".into(), "it's".into()], vec!["bad".into()], vec!["gtod".into()]];
        // Without root no tmpfs can be mounted: the script says so with status 97 instead.
        let text = script_text(&fake, &commands, &share).replace("mount -t tmpfs rtbench-store \"$work\" && ", "");
        let ran = Command::new("sh").arg("-c").arg(&text).status().unwrap();
        assert!(ran.success());
        assert!(share.join("booted").exists());
        assert_eq!(std::fs::read_to_string(share.join("status")).unwrap().trim(), "1");
        let store = std::fs::read_to_string(share.join("guest.db")).unwrap();
        assert_eq!(store, "timer it's\nbad\ngtod\n", "every command ran, in order, quoted whole");
        std::fs::write(&fake, "#!/bin/sh\necho \"said $1\"\n").unwrap();
        std::fs::remove_file(share.join("status")).unwrap();
        Command::new("sh").arg("-c").arg(&text).status().unwrap();
        let said = std::fs::read_to_string(share.join("output.txt")).unwrap();
        assert_eq!(said, "said timer\nsaid bad\nsaid gtod\n", "what the commands print is kept for the host");
        assert!(!share.join("status.part").exists(), "the status was renamed into place");
    }

    #[test]
    fn a_guest_is_booted_without_the_devices_and_drivers_a_measurement_does_not_use() {
        let kernel = Kernel {
            name: "k".into(),
            image: "/k/vmlinuz".into(),
            release: "6.1".into(),
            arch: Arch::Amd64,
            has_modules: true,
        };
        let memory = "1G".to_string();
        let machine = Machine {
            accel: Accel::Tcg,
            cpus: 73,
            memory,
            boot_timeout: Duration::from_secs(1),
            perf: None,
            kernel_params: vec!["nohz_full=0-71".into()],
        };
        let cmd = vng(&kernel, &machine, None, Path::new("/s"), Path::new("/s/guest.sh"));
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.iter().any(|a| a == "--force-9p"), "{args:?}");
        assert!(args.iter().any(|a| a == "--qemu-opts=-nodefaults"), "{args:?}");
        let appended: Vec<&str> = args.windows(2).filter(|w| w[0] == "--append").map(|w| w[1].as_str()).collect();
        let blacklist = appended.iter().find_map(|p| p.strip_prefix("modprobe.blacklist=")).unwrap();
        let names: Vec<&str> = blacklist.split(',').collect();
        assert!(names.contains(&"powernow_k8") && names.contains(&"kvm"), "{names:?}");
        assert!(
            !names.iter().any(|n| n.contains("virtio") || n.contains("9p")),
            "the guest's root needs these: {names:?}"
        );
        assert!(appended.contains(&"rtbench.vcpus=73"), "{appended:?}");
        let cpu = args.windows(2).find(|w| w[0] == "--qemu-opt=-cpu").map(|w| w[1].as_str());
        assert_eq!(cpu, Some("--qemu-opt=max,vendor=GenuineIntel"), "a TSC the guest keeps time on: {args:?}");
        assert!(appended.contains(&"tsc=nowatchdog"), "{appended:?}");
        assert_eq!(appended.last(), Some(&"nohz_full=0-71"), "the user's words come last: {appended:?}");
        if Arch::own() != Some(Arch::Amd64) {
            return; // an x86 kernel is emulated on any other machine: there is no KVM guest of it
        }
        let kvm = Machine { accel: Accel::Kvm, ..machine };
        let args: Vec<String> = vng(&kernel, &kvm, None, Path::new("/s"), Path::new("/s/guest.sh"))
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            !args.iter().any(|a| a == "--qemu-opt=-cpu" || a == "tsc=nowatchdog"),
            "KVM's guest is left as is: {args:?}"
        );
    }

    #[test]
    fn a_kernel_of_another_architecture_boots_emulated_on_its_own_root_without_x86_settings() {
        let arch = if Arch::own() == Some(Arch::Arm64) { Arch::Amd64 } else { Arch::Arm64 };
        let kernel =
            Kernel { name: "k".into(), image: "/k/vmlinuz".into(), release: "6.1".into(), arch, has_modules: true };
        let machine = Machine {
            accel: Accel::Kvm,
            cpus: 2,
            memory: "1G".into(),
            boot_timeout: Duration::from_secs(1),
            perf: None,
            kernel_params: Vec::new(),
        };
        assert_eq!(machine.accel_for(&kernel), Accel::Tcg);
        let root = Path::new("/cache/root-arm64");
        let cmd = vng(&kernel, &machine, Some(root), &root.join("rtbench/g0"), Path::new("/rtbench/g0/guest.sh"));
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let after = |flag: &str| args.windows(2).find(|w| w[0] == flag).map(|w| w[1].clone());
        assert_eq!(after("--arch").as_deref(), Some(arch.name()), "{args:?}");
        assert_eq!(after("--root").as_deref(), Some("/cache/root-arm64"));
        assert_eq!(after("--exec").as_deref(), Some("sh '/rtbench/g0/guest.sh'"), "the guest's own path");
        assert!(args.iter().any(|a| a == "--disable-kvm") && args.iter().any(|a| a == "rtbench.accel=tcg"), "{args:?}");
        if arch == Arch::Arm64 {
            assert!(!args.iter().any(|a| a.contains("GenuineIntel") || a == "tsc=nowatchdog"), "{args:?}");
        }
    }

    #[test]
    fn a_status_the_guest_created_but_has_not_yet_written_is_waited_for() {
        crate::sys::block_stop_signals().unwrap();
        let dir = tempfile::tempdir().unwrap();
        // As the guest's shell writes it over 9p: the host sees the file empty first.
        let mut cmd = Command::new("sh");
        cmd.current_dir(dir.path()).args(["-c", ": > status; sleep 1; echo 3 > status; sleep 30"]);
        let mut group = Group::spawn(&mut cmd, Path::new("/nonexistent")).unwrap();
        let (waited, status) = wait_status(&mut group, dir.path()).unwrap();
        assert_eq!((waited, status), (Waited::Ready, Some(3)), "an empty status is not yet the guest's end");
    }

    #[test]
    fn a_console_tail_is_its_last_written_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c.log");
        let text: String = (0..40).map(|i| format!("line {i}\n\n")).collect();
        std::fs::write(&log, text).unwrap();
        let t = tail(&log);
        assert_eq!(t.len(), TAIL);
        assert_eq!(t.last().unwrap(), "line 39");
        let panicked = "boot\nVFS: Cannot open root device\nmore\nKernel panic - not syncing: VFS\n".to_string()
            + &"Call Trace: frame\n".repeat(30);
        std::fs::write(&log, panicked).unwrap();
        let t = tail(&log);
        assert_eq!(t[0], "VFS: Cannot open root device", "the panic's cause comes first: {t:?}");
        assert_eq!(t.len(), TAIL);
    }
}
