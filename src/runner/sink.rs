//! Where a run's measurements go while it runs. The runner hands every sink the raw samples as
//! threads pass them over, the running totals at each collection, and a checkpoint every
//! second; the store, the sample log and the live view are sinks, and so will be a Prometheus
//! exporter and a breach trigger.

use std::time::Duration;

use anyhow::{Context, Result};

use super::live::{Live, Row};
use super::segment::{Closed, Segments};
use crate::model::{Breach, CpuInterval, EnvPoint, ThreadResult};
use crate::recorder::samplelog::SampleLogWriter;
use crate::store::{RawBatch, Store};

/// Raw samples per thread kept in the store: a run this short is drawn sample by sample.
pub const RAW_IN_STORE: u64 = 2_000;

/// What the runner knows at a checkpoint.
pub struct Checkpoint<'a> {
    /// Cumulative per-thread results.
    pub threads: &'a [ThreadResult],
    /// Envelope intervals completed since the last checkpoint.
    pub envelope: &'a [(u32, EnvPoint)],
    /// What happened on the measured CPUs in intervals read since the last checkpoint.
    pub activity: &'a [CpuInterval],
    /// Breaches traced since the last checkpoint.
    pub breaches: &'a [Breach],
}

/// What the runner knows between checkpoints, for displays.
pub struct Progress<'a> {
    pub rows: &'a [Row<'a>],
    pub elapsed: Duration,
    pub duration: Option<Duration>,
}

/// What the runner does when a sink fails. Either way measuring goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Keep what could not be written and try again at the next checkpoint.
    Retry,
    /// Give up on this sink: what it wrote stays.
    Stop,
}

pub trait Sink {
    /// What it is, for the warnings ("the store").
    fn name(&self) -> String;
    fn on_failure(&self) -> OnFailure {
        OnFailure::Stop
    }
    /// Raw samples of one thread, in order, as the thread hands them over.
    fn samples(&mut self, _thread: u32, _chunk: &[(u64, u64)]) -> Result<()> {
        Ok(())
    }
    /// The running totals, at every collection (10 per second with a live view).
    fn progress(&mut self, _p: &Progress) -> Result<()> {
        Ok(())
    }
    /// Every second, and once more at the end.
    fn checkpoint(&mut self, _cp: &Checkpoint) -> Result<()> {
        Ok(())
    }
    /// A window ended right after a checkpoint (see [`super::segment`]). The store answers with
    /// the id of the segment that follows.
    fn window_closed(&mut self, _closed: &Closed) -> Result<Option<i64>> {
        Ok(None)
    }
}

/// Sinks the caller made, boxed, are fed like the runner's own.
impl<S: Sink + ?Sized> Sink for Box<S> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn on_failure(&self) -> OnFailure {
        (**self).on_failure()
    }
    fn samples(&mut self, thread: u32, chunk: &[(u64, u64)]) -> Result<()> {
        (**self).samples(thread, chunk)
    }
    fn progress(&mut self, p: &Progress) -> Result<()> {
        (**self).progress(p)
    }
    fn checkpoint(&mut self, cp: &Checkpoint) -> Result<()> {
        (**self).checkpoint(cp)
    }
    fn window_closed(&mut self, closed: &Closed) -> Result<Option<i64>> {
        (**self).window_closed(closed)
    }
}

/// A sink as the runner feeds it: a failure is said once, counted, and retried or stopped as
/// the sink asks, and the run's warnings say what it cost.
pub struct Fed<'s> {
    sink: Box<dyn Sink + 's>,
    checkpoints: u64,
    failures: u64,
    first: Option<String>,
    stopped: bool,
    /// The last checkpoint reached it.
    current: bool,
}

impl<'s> Fed<'s> {
    pub fn new(sink: impl Sink + 's) -> Fed<'s> {
        Fed { sink: Box::new(sink), checkpoints: 0, failures: 0, first: None, stopped: false, current: true }
    }

    fn call(&mut self, f: impl FnOnce(&mut (dyn Sink + 's)) -> Result<()>) -> bool {
        if self.stopped {
            return false;
        }
        let Err(e) = f(self.sink.as_mut()) else { return true };
        self.failures += 1;
        let retry = self.sink.on_failure() == OnFailure::Retry;
        if self.first.is_none() {
            let then =
                if retry { "measuring goes on and the next checkpoints retry" } else { "measuring goes on without it" };
            eprintln!("rtbench: WARNING: {} failed: {e:#}; {then}", self.sink.name());
            self.first = Some(format!("{e:#}"));
        }
        self.stopped = !retry;
        false
    }

    pub fn samples(&mut self, thread: u32, chunk: &[(u64, u64)]) {
        self.call(|s| s.samples(thread, chunk));
    }

    pub fn progress(&mut self, p: &Progress) {
        self.call(|s| s.progress(p));
    }

    /// True when the checkpoint reached the sink (or it has given up on its part).
    pub fn checkpoint(&mut self, cp: &Checkpoint) -> bool {
        self.checkpoints += 1;
        self.current = self.call(|s| s.checkpoint(cp)) || self.stopped;
        self.current
    }

    /// The new segment's id, when the sink is the store and it began one.
    pub fn window_closed(&mut self, closed: &Closed) -> Option<i64> {
        let mut next = None;
        self.call(|s| {
            next = s.window_closed(closed)?;
            Ok(())
        });
        next
    }

    /// Whether the last checkpoint reached it.
    pub fn current(&self) -> bool {
        self.current
    }

    /// What the run should say about this sink, if it failed.
    pub fn warning(&self) -> Option<String> {
        let first = self.first.as_ref()?;
        let name = self.sink.name();
        Some(if self.stopped {
            format!("{name} stopped: {first}; what it holds is kept")
        } else if self.current {
            format!(
                "{name} could not be written {} times in {} checkpoints ({first}); the later checkpoints caught up, nothing was lost",
                self.failures, self.checkpoints
            )
        } else {
            format!("{name} could not be written since a checkpoint failed ({first})")
        })
    }
}

/// The run in the store: cumulative results, new envelope points, and the first
/// [`RAW_IN_STORE`] raw samples of each thread. What a failed checkpoint could not write is
/// kept and written by the next one: each checkpoint is one transaction, so the store holds
/// every checkpoint whole or not at all.
pub struct StoreSink<'s> {
    store: &'s mut Store,
    id: i64,
    raw: Vec<KeptRaw>,
    envelope: Vec<(u32, EnvPoint)>,
    activity: Vec<CpuInterval>,
    breaches: Vec<Breach>,
    /// How a window ends, when the run has windows.
    pub segments: Option<Segments>,
    /// The envelope index the current segment counts from: a window's intervals are stored
    /// from its own start, as a run's are. `None` until the first interval after a roll.
    base: Option<u64>,
}

/// One thread's raw samples for the store.
struct KeptRaw {
    thread: u32,
    /// Kept so far, written or not.
    kept: u64,
    /// Not yet written.
    pending: Vec<(u64, u64)>,
}

impl<'s> StoreSink<'s> {
    pub fn new(store: &'s mut Store, id: i64) -> StoreSink<'s> {
        // A store another writer holds must not stall the runner: a checkpoint that cannot get
        // the lock soon fails, and the next one retries.
        store.set_busy_timeout(CHECKPOINT_LOCK_WAIT);
        StoreSink {
            store,
            id,
            raw: Vec::new(),
            envelope: Vec::new(),
            activity: Vec::new(),
            breaches: Vec::new(),
            segments: None,
            base: Some(0),
        }
    }
}

/// How long a checkpoint waits for another writer's lock.
const CHECKPOINT_LOCK_WAIT: Duration = Duration::from_millis(250);

impl Drop for StoreSink<'_> {
    fn drop(&mut self) {
        self.store.set_busy_timeout(crate::store::LOCK_WAIT);
    }
}

impl Sink for StoreSink<'_> {
    fn name(&self) -> String {
        format!("the store '{}'", self.store.path().display())
    }

    fn on_failure(&self) -> OnFailure {
        OnFailure::Retry
    }

    fn samples(&mut self, thread: u32, chunk: &[(u64, u64)]) -> Result<()> {
        let slot = match self.raw.iter().position(|r| r.thread == thread) {
            Some(i) => &mut self.raw[i],
            None => {
                self.raw.push(KeptRaw { thread, kept: 0, pending: Vec::new() });
                self.raw.last_mut().expect("just pushed")
            }
        };
        let take = (RAW_IN_STORE.saturating_sub(slot.kept) as usize).min(chunk.len());
        slot.pending.extend_from_slice(&chunk[..take]);
        slot.kept += take as u64;
        Ok(())
    }

    fn checkpoint(&mut self, cp: &Checkpoint) -> Result<()> {
        let first = cp.envelope.iter().map(|(_, p)| p.index).chain(cp.activity.iter().map(|a| a.index)).min();
        if let Some(base) = self.base.or(first) {
            self.base = Some(base);
            let from_base = |index: u64| index.saturating_sub(base);
            self.envelope.extend(cp.envelope.iter().map(|(t, p)| (*t, EnvPoint { index: from_base(p.index), ..*p })));
            self.activity.extend(cp.activity.iter().map(|a| CpuInterval { index: from_base(a.index), ..*a }));
        }
        self.breaches.extend_from_slice(cp.breaches);
        if !self.breaches.is_empty() {
            self.store.add_breaches(self.id, &self.breaches)?;
            self.breaches.clear();
        }
        let raw: Vec<RawBatch> = self
            .raw
            .iter()
            .map(|r| RawBatch { thread: r.thread, first_seq: r.kept - r.pending.len() as u64, samples: &r.pending })
            .collect();
        self.store.checkpoint(self.id, cp.threads, &self.envelope, &raw, &self.activity)?;
        for r in &mut self.raw {
            r.pending.clear();
        }
        self.envelope.clear();
        self.activity.clear();
        Ok(())
    }

    fn window_closed(&mut self, closed: &Closed) -> Result<Option<i64>> {
        let Some(segments) = self.segments.as_ref().filter(|_| closed.more) else { return Ok(None) };
        self.id = segments.roll(self.store, self.id)?;
        self.base = None;
        Ok(Some(self.id))
    }
}

/// Every raw sample into a `--samples` log, flushed at each checkpoint.
pub struct SampleLogSink {
    pub log: SampleLogWriter,
    pub path: std::path::PathBuf,
}

impl Sink for SampleLogSink {
    fn name(&self) -> String {
        format!(
            "the sample log '{}' (after {} bytes; `rtbench analyze --salvage` reads it)",
            self.path.display(),
            self.log.bytes
        )
    }

    fn samples(&mut self, thread: u32, chunk: &[(u64, u64)]) -> Result<()> {
        self.log.append(thread, chunk).context("could not write the sample log")
    }

    fn checkpoint(&mut self, _cp: &Checkpoint) -> Result<()> {
        self.log.flush().context("could not write the sample log")
    }
}

/// The live view on a terminal.
pub struct LiveSink(pub Live);

impl Sink for LiveSink {
    fn name(&self) -> String {
        "the live view".into()
    }

    fn progress(&mut self, p: &Progress) -> Result<()> {
        self.0.draw(p.rows, p.elapsed, p.duration);
        Ok(())
    }
}
