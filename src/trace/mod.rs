//! The kernel's view of a run, as the instruments (`crate::instrument`) read it: the ftrace base
//! ([`ftrace`]: instances of rtbench's own, journalled before they exist, and their text
//! parsed), the BPF base ([`bpf`]: the assembler the programs are written with, and the
//! kernel's BTF for the offsets they read), the readers that follow either from a thread off
//! the measured CPUs ([`stream`]), and what an event's context says of what ran ([`context`]).

pub mod bpf;
pub mod context;
pub mod ftrace;
pub mod stream;
pub mod timerlat;

pub use ftrace::journal::{ClassifyTraced, SplitTraced, TimerlatTraced, Traced};
/// The value of `key=` in an event's detail, as the stored windows keep it.
pub use ftrace::parse::field;

/// [`policy_of`], read once a second at most per task: a real-time task preempting a measured
/// CPU 20 000 times a second (an RT kernel's IRQ threads, a hog) would otherwise cost a /proc
/// read per gap, most of the main thread's time (issue 38). A pid reused within the second may
/// be named with its predecessor's policy.
#[derive(Default)]
pub(crate) struct Policies {
    seen: std::cell::RefCell<std::collections::HashMap<i32, (Option<String>, std::time::Instant)>>,
}

impl Policies {
    const FRESH: std::time::Duration = std::time::Duration::from_secs(1);
    /// Tasks remembered before the oldest are let go.
    const KEPT: usize = 4096;

    pub(crate) fn of(&self, pid: i32) -> Option<String> {
        let mut seen = self.seen.borrow_mut();
        if let Some((policy, _)) = seen.get(&pid).filter(|(_, at)| at.elapsed() < Self::FRESH) {
            return policy.clone();
        }
        if seen.len() >= Self::KEPT {
            seen.retain(|_, (_, at)| at.elapsed() < Self::FRESH);
        }
        let policy = policy_of(pid);
        seen.insert(pid, (policy.clone(), std::time::Instant::now()));
        policy
    }
}

/// "FIFO" or "RR" for a real-time task still running, from field 41 of its stat.
pub(crate) fn policy_of(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    match fields.get(38)?.parse::<u32>().ok()? {
        1 => Some("FIFO".into()),
        2 => Some("RR".into()),
        _ => None,
    }
}
