//! A monitor's windows as the long-term plot reads them: per window and thread, its largest
//! latency, without decoding a histogram.

use anyhow::Result;

use super::{Store, WINDOW_PARAM};
use crate::model::WindowMax;

impl Store {
    /// Every stored window of the monitors that ran under `label`, oldest first.
    pub fn window_maxima(&self, label: &str) -> Result<Vec<WindowMax>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT r.id, r.probe, r.start, t.thread, t.cpu, t.max_ns, t.count FROM runs r
             JOIN threads t ON t.run_id = r.id
             WHERE r.label = ?1 AND json_extract(r.params, '$.{WINDOW_PARAM}') IS NOT NULL
             ORDER BY r.start, r.id, t.thread"
        ))?;
        let rows = stmt.query_map([label], |r| {
            Ok(WindowMax {
                run: r.get(0)?,
                probe: r.get(1)?,
                start: r.get(2)?,
                thread: r.get(3)?,
                cpu: r.get(4)?,
                max_ns: r.get::<_, i64>(5)? as u64,
                count: r.get::<_, i64>(6)? as u64,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}
