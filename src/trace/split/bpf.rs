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

// ---- bytecode -------------------------------------------------------------------------------

const ALU64: u8 = 0x07;
const MOV: u8 = 0xb0;
const ADD: u8 = 0x00;
const RSH: u8 = 0x70;
const X: u8 = 0x08;
const LDX_DW: u8 = 0x79;
const STX_DW: u8 = 0x7b;
const ST_W: u8 = 0x62;
const LD_DW: u8 = 0x18;
const JEQ_K: u8 = 0x15;
const JNE_K: u8 = 0x55;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
const ATOMIC_DW: u8 = 0xdb;
const PSEUDO_MAP_FD: u8 = 1;
const FP: u8 = 10;

const MAP_LOOKUP: i32 = 1;
const MAP_UPDATE: i32 = 2;
const MAP_DELETE: i32 = 3;
const CURRENT_PID_TGID: i32 = 14;
const MAP_PUSH: i32 = 87;
const PROBE_READ_KERNEL: i32 = 113;

/// One instruction: opcode, registers, offset, immediate.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    u64::from(code) | u64::from(dst | src << 4) << 8 | u64::from(off as u16) << 16 | u64::from(imm as u32) << 32
}

/// A program being written; jumps to its end are patched once its length is known.
#[derive(Default)]
struct Asm {
    code: Vec<u64>,
    to_exit: Vec<usize>,
}

impl Asm {
    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) -> &mut Asm {
        self.code.push(insn(code, dst, src, off, imm));
        self
    }
    fn mov(&mut self, dst: u8, src: u8) -> &mut Asm {
        self.op(ALU64 | MOV | X, dst, src, 0, 0)
    }
    fn mov_k(&mut self, dst: u8, imm: i32) -> &mut Asm {
        self.op(ALU64 | MOV, dst, 0, 0, imm)
    }
    fn add_k(&mut self, dst: u8, imm: i32) -> &mut Asm {
        self.op(ALU64 | ADD, dst, 0, 0, imm)
    }
    /// `dst = fp + off`: a pointer to the stack.
    fn stack(&mut self, dst: u8, off: i32) -> &mut Asm {
        self.mov(dst, FP).add_k(dst, off)
    }
    fn map(&mut self, dst: u8, map: &OwnedFd) -> &mut Asm {
        use std::os::fd::AsRawFd;
        self.op(LD_DW, dst, PSEUDO_MAP_FD, 0, map.as_raw_fd()).op(0, 0, 0, 0, 0)
    }
    fn call(&mut self, helper: i32) -> &mut Asm {
        self.op(CALL, 0, 0, 0, helper)
    }
    /// Ends the program when `reg` == `imm` (`eq`) or != `imm`.
    fn exit_if(&mut self, reg: u8, eq: bool, imm: i32) -> &mut Asm {
        self.to_exit.push(self.code.len());
        self.op(if eq { JEQ_K } else { JNE_K }, reg, 0, 0, imm)
    }
    /// `fp[dst_off..+8]` = kernel memory at `src + off` (r1-r5 clobbered).
    fn read_kernel(&mut self, dst_off: i32, src: u8, off: i32) -> &mut Asm {
        self.stack(1, dst_off).mov_k(2, 8).mov(3, src).add_k(3, off).call(PROBE_READ_KERNEL)
    }
    fn finish(mut self) -> Vec<u64> {
        let end = self.code.len();
        for at in std::mem::take(&mut self.to_exit) {
            let off = (end - at - 1) as i16;
            self.code[at] = (self.code[at] & !(0xffff << 16)) | u64::from(off as u16) << 16;
        }
        self.mov_k(0, 0).op(EXIT, 0, 0, 0, 0);
        self.code
    }
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

    #[test]
    fn instructions_are_encoded_as_the_kernel_reads_them() {
        // r1 = r10 (mov64 reg): 0xbf, dst 1, src 10.
        assert_eq!(insn(ALU64 | MOV | X, 1, FP, 0, 0), 0x0000_0000_0000_a1bf);
        // if r0 == 0 goto +3
        assert_eq!(insn(JEQ_K, 0, 0, 3, 0), 0x0000_0000_0003_0015);
        // *(u32 *)(r10 - 36) = 0: a negative offset in two's complement.
        assert_eq!(insn(ST_W, FP, 0, -36, 7), 0x0000_0007_ffdc_0a62);
    }

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

    #[test]
    fn every_early_exit_lands_on_the_program_s_end() {
        let mut a = Asm::default();
        a.mov_k(0, 1).exit_if(0, true, 0).mov_k(0, 2).exit_if(0, false, 5).mov_k(0, 3);
        let code = a.finish();
        assert_eq!(code.len(), 7);
        let off = |i: usize| (code[i] >> 16) as u16 as i16 as usize;
        assert_eq!(1 + 1 + off(1), 5, "the first exit jumps to `r0 = 0; exit`");
        assert_eq!(3 + 1 + off(3), 5);
        assert_eq!(code[6] & 0xff, u64::from(EXIT));
    }
}
