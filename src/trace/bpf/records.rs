//! Where the instruments' programs put their records and how their readers take them: a BPF
//! ring buffer read from shared memory, no system call per record (issue 38: at 128 CPUs ×
//! 10 kHz a queue popped one `bpf()` call a record is 1.28 M calls a second), or, on a kernel
//! without ring buffers (before 5.8), a queue map as before. Either way a full buffer is
//! counted by the program in a one-entry array read from shared memory, what the run stores as
//! lost.

use std::io;
use std::os::fd::OwnedFd;

use super::asm::Asm;
use crate::sys::RingBuf;
use crate::trace::stream::Fill;

const QUEUE: u32 = 22;

enum Transport {
    Ring(RingBuf),
    Queue(OwnedFd),
}

/// The maps one instrument's programs write their records into; they go with the fds.
pub struct Records {
    transport: Transport,
    lost: crate::sys::Counter,
    /// A record's size in bytes, a multiple of 8.
    size: usize,
    /// How many records it holds waiting for the reader (at least).
    room: usize,
    /// A queue's record, popped.
    popped: Vec<u8>,
    /// The lost count as last read, and whether records were read since: a program counts a
    /// record lost only when the buffer is full of others, so a reader that found nothing
    /// has nothing new to count. Where the count is not shared memory (kernels before 5.5) it
    /// skips the system call (a hundred a second per reader).
    lost_read: u64,
    read_since: bool,
}

impl Records {
    /// Room for `held` records of `size` bytes (a multiple of 8) waiting for the reader: a ring
    /// buffer, or a queue on a kernel without them.
    pub fn make(size: usize, held: u32) -> Result<Records, String> {
        match RingBuf::new(held as usize * (size + 8)) {
            Ok(ring) => Records::with(Transport::Ring(ring), size, held),
            // An unknown map type: a kernel before 5.8.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Records::queue(size, held),
            Err(e) => Err(format!("cannot make the ring buffer: {e}")),
        }
    }

    /// A queue of `held` records of `size` bytes, as kernels before 5.8 have.
    pub fn queue(size: usize, held: u32) -> Result<Records, String> {
        let q = crate::sys::bpf_map(QUEUE, 0, size as u32, held).map_err(|e| format!("cannot make the queue: {e}"))?;
        Records::with(Transport::Queue(q), size, held)
    }

    fn with(transport: Transport, size: usize, held: u32) -> Result<Records, String> {
        let lost = crate::sys::Counter::new().map_err(|e| format!("cannot make a map: {e}"))?;
        let (popped, room) = (vec![0; size], held as usize);
        Ok(Records { transport, lost, size, room, popped, lost_read: 0, read_since: true })
    }

    /// How full a pass that read `read` records found the buffer: what paces its reader.
    pub fn fill(&self, read: usize) -> Fill {
        Fill { read, room: self.room }
    }

    /// How the records travel, as a run stores it: `ringbuf` or `queue`.
    pub fn transport(&self) -> &'static str {
        match self.transport {
            Transport::Ring(_) => "ringbuf",
            Transport::Queue(_) => "queue",
        }
    }

    /// The program's last step: the record at `fp + at` handed on, or counted as lost (the 4
    /// bytes below it on the stack are used for the count's key).
    pub fn emit(&self, a: &mut Asm, at: i16) {
        self.hand_on(a, at, false);
    }

    /// As [`Records::emit`], and the program goes on after it (handed on or counted lost).
    pub fn emit_and_go_on(&self, a: &mut Asm, at: i16) {
        self.hand_on(a, at, true);
    }

    fn hand_on(&self, a: &mut Asm, at: i16, go_on: bool) {
        match &self.transport {
            Transport::Ring(ring) => a.output_or_count_lost(ring.map(), self.lost.map(), at, self.size as i32, go_on),
            Transport::Queue(queue) => a.push_or_count_lost(queue, self.lost.map(), at, go_on),
        };
    }

    /// Hands every record waiting to `each`, oldest first (per CPU: a program interrupted
    /// between its clock read and its output puts its record after the interrupt's); how many.
    pub fn drain(&mut self, mut each: impl FnMut(&[u8])) -> io::Result<usize> {
        let n = match &mut self.transport {
            Transport::Ring(ring) => ring.read(each),
            Transport::Queue(queue) => {
                let mut n = 0;
                while crate::sys::bpf_pop(queue, &mut self.popped)? {
                    each(&self.popped);
                    n += 1;
                }
                n
            }
        };
        self.read_since |= n > 0;
        Ok(n)
    }

    /// How many records the programs could not hand on, the buffer being full.
    /// Read after [`Records::drain`]: a record lost while it ran is counted when the records
    /// that filled the buffer are read.
    pub fn lost(&mut self) -> io::Result<u64> {
        if std::mem::take(&mut self.read_since) || self.lost.is_shared() {
            self.lost_read = self.lost.value()?;
        }
        Ok(self.lost_read)
    }
}

/// The `i`th 8-byte word of a record (0 past its end).
pub fn word(rec: &[u8], i: usize) -> u64 {
    rec.get(8 * i..8 * i + 8).map_or(0, |w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::bpf::asm::{EXIT, FP, LDX_DW, STX_DW, ST_DW};

    /// A raw-tracepoint program whose record is its two arguments, run on demand.
    fn echo(records: &Records) -> OwnedFd {
        let mut a = Asm::default();
        a.mov(6, 1).op(LDX_DW, 1, 6, 0, 0).op(STX_DW, FP, 1, -16, 0).op(LDX_DW, 1, 6, 8, 0).op(STX_DW, FP, 1, -8, 0);
        records.emit(&mut a, -16);
        crate::sys::bpf_raw_tp_program("rtbench_test", &a.finish()).expect("the echo program loads")
    }

    /// `n` records (i, tag), i counting up from `from`.
    fn write(program: &OwnedFd, from: u64, n: u64, tag: u64) {
        for i in from..from + n {
            crate::sys::bpf_run_raw_tp(program, &[i, tag]).expect("the program runs");
        }
    }

    /// Every record read, in order, as (i, tag).
    fn read(records: &mut Records) -> Vec<(u64, u64)> {
        let mut got = Vec::new();
        let n = records.drain(|r| got.push((word(r, 0), word(r, 1)))).unwrap();
        assert_eq!(n, got.len());
        got
    }

    /// A ring buffer's records (the test needs root and Linux 5.8).
    fn ring(size: usize, held: u32) -> Records {
        let r = Records::make(size, held).unwrap();
        assert_eq!(r.transport(), "ringbuf", "Linux 5.8 and later have ring buffers");
        r
    }

    /// A real program's N records come back, exactly those and in order, none lost: through a
    /// ring buffer, and through the queue kernels before 5.8 fall back to.
    #[rtbench_testkit::needs(root, linux_5_8, native)]
    #[test]
    fn a_program_s_records_come_back_exactly() {
        let ring = ring(16, 4096);
        for mut records in [ring, Records::queue(16, 4096).unwrap()] {
            let program = echo(&records);
            write(&program, 0, 1000, 7);
            let got = read(&mut records);
            assert_eq!(got, (0..1000).map(|i| (i, 7)).collect::<Vec<_>>(), "{}", records.transport());
            assert_eq!(records.lost().unwrap(), 0);
            assert!(read(&mut records).is_empty(), "each record is read once");
        }
    }

    /// A one-page ring written and read many times over: records straddle its end (24 bytes a
    /// slot do not divide a page) and come back whole, in order.
    #[rtbench_testkit::needs(root, linux_5_8, native)]
    #[test]
    fn records_wrap_around_the_ring_s_end_whole() {
        let mut records = ring(16, 1);
        let program = echo(&records);
        let per_round = 100;
        for round in 0..40 {
            write(&program, round * per_round, per_round, round);
            let want: Vec<_> = (round * per_round..(round + 1) * per_round).map(|i| (i, round)).collect();
            assert_eq!(read(&mut records), want, "round {round}");
        }
        assert_eq!(records.lost().unwrap(), 0);
    }

    /// A full ring drops the newest records and counts each: what fits is read, the rest is lost.
    #[rtbench_testkit::needs(root, linux_5_8, native)]
    #[test]
    fn a_full_ring_counts_what_it_drops() {
        let mut records = ring(16, 1);
        let program = echo(&records);
        write(&program, 0, 500, 1);
        let fits = (crate::sys::page_size() / 24) as u64;
        let got = read(&mut records);
        assert_eq!(got.len() as u64, fits, "a page holds {fits} records of 16 bytes and their headers");
        assert_eq!(got.last(), Some(&(fits - 1, 1)), "the oldest are kept");
        assert_eq!(records.lost().unwrap(), 500 - fits);
        write(&program, 500, 10, 2);
        assert_eq!(read(&mut records).len(), 10, "read, the ring takes records again");
        assert_eq!(records.lost().unwrap(), 500 - fits, "nothing more was lost");
        assert!(read(&mut records).is_empty());
        assert_eq!(records.lost().unwrap(), 500 - fits, "an empty read keeps the count");
        // Filled again: the count read with the records that filled it.
        write(&program, 600, 500, 3);
        assert_eq!(read(&mut records).len() as u64, fits);
        assert_eq!(records.lost().unwrap(), 2 * (500 - fits), "a second overflow counted");
    }

    /// A program that goes on after its record returns what it returns next, whether the record
    /// was handed on or counted lost; what fits is read, the rest counted, on both transports.
    #[rtbench_testkit::needs(root, linux_5_8, native)]
    #[test]
    fn a_program_that_goes_on_after_its_record_reaches_its_own_end() {
        let ring = ring(16, 1);
        let fits = (crate::sys::page_size() / 24) as u64;
        for (mut records, held) in [(ring, fits), (Records::queue(16, 8).unwrap(), 8)] {
            let mut a = Asm::default();
            a.mov(6, 1).op(LDX_DW, 1, 6, 0, 0).op(STX_DW, FP, 1, -16, 0).op(ST_DW, FP, 0, -8, 0);
            records.emit_and_go_on(&mut a, -16);
            a.mov_k(0, 7).op(EXIT, 0, 0, 0, 0);
            let program = crate::sys::bpf_raw_tp_program("rtbench_test", &a.finish()).expect("the program loads");
            for i in 0..held + 20 {
                assert_eq!(
                    crate::sys::bpf_run_raw_tp(&program, &[i]).unwrap(),
                    7,
                    "record {i}, {}",
                    records.transport()
                );
            }
            assert_eq!(read(&mut records).len() as u64, held, "{}", records.transport());
            assert_eq!(records.lost().unwrap(), 20, "{}", records.transport());
        }
    }
}
