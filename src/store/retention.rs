//! Retention of a monitor's segments: only runs a monitor stored (of the kind
//! [`RunKind::MonitorWindow`]) are ever deleted, so a `--keep` can never take a user's own runs
//! of the same label.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use rusqlite::params;

use super::Store;
use crate::model::RunKind;

impl Store {
    /// Deletes the ended monitor segments of `label` and `probe` whose end is more than `keep`
    /// ago, with everything stored about them. Returns how many were deleted.
    pub fn delete_ended_before(&self, label: &str, probe: &str, keep: Duration) -> Result<usize> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let cutoff = now.saturating_sub(keep);
        // Stored ends are RFC 3339 UTC of one width: their order as text is their order in time.
        let cutoff = crate::timefmt::rfc3339(cutoff.as_secs() as i64, cutoff.subsec_millis());
        let n = self.conn.execute(
            "DELETE FROM runs WHERE label = ?1 AND probe = ?2 AND status != 'running' AND end IS NOT NULL
             AND end < ?3 AND kind = ?4",
            params![label, probe, cutoff, RunKind::MonitorWindow.as_str()],
        )?;
        Ok(n)
    }
}
