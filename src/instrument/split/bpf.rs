//! The split's expiries from one small BPF program on the raw tracepoint
//! `hrtimer_expire_entry`, built here as bytecode: measured here, an ftrace event on the
//! timer-interrupt path costs the woken thread ~2 µs (a cold ring buffer on a freshly woken
//! virtual CPU), the program almost nothing.
//!
//! The expiring hrtimer says all the split needs: a sleep's timer runs `hrtimer_wakeup` and is
//! the first member of a `struct hrtimer_sleeper`, whose `task` is the sleeping thread; its
//! `_softexpires` is the time the thread asked for (offsets from the kernel's BTF,
//! [`btf`](super::btf)). So nothing is kept between a timer's start and its expiry, and no
//! program runs on `hrtimer_start`, which every timer started anywhere on the machine paid for.
//! Every other timer's expiry costs one read. Expiries of rtbench's threads are put (thread,
//! due, now) into a ring buffer ([`Records`]) for the reader, which reads it off the measured
//! CPUs every few milliseconds ([`Reader`]).

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use std::sync::Arc;

use super::aggregate::Hist;
use super::btf::{kernel_symbol, Layout};
use super::expiry::Seen;
use crate::trace::bpf::asm::*;
use crate::trace::bpf::records::{word, Records};
use crate::trace::stream::{lock, Fill, Reader};

/// Expiries waiting for the reader, which takes them every 10 to 500 ms, sooner when they fill
/// a quarter of this (at 128 threads of 10 kHz each, a pass every 10 ms takes a fifth).
const QUEUED: u32 = 65_536;

/// A record: thread (its pid in the low half), due, now.
const RECORD: usize = 24;

/// The program and its maps, attached; all of it goes with the fds.
pub struct Programs {
    records: Records,
    program: OwnedFd,
    _link: OwnedFd,
}

impl Programs {
    /// Loads and attaches the program for the threads of process `tgid`, counting into `hist`
    /// the expiries it aggregates.
    pub fn attach(tgid: u32, hist: &Hist) -> Result<Programs, String> {
        use crate::sys::{bpf_attach_raw_tp, bpf_raw_tp_program};
        let layout = Layout::of_this_kernel()?;
        let wakeup = kernel_symbol("hrtimer_wakeup").ok_or("the kernel hides hrtimer_wakeup's address")?;
        let io = |e: std::io::Error| e.to_string();
        let records = Records::make(RECORD, QUEUED)?;
        let expire =
            bpf_raw_tp_program("rtbench_split", &on_expire(&layout, wakeup, tgid, &records, hist)).map_err(io)?;
        let link = bpf_attach_raw_tp(c"hrtimer_expire_entry", &expire).map_err(io)?;
        Ok(Programs { records, program: expire, _link: link })
    }

    /// Reads every expiry waiting into `seen`; Err when a map cannot be read.
    fn drain(&mut self, seen: &Mutex<Seen>) -> std::io::Result<Fill> {
        let mut seen = lock(seen);
        let n = self.records.drain(|rec| seen.expired(word(rec, 0) as u32 as i32, word(rec, 1), word(rec, 2)))?;
        seen.records += n as u64;
        seen.lost_events = self.records.lost()?;
        seen.missed = crate::sys::bpf_prog_misses(&self.program)?;
        Ok(self.records.fill(n))
    }
}

/// Attaches the program and reads it from a thread named `name`, on the collector's CPUs `on`;
/// with how its records travel (`ringbuf` or `queue`); `hist` gets the threads' histograms.
pub fn start(name: &str, on: &[usize], hist: &mut Option<Arc<Hist>>) -> Result<(Reader<Seen>, &'static str), String> {
    let counts = Arc::new(Hist::make()?);
    let mut programs =
        Programs::attach(std::process::id(), &counts).map_err(|e| format!("cannot load the BPF program: {e}"))?;
    *hist = Some(counts);
    let transport = programs.records.transport();
    // The program goes when the reader ends.
    let reader = Reader::spawn(name, Seen::default(), on, move |seen| programs.drain(seen).ok())?;
    Ok((reader, transport))
}

/// `hrtimer_expire_entry(hrtimer, now)`: for a sleep's timer (its function `hrtimer_wakeup`)
/// whose sleeper is a thread of `tgid`, (pid, due, *now) put into `records` (or counted lost).
/// Every other timer costs one read. The record's first word holds the task's `pid` in its low
/// half (little-endian; the reader takes no more of it). An expiry `hist` aggregates is counted
/// there instead.
fn on_expire(l: &Layout, wakeup: u64, tgid: u32, records: &Records, hist: &Hist) -> Vec<u64> {
    let mut a = Asm::default();
    // r7: the hrtimer, r8: &now. The record at fp-24: pid, due, now.
    a.mov(6, 1).op(LDX_DW, 7, 6, 0, 0).op(LDX_DW, 8, 6, 8, 0);
    a.read_kernel(-8, 7, l.function).exit_if(0, false, 0);
    a.op(LDX_DW, 1, FP, -8, 0).load64(2, wakeup).exit_if_ne(1, 2);
    a.read_kernel(-8, 7, l.task).exit_if(0, false, 0).op(LDX_DW, 9, FP, -8, 0);
    a.read_kernel(-8, 9, l.tgid).exit_if(0, false, 0);
    a.op(LDX_W, 1, FP, -8, 0).exit_if(1, false, tgid as i32);
    a.read_kernel(-24, 9, l.pid).exit_if(0, false, 0);
    a.read_kernel(-16, 7, l.softexpires).exit_if(0, false, 0);
    a.read_kernel(-8, 8, 0).exit_if(0, false, 0);
    for to in hist.count(&mut a) {
        a.land(to);
    }
    records.emit(&mut a, -24);
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another process's sleeps expire on the same tracepoint: they are not queued.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn another_process_s_sleep_is_not_queued() {
        let mut programs = crate::sys::attached(|| Programs::attach(std::process::id(), &Hist::make()?));
        let mut child = std::process::Command::new("sleep").arg("0.005").spawn().expect("sleep starts");
        let status = child.wait();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let seen = Mutex::new(Seen::default());
        programs.drain(&seen).unwrap();
        assert!(status.is_ok_and(|s| s.success()), "sleep ran");
        let seen = lock(&seen);
        assert!(seen.by_pid.contains_key(&crate::sys::gettid()), "this thread's sleep is there");
        let theirs = child.id() as i32;
        assert!(!seen.by_pid.contains_key(&theirs), "the child's sleep is not: {:?}", seen.by_pid.keys());
    }

    /// The programs as the kernel runs them: this thread's own sleep comes back as an expiry,
    /// due when it asked, handled no earlier.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn a_sleep_of_this_thread_comes_back_as_its_expiry() {
        let mut programs = crate::sys::attached(|| Programs::attach(std::process::id(), &Hist::make()?));
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

    /// Aggregated, this thread's sleeps are counted in its histogram and not handed on: the
    /// count grows, exact extremes within it, and the reader gets no record of them. An expiry
    /// the kernel did not run the program for (it was running on that CPU: a soft timer's
    /// expiry interrupted by this one's) is neither, and counted as missed.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn an_aggregated_sleep_is_counted_in_the_kernel_not_handed_on() {
        let hist = Arc::new(Hist::make().unwrap());
        let mut programs = crate::sys::attached(|| Programs::attach(std::process::id(), &hist));
        let me = crate::sys::gettid();
        let seen = Mutex::new(Seen::default());
        let sleep_five = |programs: &mut Programs| {
            let (before, missed_before) = (handed_on(&seen, me), lock(&seen).missed.unwrap_or(0));
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            programs.drain(&seen).unwrap();
            (handed_on(&seen, me) - before, lock(&seen).missed.unwrap_or(0) - missed_before)
        };
        programs.drain(&seen).unwrap();
        hist.aggregate(&[me], super::super::aggregate::BOUND_NS).unwrap();
        let (late, missed) = sleep_five(&mut programs);
        let snap = hist.read(me).expect("this thread has a histogram");
        let each_once = snap.count + late;
        assert!(each_once <= 5 && each_once + missed >= 5, "counted {}, handed on {late}, missed {missed}", snap.count);
        assert_eq!(snap.buckets.iter().sum::<u64>(), snap.count);
        assert!(snap.count == 0 || (snap.min <= snap.max && snap.max < super::super::aggregate::BOUND_NS));
        assert_eq!(hist.read(me + 1_000_000), None, "another thread has none");
        // A threshold of 1 ns (a breach threshold below every expiry): each one handed on.
        hist.aggregate(&[me], 1).unwrap();
        let (handed, missed) = sleep_five(&mut programs);
        assert_eq!(hist.read(me).map(|s| s.count), Some(0), "none counted");
        assert!(handed <= 5 && handed + missed >= 5, "all five handed on: {handed} ({missed} missed)");
    }

    fn handed_on(seen: &Mutex<Seen>, pid: i32) -> u64 {
        lock(seen).by_pid.get(&pid).map_or(0, |e| e.len()) as u64
    }
}
