//! Per-thread recording without stopping the thread.
//!
//! A measuring thread writes into its *active* [`Buffer`]. To checkpoint, the runner offers an
//! empty buffer over a one-slot channel and raises a flag; the thread notices the flag between
//! samples (one relaxed atomic load), swaps, and hands the full buffer back. Raw samples, when
//! kept, travel separately in fixed-size chunks that the runner drains and recycles, so a fast
//! probe never grows a vector on its timed path. The timed path never locks or does I/O.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use crate::model::EnvPoint;
use crate::stats::Stats;

/// Samples a buffer keeps as taken; more go into its own statistics. A second of a 10 kHz
/// thread fits: the runner collects every second, or every 100 ms with the live view.
const PENDING: usize = 16_384;

/// What a thread accumulated since the last swap.
///
/// The samples travel as taken, not as a histogram: the runner records them into its totals
/// (a few ns each), where merging a histogram would cost the same whatever the count (its
/// 39 000 buckets added, then zeroed for the buffer's reuse), a cost paid per thread each
/// collection (issue 38: the collector's time per measured CPU). Only past `PENDING` do they
/// go into the buffer's own histogram.
#[derive(Debug)]
pub struct Buffer {
    pending: Vec<u64>,
    /// The samples past `pending`'s room, and the missed periods.
    overflow: Stats,
    /// Completed envelope intervals, oldest first.
    pub envelope: Vec<EnvPoint>,
    /// The most recent sample (the live view's "Act").
    pub last: u64,
}

impl Default for Buffer {
    fn default() -> Self {
        // Room made now, not on the measuring thread's first samples.
        Buffer { pending: Vec::with_capacity(PENDING), overflow: Stats::default(), envelope: Vec::new(), last: 0 }
    }
}

impl Buffer {
    #[inline(always)]
    fn record(&mut self, ns: u64) {
        if self.pending.len() < PENDING {
            self.pending.push(ns);
        } else {
            self.overflow.record(ns);
        }
    }

    /// Samples held.
    pub fn count(&self) -> u64 {
        self.pending.len() as u64 + self.overflow.count
    }

    /// Missed periods counted.
    pub fn overruns(&self) -> u64 {
        self.overflow.overruns
    }

    /// Adds everything held to `total`.
    pub fn add_to(&self, total: &mut Stats) {
        total.merge(&self.overflow);
        total.record_all(&self.pending);
    }

    /// Everything held, as statistics of their own.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        self.add_to(&mut s);
        s
    }

    fn clear(&mut self) {
        self.pending.clear();
        self.overflow.reset();
        self.envelope.clear();
    }
}

/// Raw samples (time offset ns, latency ns) per chunk.
pub const CHUNK: usize = 1 << 16;
/// A chunk of raw samples.
type Chunk = Vec<(u64, u64)>;
/// Chunks in flight per thread before the thread waits for the runner (a synthetic probe can
/// outrun the disk; a real one at 10 kHz fills one chunk in 6 s).
const CHUNKS_IN_FLIGHT: usize = 64;

/// Told of every sample over a threshold (`--breach`): called on the measuring thread, so it
/// must return at once.
pub trait BreachWatch: Send + Sync {
    fn breached(&self, thread: u32, t_ns: u64, latency_ns: u64);
}

/// The measuring thread's side.
pub struct Recorder {
    active: Box<Buffer>,
    current: EnvPoint,
    env_interval_ns: u64,
    /// Where the current envelope interval ends (exclusive).
    env_end: u64,
    asked: Arc<AtomicBool>,
    spare: Receiver<Box<Buffer>>,
    full: SyncSender<Box<Buffer>>,
    /// Raw samples, when a sample log was asked for.
    chunk: Option<Chunk>,
    /// Filled chunks out, empty ones back.
    chunks: Option<(SyncSender<Chunk>, Receiver<Chunk>)>,
    /// Raw samples still to hand over (u64::MAX: all of them).
    raw_left: u64,
    /// Samples above this are breaches (u64::MAX: none are).
    breach_ns: u64,
    breach: Option<(std::sync::Arc<dyn BreachWatch>, u32)>,
    /// The thread, once it has paused: the runner wakes it when it asks for the buffer.
    sleeper: Arc<std::sync::OnceLock<std::thread::Thread>>,
}

/// The runner's side of one thread's recorder.
pub struct Collector {
    spare: Option<Box<Buffer>>,
    asked: Arc<AtomicBool>,
    sleeper: Arc<std::sync::OnceLock<std::thread::Thread>>,
    offer: SyncSender<Box<Buffer>>,
    full: Receiver<Box<Buffer>>,
    chunks: Option<(Receiver<Chunk>, SyncSender<Chunk>)>,
}

/// Which raw samples a thread hands over besides its statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raw {
    /// Every sample (for the sample log).
    All,
    /// The first n (for drawing short runs sample by sample); 0: none.
    First(u64),
}

/// Makes a connected recorder (for the thread) and collector (for the runner).
pub fn pair(env_interval_ns: u64, raw: Raw) -> (Recorder, Collector) {
    let (offer, spare) = sync_channel(1);
    let (full_tx, full_rx) = sync_channel(1);
    let asked = Arc::new(AtomicBool::new(false));
    let sleeper = Arc::new(std::sync::OnceLock::new());
    let raw_left = match raw {
        Raw::All => u64::MAX,
        Raw::First(n) => n,
    };
    let (chunk, rec_chunks, col_chunks) = if raw_left > 0 {
        let (filled_tx, filled_rx) = sync_channel(CHUNKS_IN_FLIGHT);
        let (pool_tx, pool_rx) = sync_channel(CHUNKS_IN_FLIGHT);
        let first = Vec::with_capacity(CHUNK.min(raw_left as usize));
        // The chunk the thread takes at its first hand-over (the first checkpoint, a second in)
        // is made here, off the timed path: with memory locked (MCL_FUTURE), making it there
        // faults in a whole chunk between two samples (1 MiB: ~0.4 ms on a VM's CPU), a gap no
        // trace explains, which noise --classify counts as HW.
        let _ = pool_tx.try_send(Vec::with_capacity(first.capacity()));
        (Some(first), Some((filled_tx, pool_rx)), Some((filled_rx, pool_tx)))
    } else {
        (None, None, None)
    };
    let rec = Recorder {
        active: Box::default(),
        current: EnvPoint::empty(0),
        env_interval_ns: env_interval_ns.max(1),
        env_end: env_interval_ns.max(1),
        asked: Arc::clone(&asked),
        spare,
        full: full_tx,
        chunk,
        chunks: rec_chunks,
        raw_left,
        breach_ns: u64::MAX,
        breach: None,
        sleeper: Arc::clone(&sleeper),
    };
    (rec, Collector { spare: Some(Box::default()), asked, sleeper, offer, full: full_rx, chunks: col_chunks })
}

impl Recorder {
    /// Tells `watch` of every sample above `threshold_ns`, as thread `thread`.
    pub fn watch_breaches(&mut self, threshold_ns: u64, watch: std::sync::Arc<dyn BreachWatch>, thread: u32) {
        self.breach_ns = threshold_ns;
        self.breach = Some((watch, thread));
    }

    /// Records one sample taken `t_ns` after the run's start.
    #[inline(always)]
    pub fn record(&mut self, t_ns: u64, latency_ns: u64) {
        // The one cost of `--breach` on the timed path: a compare.
        if latency_ns > self.breach_ns {
            self.breached(t_ns, latency_ns);
        }
        self.active.record(latency_ns);
        self.active.last = latency_ns;
        // A compare instead of a division per sample: the interval changes rarely.
        if t_ns >= self.env_end || t_ns < self.env_end - self.env_interval_ns {
            self.roll_envelope(t_ns / self.env_interval_ns);
        }
        let c = &mut self.current;
        c.count += 1;
        c.sum += latency_ns;
        c.min = c.min.min(latency_ns);
        c.max = c.max.max(latency_ns);
        if let Some(chunk) = self.chunk.as_mut() {
            chunk.push((t_ns, latency_ns));
            self.raw_left -= 1;
            if chunk.len() == CHUNK || self.raw_left == 0 {
                self.hand_over_chunk();
                if self.raw_left == 0 {
                    self.chunk = None;
                }
            }
        }
        if self.asked.load(Ordering::Relaxed) {
            self.swap();
        }
    }

    /// Sleeps until `deadline_ns` (CLOCK_MONOTONIC), handing the buffer over whenever the runner
    /// asks meanwhile. The runner waits 5 ms for a buffer: a thread paused longer would miss
    /// every collection made during its pauses, and where the measuring threads hold every CPU
    /// the runner only runs in their pauses (a monitor's first window closed empty).
    pub fn pause_until(&mut self, deadline_ns: u64) {
        let _ = self.sleeper.set(std::thread::current());
        loop {
            if self.asked.load(Ordering::Relaxed) {
                self.swap();
            }
            let now = crate::sys::now_ns();
            if now >= deadline_ns {
                return;
            }
            std::thread::park_timeout(Duration::from_nanos(deadline_ns - now));
        }
    }

    /// Counts a missed period (the probe skipped ahead).
    #[inline(always)]
    pub fn overrun(&mut self) {
        self.active.overflow.overruns += 1;
    }

    #[cold]
    fn breached(&self, t_ns: u64, latency_ns: u64) {
        if let Some((watch, thread)) = &self.breach {
            watch.breached(*thread, t_ns, latency_ns);
        }
    }

    #[cold]
    fn roll_envelope(&mut self, index: u64) {
        if self.current.count > 0 {
            self.active.envelope.push(self.current);
        }
        self.current = EnvPoint::empty(index);
        self.env_end = (index + 1).saturating_mul(self.env_interval_ns);
    }

    #[cold]
    fn swap(&mut self) {
        match self.spare.try_recv() {
            Ok(empty) => {
                self.asked.store(false, Ordering::Relaxed);
                let full = std::mem::replace(&mut self.active, empty);
                // The collector keeps its receiver for as long as the thread runs.
                let _ = self.full.send(full);
                // Raw samples reach the log at every checkpoint too, not only when a chunk fills.
                if self.chunk.as_ref().is_some_and(|c| !c.is_empty()) {
                    self.hand_over_chunk();
                }
            }
            Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {}
        }
    }

    /// Passes the current chunk of raw samples to the runner and takes an empty one.
    #[cold]
    fn hand_over_chunk(&mut self) {
        let (Some(chunk), Some((filled, pool))) = (self.chunk.as_mut(), self.chunks.as_ref()) else { return };
        let fresh = pool.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK.min(self.raw_left as usize)));
        let full = std::mem::replace(chunk, fresh);
        // Waits only when the runner is CHUNKS_IN_FLIGHT chunks behind: samples are never dropped.
        let _ = filled.send(full);
        // A full chunk is work for the runner, which may be asleep until its next checkpoint.
        crate::sys::wake();
    }

    /// Ends recording: the partial envelope interval joins the last buffer, which is returned,
    /// and the last raw samples go to the runner.
    pub fn finish(mut self) -> Box<Buffer> {
        if self.current.count > 0 {
            self.active.envelope.push(self.current);
        }
        if self.chunk.as_ref().is_some_and(|c| !c.is_empty()) {
            self.hand_over_chunk();
        }
        self.active
    }
}

impl Collector {
    /// Offers an empty buffer to the thread if the last one came back (non-blocking).
    pub fn request(&mut self) {
        if let Some(buf) = self.spare.take() {
            match self.offer.try_send(buf) {
                Ok(()) => {
                    self.asked.store(true, Ordering::Relaxed);
                    // A paused thread hands it over now; a running one at its next sample.
                    if let Some(t) = self.sleeper.get() {
                        t.unpark();
                    }
                }
                Err(e) => self.spare = Some(e.into_inner()),
            }
        }
    }

    /// Hands every chunk of raw samples the thread has filled to `write`, oldest first, and
    /// gives the emptied chunks back for reuse.
    pub fn drain_samples(
        &mut self,
        mut write: impl FnMut(&[(u64, u64)]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Some((filled, pool)) = self.chunks.as_ref() else { return Ok(()) };
        while let Ok(mut chunk) = filled.try_recv() {
            write(&chunk)?;
            chunk.clear();
            let _ = pool.try_send(chunk);
        }
        Ok(())
    }

    /// Takes the full buffer the thread handed back, waiting up to `wait`. The caller must pass
    /// it to [`Collector::recycle`] after merging it.
    pub fn take(&mut self, wait: Duration) -> Option<Box<Buffer>> {
        self.full.recv_timeout(wait).ok()
    }

    /// Returns a merged buffer for reuse.
    pub fn recycle(&mut self, mut buf: Box<Buffer>) {
        buf.clear();
        self.spare = Some(buf);
    }

    /// After the thread has ended: a buffer it swapped out but that was not yet taken.
    pub fn drain(&mut self) -> Option<Box<Buffer>> {
        self.full.try_recv().ok()
    }
}

trait IntoInner<T> {
    fn into_inner(self) -> T;
}

impl<T> IntoInner<T> for std::sync::mpsc::TrySendError<T> {
    fn into_inner(self) -> T {
        match self {
            std::sync::mpsc::TrySendError::Full(t) | std::sync::mpsc::TrySendError::Disconnected(t) => t,
        }
    }
}

#[cfg(test)]
mod tests;
