//! What changes in a stored run after it began: its parameters as the run learns them, its
//! load as it went, and a failed end.

use anyhow::Result;
use rusqlite::params;

use super::Store;
use crate::model::{section_path, LoadRecord, RunParams, RunStatus};

impl Store {
    /// Replaces a run's parameters (a probe adds what it learnt while running).
    pub fn set_params(&self, id: i64, params: &RunParams) -> Result<()> {
        self.conn.execute("UPDATE runs SET params = ?2 WHERE id = ?1", params![id, serde_json::to_string(params)?])?;
        Ok(())
    }

    /// Replaces a measured run's record of instrument `name` (where `model::section_path` puts
    /// it), leaving the rest.
    pub fn set_record(&self, id: i64, name: &str, record: &serde_json::Value) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET params = json_set(params, ?2, json(?3)) WHERE id = ?1",
            params![id, section_path(name), serde_json::to_string(record)?],
        )?;
        Ok(())
    }

    /// Replaces what is stored about a run's load (what it actually did).
    pub fn set_load(&self, id: i64, load: &LoadRecord) -> Result<()> {
        self.conn.execute("UPDATE runs SET load = ?2 WHERE id = ?1", params![id, serde_json::to_string(load)?])?;
        Ok(())
    }

    /// Ends a run as `failed`, keeping its checkpointed results and adding the reason.
    pub fn mark_failed(&self, id: i64, reason: &str) -> Result<()> {
        let mut warnings = self.header(id)?.warnings;
        warnings.push(format!("the run failed: {reason}"));
        self.finish(id, RunStatus::Failed, &warnings)
    }
}
