//! Where a run's measurements go while it runs. The runner hands every sink the raw samples as
//! threads pass them over, the running totals at each collection, and a checkpoint every
//! second; the store, the sample log and the live view are sinks, and so will be a Prometheus
//! exporter and a breach trigger.

use std::time::Duration;

use anyhow::{Context, Result};

use super::live::{Live, Row};
use crate::model::{CpuInterval, EnvPoint, ThreadResult};
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
}

/// What the runner knows between checkpoints, for displays.
pub struct Progress<'a> {
    pub rows: &'a [Row<'a>],
    pub elapsed: Duration,
    pub duration: Option<Duration>,
}

pub trait Sink {
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
}

/// The run in the store: cumulative results, new envelope points, and the first
/// [`RAW_IN_STORE`] raw samples of each thread.
pub struct StoreSink<'s> {
    store: &'s mut Store,
    id: i64,
    raw: Vec<KeptRaw>,
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
        StoreSink { store, id, raw: Vec::new() }
    }
}

impl Sink for StoreSink<'_> {
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
        let raw: Vec<RawBatch> = self
            .raw
            .iter()
            .map(|r| RawBatch { thread: r.thread, first_seq: r.kept - r.pending.len() as u64, samples: &r.pending })
            .collect();
        self.store.checkpoint(self.id, cp.threads, cp.envelope, &raw, cp.activity)?;
        for r in &mut self.raw {
            r.pending.clear();
        }
        Ok(())
    }
}

/// Every raw sample into a `--samples` log, flushed at each checkpoint.
pub struct SampleLogSink(pub SampleLogWriter);

impl Sink for SampleLogSink {
    fn samples(&mut self, thread: u32, chunk: &[(u64, u64)]) -> Result<()> {
        self.0.append(thread, chunk).context("could not write the sample log")
    }

    fn checkpoint(&mut self, _cp: &Checkpoint) -> Result<()> {
        self.0.flush().context("could not write the sample log")
    }
}

/// The live view on a terminal.
pub struct LiveSink(pub Live);

impl Sink for LiveSink {
    fn progress(&mut self, p: &Progress) -> Result<()> {
        self.0.draw(p.rows, p.elapsed, p.duration);
        Ok(())
    }
}
