//! Windows: a long run stored as a chain of runs ("segments"), one per window, each with its
//! own histogram and envelope, so `runs`, `show`, `report` and `compare` read a monitor's
//! history like any other runs. The measuring threads never stop at a window's end: the runner
//! closes the segment at a checkpoint and the next samples count towards a new one.

use std::time::Duration;

use anyhow::Result;

use super::sink::Sink;
use crate::model::{LoadRecord, Metric, RunParams, RunStatus, SystemSnapshot, ThreadResult};
use crate::store::{NewRun, Store};

/// What a run adds to the plain driver: windows, their retention, and sinks of the caller's
/// (a metrics endpoint, an interval log). The default is a plain run.
#[derive(Default)]
pub struct Extras {
    /// Close the stored run and begin the next one this often.
    pub window: Option<Duration>,
    /// Delete the segments of the same label and probe that ended longer ago than this.
    pub keep: Option<Duration>,
    pub sinks: Vec<Box<dyn Sink + Send>>,
}

/// A stored run's header, owned, to begin each segment with the same one.
pub struct Header {
    pub label: String,
    pub probe: &'static str,
    pub metric: Metric,
    pub params: RunParams,
    pub load: LoadRecord,
    pub command_line: String,
    pub rt_priority: bool,
    pub warnings: Vec<String>,
    pub system: SystemSnapshot,
    pub envelope_ns: u64,
}

impl Header {
    pub fn new_run(&self) -> NewRun<'_> {
        NewRun {
            label: &self.label,
            probe: self.probe,
            metric: self.metric,
            params: &self.params,
            load: &self.load,
            command_line: &self.command_line,
            rt_priority: self.rt_priority,
            warnings: &self.warnings,
            system: &self.system,
            envelope_ns: self.envelope_ns,
        }
    }
}

/// How the store sink ends one segment and begins the next.
pub struct Segments {
    pub header: Header,
    pub keep: Option<Duration>,
}

impl Segments {
    /// Ends segment `id` (its last checkpoint is already written), begins the next, and applies
    /// the retention. Returns the new segment's id.
    pub fn roll(&self, store: &Store, id: i64) -> Result<i64> {
        store.finish(id, RunStatus::Complete, &self.header.warnings)?;
        let next = store.begin(&self.header.new_run())?;
        if let Some(keep) = self.keep {
            let gone = store.delete_ended_before(&self.header.label, self.header.probe, keep)?;
            if gone > 0 {
                eprintln!("rtbench: retention: deleted {gone} segment(s) older than {} s", keep.as_secs());
            }
        }
        Ok(next)
    }
}

/// The results of a window that has just closed, for sinks that keep history of their own.
pub struct Closed<'a> {
    pub threads: &'a [ThreadResult],
    /// Whether another window follows (false at the end of the run).
    pub more: bool,
}
