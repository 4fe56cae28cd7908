//! Exports of one run. A new format is one file, one enum variant and one match arm.

mod csv;
mod cyclictest;
mod hgrm;
mod json;

use anyhow::Result;

use super::Run;
use crate::cli::ExportFormat;

pub use json::{document, EXPORT_SCHEMA_VERSION};

/// Options a format may use.
pub struct ExportOptions {
    /// Number of 1-µs buckets in the cyclictest histogram formats.
    pub buckets: u64,
}

/// Renders `run` in `format`.
pub fn render(run: &Run, format: ExportFormat, opts: &ExportOptions) -> Result<String> {
    Ok(match format {
        ExportFormat::Json => serde_json::to_string_pretty(&json::document(run))? + "\n",
        ExportFormat::Csv => csv::render(run),
        ExportFormat::Hgrm => hgrm::render(&run.total),
        ExportFormat::CyclictestHist => cyclictest::histogram(run, opts.buckets),
        ExportFormat::CyclictestJson => cyclictest::json(run, opts.buckets)?,
    })
}
