//! Where a run's measurements go while it runs. The runner hands every sink the raw samples as
//! threads pass them over, the running totals at each collection, and a checkpoint every
//! second. The store's run writer is fed as a sink too, but it is the one the runner owns and
//! asks for the run's id and end; the sample log, the live view, the monitor's metrics and
//! interval log only observe.

use std::time::Duration;

use anyhow::{Context, Result};

use super::live::{Live, Row};
use super::segment::{Closed, Segments};
use crate::store::samplelog::SampleLogWriter;
/// What the runner knows at a checkpoint: what the store's writer takes.
pub use crate::store::Checkpoint;
use crate::store::RunWriter;

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
    /// The IRQ latency of each sample of the last [`Sink::samples`] call, in the same order,
    /// where an instrument that holds the samples found it (None: it found none).
    fn irq(&mut self, _thread: u32, _irq: &[Option<u64>]) -> Result<()> {
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
    fn irq(&mut self, thread: u32, irq: &[Option<u64>]) -> Result<()> {
        (**self).irq(thread, irq)
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
/// the sink asks, and the run's warnings say what it cost. The sink is the last field, so a
/// `Fed` of any sink is also a `Fed<dyn Sink>`.
pub struct Fed<S: ?Sized> {
    checkpoints: u64,
    failures: u64,
    first: Option<String>,
    stopped: bool,
    /// The last checkpoint reached it.
    current: bool,
    sink: S,
}

impl<S> Fed<S> {
    pub fn new(sink: S) -> Fed<S> {
        Fed { checkpoints: 0, failures: 0, first: None, stopped: false, current: true, sink }
    }

    /// The sink, once feeding it is over.
    pub fn into_inner(self) -> S {
        self.sink
    }
}

impl<S: Sink + ?Sized> Fed<S> {
    fn call(&mut self, f: impl FnOnce(&mut S) -> Result<()>) -> bool {
        if self.stopped {
            return false;
        }
        let Err(e) = f(&mut self.sink) else { return true };
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

    pub fn irq(&mut self, thread: u32, irq: &[Option<u64>]) {
        self.call(|s| s.irq(thread, irq));
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

/// The run in the store, through its writer: cumulative results, new envelope points, and the
/// first [`crate::store::RAW_IN_STORE`] raw samples of each thread. A store another writer holds
/// must not stall the runner: a checkpoint that cannot get the lock soon fails, and the next one
/// retries with what it could not write.
pub struct StoreSink<'s> {
    writer: RunWriter<'s>,
    /// How a window ends, when the run has windows.
    segments: Option<Segments>,
}

/// How long a checkpoint waits for another writer's lock.
const CHECKPOINT_LOCK_WAIT: Duration = Duration::from_millis(250);

impl<'s> StoreSink<'s> {
    pub fn new(writer: RunWriter<'s>, segments: Option<Segments>) -> StoreSink<'s> {
        writer.set_lock_wait(CHECKPOINT_LOCK_WAIT);
        StoreSink { writer, segments }
    }

    /// The run being written.
    pub fn id(&self) -> i64 {
        self.writer.id()
    }

    /// The writer, to end the run, waiting for locks as any store operation does again.
    pub fn into_writer(self) -> RunWriter<'s> {
        self.writer.set_lock_wait(crate::store::LOCK_WAIT);
        self.writer
    }
}

impl Sink for StoreSink<'_> {
    fn name(&self) -> String {
        format!("the store '{}'", self.writer.store().path().display())
    }

    fn on_failure(&self) -> OnFailure {
        OnFailure::Retry
    }

    fn samples(&mut self, thread: u32, chunk: &[(u64, u64)]) -> Result<()> {
        self.writer.keep_raw(thread, chunk);
        Ok(())
    }

    fn irq(&mut self, thread: u32, irq: &[Option<u64>]) -> Result<()> {
        self.writer.keep_irq(thread, irq);
        Ok(())
    }

    fn checkpoint(&mut self, cp: &Checkpoint) -> Result<()> {
        self.writer.checkpoint(cp)?;
        // What the instruments have recorded so far, so that a killed run keeps it (a
        // monitor's windows count theirs from the monitor's start: only its end writes them).
        match self.segments {
            None => self.writer.set_records(cp),
            Some(_) => Ok(()),
        }
    }

    fn window_closed(&mut self, closed: &Closed) -> Result<Option<i64>> {
        let Some(segments) = self.segments.as_ref().filter(|_| closed.more) else { return Ok(None) };
        let said = segments.steal(self.writer.store(), self.writer.id());
        // Every window says how its threads ran, not only the last (whose params the run's
        // end writes whole).
        self.writer.note_ran(closed.ran)?;
        Ok(Some(self.writer.roll(&said, segments.keep)?))
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
