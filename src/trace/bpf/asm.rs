//! A tiny assembler for the BPF programs rtbench loads itself (the split's timer expiries, the
//! noise classification's interrupts and switches): a handful of instructions written in Rust,
//! so no compiler toolchain or object-file loader is needed at build or run time.

use std::os::fd::OwnedFd;

pub const ALU64: u8 = 0x07;
pub const MOV: u8 = 0xb0;
pub const ADD: u8 = 0x00;
pub const SUB: u8 = 0x10;
pub const MUL: u8 = 0x20;
pub const LSH: u8 = 0x60;
pub const AND: u8 = 0x50;
pub const RSH: u8 = 0x70;
pub const X: u8 = 0x08;
pub const LDX_DW: u8 = 0x79;
pub const LDX_W: u8 = 0x61;
pub const STX_DW: u8 = 0x7b;
pub const STX_W: u8 = 0x63;
pub const ST_W: u8 = 0x62;
pub const ST_DW: u8 = 0x7a;
pub const LD_DW: u8 = 0x18;
pub const JEQ_K: u8 = 0x15;
pub const JNE_K: u8 = 0x55;
pub const JNE_X: u8 = 0x5d;
pub const JGT_K: u8 = 0x25;
pub const JGT_X: u8 = 0x2d;
pub const JGE_X: u8 = 0x3d;
pub const CALL: u8 = 0x85;
pub const EXIT: u8 = 0x95;
pub const ATOMIC_DW: u8 = 0xdb;
const PSEUDO_MAP_FD: u8 = 1;
pub const FP: u8 = 10;

pub const MAP_LOOKUP: i32 = 1;
pub const MAP_UPDATE: i32 = 2;
pub const MAP_DELETE: i32 = 3;
pub const KTIME_GET_NS: i32 = 5;
pub const SMP_PROCESSOR_ID: i32 = 8;
pub const CURRENT_PID_TGID: i32 = 14;
pub const CURRENT_COMM: i32 = 16;
pub const CURRENT_TASK: i32 = 35;
pub const MAP_PUSH: i32 = 87;
pub const PROBE_READ_USER: i32 = 112;
pub const PROBE_READ_KERNEL: i32 = 113;
pub const RINGBUF_OUTPUT: i32 = 130;
/// `bpf_ringbuf_output`'s flag: no wake-up of a waiting reader. rtbench's readers poll on a
/// timer; a wake-up is an irq_work interrupt on the CPU the program ran on, a measured one.
const RB_NO_WAKEUP: i32 = 1;

/// One instruction: opcode, registers, offset, immediate.
pub fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    u64::from(code) | u64::from(dst | src << 4) << 8 | u64::from(off as u16) << 16 | u64::from(imm as u32) << 32
}

/// A program being written; jumps to its end are patched once its length is known.
#[derive(Default)]
pub struct Asm {
    code: Vec<u64>,
    to_exit: Vec<usize>,
}

impl Asm {
    pub fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) -> &mut Asm {
        self.code.push(insn(code, dst, src, off, imm));
        self
    }
    pub fn mov(&mut self, dst: u8, src: u8) -> &mut Asm {
        self.op(ALU64 | MOV | X, dst, src, 0, 0)
    }
    pub fn mov_k(&mut self, dst: u8, imm: i32) -> &mut Asm {
        self.op(ALU64 | MOV, dst, 0, 0, imm)
    }
    pub fn add_k(&mut self, dst: u8, imm: i32) -> &mut Asm {
        self.op(ALU64 | ADD, dst, 0, 0, imm)
    }
    /// `dst = fp + off`: a pointer to the stack.
    pub fn stack(&mut self, dst: u8, off: i32) -> &mut Asm {
        self.mov(dst, FP).add_k(dst, off)
    }
    pub fn map(&mut self, dst: u8, map: &OwnedFd) -> &mut Asm {
        use std::os::fd::AsRawFd;
        self.op(LD_DW, dst, PSEUDO_MAP_FD, 0, map.as_raw_fd()).op(0, 0, 0, 0, 0)
    }
    /// `dst = value`, all 64 bits (two instruction slots).
    pub fn load64(&mut self, dst: u8, value: u64) -> &mut Asm {
        self.op(LD_DW, dst, 0, 0, value as u32 as i32).op(0, 0, 0, 0, (value >> 32) as u32 as i32)
    }
    pub fn call(&mut self, helper: i32) -> &mut Asm {
        self.op(CALL, 0, 0, 0, helper)
    }
    /// Ends the program when `reg` == `imm` (`eq`) or != `imm`.
    pub fn exit_if(&mut self, reg: u8, eq: bool, imm: i32) -> &mut Asm {
        self.exit_on(if eq { JEQ_K } else { JNE_K }, reg, imm)
    }
    /// Ends the program when the jump `code` (`JEQ_K`, `JGT_K`, …) of `reg` against `imm` holds.
    pub fn exit_on(&mut self, code: u8, reg: u8, imm: i32) -> &mut Asm {
        self.to_exit.push(self.code.len());
        self.op(code, reg, 0, 0, imm)
    }
    /// Ends the program when `reg` != `src`.
    pub fn exit_if_ne(&mut self, reg: u8, src: u8) -> &mut Asm {
        self.to_exit.push(self.code.len());
        self.op(JNE_X, reg, src, 0, 0)
    }
    /// `fp[dst_off..+8]` = kernel memory at `src + off` (r1-r5 clobbered).
    pub fn read_kernel(&mut self, dst_off: i32, src: u8, off: i32) -> &mut Asm {
        self.read_kernel_n(dst_off, 8, src, off)
    }
    /// `fp[dst_off..+size]` = kernel memory at `src + off` (r1-r5 clobbered; zeroes on a fault).
    pub fn read_kernel_n(&mut self, dst_off: i32, size: i32, src: u8, off: i32) -> &mut Asm {
        self.stack(1, dst_off).mov_k(2, size).mov(3, src).add_k(3, off).call(PROBE_READ_KERNEL)
    }
    /// Pushes the record at `fp + at` onto `queue`; when the queue is full, adds one to
    /// `lost[0]` (its key written at `fp + at - 4`). The queue's reader counts what it missed.
    /// Then the program ends, or with `go_on` goes on.
    pub fn push_or_count_lost(&mut self, queue: &OwnedFd, lost: &OwnedFd, at: i16, go_on: bool) -> &mut Asm {
        self.map(1, queue).stack(2, i32::from(at)).mov_k(3, 0).call(MAP_PUSH);
        self.or_count_lost(lost, at, go_on)
    }
    /// Outputs the `size`-byte record at `fp + at` into the ring buffer `ring`, waking no one;
    /// when the ring is full, adds one to `lost[0]` as [`Asm::push_or_count_lost`] does; then
    /// ends, or goes on.
    pub fn output_or_count_lost(
        &mut self,
        ring: &OwnedFd,
        lost: &OwnedFd,
        at: i16,
        size: i32,
        go_on: bool,
    ) -> &mut Asm {
        self.map(1, ring).stack(2, i32::from(at)).mov_k(3, size).mov_k(4, RB_NO_WAKEUP);
        self.call(RINGBUF_OUTPUT);
        self.or_count_lost(lost, at, go_on)
    }
    /// After a hand-over (r0 0 when done): the program ends, or with `go_on` goes on past the
    /// count of a record lost.
    fn or_count_lost(&mut self, lost: &OwnedFd, at: i16, go_on: bool) -> &mut Asm {
        if !go_on {
            return self.exit_if(0, true, 0).count_lost(lost, at);
        }
        let handed = self.jump(JEQ_K, 0, 0, 0);
        self.count_lost(lost, at).land(handed)
    }
    /// `lost[0] += 1`, atomically (its key written at `fp + at - 4`).
    fn count_lost(&mut self, lost: &OwnedFd, at: i16) -> &mut Asm {
        self.op(ST_W, FP, 0, at - 4, 0).map(1, lost).stack(2, i32::from(at - 4)).call(MAP_LOOKUP).exit_if(0, true, 0);
        // lock *(u64 *)(r0 + 0) += 1
        self.mov_k(1, 1).op(ATOMIC_DW, 0, 1, 0, 0)
    }
    /// A forward jump `code` of `dst` against `src` (or `imm`) to a place not written yet;
    /// [`Asm::land`] with what it returns makes the next instruction its target.
    pub fn jump(&mut self, code: u8, dst: u8, src: u8, imm: i32) -> usize {
        self.code.push(insn(code, dst, src, 0, imm));
        self.code.len() - 1
    }
    /// The jump at `at` (from [`Asm::jump`]) lands on the next instruction written.
    pub fn land(&mut self, at: usize) -> &mut Asm {
        let off = (self.code.len() - at - 1) as i16;
        self.code[at] = (self.code[at] & !(0xffff << 16)) | u64::from(off as u16) << 16;
        self
    }
    /// `return 0` here, before the program's end.
    pub fn ret(&mut self) -> &mut Asm {
        self.mov_k(0, 0).op(EXIT, 0, 0, 0, 0)
    }
    pub fn finish(mut self) -> Vec<u64> {
        let end = self.code.len();
        for at in std::mem::take(&mut self.to_exit) {
            let off = (end - at - 1) as i16;
            self.code[at] = (self.code[at] & !(0xffff << 16)) | u64::from(off as u16) << 16;
        }
        self.mov_k(0, 0).op(EXIT, 0, 0, 0, 0);
        self.code
    }
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

    #[test]
    fn a_64_bit_constant_takes_two_slots_low_word_first() {
        let mut a = Asm::default();
        a.load64(1, 0x1234_5678_9abc_def0);
        let code = a.finish();
        assert_eq!(code[0], insn(LD_DW, 1, 0, 0, 0x9abc_def0_u32 as i32));
        assert_eq!(code[1], insn(0, 0, 0, 0, 0x1234_5678));
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
