//! The split's expiries from two small BPF programs on the raw tracepoints `hrtimer_start` and
//! `hrtimer_expire_entry`, built here as bytecode: measured here, an ftrace event on the
//! timer-interrupt path costs the woken thread ~2 µs (a cold ring buffer on a freshly woken
//! virtual CPU), the program almost nothing.
//!
//! `hrtimer_start` in one of rtbench's threads keeps (thread, `_softexpires`) under the hrtimer's
//! address; `hrtimer_expire_entry` of a kept address queues (thread, due, now) for the reader,
//! which pops the queue off the measured CPUs every few milliseconds ([`Reader`]).

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use super::expiry::Seen;
use crate::trace::bpfasm::*;
use crate::trace::stream::{lock, Reader};

/// `struct hrtimer` starts with a `timerqueue_node` (an `rb_node` of three pointers and its
/// `expires`), then `_softexpires`: the time the sleeper asked for, on 64-bit kernels since
/// hrtimers have had a soft expiry.
const SOFTEXPIRES: i32 = 32;
/// Timers started and not yet expired (an address re-armed replaces itself; LRU: a timer
/// cancelled and never reused ages out).
const ARMED: u32 = 4096;
/// Expiries waiting for the reader: at 10 kHz on every thread a poll is far below this.
const QUEUED: u32 = 65_536;

const LRU_HASH: u32 = 9;
const ARRAY: u32 = 2;
const QUEUE: u32 = 22;

/// A record in the queue: thread (pid_tgid), due, now.
const RECORD: usize = 24;

/// The programs and maps, attached; all of it goes with the fds.
/// (The timers' map is the kernel's alone: the programs hold it.)
pub struct Programs {
    queue: OwnedFd,
    lost: OwnedFd,
    _links: [OwnedFd; 2],
}

impl Programs {
    /// Loads and attaches both programs for the threads of process `tgid`.
    pub fn attach(tgid: u32) -> std::io::Result<Programs> {
        use crate::sys::{bpf_attach_raw_tp, bpf_map, bpf_raw_tp_program};
        let armed = bpf_map(LRU_HASH, 8, 16, ARMED)?;
        let queue = bpf_map(QUEUE, 0, RECORD as u32, QUEUED)?;
        let lost = bpf_map(ARRAY, 4, 8, 1)?;
        let start = bpf_raw_tp_program(&on_start(tgid, &armed))?;
        let expire = bpf_raw_tp_program(&on_expire(&armed, &queue, &lost))?;
        let links =
            [bpf_attach_raw_tp(c"hrtimer_start", &start)?, bpf_attach_raw_tp(c"hrtimer_expire_entry", &expire)?];
        Ok(Programs { queue, lost, _links: links })
    }

    /// Pops every queued expiry into `seen`; Err when the map cannot be read.
    fn drain(&self, seen: &Mutex<Seen>) -> std::io::Result<()> {
        let mut rec = [0u8; RECORD];
        let word = |r: &[u8; RECORD], i: usize| u64::from_ne_bytes(r[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        while crate::sys::bpf_pop(&self.queue, &mut rec)? {
            lock(seen).expired(word(&rec, 0) as u32 as i32, word(&rec, 1), word(&rec, 2));
        }
        let mut lost = [0u8; 8];
        crate::sys::bpf_lookup(&self.lost, &0u32.to_ne_bytes(), &mut lost)?;
        lock(seen).lost_events = u64::from_ne_bytes(lost);
        Ok(())
    }
}

/// Attaches the programs and reads them from a thread named `name`, off `cpus`.
pub fn start(name: &str, cpus: &[usize]) -> Result<Reader<Seen>, String> {
    let programs = Programs::attach(std::process::id()).map_err(|e| format!("cannot load the BPF programs: {e}"))?;
    // The programs go when the reader ends.
    Reader::spawn(name, Seen::default(), cpus, move |seen| programs.drain(seen).is_ok())
}

/// `hrtimer_start(hrtimer, ...)`: in a thread of `tgid`, `armed[hrtimer] = (pid_tgid, due)`.
fn on_start(tgid: u32, armed: &OwnedFd) -> Vec<u64> {
    let mut a = Asm::default();
    a.mov(6, 1).call(CURRENT_PID_TGID).mov(7, 0).op(ALU64 | RSH, 7, 0, 0, 32).exit_if(7, false, tgid as i32);
    // Value at fp-16: pid_tgid, due; key at fp-24: the hrtimer.
    a.op(STX_DW, FP, 0, -16, 0).op(LDX_DW, 7, 6, 0, 0).op(STX_DW, FP, 7, -24, 0);
    a.read_kernel(-8, 7, SOFTEXPIRES);
    a.map(1, armed).stack(2, -24).stack(3, -16).mov_k(4, 0).call(MAP_UPDATE);
    a.finish()
}

/// `hrtimer_expire_entry(hrtimer, now)`: an armed hrtimer's (pid_tgid, due, *now) queued and
/// forgotten; a full queue counted in `lost`.
fn on_expire(armed: &OwnedFd, queue: &OwnedFd, lost: &OwnedFd) -> Vec<u64> {
    let mut a = Asm::default();
    // Key at fp-8; the record at fp-32: pid_tgid, due, now.
    a.mov(6, 1).op(LDX_DW, 7, 6, 0, 0).op(LDX_DW, 8, 6, 8, 0).op(STX_DW, FP, 7, -8, 0);
    a.map(1, armed).stack(2, -8).call(MAP_LOOKUP).exit_if(0, true, 0);
    a.op(LDX_DW, 1, 0, 0, 0).op(STX_DW, FP, 1, -32, 0).op(LDX_DW, 1, 0, 8, 0).op(STX_DW, FP, 1, -24, 0);
    a.map(1, armed).stack(2, -8).call(MAP_DELETE);
    a.read_kernel(-16, 8, 0);
    a.map(1, queue).stack(2, -32).mov_k(3, 0).call(MAP_PUSH).exit_if(0, true, 0);
    a.op(ST_W, FP, 0, -36, 0).map(1, lost).stack(2, -36).call(MAP_LOOKUP).exit_if(0, true, 0);
    // lock *(u64 *)(r0 + 0) += 1
    a.mov_k(1, 1).op(ATOMIC_DW, 0, 1, 0, 0);
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The programs as the kernel runs them: this thread's own sleep comes back as an expiry,
    /// due when it asked, handled no earlier.
    #[test]
    fn a_sleep_of_this_thread_comes_back_as_its_expiry() {
        if !crate::sys::is_root() {
            eprintln!("skipped: loading BPF programs needs root");
            return;
        }
        let programs = Programs::attach(std::process::id()).expect("the programs load and attach");
        let seen = Mutex::new(Seen::default());
        let me = crate::sys::gettid();
        lock(&seen).follow(&[me]);
        let asked = crate::sys::now_ns() + 2_000_000;
        std::thread::sleep(std::time::Duration::from_millis(2));
        programs.drain(&seen).unwrap();
        let seen = lock(&seen);
        let mine = seen.by_pid.get(&me).expect("this thread's sleep was seen");
        let e = mine.back().unwrap();
        assert!(e.due_ns >= asked && e.ran_ns >= e.due_ns, "{e:?} (asked for {asked})");
        assert_eq!(seen.lost_events, 0);
    }
}
