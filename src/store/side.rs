//! Several one-thread runs written side by side by one command (a watch's threads, one run
//! each): a run begun when its thread is first seen, its results and parameters replaced at
//! each checkpoint, all ended together with one status. A command killed between
//! checkpoints keeps the last one; its runs read as aborted.

use anyhow::Result;

use super::writer::{with_emulation, RunHead};
use super::Store;
use crate::model::{RunParams, RunStatus, ThreadResult};

pub struct SideBySide<'s> {
    store: &'s mut Store,
    /// By the caller's key: the run's id and head.
    runs: Vec<(u64, i64, RunHead)>,
}

impl<'s> SideBySide<'s> {
    pub fn new(store: &'s mut Store) -> SideBySide<'s> {
        SideBySide { store, runs: Vec::new() }
    }

    /// The run of `key`, when begun.
    pub fn id(&self, key: u64) -> Option<i64> {
        self.runs.iter().find(|(k, _, _)| *k == key).map(|(_, id, _)| *id)
    }

    /// The heads of the runs begun, in the order they began.
    pub fn heads(&self) -> impl Iterator<Item = &RunHead> {
        self.runs.iter().map(|(_, _, h)| h)
    }

    /// The runs begun, in the order they began.
    pub fn ids(&self) -> Vec<i64> {
        self.runs.iter().map(|(_, id, _)| *id).collect()
    }

    /// `key`'s run, begun with `head()` unless it already is; its id.
    pub fn begin(&mut self, key: u64, head: impl FnOnce() -> RunHead) -> Result<i64> {
        if let Some(id) = self.id(key) {
            return Ok(id);
        }
        let mut head = head();
        head.warnings = with_emulation(&head.system, &head.warnings);
        let id = self.store.begin(&head)?;
        self.runs.push((key, id, head));
        Ok(id)
    }

    /// Replaces the `params` and the one thread's `result` of `key`'s run, begun before.
    pub fn write(&mut self, key: u64, params: &RunParams, result: &ThreadResult) -> Result<()> {
        let id = self.id(key).ok_or_else(|| anyhow::anyhow!("run {key} written before it began"))?;
        self.store.set_params(id, params)?;
        self.store.checkpoint(id, std::slice::from_ref(result), &[], &[], &[], &[])
    }

    /// Ends every run with `status` (and its head's warnings); their ids by key.
    pub fn finish(self, status: RunStatus) -> Result<Vec<(u64, i64)>> {
        for (_, id, head) in &self.runs {
            self.store.finish(*id, status, &head.warnings)?;
        }
        Ok(self.runs.iter().map(|(k, id, _)| (*k, *id)).collect())
    }
}
