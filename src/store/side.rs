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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;

    /// Two runs written side by side: each begun once, its results replaced at each write, a
    /// run read before the end is still running with what it had, and both end together.
    #[test]
    fn runs_side_by_side_are_begun_once_replaced_at_each_write_and_ended_together() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let path = dir.path().join("s.db");
        let mut side = SideBySide::new(&mut store);
        let params = RunHead::for_test("watch.a").params;
        let result = |n: u64| {
            let mut stats = Stats::default();
            (1..=n).for_each(|v| stats.record(v * 1000));
            ThreadResult { thread: 0, cpu: Some(0), stats, irq: None }
        };
        let a = side.begin(1, || RunHead::for_test("watch.a")).unwrap();
        let b = side.begin(2, || RunHead::for_test("watch.b")).unwrap();
        assert_eq!(side.begin(1, || panic!("begun once")).unwrap(), a);
        side.write(1, &params, &result(3)).unwrap();
        side.write(1, &params, &result(5)).unwrap();
        side.write(2, &params, &result(2)).unwrap();
        assert_eq!(side.ids(), [a, b]);
        let reader = Store::open(&path).unwrap();
        let run = reader.run(a).unwrap();
        assert_eq!((run.header.status, run.threads[0].stats.count), (RunStatus::Running, 5), "the last write");
        assert!(side.write(3, &params, &result(1)).is_err(), "a run not begun");
        assert_eq!(side.finish(RunStatus::Interrupted).unwrap(), [(1, a), (2, b)]);
        let statuses: Vec<RunStatus> = [a, b].iter().map(|&id| reader.header(id).unwrap().status).collect();
        assert_eq!(statuses, [RunStatus::Interrupted, RunStatus::Interrupted]);
    }
}
