//! `rtbench analyze`: statistics of a raw sample log, read in parallel with bounded memory.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use crate::error::InputError;
use crate::stats::Stats;
use crate::store::samplelog::{self, LogError};

/// Per-thread statistics of a sample log, and how many complete blocks were skipped at a torn
/// tail (only with `salvage`).
pub struct Analysis {
    pub threads: BTreeMap<u32, Stats>,
    pub truncated_at: Option<u64>,
}

pub fn analyze(path: &Path, salvage: bool) -> Result<Analysis> {
    let shown = path.display().to_string();
    let err = |reason: String| InputError::SampleLog { path: shown.clone(), reason };
    let index = samplelog::scan(path).map_err(|e| err(log_reason(e)))?;
    if let Some(at) = index.truncated_at {
        if !salvage {
            return Err(err(format!(
                "is truncated at byte {at} (a run cut short?); `--salvage` analyzes the {} complete blocks before it",
                index.blocks.len()
            ))
            .into());
        }
    }
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let per = index.blocks.len().div_ceil(workers).max(1);
    let results: Vec<Result<BTreeMap<u32, Stats>, LogError>> = std::thread::scope(|s| {
        let handles: Vec<_> = index
            .blocks
            .chunks(per)
            .map(|chunk| {
                s.spawn(move || {
                    let mut map: BTreeMap<u32, Tally> = BTreeMap::new();
                    let mut cur: Option<(u32, Tally)> = None;
                    samplelog::read_blocks(path, index.step_ns, chunk, |thread, _t, lat| {
                        // Blocks hold one thread each: keep that thread's tally at hand.
                        if cur.as_ref().map(|c| c.0) != Some(thread) {
                            if let Some((t, s)) = cur.take() {
                                map.insert(t, s);
                            }
                            cur = Some((thread, map.remove(&thread).unwrap_or_default()));
                        }
                        if let Some((_, s)) = cur.as_mut() {
                            s.record(lat);
                        }
                    })?;
                    if let Some((t, s)) = cur {
                        map.insert(t, s);
                    }
                    Ok(map.into_iter().map(|(t, tally)| (t, tally.into_stats())).collect())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("analyze worker panicked")).collect()
    });
    let mut threads: BTreeMap<u32, Stats> = BTreeMap::new();
    for r in results {
        for (t, s) in r.map_err(|e| err(log_reason(e)))? {
            threads.entry(t).or_default().merge(&s);
        }
    }
    Ok(Analysis { threads, truncated_at: index.truncated_at })
}

/// Latencies below this many ns are counted in a flat array: one increment per sample instead
/// of a histogram record and two 128-bit sums. Most latencies of a healthy system land here.
const FLAT: usize = 1 << 16;

/// A fast accumulator that becomes exact [`Stats`] at the end.
struct Tally {
    flat: Vec<u64>,
    rest: Stats,
}

impl Default for Tally {
    fn default() -> Self {
        Tally { flat: vec![0; FLAT], rest: Stats::default() }
    }
}

impl Tally {
    #[inline(always)]
    fn record(&mut self, ns: u64) {
        match self.flat.get_mut(ns as usize) {
            Some(c) => *c += 1,
            None => self.rest.record(ns),
        }
    }

    fn into_stats(self) -> Stats {
        let mut s = self.rest;
        for (v, &n) in self.flat.iter().enumerate().filter(|(_, n)| **n > 0) {
            s.record_n(v as u64, n);
        }
        s
    }
}

/// Why a sample log cannot be read, as the end of "sample log 'PATH' …".
pub(crate) fn log_reason(e: LogError) -> String {
    match e {
        LogError::Io(e) => format!("cannot be read: {e}"),
        other => other.to_string(),
    }
}
