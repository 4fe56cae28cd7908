//! `rtbench kernels`: its flags, and the guest's command lines checked on the host, so a typo
//! fails before a kernel boots.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use super::{Command, DbArg, Invocation};
use crate::app::task::{GuestCommand, KernelsConfig};
use crate::vm::cache::Source;
use crate::vm::image::Arch;
use crate::vm::perf::Perf;

#[derive(Args, Debug)]
pub struct KernelsArgs {
    /// A kernel image (vmlinuz), a Debian kernel package file (.deb), or deb:PACKAGE (fetched
    /// with apt-get download); packages are unpacked with their modules into a cache that is kept
    #[arg(required = true, value_name = "KERNEL")]
    pub kernels: Vec<String>,
    /// The modules of the vmlinuz KERNELs (a lib/modules/RELEASE directory) [default:
    /// /lib/modules/RELEASE]
    #[arg(long, value_name = "DIR")]
    pub modules: Option<PathBuf>,
    /// Virtual CPUs of each guest
    #[arg(long, value_parser = crate::parse::positive, default_value = "2", value_name = "N")]
    pub cpus: u64,
    /// Memory of each guest, as QEMU takes it (512M, 2G)
    #[arg(long, default_value = "1G", value_name = "SIZE")]
    pub memory: String,
    /// Boot under TCG when KVM cannot run a guest: every instruction emulated, so the latencies
    /// are the emulator's, not the kernel's (each run says so)
    #[arg(long)]
    pub allow_emulated: bool,
    /// Label of each kernel's runs; {release} stands for the kernel's release, {arch} for its
    /// architecture (amd64, arm64, armhf)
    #[arg(long, default_value = "{release}", value_name = "PATTERN")]
    pub label: String,
    /// The rtbench to run in the guests of a kernel of another architecture, as ARCH=PATH
    /// (arm64=PATH, armhf=PATH; `scripts/package-deb.sh --arch ARCH` or `scripts/cross.sh ARCH
    /// build --release` makes one). Such a kernel boots emulated on a root of its architecture,
    /// made once with mmdebstrap and kept with the kernels
    #[arg(long = "guest-binary", value_name = "ARCH=PATH")]
    pub guest_binaries: Vec<String>,
    /// The most a kernel may take to boot (to start running the command)
    #[arg(long, value_parser = crate::parse::duration, default_value = "5m", value_name = "DURATION")]
    pub timeout: Duration,
    /// Performance mode: vCPU n pinned to the nth of these host CPUs (one per vCPU) at
    /// SCHED_FIFO, QEMU's memory locked, the guest's cpuidle polling, RT throttling off and
    /// the host's halt polling on for the command (put back after). Meant for KVM
    #[arg(long, value_name = "LIST")]
    pub host_cpus: Option<String>,
    /// The vCPU threads' SCHED_FIFO priority on the host in performance mode: 1 is above every
    /// ordinary host task yet below the host's interrupt threads, which serve the guest too
    #[arg(long, value_parser = crate::parse::priority, default_value = "1", value_name = "N")]
    pub vcpu_priority: i32,
    /// A word added to each guest's kernel command line, such as nohz_full=0-71 (repeatable).
    /// A guest the command line changes is another machine: give its runs a --label of their own
    #[arg(long = "kernel-param", value_name = "WORD")]
    pub kernel_params: Vec<String>,
    /// Where to write the report of all kernels
    #[arg(short = 'o', long, default_value = "rtbench-report", value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub db: DbArg,
    /// What to run in each guest [default: study]; another `--` starts another command
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl KernelsArgs {
    pub fn config(self) -> Result<KernelsConfig> {
        // Each kernel's release is known once its image is found (app::kernels checks the whole
        // label then, before the first boot); now, the pattern with the shortest release.
        let shortest = self.label.replace("{release}", "r").replace("{arch}", "a");
        crate::model::check_label(&shortest).map_err(|fault| crate::invalid!("--label {:?}: {fault}", self.label))?;
        let kernels = self.kernels.iter().map(|k| Ok((k.clone(), Source::parse(k)?))).collect::<Result<Vec<_>>>()?;
        let size = self.memory.trim_end_matches(['M', 'G', 'm', 'g']);
        if size.is_empty() || !size.chars().all(|c| c.is_ascii_digit()) || self.memory.len() - size.len() > 1 {
            return Err(crate::invalid!("--memory '{}': a size such as 512M or 2G", self.memory));
        }
        if !self.label.contains("{release}") && self.kernels.len() > 1 {
            return Err(crate::invalid!("--label '{}': with several kernels it must hold {{release}}", self.label));
        }
        // virtme-ng boots x86 guests on QEMU's q35 machine, which refuses more (QEMU 7.2's
        // limit): said here, before anything is downloaded or booted.
        if self.cpus > MAX_VCPUS {
            return Err(crate::invalid!("--cpus {}: QEMU's q35 machine takes at most {MAX_VCPUS} vCPUs", self.cpus));
        }
        let cpus = self.cpus as u32;
        let perf = match &self.host_cpus {
            Some(list) => Some(perf(list, cpus, self.vcpu_priority)?),
            None => None,
        };
        Ok(KernelsConfig {
            kernels,
            modules: self.modules,
            cpus,
            memory: self.memory,
            allow_emulated: self.allow_emulated,
            label: self.label,
            guest_binaries: self.guest_binaries.iter().map(|b| guest_binary(b)).collect::<Result<_>>()?,
            boot_timeout: self.timeout,
            perf,
            kernel_params: self.kernel_params,
            commands: commands(&self.command)?,
            output: self.output,
            db: crate::store::default_path(self.db.db.as_deref()),
        })
    }
}

/// The most vCPUs a guest can have: QEMU's q35 machine's limit.
const MAX_VCPUS: u64 = 288;

/// `--guest-binary ARCH=PATH`: an rtbench program built for ARCH.
fn guest_binary(given: &str) -> Result<(Arch, PathBuf)> {
    let fault = |why: &str| crate::invalid!("--guest-binary '{given}': {why}");
    let (arch, path) = given.split_once('=').ok_or_else(|| fault("give ARCH=PATH, such as arm64=PATH"))?;
    let Some(arch) = Arch::ALL.into_iter().find(|a| a.name() == arch) else {
        let names: Vec<&str> = Arch::ALL.iter().map(|a| a.name()).collect();
        return Err(fault(&format!("ARCH is one of {}", names.join(", "))));
    };
    let mut head = [0u8; 20];
    std::io::Read::read_exact(&mut std::fs::File::open(path).map_err(|e| fault(&e.to_string()))?, &mut head)
        .map_err(|_| fault("not a program"))?;
    // ELF's e_machine: a program of another architecture would only fail inside the guest,
    // after its boot.
    let machine = head.starts_with(b"\x7fELF").then(|| u16::from_le_bytes([head[18], head[19]]));
    if machine != Some(arch.elf_machine()) {
        return Err(fault(&format!("not an {} program", arch.name())));
    }
    Ok((arch, std::path::absolute(path)?))
}

/// `--host-cpus`: one online host CPU for each vCPU.
fn perf(list: &str, vcpus: u32, priority: i32) -> Result<Perf> {
    let host_cpus = crate::parse::cpu_list(Some(list), "--host-cpus")?;
    if host_cpus.len() != vcpus as usize {
        return Err(crate::invalid!(
            "--host-cpus {list}: {} host CPUs for {vcpus} vCPUs (--cpus); give one host CPU per vCPU",
            host_cpus.len()
        ));
    }
    Ok(Perf { host_cpus, priority: priority as u8 })
}

/// The commands after `--`, each checked as rtbench would parse it: none is `study`, flags
/// alone are study's.
fn commands(words: &[String]) -> Result<Vec<GuestCommand>> {
    let mut out: Vec<Vec<String>> = words.split(|w| w == "--").map(<[String]>::to_vec).collect();
    out.retain(|c| !c.is_empty());
    if out.is_empty() {
        out.push(Vec::new());
    }
    for c in &mut out {
        if c.first().is_none_or(|w| w.starts_with('-')) {
            c.insert(0, "study".into());
        }
        let parsed = super::parse_from(std::iter::once("rtbench").chain(c.iter().map(String::as_str)));
        match parsed {
            Err(e) => {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
                return Err(crate::invalid!("guest command '{}': {first}", c.join(" ")));
            }
            Ok(Invocation::Command(Command::Kernels(_))) => {
                return Err(crate::invalid!("guest command '{}': kernels cannot run inside a guest", c.join(" ")))
            }
            Ok(_) => {}
        }
        if let Some(label) = named_label(c).filter(|_| stores(c)) {
            crate::parse::label(label, &format!("guest command '{}': --label", c[0]))?;
        }
    }
    Ok(out
        .into_iter()
        .map(|args| GuestCommand { needs_label: stores(&args) && named_label(&args).is_none(), args })
        .collect())
}

/// Whether `command` stores runs under a label it takes with `--label`.
fn stores(command: &[String]) -> bool {
    let first = command.first().map(String::as_str).unwrap_or("");
    ["study", "sysbench", "monitor"].contains(&first) || crate::probe::info(first).is_some()
}

/// The label `command` names itself (`--label L` or `--label=L`), if any.
fn named_label(command: &[String]) -> Option<&str> {
    let mut words = command.iter();
    while let Some(w) = words.next() {
        if w == "--label" {
            return Some(words.next().map_or("", String::as_str));
        }
        if let Some(label) = w.strip_prefix("--label=") {
            return Some(label);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn args(s: &str) -> Vec<Vec<String>> {
        commands(&words(s)).unwrap().into_iter().map(|c| c.args).collect()
    }

    #[test]
    fn commands_split_at_each_separator_and_default_to_the_study() {
        assert_eq!(args(""), [words("study")]);
        assert_eq!(args("-D 5s"), [words("study -D 5s")]);
        assert_eq!(args("timer -D 2s -- gtod -D 2s"), [words("timer -D 2s"), words("gtod -D 2s")]);
        let typo = commands(&words("timer --durashun 2s")).unwrap_err().to_string();
        assert!(typo.starts_with("guest command 'timer --durashun 2s': unexpected argument"), "{typo}");
        assert!(commands(&words("kernels x")).is_err());
        let labels: Vec<bool> = commands(&words("timer -- study -- audit -- gtod --label mine"))
            .unwrap()
            .iter()
            .map(|c| c.needs_label)
            .collect();
        assert_eq!(labels, [true, true, false, false], "audit stores nothing; a named label stays");
    }

    #[test]
    fn a_label_a_guest_command_names_is_checked_before_any_kernel_boots() {
        assert!(!commands(&words("gtod --label=mine")).unwrap()[0].needs_label, "named with =");
        let e = commands(&words("timer -D 2s --label=")).unwrap_err().to_string();
        assert!(e.starts_with("guest command 'timer': --label \"\": a label cannot be empty"), "{e}");
        let long = format!("study --label {}", "k".repeat(crate::model::LABEL_MAX_CHARS + 1));
        assert!(commands(&words(&long)).unwrap_err().to_string().contains("at most"));
        assert!(commands(&words("report --label=")).is_ok(), "a filter in a guest is the guest's to check");
    }
}
