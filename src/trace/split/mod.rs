//! `--split`: every timer sample split into how late the timer interrupt ran (IRQ latency) and
//! how much later the thread ran (scheduling latency), as `rtla timerlat` reports them, but
//! from two tracepoints every kernel has, not the timerlat tracer.
//!
//! An ftrace instance of rtbench's own (beside the breach tracer's) traces `hrtimer_start` of
//! the measuring threads and `hrtimer_expire_entry` of sleepers' timers on the measured CPUs.
//! A reader thread off those CPUs polls its `trace_pipe` without blocking: a blocked reader
//! would be woken from the measured CPUs by an irq_work interrupt per event, the very kind of
//! interference the run measures. The runner pairs the samples with the expiries ([`pair`]).

mod expiry;
pub mod pair;

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub use expiry::{Expiry, Seen};

use super::instance::Instance;
use super::journal::SplitTraced;
use super::owned::Owned;
use crate::model::SplitRecord;

/// Per-CPU buffer: at 10 kHz, two events of ~50 bytes per sample, a second's worth is 1 MB; the
/// reader empties it every [`POLL`].
const BUFFER_KB: u64 = 2048;
/// How often the reader empties the buffer.
const POLL: Duration = Duration::from_millis(10);
const EVENTS: [&str; 2] = ["timer/hrtimer_start", "timer/hrtimer_expire_entry"];
/// Only sleepers' timers: the tick and the others are not the threads'.
const SLEEPERS: &str = "function.function == hrtimer_wakeup";

/// The split's instance and its reader; held by the session.
pub struct SplitTracer {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    owned: Owned,
}

impl SplitTracer {
    /// Traces the sleeps on `cpus`; `Err` says why the run is not split.
    pub fn arm(cpus: &[usize]) -> Result<SplitTracer, String> {
        if !crate::sys::is_root() {
            return Err("tracing needs root".into());
        }
        let name = format!("rtbench-split-{}", std::process::id());
        let owned =
            Owned::make(&name, SplitTraced, |root| Instance::create_with(root, &name, cpus, BUFFER_KB, events))?;
        // Dropping `owned` removes the instance again.
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(owned.instance.dir.join("trace_pipe"))
            .map_err(|e| format!("cannot read the split's trace: {e}"))?;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st, avoid) = (Arc::clone(&seen), Arc::clone(&stop), cpus.to_vec());
        let reader = std::thread::Builder::new()
            .name("rtbench-split".into())
            .spawn(move || read(pipe, &s, &st, &avoid))
            .map_err(|e| format!("cannot start the split's reader: {e}"))?;
        Ok(SplitTracer { seen, stop, reader: Some(reader), owned })
    }

    /// Keeps the expiries of these threads only, and asks the kernel for their timers only.
    pub fn follow(&self, pids: &[i32]) {
        let pids_filter = pids.iter().map(|p| format!("common_pid == {p}")).collect::<Vec<_>>().join(" || ");
        let both = format!("{SLEEPERS} && ({pids_filter})");
        // A kernel that refuses a filter traces more, and the reader drops what is not ours.
        if !pids.is_empty() && self.owned.instance.filter(EVENTS[0], &both).is_err() {
            let _ = self.owned.instance.filter(EVENTS[0], &pids_filter);
        }
        lock(&self.seen).follow(pids);
    }

    /// What the reader has read, for the runner's pairing.
    pub fn seen(&self) -> Arc<Mutex<Seen>> {
        Arc::clone(&self.seen)
    }

    /// What the split came to, for the run's parameters.
    pub fn record(&self) -> SplitRecord {
        SplitRecord { lost_events: lock(&self.seen).lost_events, skipped: None }
    }
}

impl crate::restore::Guard for SplitTracer {
    fn name(&self) -> &'static str {
        "split tracer"
    }
}

impl Drop for SplitTracer {
    fn drop(&mut self) {
        // The reader closes the pipe before the instance goes.
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// The reader's lock; a reader that panicked left what it had read.
pub fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(|e| e.into_inner())
}

fn events(inst: &mut Instance) -> io::Result<()> {
    for e in EVENTS {
        inst.enable(e).map_err(|err| io::Error::new(err.kind(), format!("the {e} event is not available: {err}")))?;
        // A kernel that cannot filter on a symbol traces every timer; the matching still holds.
        let _ = inst.filter(e, SLEEPERS);
    }
    Ok(())
}

/// The reader: off the measured CPUs, every [`POLL`], everything the pipe holds; then how far
/// it has read. A last pass once told to stop.
fn read(mut pipe: File, seen: &Mutex<Seen>, stop: &AtomicBool, measured: &[usize]) {
    let free: Vec<usize> = crate::sysinfo::online_cpus().into_iter().filter(|c| !measured.contains(c)).collect();
    if !free.is_empty() {
        let _ = crate::sys::set_affinity(&free);
    }
    let mut armed = expiry::Armed::default();
    let (mut buf, mut carry) = (vec![0u8; 1 << 16], Vec::new());
    loop {
        let last = stop.load(Ordering::Relaxed);
        let from = crate::sys::now_ns();
        let drained = loop {
            match pipe.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => {
                    carry.extend_from_slice(&buf[..n]);
                    let Some(end) = carry.iter().rposition(|b| *b == b'\n') else { continue };
                    let mut s = lock(seen);
                    for l in carry[..end].split(|b| *b == b'\n') {
                        armed.line(std::str::from_utf8(l).unwrap_or(""), &mut s);
                    }
                    drop(s);
                    carry.drain(..=end);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        if drained {
            lock(seen).caught_up_ns = from;
        }
        if last || !drained {
            return;
        }
        std::thread::sleep(POLL);
    }
}
