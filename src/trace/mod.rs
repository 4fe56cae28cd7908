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
