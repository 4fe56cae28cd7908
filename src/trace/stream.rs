//! An own instance's `trace_pipe` read as it fills, by a thread on the collector's CPUs (off the
//! measured ones where there are others) that polls without blocking: a blocked reader would be
//! woken from the measured CPUs by an irq_work interrupt per event, the very kind of
//! interference the run measures. Each line goes to the reader's parser, which keeps what it learns in a state the runner shares; after each pass,
//! the state learns how far the kernel's events have been read. The split and the noise
//! classification each hold one.
//!
//! A reader sleeps between passes as long as its buffer allows, from 10 ms up to 500 ms: where
//! CPUs share a host (an emulator, a VM's vCPUs on fewer cores), each wake-up of a housekeeping
//! CPU takes time from the measured ones (under TCG, the split read every 10 ms made the
//! timer's p99 about 1.5 x rtla's; paced, it is inside rtla's own spread).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::ftrace::owned::Owned;

/// The shortest and longest sleep of a reader between passes.
const FASTEST: Duration = Duration::from_millis(10);
const SLOWEST: Duration = Duration::from_millis(500);
/// How long the end of a run waits for a reader to read the last events: a reader that stopped
/// must not hold it.
const LAST_READ: Duration = Duration::from_secs(1);
/// How often [`Reader::catch_up`] looks whether the reader has read far enough.
const CATCH_UP_LOOK: Duration = Duration::from_millis(5);

/// What one pass read, against what the buffer holds (in the same unit: records, or bytes of
/// text against the buffer's bytes, which errs towards reading more often).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fill {
    pub read: usize,
    pub room: usize,
}

/// How long a reader sleeps before its next pass: twice as long after a pass that found its
/// buffer less than a sixteenth full, half as long after one that found it more than a quarter
/// full, from [`FASTEST`] (where it starts, not knowing the rate) to [`SLOWEST`]. A rate that
/// jumps sixteenfold between two passes can fill it; the programs count what they lose.
#[derive(Debug)]
struct Pace(Duration);

impl Pace {
    fn after(&mut self, fill: Fill) -> Duration {
        if fill.read.saturating_mul(4) > fill.room {
            self.0 = (self.0 / 2).max(FASTEST);
        } else if fill.read.saturating_mul(16) < fill.room {
            self.0 = (self.0 * 2).min(SLOWEST);
        }
        self.0
    }
}

/// What a reader keeps of the lines it reads.
pub trait Lines: Send + 'static {
    /// Takes in one line of the trace.
    fn line(&mut self, l: &str);
    /// Every event the kernel committed before this CLOCK_MONOTONIC time has been read.
    fn caught_up(&mut self, ns: u64);
    /// How far, as last told by [`Lines::caught_up`].
    fn read_to(&self) -> u64;
}

/// A thread on the collector's CPUs that fills a state at its [`Pace`]; dropped, it makes a
/// last pass and ends. The split's BPF reader is one; [`Stream`] is one reading a trace pipe.
pub struct Reader<S> {
    state: Arc<Mutex<S>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Lines> Reader<S> {
    /// Runs `pass` from a thread named `name`, on the collector's CPUs `on` (empty: where the
    /// scheduler puts it): each pass reads what there is into the state and says how full the
    /// buffer was (None: it cannot read any more), then the state learns how far.
    pub fn spawn(
        name: &str,
        state: S,
        on: &[usize],
        mut pass: impl FnMut(&Mutex<S>) -> Option<Fill> + Send + 'static,
    ) -> Result<Reader<S>, String> {
        let state = Arc::new(Mutex::new(state));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st, on) = (Arc::clone(&state), Arc::clone(&stop), on.to_vec());
        let body = move || {
            if !on.is_empty() {
                // Where it cannot go there, it reads from where it is: the run says where the
                // collector was allowed, and its main thread was pinned the same way.
                let _ = crate::sys::set_affinity(&on);
            }
            let mut pace = Pace(FASTEST);
            loop {
                let last = st.load(Ordering::Relaxed);
                let from = crate::sys::now_ns();
                let Some(fill) = pass(&s) else { return };
                lock(&s).caught_up(from);
                if last {
                    return;
                }
                // Woken early by `catch_up` and by the drop.
                std::thread::park_timeout(pace.after(fill));
            }
        };
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(body)
            .map_err(|e| format!("cannot start the trace's reader: {e}"))?;
        Ok(Reader { state, stop, thread: Some(thread) })
    }

    /// What the reader has read.
    pub fn state(&self) -> Arc<Mutex<S>> {
        Arc::clone(&self.state)
    }

    /// Wakes the reader until it has read every event committed before `ns` (CLOCK_MONOTONIC),
    /// or [`LAST_READ`] has passed.
    pub fn catch_up(&self, ns: u64) {
        let since = std::time::Instant::now();
        while lock(&self.state).read_to() < ns && since.elapsed() < LAST_READ {
            if let Some(r) = &self.thread {
                r.thread().unpark();
            }
            std::thread::sleep(CATCH_UP_LOOK);
        }
    }
}

impl<S> Drop for Reader<S> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.thread.take() {
            r.thread().unpark();
            let _ = r.join();
        }
    }
}

/// An instance and the thread reading it; dropped, the reader ends (closing the pipe) before
/// the instance goes: the fields drop in this order.
pub struct Stream<S> {
    reader: Reader<S>,
    pub owned: Owned,
}

impl<S: Lines> Stream<S> {
    /// Reads `owned`'s pipe into `state` from a thread named `name`, on the collector's CPUs `on`.
    pub fn start(owned: Owned, state: S, name: &str, on: &[usize]) -> Result<Stream<S>, String> {
        let mut pipe = LinePipe::open(&owned.instance.dir.join("trace_pipe"))
            .map_err(|e| format!("cannot read the trace: {e}"))?;
        let room = owned.instance.room;
        let reader = Reader::spawn(name, state, on, move |s| {
            let read = pipe.drain(|text| {
                let mut s = lock(s);
                text.lines().for_each(|l| s.line(l));
            })?;
            Some(Fill { read, room })
        })?;
        Ok(Stream { reader, owned })
    }

    /// What the reader has read.
    pub fn state(&self) -> Arc<Mutex<S>> {
        self.reader.state()
    }
}

/// Where a tracer's events come from: its BPF programs where they load, else an ftrace instance
/// of its own (and why BPF could not load). The split and the classification each hold one.
pub enum Feed<S> {
    /// The reader, and how the records travel (`ringbuf` or `queue`).
    Bpf(Reader<S>, &'static str),
    Ftrace(Stream<S>, String),
}

impl<S: Lines> Feed<S> {
    /// The programs `bpf` loads; where they cannot load, the instance `instance` makes (`Err`
    /// says both reasons when neither can). Root is needed either way.
    pub fn arm(
        bpf: impl FnOnce() -> Result<(Reader<S>, &'static str), String>,
        instance: impl FnOnce() -> Result<Stream<S>, String>,
    ) -> Result<Feed<S>, String> {
        if !crate::sys::is_root() {
            return Err("tracing needs root".into());
        }
        match bpf() {
            Ok((reader, transport)) => Ok(Feed::Bpf(reader, transport)),
            Err(why) => Ok(Feed::Ftrace(instance().map_err(|e| format!("{why}; {e}"))?, why)),
        }
    }

    /// What the reader has read.
    pub fn state(&self) -> Arc<Mutex<S>> {
        match self {
            Feed::Bpf(r, _) => r.state(),
            Feed::Ftrace(s, _) => s.state(),
        }
    }

    /// [`Reader::catch_up`] of whichever reader it is.
    pub fn catch_up(&self, ns: u64) {
        match self {
            Feed::Bpf(r, _) => r.catch_up(ns),
            Feed::Ftrace(s, _) => s.reader.catch_up(ns),
        }
    }

    /// Where the events came from, as a run stores it: `programs` (what the BPF programs are
    /// on), or the instance and why BPF could not load.
    pub fn source(&self, programs: &str) -> String {
        match self {
            Feed::Bpf(..) => format!("BPF on {programs}"),
            Feed::Ftrace(_, why) => format!("an ftrace instance (BPF: {why})"),
        }
    }

    /// Whether the events come from BPF programs.
    pub fn bpf(&self) -> bool {
        matches!(self, Feed::Bpf(..))
    }

    /// How the BPF programs' records travel, as a run stores it: `ringbuf` (read from shared
    /// memory) or `queue` (a system call a record, kernels before 5.8); none from ftrace.
    pub fn transport(&self) -> Option<String> {
        match self {
            Feed::Bpf(_, transport) => Some(transport.to_string()),
            Feed::Ftrace(..) => None,
        }
    }
}

/// The reader's lock; a reader that panicked left what it had read.
pub fn lock<S>(state: &Mutex<S>) -> MutexGuard<'_, S> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A trace pipe read without waiting, in whole lines: the split's and the classification's
/// instances, the timerlat source's per-CPU buffers.
pub struct LinePipe {
    pipe: File,
    buf: Vec<u8>,
    /// The start of a line a read cut short, completed by the next.
    carry: Vec<u8>,
}

impl LinePipe {
    pub fn open(path: &Path) -> io::Result<LinePipe> {
        let pipe = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
        Ok(LinePipe { pipe, buf: vec![0u8; 1 << 16], carry: Vec::new() })
    }

    /// Everything the pipe holds: each read's whole lines to `lines`, as one text; how many
    /// bytes, None on an error.
    pub fn drain(&mut self, mut lines: impl FnMut(&str)) -> Option<usize> {
        let mut read = 0;
        loop {
            match self.pipe.read(&mut self.buf) {
                Ok(0) => return Some(read),
                Ok(n) => {
                    read += n;
                    self.carry.extend_from_slice(&self.buf[..n]);
                    let Some(end) = self.carry.iter().rposition(|b| *b == b'\n') else { continue };
                    lines(&String::from_utf8_lossy(&self.carry[..end]));
                    self.carry.drain(..=end);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(read),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
    }
}

/// `CPU:1 [LOST 20 EVENTS]`: how many.
pub fn lost(l: &str) -> Option<u64> {
    let rest = l.strip_prefix("CPU:")?;
    let n = rest.split_once("[LOST ")?.1.split_once(' ')?.0;
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state that keeps where its reader ran.
    #[derive(Default)]
    struct Where(Option<i32>);

    impl Lines for Where {
        fn line(&mut self, _: &str) {}
        fn caught_up(&mut self, _: u64) {}
        fn read_to(&self) -> u64 {
            0
        }
    }

    /// The reader runs on the collector's CPUs, as the kernel says of its thread.
    #[test]
    fn a_reader_runs_on_the_collector_s_cpus() {
        let online = crate::sysinfo::online_cpus();
        let on = [*online.last().unwrap()];
        let reader = Reader::spawn("rtbench-test", Where::default(), &on, |s| {
            lock(s).0 = Some(crate::sys::gettid());
            Some(Fill { read: 0, room: 1 })
        })
        .unwrap();
        let state = reader.state();
        let tid = loop {
            if let Some(tid) = lock(&state).0 {
                break tid;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
        let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
        drop(reader);
        assert_eq!(allowed, on[0].to_string(), "the reader's thread is allowed on CPU {} only", on[0]);
    }

    /// A line a read cuts short waits for the read that completes it; each read's whole lines
    /// come as one text; an empty pipe gives nothing and is no error.
    #[test]
    fn a_pipe_is_read_in_whole_lines() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("trace_pipe");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let mut pipe = LinePipe::open(&fifo).unwrap();
        let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let mut texts = Vec::new();
        assert_eq!(pipe.drain(|t| texts.push(t.to_string())), Some(0));
        writer.write_all(b"first\nsec").unwrap();
        assert_eq!(pipe.drain(|t| texts.push(t.to_string())), Some(9));
        writer.write_all(b"ond\nthird\n").unwrap();
        assert_eq!(pipe.drain(|t| texts.push(t.to_string())), Some(10));
        assert_eq!(texts, ["first", "second\nthird"]);
    }

    /// The pace doubles while the buffer stays nearly empty, up to the slowest; halves when a
    /// pass finds it over a quarter full, down to the fastest; and holds in between.
    #[test]
    fn a_reader_sleeps_longer_while_its_buffer_stays_nearly_empty() {
        let mut pace = Pace(FASTEST);
        let empty = Fill { read: 10, room: 1000 };
        let slept: Vec<u64> = (0..8).map(|_| pace.after(empty).as_millis() as u64).collect();
        assert_eq!(slept, [20, 40, 80, 160, 320, 500, 500, 500]);
        assert_eq!(pace.after(Fill { read: 100, room: 1000 }), SLOWEST, "a tenth full: held");
        assert_eq!(pace.after(Fill { read: 300, room: 1000 }), SLOWEST / 2, "over a quarter: halved");
        assert_eq!(pace.after(Fill { read: 1000, room: 1000 }), SLOWEST / 4);
        for _ in 0..10 {
            pace.after(Fill { read: 1000, room: 1000 });
        }
        assert_eq!(pace.0, FASTEST, "never below the fastest");
        assert_eq!(Pace(FASTEST).after(Fill { read: 0, room: 0 }), FASTEST, "no room: as fast as it goes");
    }

    /// How far a reader read, and how many passes it made.
    #[derive(Default)]
    struct Passes {
        read_to: u64,
        passes: u32,
    }

    impl Lines for Passes {
        fn line(&mut self, _: &str) {}
        fn caught_up(&mut self, ns: u64) {
            self.read_to = ns;
            self.passes += 1;
        }
        fn read_to(&self) -> u64 {
            self.read_to
        }
    }

    /// A reader with nothing to read slows down to a few passes a second, yet `catch_up` has it
    /// read at once and the drop ends it at once, not at its next pass.
    #[test]
    fn a_slow_reader_catches_up_when_asked() {
        let reader =
            Reader::spawn("rtbench-test", Passes::default(), &[], |_| Some(Fill { read: 0, room: 1000 })).unwrap();
        let state = reader.state();
        std::thread::sleep(Duration::from_millis(1500));
        let passes = lock(&state).passes;
        // Sleeps of 10, 20, 40 ... 320, then 500 ms: 8 passes in 1.5 s; every 10 ms would be 150.
        assert!((2..=12).contains(&passes), "{passes} passes in 1.5 s");
        // Just after a pass: the reader is in a sleep of 500 ms.
        while lock(&state).passes == passes {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (now, asked) = (crate::sys::now_ns(), std::time::Instant::now());
        reader.catch_up(now);
        assert!(lock(&state).read_to >= now, "caught up, not given up on");
        assert!(asked.elapsed() < Duration::from_millis(400), "woken, not at its next pass: {:?}", asked.elapsed());
        let (passes, dropped) = (lock(&state).passes, std::time::Instant::now());
        drop(reader);
        assert!(dropped.elapsed() < Duration::from_millis(400), "ended at once: {:?}", dropped.elapsed());
        assert!(lock(&state).passes > passes, "a last pass");
    }
}
