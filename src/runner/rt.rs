//! Real-time setup and its restore. Every setting changed here is put back by `Drop`.

use std::fs::File;
use std::io::Write;

use crate::model::Policy;
use crate::sys;

/// What the run got, and what it must undo.
pub struct RtSetup {
    pub policy: Policy,
    pub priority: i32,
    pub memory_locked: bool,
    /// Held open for the run: the kernel keeps CPUs out of deep idle states while it is.
    dma_latency: Option<File>,
    pub warnings: Vec<String>,
}

impl RtSetup {
    /// Locks memory, holds /dev/cpu_dma_latency at 0, and checks the policy can be had. What
    /// cannot be had becomes a warning, and a refused real-time policy falls back to SCHED_OTHER.
    pub fn acquire(policy: Policy, priority: i32, mlock: bool) -> RtSetup {
        let mut warnings = Vec::new();
        let memory_locked = mlock && {
            match sys::lock_memory() {
                Ok(()) => true,
                Err(e) => {
                    warnings.push(format!("memory not locked (mlockall: {e}): page faults may add latency"));
                    false
                }
            }
        };
        if !mlock {
            warnings.push("memory not locked (--no-mlock): page faults may add latency".into());
        }
        let dma_latency = match std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency") {
            Ok(mut f) => match f.write_all(&0i32.to_ne_bytes()) {
                Ok(()) => Some(f),
                Err(e) => {
                    warnings.push(format!("/dev/cpu_dma_latency not set ({e}): deep CPU idle states stay allowed"));
                    None
                }
            },
            Err(e) => {
                warnings.push(format!("/dev/cpu_dma_latency not set ({e}): deep CPU idle states stay allowed"));
                None
            }
        };
        let policy = match policy {
            Policy::Other => {
                warnings.push("ran at SCHED_OTHER by request (--policy other): these are not real-time numbers".into());
                Policy::Other
            }
            rt => match try_policy(rt, priority) {
                Ok(()) => rt,
                Err(e) => {
                    warnings.push(format!(
                        "could not get {rt:?} priority {priority} ({e}); ran at SCHED_OTHER: these are not real-time numbers"
                    ));
                    Policy::Other
                }
            },
        };
        RtSetup { policy, priority, memory_locked, dma_latency, warnings }
    }

    /// True when the measuring threads run at a real-time priority.
    pub fn rt_priority(&self) -> bool {
        self.policy != Policy::Other
    }

    pub fn dma_latency_held(&self) -> bool {
        self.dma_latency.is_some()
    }
}

impl Drop for RtSetup {
    fn drop(&mut self) {
        // Closing the descriptor gives the CPU idle states back.
        self.dma_latency.take();
        if self.memory_locked {
            sys::unlock_memory();
        }
    }
}

/// Tries the policy on a throwaway thread, so the caller's own scheduling is never changed.
fn try_policy(policy: Policy, priority: i32) -> std::io::Result<()> {
    std::thread::spawn(move || sys::set_scheduler(policy, priority))
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
}

/// Sets up a measuring thread: pinned, prefaulted stack, and the run's policy.
pub fn enter_thread(cpu: Option<usize>, policy: Policy, priority: i32) -> Option<String> {
    sys::prefault_stack(128 * 1024);
    if let Some(cpu) = cpu {
        if let Err(e) = sys::pin_to_cpu(cpu) {
            return Some(format!("could not pin a thread to CPU {cpu}: {e}"));
        }
    }
    sys::set_scheduler(policy, priority).err().map(|e| format!("could not set {policy:?} on a thread: {e}"))
}
