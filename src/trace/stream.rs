//! An own instance's `trace_pipe` read as it fills, by a thread on the collector's CPUs (off the
//! measured ones where there are others) that polls without blocking: a blocked reader would be
//! woken from the measured CPUs by an irq_work interrupt per event, the very kind of
//! interference the run measures. Each line goes to the reader's parser, which keeps what it learns in a state the runner shares; after each pass,
//! the state learns how far the kernel's events have been read. The split and the noise
//! classification each hold one.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::ftrace::owned::Owned;

/// How often the reader empties the buffer.
const POLL: Duration = Duration::from_millis(10);

/// What a reader keeps of the lines it reads.
pub trait Lines: Send + 'static {
    /// Takes in one line of the trace.
    fn line(&mut self, l: &str);
    /// Every event the kernel committed before this CLOCK_MONOTONIC time has been read.
    fn caught_up(&mut self, ns: u64);
}

/// A thread on the collector's CPUs that fills a state every [`POLL`]; dropped, it makes a last
/// pass and ends. The split's BPF reader is one; [`Stream`] is one reading a trace pipe.
pub struct Reader<S> {
    state: Arc<Mutex<S>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Lines> Reader<S> {
    /// Runs `pass` from a thread named `name`, on the collector's CPUs `on` (empty: where the
    /// scheduler puts it): each pass reads what there is into the state (false: it cannot read
    /// any more), then the state learns how far.
    pub fn spawn(
        name: &str,
        state: S,
        on: &[usize],
        mut pass: impl FnMut(&Mutex<S>) -> bool + Send + 'static,
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
            loop {
                let last = st.load(Ordering::Relaxed);
                let from = crate::sys::now_ns();
                if !pass(&s) {
                    return;
                }
                lock(&s).caught_up(from);
                if last {
                    return;
                }
                std::thread::sleep(POLL);
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
}

impl<S> Drop for Reader<S> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.thread.take() {
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
        let mut pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(owned.instance.dir.join("trace_pipe"))
            .map_err(|e| format!("cannot read the trace: {e}"))?;
        let (mut buf, mut carry) = (vec![0u8; 1 << 16], Vec::new());
        let reader = Reader::spawn(name, state, on, move |s| drain(&mut pipe, &mut buf, &mut carry, s))?;
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

/// One pass: everything the pipe holds, line by line into `state`; false on an error.
fn drain<S: Lines>(pipe: &mut File, buf: &mut [u8], carry: &mut Vec<u8>, state: &Mutex<S>) -> bool {
    loop {
        match pipe.read(buf) {
            Ok(0) => return true,
            Ok(n) => {
                carry.extend_from_slice(&buf[..n]);
                let Some(end) = carry.iter().rposition(|b| *b == b'\n') else { continue };
                let mut s = lock(state);
                for l in carry[..end].split(|b| *b == b'\n') {
                    s.line(std::str::from_utf8(l).unwrap_or(""));
                }
                drop(s);
                carry.drain(..=end);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
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
    }

    /// The reader runs on the collector's CPUs, as the kernel says of its thread.
    #[test]
    fn a_reader_runs_on_the_collector_s_cpus() {
        let online = crate::sysinfo::online_cpus();
        let on = [*online.last().unwrap()];
        let reader = Reader::spawn("rtbench-test", Where::default(), &on, |s| {
            lock(s).0 = Some(crate::sys::gettid());
            true
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
}
