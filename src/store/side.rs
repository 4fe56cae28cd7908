//! Several one-thread runs written side by side by one command (a watch's threads, one run
//! each): a run begun when its thread is first checkpointed, its results and parameters
//! replaced at each checkpoint, all ended together with one status. A command killed between
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

    /// Writes `key`'s run: begun with `head()` the first time, then its `params` and its one
    /// thread's `result` replaced. Returns its id.
    pub fn checkpoint(
        &mut self,
        key: u64,
        head: impl FnOnce() -> RunHead,
        params: &RunParams,
        result: &ThreadResult,
    ) -> Result<i64> {
        let id = match self.id(key) {
            Some(id) => id,
            None => {
                let mut head = head();
                head.warnings = with_emulation(&head.system, &head.warnings);
                let id = self.store.begin(&head)?;
                self.runs.push((key, id, head));
                id
            }
        };
        self.store.set_params(id, params)?;
        self.store.checkpoint(id, std::slice::from_ref(result), &[], &[], &[], &[])?;
        Ok(id)
    }

    /// Ends every run with `status` (and its head's warnings); their ids by key.
    pub fn finish(self, status: RunStatus) -> Result<Vec<(u64, i64)>> {
        for (_, id, head) in &self.runs {
            self.store.finish(*id, status, &head.warnings)?;
        }
        Ok(self.runs.iter().map(|(k, id, _)| (*k, *id)).collect())
    }
}
