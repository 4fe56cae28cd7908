//! Everything that reads the store and shows it: summaries, tables, exports. Nothing here
//! measures.

pub mod export;
pub mod show;

use anyhow::Result;

use crate::stats::Stats;
use crate::store::{RunHeader, Store, ThreadResult};

/// One stored run with its per-thread results and their merge.
pub struct RunData {
    pub header: RunHeader,
    pub threads: Vec<ThreadResult>,
    pub total: Stats,
}

impl RunData {
    pub fn load(store: &Store, id: i64) -> Result<RunData> {
        let header = store.header(id)?;
        let threads = store.threads(id)?;
        let mut total = Stats::default();
        for t in &threads {
            total.merge(&t.stats);
        }
        Ok(RunData { header, threads, total })
    }
}

/// ns as µs, the unit the seeds print, to the ns.
pub fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

pub mod build;
pub mod compare;
pub mod figures;
pub mod select;
pub mod svg;
pub mod tables;
