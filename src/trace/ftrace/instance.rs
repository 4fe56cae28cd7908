//! rtbench's own ftrace instance: a ring buffer of its own under `instances/`, on the
//! measured CPUs only, so the global tracing state is never touched.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Events the attribution reads, as `system/event`. The list, plus the x86 vectors that
/// are not IRQs (local timer, reschedule and function-call IPIs) where the kernel has them.
const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    // Where the sample's timer callback ends: its interrupt's end where vectors are not traced.
    "timer/hrtimer_expire_exit",
    "workqueue/workqueue_execute_start",
    "power/cpu_idle",
];
/// Any of these: the IPI events differ between architectures.
const IPI: &[&str] = &["ipi/ipi_send_cpu", "ipi/ipi_send_cpumask", "ipi/ipi_raise", "ipi/ipi_entry", "ipi/ipi_exit"];
const VECTORS: &[&str] = &[
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
];

/// Where tracefs is, and whether rtbench mounted it (and so unmounts it).
pub struct Tracefs {
    pub root: PathBuf,
    pub mounted_here: bool,
}

const MOUNT_POINT: &str = "/sys/kernel/tracing";

/// Finds tracefs, mounting it at its usual place when it is not mounted.
pub fn tracefs() -> Result<Tracefs, String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let found = mounts.lines().filter_map(|l| {
        let mut f = l.split_whitespace();
        let (_, dir, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "tracefs").then(|| PathBuf::from(dir))
    });
    if let Some(root) = found.into_iter().find(|d| d.join("instances").is_dir()) {
        return Ok(Tracefs { root, mounted_here: false });
    }
    if !Path::new(MOUNT_POINT).is_dir() {
        return Err(format!("tracefs is not mounted and {MOUNT_POINT} does not exist"));
    }
    crate::sys::mount_pseudo("tracefs", MOUNT_POINT)
        .map_err(|e| format!("tracefs is not mounted and mounting it at {MOUNT_POINT} failed: {e}"))?;
    Ok(Tracefs { root: MOUNT_POINT.into(), mounted_here: true })
}

/// Unmounts a tracefs rtbench mounted, unless another rtbench instance is still in it.
pub fn unmount_if_unused(root: &Path) {
    let busy = std::fs::read_dir(root.join("instances"))
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("rtbench-")))
        .unwrap_or(false);
    if !busy {
        let _ = crate::sys::unmount(&root.to_string_lossy());
    }
}

/// An instance of our own.
pub struct Instance {
    pub dir: PathBuf,
    /// Events of the list this kernel lacks.
    pub missing: Vec<String>,
    /// Bytes its buffers hold, all CPUs together.
    pub room: usize,
}

/// Per-CPU ring buffer for a window around a breach: twice the threshold plus 50 ms for the
/// runner to stop the buffer, at up to 20 MB of events per second; 1 MB to 64 MB.
pub fn buffer_kb(threshold_ns: u64) -> u64 {
    let window_s = (2 * threshold_ns + 50_000_000) as f64 / 1e9;
    ((window_s * 20e6 / 1024.0) as u64).clamp(1024, 65_536)
}

impl Instance {
    /// Makes `instances/NAME` tracing `cpus` on the monotonic clock with the breach tracer's
    /// events. An error removes it again.
    pub fn create(root: &Path, name: &str, cpus: &[usize], buffer_kb: u64) -> io::Result<Instance> {
        Instance::create_with(root, name, cpus, buffer_kb, Instance::enable_breach_events)
    }

    /// Makes `instances/NAME` tracing `cpus` on the monotonic clock,
    /// with the events `events` enables, then turns it on. An error removes it again.
    pub fn create_with(
        root: &Path,
        name: &str,
        cpus: &[usize],
        buffer_kb: u64,
        events: impl FnOnce(&mut Instance) -> io::Result<()>,
    ) -> io::Result<Instance> {
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir)?;
        let room = (buffer_kb as usize * 1024).saturating_mul(cpus.len().max(1));
        let mut inst = Instance { dir, missing: Vec::new(), room };
        let set_up = inst.set_up(cpus, buffer_kb).and_then(|()| events(&mut inst)).and_then(|()| inst.set_on(true));
        if let Err(e) = set_up {
            let _ = remove(&inst.dir);
            return Err(e);
        }
        Ok(inst)
    }

    fn set_up(&mut self, cpus: &[usize], buffer_kb: u64) -> io::Result<()> {
        self.write("tracing_on", "0")?;
        // Timestamps on CLOCK_MONOTONIC line up with the probes' own clock reads.
        self.write("trace_clock", "mono")?;
        self.write("tracing_cpumask", &crate::sysinfo::cpu_mask(cpus))?;
        self.write("buffer_size_kb", &buffer_kb.to_string())
    }

    fn enable_breach_events(&mut self) -> io::Result<()> {
        for e in EVENTS {
            if self.enable(e).is_err() {
                self.missing.push(e.to_string());
            }
        }
        let ipis = IPI.iter().filter(|e| self.enable(e).is_ok()).count();
        if ipis == 0 {
            self.missing.push("ipi/*".into());
        }
        for e in VECTORS {
            let _ = self.enable(e);
        }
        if self.missing.iter().any(|m| m == "sched/sched_switch") {
            return Err(io::Error::other("the sched_switch event is not available"));
        }
        Ok(())
    }

    /// Limits `event` (`system/event`) to what `filter` admits (ftrace's filter syntax).
    pub fn filter(&self, event: &str, filter: &str) -> io::Result<()> {
        self.write(&format!("events/{event}/filter"), filter)
    }

    /// Runs `tracer` (`timerlat`) in the instance.
    pub fn set_tracer(&self, tracer: &str) -> io::Result<()> {
        self.write("current_tracer", tracer)
    }

    pub fn enable(&self, event: &str) -> io::Result<()> {
        std::fs::write(self.dir.join("events").join(event).join("enable"), "1")
    }

    fn write(&self, file: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.dir.join(file).display())))
    }

    pub fn set_on(&self, on: bool) -> io::Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// The buffer as text, every CPU merged in time order (read without consuming it).
    pub fn read(&self) -> io::Result<String> {
        std::fs::read_to_string(self.dir.join("trace"))
    }

    /// Empties the buffer.
    pub fn clear(&self) -> io::Result<()> {
        OpenOptions::new().write(true).truncate(true).open(self.dir.join("trace")).map(drop)
    }

    /// The file the measuring threads write their marker into.
    pub fn marker(&self) -> io::Result<File> {
        OpenOptions::new().write(true).open(self.dir.join("trace_marker"))
    }
}

/// Stops and removes an instance; a file still open in it (a marker not yet closed) makes the
/// kernel refuse for a moment, so this tries a few times.
pub fn remove(dir: &Path) -> io::Result<()> {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    let mut last = Ok(());
    for _ in 0..20 {
        last = std::fs::remove_dir(dir);
        match &last {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_buffers_are_sized_as_tracefs_takes_them() {
        let cpumask = crate::sysinfo::cpu_mask;
        assert_eq!(cpumask(&[1]), "00000002");
        assert_eq!(cpumask(&[0, 1, 3]), "0000000b");
        assert_eq!(cpumask(&[33]), "00000002,00000000");
        assert_eq!(buffer_kb(1_000), 1024, "a short window still gets a megabyte");
        assert_eq!(buffer_kb(2_000_000), (0.054 * 20e6 / 1024.0) as u64);
        assert_eq!(buffer_kb(10_000_000_000), 65_536, "capped");
    }
}
