//! Per-thread recording without stopping the thread.
//!
//! A measuring thread writes into its *active* [`Buffer`]. To checkpoint, the runner offers an
//! empty buffer over a one-slot channel; the thread notices it between samples (one atomic load),
//! swaps, and hands the full buffer back. The timed path never locks, allocates (except when a
//! raw-sample vector outgrows its reserve) or does I/O.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::time::Duration;

use crate::stats::Stats;

pub mod samplelog;

/// One point of the per-interval envelope: what one thread saw during one interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvPoint {
    /// Interval number since the start of the run (time offset / envelope interval).
    pub index: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub count: u64,
}

impl EnvPoint {
    fn new(index: u64) -> Self {
        EnvPoint { index, min: u64::MAX, max: 0, sum: 0, count: 0 }
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// What a thread accumulated since the last swap.
#[derive(Debug, Default)]
pub struct Buffer {
    pub stats: Stats,
    /// Completed envelope intervals, oldest first.
    pub envelope: Vec<EnvPoint>,
    /// Raw samples (time offset ns, latency ns), only when a sample log was asked for.
    pub samples: Vec<(u64, u64)>,
    /// The most recent sample (the live view's "Act").
    pub last: u64,
}

impl Buffer {
    fn clear(&mut self) {
        self.stats.reset();
        self.envelope.clear();
        self.samples.clear();
    }
}

/// The measuring thread's side.
pub struct Recorder {
    active: Box<Buffer>,
    current: EnvPoint,
    env_interval_ns: u64,
    keep_samples: bool,
    spare: Receiver<Box<Buffer>>,
    full: SyncSender<Box<Buffer>>,
}

/// The runner's side of one thread's recorder.
pub struct Collector {
    spare: Option<Box<Buffer>>,
    offer: SyncSender<Box<Buffer>>,
    full: Receiver<Box<Buffer>>,
}

/// Makes a connected recorder (for the thread) and collector (for the runner).
pub fn pair(env_interval_ns: u64, keep_samples: bool) -> (Recorder, Collector) {
    let (offer, spare) = sync_channel(1);
    let (full_tx, full_rx) = sync_channel(1);
    let reserve = if keep_samples { 1 << 16 } else { 0 };
    let mk = || Box::new(Buffer { samples: Vec::with_capacity(reserve), ..Buffer::default() });
    let rec = Recorder {
        active: mk(),
        current: EnvPoint::new(0),
        env_interval_ns: env_interval_ns.max(1),
        keep_samples,
        spare,
        full: full_tx,
    };
    (rec, Collector { spare: Some(mk()), offer, full: full_rx })
}

impl Recorder {
    /// Records one sample taken `t_ns` after the run's start.
    #[inline(always)]
    pub fn record(&mut self, t_ns: u64, latency_ns: u64) {
        self.active.stats.record(latency_ns);
        self.active.last = latency_ns;
        let index = t_ns / self.env_interval_ns;
        if index != self.current.index {
            self.roll_envelope(index);
        }
        let c = &mut self.current;
        c.count += 1;
        c.sum += latency_ns;
        c.min = c.min.min(latency_ns);
        c.max = c.max.max(latency_ns);
        if self.keep_samples {
            self.active.samples.push((t_ns, latency_ns));
        }
        self.swap_if_asked();
    }

    /// Counts a missed period (the probe skipped ahead).
    #[inline(always)]
    pub fn overrun(&mut self) {
        self.active.stats.overruns += 1;
    }

    #[cold]
    fn roll_envelope(&mut self, index: u64) {
        if self.current.count > 0 {
            self.active.envelope.push(self.current);
        }
        self.current = EnvPoint::new(index);
    }

    #[inline(always)]
    fn swap_if_asked(&mut self) {
        match self.spare.try_recv() {
            Ok(empty) => {
                let full = std::mem::replace(&mut self.active, empty);
                // The collector keeps its receiver for as long as the thread runs.
                let _ = self.full.send(full);
            }
            Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {}
        }
    }

    /// Ends recording: the partial envelope interval joins the last buffer, which is returned.
    pub fn finish(mut self) -> Box<Buffer> {
        if self.current.count > 0 {
            self.active.envelope.push(self.current);
        }
        self.active
    }
}

impl Collector {
    /// Offers an empty buffer to the thread if the last one came back (non-blocking).
    pub fn request(&mut self) {
        if let Some(buf) = self.spare.take() {
            if let Err(e) = self.offer.try_send(buf) {
                self.spare = Some(e.into_inner());
            }
        }
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
