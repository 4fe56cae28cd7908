//! `rtbench merge`: runs made on other machines join this store, with new ids.

use std::path::Path;

use anyhow::Result;
use rusqlite::params;

use super::{Store, SCHEMA_VERSION};
use crate::error::InputError;

const RUN_COLUMNS: &str = "label, probe, params, load, command_line, tool_version, schema_version, start, end, status,
    rt_priority, warnings, system, envelope_ns, host, pid, pid_start, checkpoint, unit, better, kind";

/// Every table of a run's own rows, and its columns after `run_id`: a merge copies them all.
const RUN_TABLES: [(&str, &str); 8] = [
    ("threads", "thread, cpu, count, overruns, min_ns, max_ns, sum_ns, sumsq_ns, histogram"),
    ("envelope", "thread, idx, min_ns, max_ns, sum_ns, count"),
    ("samples", "thread, seq, t_ns, latency_ns, irq_ns"),
    ("irq", "thread, count, unmatched, min_ns, max_ns, sum_ns, sumsq_ns, histogram"),
    ("cpu_activity", "cpu, idx, steal_ns, irq_ns, softirq_ns, interrupts, context_switches"),
    ("gaps", "seq, start, end, start_ns, end_ns"),
    ("noise_classes", "thread, idx, class, count, ns"),
    ("breaches", "seq, latency_ns, verdict, breach"),
];

impl Store {
    /// Whether `other` can be merged: an existing store of a schema rtbench reads, with no run
    /// under a label no report can select or show (it would be lost here). Checked before the
    /// store it goes into is opened, so a refused merge creates nothing.
    pub fn mergeable(other: &Path) -> Result<()> {
        let bad = |reason: String| InputError::Database { path: other.display().to_string(), reason };
        if !other.is_file() {
            return Err(bad("does not exist".into()).into());
        }
        // Read-only first: opening it as a store would lay rtbench's schema into another
        // program's database (or an empty file), and merge nothing as if that were a success.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        let schema = rusqlite::Connection::open_with_flags(other, flags).and_then(|c| {
            let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let runs: i64 =
                c.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'", [], |r| {
                    r.get(0)
                })?;
            Ok(version > 0 && runs == 1)
        });
        if !schema.map_err(|e| bad(format!("not a readable SQLite database ({e})")))? {
            return Err(bad("is not an rtbench store (no rtbench schema); nothing was merged".into()).into());
        }
        for run in Store::open(other)?.runs()? {
            if let Err(fault) = crate::model::check_label(&run.label) {
                return Err(
                    bad(format!("run {} is labelled {:?}: {fault}; nothing was merged", run.id, run.label)).into()
                );
            }
        }
        Ok(())
    }

    /// Copies every run of `other` that this store does not have yet. Returns (added, skipped).
    pub fn merge(&mut self, other: &Path) -> Result<(usize, usize)> {
        let bad = |reason: String| InputError::Database { path: other.display().to_string(), reason };
        Store::mergeable(other)?;
        if std::fs::canonicalize(other).ok() == std::fs::canonicalize(&self.path).ok() {
            return Err(bad("is this store itself".into()).into());
        }
        self.conn.execute("ATTACH DATABASE ?1 AS other", [other.display().to_string()])?;
        let result = self.merge_attached();
        self.conn.execute("DETACH DATABASE other", [])?;
        result
    }

    fn merge_attached(&mut self) -> Result<(usize, usize)> {
        let version: i64 = self.conn.query_row("PRAGMA other.user_version", [], |r| r.get(0))?;
        anyhow::ensure!(version <= SCHEMA_VERSION, "the other store's schema is newer");
        let tx = self.conn.transaction()?;
        let ids: Vec<i64> = {
            let mut stmt = tx.prepare(
                "SELECT o.id FROM other.runs o WHERE NOT EXISTS (SELECT 1 FROM main.runs m
                 WHERE m.start = o.start AND m.host = o.host AND m.pid = o.pid AND m.label = o.label AND m.probe = o.probe)
                 ORDER BY o.id",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?.collect::<Result<Vec<i64>, _>>()?;
            rows
        };
        let total: i64 = tx.query_row("SELECT count(*) FROM other.runs", [], |r| r.get(0))?;
        for old in &ids {
            tx.execute(
                &format!("INSERT INTO main.runs ({RUN_COLUMNS}) SELECT {RUN_COLUMNS} FROM other.runs WHERE id = ?1"),
                [old],
            )?;
            let new = tx.last_insert_rowid();
            // A run still `running` elsewhere can never finish here.
            tx.execute("UPDATE main.runs SET status = 'aborted' WHERE id = ?1 AND status = 'running'", [new])?;
            for (table, columns) in RUN_TABLES {
                tx.execute(
                    &format!("INSERT INTO main.{table} SELECT ?2, {columns} FROM other.{table} WHERE run_id = ?1"),
                    params![old, new],
                )?;
            }
        }
        // What a study there could not run: the later reason wins, as in one store.
        tx.execute(
            "INSERT INTO main.absent (label, probe, reason, at) SELECT label, probe, reason, at FROM other.absent WHERE true
             ON CONFLICT (label, probe) DO UPDATE SET reason = excluded.reason, at = excluded.at
             WHERE excluded.at > absent.at",
            [],
        )?;
        tx.commit()?;
        Ok((ids.len(), total as usize - ids.len()))
    }
}
