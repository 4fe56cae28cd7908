//! `rtbench resume`: a run that stopped before its end (interrupted, or killed and marked
//! aborted) continues in the same run. The store records the gap, and tells the writer where
//! the new part goes: after what the run holds, on the same time axis.

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::{RunHead, Store};
use crate::error::InputError;
use crate::model::{Gap, RunParams, RunStatus, ThreadResult};
use crate::timefmt::parse_rfc3339;

/// What a resumed run holds, and where its new part goes.
pub(super) struct Resumed {
    /// The stored per-thread results the new samples add to.
    pub prior: Vec<ThreadResult>,
    /// Added to the new part's time offsets (ns) and envelope indices.
    pub shift_ns: u64,
    pub shift_index: u64,
    /// Raw samples stored per thread: the new ones are numbered after them.
    pub kept: Vec<(u32, u64)>,
    /// The parameters the run was asked with: its duration and loop count stay the asked ones.
    pub params: RunParams,
    /// The run's warnings, less those about how its last part ended.
    pub warnings: Vec<String>,
}

/// Whether a stored warning says how a part of the run ended: no longer true once it goes on.
fn about_the_end(warning: &str) -> bool {
    warning == super::ABANDONED || warning.starts_with(super::INTERRUPTED)
}

impl Store {
    /// The spans a resumed run did not measure, in order.
    pub fn gaps(&self, id: i64) -> Result<Vec<Gap>> {
        let mut stmt =
            self.conn.prepare("SELECT start, end, start_ns, end_ns FROM gaps WHERE run_id = ?1 ORDER BY seq")?;
        let rows = stmt
            .query_map([id], |r| {
                let (start, end): (String, String) = (r.get(0)?, r.get(1)?);
                let seconds = match (parse_rfc3339(&start), parse_rfc3339(&end)) {
                    (Some(a), Some(b)) => (b - a).max(0.0),
                    _ => 0.0,
                };
                let (start_ns, end_ns) = (r.get::<_, i64>(2)? as u64, r.get::<_, i64>(3)? as u64);
                Ok(Gap { start, end, seconds, start_ns, end_ns })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// How long the run measured: from its start to its last checkpoint, less its gaps.
    pub fn measured_s(&self, id: i64) -> Result<f64> {
        let (start, (last, _)) = self.span(id)?;
        let gaps: f64 = self.gaps(id)?.iter().map(|g| g.seconds).sum();
        Ok((last - start - gaps).max(0.0))
    }

    /// The run's start and its last checkpoint (its start when it has none), in seconds since
    /// the epoch; the checkpoint as stored too.
    fn span(&self, id: i64) -> Result<(f64, (f64, String))> {
        let (start, checkpoint): (String, Option<String>) = self
            .conn
            .query_row("SELECT start, checkpoint FROM runs WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or(InputError::NoSuchRun(id))?;
        let at = |s: &str| parse_rfc3339(s).ok_or_else(|| anyhow::anyhow!("run {id}: stored time '{s}' is damaged"));
        let last = checkpoint.unwrap_or_else(|| start.clone());
        Ok((at(&start)?, (at(&last)?, last)))
    }

    /// Records the gap from the run's last checkpoint to now and marks it `running` again in
    /// this process, in one transaction. Refused unless the run stopped before its end.
    pub(super) fn reopen(&mut self, id: i64, head: &RunHead) -> Result<Resumed> {
        let h = self.header(id)?;
        if !matches!(h.status, RunStatus::Interrupted | RunStatus::Aborted) {
            return Err(crate::invalid!("run {id} is {}: only an interrupted or aborted run can be resumed", h.status));
        }
        let (start, (last, gap_start)) = self.span(id)?;
        let now = crate::timefmt::now_rfc3339();
        let ns = |t: f64| ((t - start).max(0.0) * 1e9) as u64;
        let (from_ns, to_ns) = (ns(last), ns(parse_rfc3339(&now).unwrap_or(last)).max(ns(last)));
        let prior = self.threads(id)?.into_iter().map(settled).collect();
        let kept = self.kept_raw(id)?;
        let last_index: Option<i64> = self.conn.query_row(
            "SELECT max(i) FROM (SELECT max(idx) AS i FROM envelope WHERE run_id = ?1
                                 UNION ALL SELECT max(idx) FROM cpu_activity WHERE run_id = ?1)",
            [id],
            |r| r.get(0),
        )?;
        let shift_index = to_ns.div_ceil(head.envelope_ns.max(1)).max(last_index.map_or(0, |i| i as u64 + 1));
        let mut warnings: Vec<String> = h.warnings.into_iter().filter(|w| !about_the_end(w)).collect();
        warnings.extend(head.warnings.iter().filter(|w| !warnings.contains(w)).cloned().collect::<Vec<_>>());
        let pid = std::process::id();
        let tx = self.conn.transaction()?;
        let seq: i64 = tx.query_row("SELECT count(*) FROM gaps WHERE run_id = ?1", [id], |r| r.get(0))?;
        tx.execute(
            "INSERT INTO gaps (run_id, seq, start, end, start_ns, end_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, seq, gap_start, now, from_ns as i64, to_ns as i64],
        )?;
        tx.execute(
            "UPDATE runs SET status = 'running', end = NULL, checkpoint = ?2, warnings = ?3, host = ?4, pid = ?5,
                             pid_start = ?6 WHERE id = ?1",
            params![
                id,
                now,
                serde_json::to_string(&warnings)?,
                crate::sysinfo::hostname(),
                pid,
                crate::sysinfo::process_start(pid)
            ],
        )?;
        tx.commit()?;
        Ok(Resumed { prior, shift_ns: to_ns, shift_index, kept, params: h.params, warnings })
    }

    /// How many raw samples the run holds per thread.
    fn kept_raw(&self, id: i64) -> Result<Vec<(u32, u64)>> {
        let mut stmt = self.conn.prepare("SELECT thread, count(*) FROM samples WHERE run_id = ?1 GROUP BY thread")?;
        let rows = stmt
            .query_map([id], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, i64>(1)? as u64)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

/// A stored thread whose IRQ part is settled: the samples a kill left unpaired (their timer's
/// expiry not yet read at the last checkpoint) count unmatched, as a run's end counts those it
/// cannot pair. Nothing pairs them once the run goes on.
fn settled(mut t: ThreadResult) -> ThreadResult {
    if let Some(irq) = t.irq.as_mut() {
        irq.unmatched = t.stats.count.saturating_sub(irq.stats.count);
    }
    t
}

/// The stored results with the new part's added, thread by thread: exact counts, extremes and
/// sums (so mean and deviation), histograms added, overruns and unmatched IRQ samples summed.
pub(super) fn merged(prior: &[ThreadResult], now: &[ThreadResult]) -> Vec<ThreadResult> {
    let mut out: Vec<ThreadResult> = prior.to_vec();
    for t in now {
        match out.iter_mut().find(|p| p.thread == t.thread) {
            Some(p) => {
                p.stats.merge(&t.stats);
                p.cpu = t.cpu.or(p.cpu);
                match (&mut p.irq, &t.irq) {
                    (Some(a), Some(b)) => {
                        a.stats.merge(&b.stats);
                        a.unmatched += b.unmatched;
                    }
                    (None, Some(b)) => p.irq = Some(b.clone()),
                    _ => {}
                }
            }
            None => out.push(t.clone()),
        }
    }
    out.sort_by_key(|t| t.thread);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EnvPoint;
    use crate::stats::Stats;
    use crate::store::{Checkpoint, RunWriter, INTERRUPTED};

    fn head() -> RunHead {
        RunHead { warnings: vec!["its own".into()], ..RunHead::for_test("timer") }
    }

    fn thread(values: &[u64]) -> ThreadResult {
        let mut stats = Stats::default();
        values.iter().for_each(|&v| stats.record(v));
        ThreadResult { thread: 0, cpu: Some(1), stats, irq: None }
    }

    fn write(w: &mut RunWriter, t: &ThreadResult, envelope: &[(u32, EnvPoint)]) {
        let threads = std::slice::from_ref(t);
        w.checkpoint(&Checkpoint { envelope, ..Checkpoint::only(threads) }).unwrap();
    }

    /// Known numbers: 1, 2 and 3 µs before the gap, 10 and 20 µs after it make 5 samples, min 1,
    /// max 20, mean 36/5 = 7.2 µs and population deviation √(514/5 − 7.2²) = √50.96 µs.
    #[test]
    fn a_resumed_run_adds_its_new_samples_to_the_stored_ones_after_one_gap() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let point = |index, us: u64| (0, EnvPoint { index, min: us * 1000, max: us * 1000, sum: us * 1000, count: 1 });
        let mut w = RunWriter::begin(&mut store, head()).unwrap();
        w.keep_raw(0, &[(1_000, 1_000), (2_000, 2_000), (3_000, 3_000)]);
        write(&mut w, &thread(&[1_000, 2_000, 3_000]), &[point(0, 1), point(1, 3)]);
        let id = w.finish(RunStatus::Interrupted, &["its own".into(), format!("{INTERRUPTED} 2 after 2.0 s")]).unwrap();
        let refused = RunWriter::resume(&mut store, id + 1, head()).err().unwrap();
        assert_eq!(refused.to_string(), format!("no run with id {} in the store (see `rtbench runs`)", id + 1));

        // The new part comes later on the run's time axis: its offsets must show it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut w = RunWriter::resume(&mut store, id, head()).unwrap();
        w.keep_raw(0, &[(500, 10_000), (900, 20_000)]);
        write(&mut w, &thread(&[10_000, 20_000]), &[point(0, 20)]);
        w.finish(RunStatus::Complete, &["its own".into(), "found later".into()]).unwrap();

        let run = store.run(id).unwrap();
        let s = &run.threads[0].stats;
        assert_eq!((s.count, s.min, s.max, s.sum, s.sumsq), (5, 1_000, 20_000, 36_000, 514_000_000));
        assert_eq!(s.mean(), 7_200.0);
        assert!((s.stddev() - 50.96e6f64.sqrt()).abs() < 1e-6, "{}", s.stddev());
        assert_eq!(s.hist.len(), 5, "the histograms are added");
        assert_eq!((s.percentile(0.6), s.percentile(0.8), s.percentile(1.0)), (3_001, 10_007, 20_000));
        assert_eq!(run.header.status, RunStatus::Complete);
        assert_eq!(run.header.warnings, ["its own", "found later"], "the interruption no longer holds");
        let [gap] = &run.gaps[..] else { panic!("{:?}", run.gaps) };
        assert!(gap.start_ns <= gap.end_ns && gap.end_ns >= 20_000_000 && gap.seconds >= 0.0, "{gap:?}");
        // The new part lies after the gap on the run's time axis: its raw samples are numbered
        // after the stored ones and offset by the gap's end, its intervals after the stored ones.
        let raw = store.raw_samples(id).unwrap();
        let times: Vec<u64> = raw[0].1.iter().map(|s| s.0).collect();
        assert_eq!(&times[..3], [1_000, 2_000, 3_000]);
        assert_eq!(&times[3..], [gap.end_ns + 500, gap.end_ns + 900]);
        let indices: Vec<u64> = store.envelope(id).unwrap().iter().map(|(_, p)| p.index).collect();
        assert_eq!(indices, [0, 1, gap.end_ns.div_ceil(1_000_000_000).max(2)]);
        assert!(store.measured_s(id).unwrap() >= 0.0);
        let again = RunWriter::resume(&mut store, id, head()).err().unwrap();
        assert_eq!(
            again.to_string(),
            format!("run {id} is complete: only an interrupted or aborted run can be resumed")
        );
    }

    #[test]
    fn merging_keeps_the_irq_part_and_threads_the_new_part_lacks() {
        let mut a = thread(&[1_000]);
        a.irq = Some(crate::model::IrqSplit { stats: thread(&[400]).stats, unmatched: 1 });
        let b = ThreadResult {
            irq: Some(crate::model::IrqSplit { stats: thread(&[900]).stats, unmatched: 2 }),
            ..thread(&[5_000])
        };
        let other = ThreadResult { thread: 1, ..thread(&[7]) };
        let m = merged(&[a, other], &[b]);
        assert_eq!(m.len(), 2);
        let irq = m[0].irq.as_ref().unwrap();
        assert_eq!((m[0].stats.count, irq.stats.count, irq.unmatched, irq.stats.max), (2, 2, 3, 900));
        assert_eq!(m[1].stats.count, 1);
    }
}
