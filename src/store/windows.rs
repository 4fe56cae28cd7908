//! A monitor's windows as the long-term plot reads them: per window and thread, its largest
//! latency, without decoding a histogram.

use anyhow::Result;

use super::Store;
use crate::model::{RunKind, WindowMax};

/// The parameter in which a monitor's window records its length.
pub const WINDOW_PARAM: &str = "monitor_window_s";

impl Store {
    /// Every stored window of the monitors that ran under `label`, oldest first. `stolen` is
    /// [`crate::model::stolen`] of the interval holding the thread's max, asked of SQLite so
    /// the report reads no envelope; the IRQ part's max is its row's, with no histogram read.
    pub fn window_maxima(&self, label: &str) -> Result<Vec<WindowMax>> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.probe, r.start, t.thread, t.cpu, t.max_ns, t.count,
                    EXISTS (SELECT 1 FROM envelope e JOIN cpu_activity a
                              ON a.run_id = e.run_id AND a.idx = e.idx AND a.cpu = t.cpu
                            WHERE e.run_id = r.id AND e.thread = t.thread AND e.max_ns = t.max_ns
                              AND a.steal_ns > 0 AND a.steal_ns >= e.max_ns),
                    CASE WHEN i.count > 0 THEN i.max_ns END
             FROM runs r
             JOIN threads t ON t.run_id = r.id
             LEFT JOIN irq i ON i.run_id = r.id AND i.thread = t.thread
             WHERE r.label = ?1 AND r.kind = ?2
             ORDER BY r.start, r.id, t.thread",
        )?;
        let rows = stmt.query_map([label, RunKind::MonitorWindow.as_str()], |r| {
            Ok(WindowMax {
                run: r.get(0)?,
                probe: r.get(1)?,
                start: r.get(2)?,
                thread: r.get(3)?,
                cpu: r.get(4)?,
                max_ns: r.get::<_, i64>(5)? as u64,
                count: r.get::<_, i64>(6)? as u64,
                stolen: r.get(7)?,
                irq_max_ns: r.get::<_, Option<i64>>(8)?.map(|ns| ns as u64),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CpuInterval, EnvPoint, IrqSplit, RunParams, ThreadResult};
    use crate::stats::Stats;
    use crate::store::RunHead;

    /// Stores one window on CPU 1 whose largest latency, `max_ns`, fell in interval 1, where
    /// the hypervisor took `steal_ns` of the CPU; split when `irq_ns` gives its IRQ parts.
    fn window(store: &mut Store, max_ns: u64, steal_ns: u64) {
        split_window(store, max_ns, steal_ns, &[])
    }

    fn split_window(store: &mut Store, max_ns: u64, steal_ns: u64, irq_ns: &[u64]) {
        let params = RunParams::Unknown(serde_json::json!({ WINDOW_PARAM: 300 }));
        let id = store
            .begin(&RunHead {
                label: "mon".into(),
                kind: RunKind::MonitorWindow,
                params,
                command_line: "rtbench monitor".into(),
                ..RunHead::for_test("timer")
            })
            .unwrap();
        let mut stats = Stats::default();
        stats.record(40_000);
        stats.record(max_ns);
        let irq = (!irq_ns.is_empty()).then(|| {
            let mut irq = IrqSplit::default();
            irq_ns.iter().for_each(|ns| irq.stats.record(*ns));
            irq
        });
        let thread = ThreadResult { thread: 0, cpu: Some(1), stats, irq };
        let point = |index, max| (0, EnvPoint { index, min: max, max, sum: max, count: 1 });
        let activity = |index, steal_ns| CpuInterval {
            cpu: 1,
            index,
            steal_ns,
            irq_ns: 0,
            softirq_ns: 0,
            interrupts: 0,
            context_switches: None,
        };
        let envelope = [point(0, 40_000), point(1, max_ns)];
        // Interval 0 was stolen too, but its latency is not the window's largest.
        store
            .checkpoint(id, &[thread], &envelope, &[], &[activity(0, 90_000_000), activity(1, steal_ns)], &[])
            .unwrap();
    }

    #[test]
    fn a_window_is_stolen_when_steal_covers_the_interval_of_its_largest_latency() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        window(&mut store, 30_000_000, 40_000_000);
        window(&mut store, 30_000_000, 10_000_000);
        window(&mut store, 30_000_000, 0);
        let got: Vec<(u64, bool)> =
            store.window_maxima("mon").unwrap().iter().map(|w| (w.max_ns / 1_000_000, w.stolen)).collect();
        assert_eq!(got, [(30, true), (30, false), (30, false)]);
    }

    #[test]
    fn a_split_window_brings_its_largest_irq_latency_and_an_unsplit_one_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        split_window(&mut store, 30_000_000, 0, &[12_000, 2_500_000]);
        window(&mut store, 30_000_000, 0);
        split_window(&mut store, 30_000_000, 0, &[]);
        let got: Vec<Option<u64>> = store.window_maxima("mon").unwrap().iter().map(|w| w.irq_max_ns).collect();
        assert_eq!(got.len(), 3);
        assert!(got[0].is_some_and(|ns| ns.abs_diff(2_500_000) <= 2_500), "the histogram's max: {got:?}");
        assert_eq!(got[1..], [None, None]);
    }
}
