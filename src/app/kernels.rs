//! `rtbench kernels`: each kernel booted in a virtual machine, the same rtbench run inside, its
//! runs merged into this store under the kernel's release, then one report of them all. Bad
//! input (a missing file, a cut image, a package apt does not know) ends the command before
//! the store is opened; a kernel that fails to boot is said with its console, and the others
//! still run.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::task::{GuestCommand, KernelsConfig, ReportConfig};
use crate::session::Session;
use crate::store::Store;
use crate::vm::accel::{self, Accel};
use crate::vm::cache::{self, Kernel};
use crate::vm::guest::{self, Ended, Machine, System};
use crate::vm::image::Arch;
use crate::vm::perf::{HostTuning, Perf};
use crate::vm::Stopped;

pub fn run(cfg: KernelsConfig) -> Result<i32> {
    if !crate::sysinfo::on_path("vng") {
        return Err(crate::invalid!("kernels needs vng (scripts/setup.sh installs virtme-ng and QEMU)"));
    }
    let scratch = tempfile::Builder::new().prefix("rtbench-kernels-").tempdir()?;
    let cache = cache::dir();
    let mut kernels = Vec::new();
    for (name, source) in &cfg.kernels {
        kernels.push(cache::resolve(source, name, cfg.modules.as_deref(), &cache, scratch.path())?);
    }
    // The whole label of each kernel, its release in it, before the first boot.
    for kernel in &kernels {
        crate::parse::label(&label_of(&cfg, kernel), &format!("--label of {}", kernel.name))?;
    }
    // What each kernel's guest runs, all found (a root made) before the first boot.
    let systems = kernels.iter().map(|k| system_of(&cfg, k, &cache)).collect::<Result<Vec<_>>>()?;
    // From here a Ctrl-C is taken between looks at the guest: it stops the guest, not rtbench.
    let mut session = Session::taking_signals()?;
    let started = Instant::now();
    // KVM is asked of the first kernel of rtbench's own architecture; the others are emulated.
    let native = kernels.iter().find(|k| Some(k.arch) == Arch::own());
    let accel = match native.map(|k| accelerator(k, cfg.allow_emulated, scratch.path())) {
        Some(Err(e)) => return stopped(e, &[]),
        Some(Ok(a)) => a,
        None => Accel::Tcg,
    };
    // Held until the command ends, however it ends; a killed rtbench's is put back by the next.
    if let Some(perf) = &cfg.perf {
        session.hold(performance_mode(perf)?);
    }
    let mut store = super::writable_store(&cfg.db)?;
    let machine = Machine {
        accel,
        cpus: cfg.cpus,
        memory: cfg.memory.clone(),
        boot_timeout: cfg.boot_timeout,
        perf: cfg.perf.clone(),
        kernel_params: cfg.kernel_params.clone(),
    };
    let mut labels: Vec<String> = Vec::new();
    let mut failed = 0;
    for (i, (kernel, system)) in kernels.iter().zip(&systems).enumerate() {
        let commands = labelled(&cfg, kernel);
        let accel = machine.accel_for(kernel);
        println!(
            "kernels: {} ({}, {}): booting under {}",
            kernel.name,
            kernel.release,
            kernel.arch.name(),
            accel.name()
        );
        // virtme-ng shares with a guest of another root only directories inside that root.
        let share = match &system.root {
            Some(root) => tempfile::Builder::new().prefix("guest-").tempdir_in(ensure_dir(&root.join("rtbench"))?)?,
            None => tempfile::Builder::new().prefix(&format!("guest-{i}-")).tempdir_in(scratch.path())?,
        };
        match guest::run(kernel, &machine, system, &commands, share.path()) {
            Ok(ended) => failed += usize::from(!take(kernel, ended, &mut store, &mut labels)?),
            Err(e) => return stopped(e, &labels),
        }
    }
    drop(store);
    if !labels.is_empty() {
        let of = |findings| ReportConfig {
            labels: labels.clone(),
            runs: Vec::new(),
            output: cfg.output.clone(),
            findings,
            caveats: Vec::new(),
            db: cfg.db.clone(),
        };
        // The answer in words, as a study ends with it, then the side-by-side report.
        super::report(of(Some(super::task::Output::Text)))?;
        super::report(of(None))?;
    }
    println!("kernels: {} kernels in {:.1} s, {failed} failed", kernels.len(), started.elapsed().as_secs_f64());
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Says how a kernel's guest ended and merges its runs (their labels join `labels`); false
/// when it failed.
fn take(kernel: &Kernel, ended: Ended, store: &mut Store, labels: &mut Vec<String>) -> Result<bool> {
    match ended {
        Ended::Ran { booted, took, status, store: guest_store, output } => {
            for line in output.lines() {
                println!("  > {line}");
            }
            let (added, found) = match guest_store {
                Some(guest_store) => bring_back(store, &guest_store)?,
                None => (0, Vec::new()),
            };
            let (booted, took) = (booted.as_secs_f64(), took.as_secs_f64());
            let merged = match found.is_empty() {
                true => "its commands stored no run".to_string(),
                false => format!("{added} runs merged as {}", found.join(", ")),
            };
            println!("kernels: {}: booted in {booted:.1} s, done in {took:.1} s; {merged}", kernel.release);
            for label in found {
                if !labels.contains(&label) {
                    labels.push(label);
                }
            }
            if status != 0 {
                println!("kernels: {}: FAILED: a command exited with {status}", kernel.release);
            }
            Ok(status == 0)
        }
        Ended::Failed { why, console } => {
            println!("kernels: {} ({}): FAILED: {why}; its console ended:", kernel.name, kernel.release);
            for line in console {
                println!("  | {line}");
            }
            Ok(false)
        }
    }
}

/// A stop signal ends the command with 128 + its number, keeping what was merged; any other
/// error is returned.
fn stopped(e: anyhow::Error, merged: &[String]) -> Result<i32> {
    let Some(Stopped(sig)) = e.downcast_ref::<Stopped>() else { return Err(e) };
    let kept = if merged.is_empty() { "nothing was merged".to_string() } else { format!("kept {}", merged.join(", ")) };
    eprintln!("rtbench: kernels: interrupted, guest stopped; {kept}");
    Ok(128 + sig)
}

/// Sets the host up for performance mode and says so.
fn performance_mode(perf: &Perf) -> Result<HostTuning> {
    let tuning = HostTuning::apply().map_err(|e| anyhow::anyhow!("performance mode: {e}"))?;
    println!(
        "kernels: performance mode: vCPUs pinned to host CPUs {} at FIFO {}, memory locked, RT throttling off",
        crate::units::format_cpu_list(&perf.host_cpus),
        perf.priority
    );
    Ok(tuning)
}

/// KVM when it really runs a guest, else TCG if the user allows it.
fn accelerator(first: &Kernel, allow_emulated: bool, scratch: &Path) -> Result<Accel> {
    let probe = accel::probe_kvm(&first.image, first.arch, scratch)?;
    match probe {
        Ok(took) => {
            println!("kernels: KVM runs guests here (a kernel printed its banner after {:.1} s)", took.as_secs_f64());
            Ok(Accel::Kvm)
        }
        Err(why) if allow_emulated => {
            eprintln!("rtbench: WARNING: KVM cannot run a guest here ({why}): booting under TCG; {}", crate::model::EMULATED_WARNING);
            Ok(Accel::Tcg)
        }
        Err(why) => Err(crate::invalid!(
            "KVM cannot run a guest here ({why}); --allow-emulated boots under TCG, whose latencies are the emulator's, not the kernel's"
        )),
    }
}

/// What `kernel`'s guest runs: this rtbench on the host's root, or for another architecture
/// the rtbench given for it on a root of that architecture.
fn system_of(cfg: &KernelsConfig, kernel: &Kernel, cache: &Path) -> Result<System> {
    let arch = kernel.arch.name();
    let qemu = kernel.arch.qemu();
    if Some(kernel.arch) == Arch::own() {
        if !crate::sysinfo::on_path(qemu) {
            return Err(crate::invalid!("kernels needs {qemu} (scripts/setup.sh installs QEMU)"));
        }
        return Ok(System { root: None, binary: std::env::current_exe()? });
    }
    if !cfg.allow_emulated {
        return Err(crate::invalid!(
            "kernel {} is for {arch}: this machine can only emulate it (TCG), whose latencies are the emulator's, not the kernel's: --allow-emulated",
            kernel.name
        ));
    }
    if !crate::sysinfo::on_path(qemu) {
        return Err(crate::invalid!(
            "kernel {}: an {arch} kernel needs {qemu} (scripts/setup-arm.sh installs it)",
            kernel.name
        ));
    }
    let Some((_, binary)) = cfg.guest_binaries.iter().find(|(a, _)| *a == kernel.arch) else {
        return Err(crate::invalid!(
            "kernel {} is for {arch}: give an {arch} rtbench with --guest-binary {arch}=PATH (scripts/cross.sh {arch} build --release makes one)",
            kernel.name
        ));
    };
    println!("kernels: {}: its {arch} root is kept in {}", kernel.name, cache.display());
    let root = crate::vm::root::ensure(kernel.arch, cache)?;
    // The kernel's configuration where an installed Debian kernel keeps it, for the audit's
    // tick and debug checks (the host's root has the host kernel's; this root has none).
    let config = format!("config-{}", kernel.release);
    if let Some(found) = kernel.image.parent().map(|boot| boot.join(&config)).filter(|c| c.is_file()) {
        std::fs::copy(found, ensure_dir(&root.join("boot"))?.join(&config))?;
    }
    Ok(System { root: Some(root), binary: binary.clone() })
}

fn ensure_dir(dir: &Path) -> Result<&Path> {
    std::fs::create_dir_all(dir)?;
    Ok(dir)
}

/// The label of `kernel`'s runs: `--label` with the kernel's release for `{release}` and its
/// architecture for `{arch}`.
fn label_of(cfg: &KernelsConfig, kernel: &Kernel) -> String {
    cfg.label.replace("{release}", &kernel.release).replace("{arch}", kernel.arch.name())
}

/// The guest's command lines, the kernel's label given to each that needs one.
fn labelled(cfg: &KernelsConfig, kernel: &Kernel) -> Vec<Vec<String>> {
    let label = label_of(cfg, kernel);
    let with_label = |c: &GuestCommand| {
        let extra = if c.needs_label { vec!["--label".to_string(), label.clone()] } else { Vec::new() };
        c.args.iter().cloned().chain(extra).collect()
    };
    cfg.commands.iter().map(with_label).collect()
}

/// Merges a guest's store into this one; returns how many runs came and their labels.
fn bring_back(store: &mut Store, guest: &Path) -> Result<(usize, Vec<String>)> {
    let mut labels: Vec<String> = Vec::new();
    for run in Store::open(guest)?.runs()? {
        if !labels.contains(&run.label) {
            labels.push(run.label);
        }
    }
    let (added, _) = store.merge(guest)?;
    Ok((added, labels))
}
