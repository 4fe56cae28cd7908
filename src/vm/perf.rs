//! Performance mode (`--host-cpus`), as real-time virtualisation guides and the ktstr harness
//! set a guest up: each vCPU thread of QEMU pinned to its own host CPU at SCHED_FIFO, QEMU's
//! other threads kept off those CPUs, the guest's memory locked, the guest's cpuidle told to
//! poll before it halts, and the host's settings that would stop a FIFO vCPU changed for the
//! command and put back after it (also after a SIGKILL, by the next rtbench command). It is
//! meant for KVM; under TCG (MTTCG gives each vCPU its own thread) it applies all the same, so
//! it can be checked here, though emulated latencies stay the emulator's.

use serde::{Deserialize, Serialize};

use crate::restore::{Change, Guard, Held};
use crate::units::format_cpu_list;

/// QEMU's options in this mode: guest memory locked, threads named ("CPU 0/KVM") so the vCPU
/// threads can be found.
pub const QEMU_OPTS: &str = "-overcommit mem-lock=on -name rtbench,debug-threads=on";

/// The host settings the mode changes: file, value, and why.
const SETTINGS: [(&str, &str); 2] = [
    // A vCPU that runs a real-time guest may run more than 950 ms of a second: RT throttling
    // would stop it for the rest.
    ("/proc/sys/kernel/sched_rt_runtime_us", "-1"),
    // A halted vCPU's thread polls 200 µs on its own CPU before it sleeps (the x86 default;
    // a host may have turned it off with 0); a guest whose haltpoll cpuidle polls turns the
    // host's polling off for itself. Absent without the kvm module; written only if it differs.
    ("/sys/module/kvm/parameters/halt_poll_ns", "200000"),
];

/// Where each vCPU runs on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct Perf {
    /// vCPU n on host CPU `host_cpus[n]`.
    pub host_cpus: Vec<usize>,
    /// Their SCHED_FIFO priority on the host.
    pub priority: u8,
}

impl Perf {
    /// The guest's kernel command line words: haltpoll cpuidle forced (Debian's 6.1 has the
    /// driver built in, without the haltpoll governor: it polls under the menu governor; it
    /// needs KVM's paravirtual interface, so a TCG guest keeps its default idle), and the
    /// placement the guest stores in its runs.
    pub fn guest_params(&self) -> Vec<String> {
        vec![
            "cpuidle_haltpoll.force=1".into(),
            format!("rtbench.host_cpus={}", format_cpu_list(&self.host_cpus)),
            format!("rtbench.vcpu_fifo={}", self.priority),
        ]
    }

    /// Pins QEMU's vCPU threads each to its host CPU at FIFO, and QEMU's other threads to the
    /// CPUs no vCPU has, when there are any.
    pub fn place(&self, threads: &QemuThreads) -> Result<(), String> {
        let rest: Vec<usize> =
            crate::sysinfo::online_cpus().into_iter().filter(|c| !self.host_cpus.contains(c)).collect();
        if !rest.is_empty() {
            for &tid in &threads.others {
                // A thread that ended meanwhile has nothing to pin.
                let _ = crate::sys::set_thread_affinity(tid, &rest);
            }
        }
        for &(n, tid) in &threads.vcpus {
            let cpu = self.host_cpus[n];
            crate::sys::set_thread_affinity(tid, &[cpu])
                .and_then(|()| crate::sys::set_thread_scheduler(tid, libc::SCHED_FIFO, self.priority.into()))
                .map_err(|e| format!("cannot pin vCPU {n} (thread {tid}) to host CPU {cpu} at FIFO: {e}"))?;
        }
        Ok(())
    }
}

/// The threads of a QEMU process.
#[derive(Debug, Default)]
pub struct QemuThreads {
    /// Each vCPU's index and thread id, by index.
    pub vcpus: Vec<(usize, u32)>,
    /// Its other threads (main loop, I/O).
    pub others: Vec<u32>,
}

/// The threads of the QEMU in process group `pgid`, its vCPU threads known once QEMU has named
/// them.
pub fn qemu_threads(pgid: u32) -> Option<QemuThreads> {
    let qemu = super::group::members(pgid)
        .into_iter()
        .find(|&pid| comm(&format!("/proc/{pid}")).starts_with("qemu-system"))?;
    let (mut vcpus, mut others) = (Vec::new(), Vec::new());
    for task in std::fs::read_dir(format!("/proc/{qemu}/task")).ok()?.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
        match vcpu_index(&comm(&task.path().display().to_string())) {
            Some(n) => vcpus.push((n, tid)),
            None => others.push(tid),
        }
    }
    vcpus.sort();
    Some(QemuThreads { vcpus, others })
}

fn comm(dir: &str) -> String {
    std::fs::read_to_string(format!("{dir}/comm")).unwrap_or_default().trim().to_string()
}

/// The index of a vCPU thread by its name, "CPU 3/KVM" or "CPU 3/TCG".
fn vcpu_index(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("CPU ")?;
    let (n, accel) = rest.split_once('/')?;
    ["KVM", "TCG"].contains(&accel).then(|| n.parse().ok()).flatten()
}

/// The host settings as the mode wants them, held: dropped, they are put back through
/// [`Tuned::put_back`], as the next command puts a killed rtbench's back.
pub struct HostTuning {
    _held: Held<Tuned>,
}

/// What the mode changed: each file and its value before (one holder at a time: a second
/// would take the first's values for the originals).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tuned {
    pub was: Vec<(String, String)>,
}

impl HostTuning {
    /// Writes the journal, then the settings; Err: why not (nothing is left changed).
    pub fn apply() -> Result<HostTuning, String> {
        apply_settings(&SETTINGS)
    }
}

impl Guard for HostTuning {
    fn name(&self) -> &'static str {
        "host tuning for performance mode"
    }
}

fn apply_settings(settings: &[(&str, &str)]) -> Result<HostTuning, String> {
    let was: Vec<(String, String)> = settings
        .iter()
        .filter_map(|(path, _)| Some((path.to_string(), std::fs::read_to_string(path).ok()?.trim().to_string())))
        .collect();
    let held = Held::journalled(Tuned { was }).map_err(|e| {
        format!("cannot hold the host's settings for performance mode (another rtbench holds them?): {e}")
    })?;
    // Only what differs is written: a setting already as wanted may be read-only here.
    let differ = |(path, value): &&(&str, &str)| held.change().was.iter().any(|(p, was)| p == path && was != value);
    for (path, value) in settings.iter().filter(differ) {
        // A failure drops `held`, which puts back what was written.
        std::fs::write(path, value).map_err(|e| format!("cannot write {value} to {path}: {e}"))?;
    }
    Ok(HostTuning { _held: held })
}

impl Change for Tuned {
    const KIND: &'static str = "vm-perf";
    const ONE_AT_A_TIME: bool = true;

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        let mut changed = Vec::new();
        for (path, was) in &self.was {
            let now = std::fs::read_to_string(path).map(|t| t.trim().to_string()).unwrap_or_default();
            if &now != was {
                std::fs::write(path, was).map_err(|e| format!("cannot put {path} back to {was}: {e}"))?;
                changed.push(format!("{path} to {was}"));
            }
        }
        Ok((!changed.is_empty()).then(|| {
            format!("put {} back: rtbench pid {owner} ended in performance mode without doing it", changed.join(", "))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vcpu_threads_are_known_by_their_qemu_names() {
        assert_eq!(vcpu_index("CPU 0/KVM"), Some(0));
        assert_eq!(vcpu_index("CPU 12/TCG"), Some(12));
        assert_eq!(vcpu_index("ALL CPUs/TCG"), None, "one thread for every vCPU cannot be pinned to one each");
        assert_eq!(vcpu_index("IO mon_iothread"), None);
        let perf = Perf { host_cpus: vec![1, 3], priority: 1 };
        assert_eq!(perf.guest_params()[1..], ["rtbench.host_cpus=1,3", "rtbench.vcpu_fifo=1"]);
    }
}
