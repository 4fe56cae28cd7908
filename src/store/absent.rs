//! The probes a study could not run under a label, with why: stored so that a report made
//! later, or on another machine after a merge, says what is missing and why, not only what is
//! there.

use anyhow::Result;
use rusqlite::params;
use serde::Serialize;

use super::Store;

/// A probe a study did not run under a label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Absent {
    pub label: String,
    pub probe: String,
    pub reason: String,
}

impl Store {
    /// Notes that `probe` could not run under `label`; a later study's reason replaces it.
    pub fn note_absent(&self, label: &str, probe: &str, reason: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO absent (label, probe, reason, at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (label, probe) DO UPDATE SET reason = excluded.reason, at = excluded.at",
            params![label, probe, reason, crate::timefmt::now_rfc3339()],
        )?;
        Ok(())
    }

    /// The probes noted absent under `labels` that those labels still have no run of, in the
    /// labels' order, then by probe.
    pub fn absent(&self, labels: &[&str]) -> Result<Vec<Absent>> {
        let mut stmt = self.conn.prepare(
            "SELECT probe, reason FROM absent a WHERE label = ?1
             AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.label = a.label AND r.probe = a.probe)
             ORDER BY probe",
        )?;
        let mut out = Vec::new();
        for label in labels {
            let rows = stmt
                .query_map([label], |r| Ok(Absent { label: label.to_string(), probe: r.get(0)?, reason: r.get(1)? }))?;
            out.extend(rows.collect::<Result<Vec<_>, _>>()?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunHead;

    #[test]
    fn an_absent_probe_is_said_until_its_label_has_a_run_of_it_and_the_latest_reason_wins() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        store.note_absent("std", "timerlat", "no tracer").unwrap();
        store.note_absent("std", "timerlat", "the kernel has no timerlat tracer").unwrap();
        store.note_absent("rt", "timerlat", "tracefs is not mounted").unwrap();
        let labels = ["std", "rt"];
        let said: Vec<(String, String)> =
            store.absent(&labels).unwrap().into_iter().map(|a| (a.label, a.reason)).collect();
        assert_eq!(
            said,
            [
                ("std".into(), "the kernel has no timerlat tracer".into()),
                ("rt".into(), "tracefs is not mounted".into())
            ]
        );
        // A later run of the probe under "rt" (the tracer mounted, say) answers its absence.
        store.begin(&RunHead { label: "rt".into(), ..RunHead::for_test("timerlat") }).unwrap();
        let left: Vec<String> = store.absent(&labels).unwrap().into_iter().map(|a| a.label).collect();
        assert_eq!(left, ["std"]);
        assert!(store.absent(&["other"]).unwrap().is_empty(), "only the labels asked for");
    }

    #[test]
    fn a_merge_brings_the_other_stores_absent_probes_and_keeps_the_later_reason() {
        let dir = tempfile::tempdir().unwrap();
        let mut here = Store::open(&dir.path().join("here.db")).unwrap();
        let there = dir.path().join("there.db");
        {
            let other = Store::open(&there).unwrap();
            other.note_absent("guest", "timerlat", "old reason").unwrap();
            other.note_absent("guest", "noise", "no CPU to spare").unwrap();
            // A run, so the merge has the other store's usual shape.
            other.begin(&RunHead { label: "guest".into(), ..RunHead::for_test("timer") }).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        here.note_absent("guest", "timerlat", "newer reason").unwrap();
        here.merge(&there).unwrap();
        let said: Vec<(String, String)> =
            here.absent(&["guest"]).unwrap().into_iter().map(|a| (a.probe, a.reason)).collect();
        assert_eq!(said, [("noise".into(), "no CPU to spare".into()), ("timerlat".into(), "newer reason".into())]);
    }
}
