//! Exports of one run. A new format is one file, one enum variant and one match arm.

mod csv;
mod cyclictest;
mod hgrm;
mod json;
#[cfg(test)]
pub(crate) use json::tests::run as test_run;
pub mod samples;

use anyhow::Result;

use crate::report::Run;

pub use json::{document, EXPORT_SCHEMA_VERSION};

/// The formats one run can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// rtbench's own document (schema: `schema/run.schema.json`).
    Json,
    Csv,
    /// HdrHistogram's percentile distribution.
    Hgrm,
    /// cyclictest's `-h` histogram.
    CyclictestHist,
    /// cyclictest's `--json` file.
    CyclictestJson,
    /// Every sample, as CSV (runs the store kept whole).
    Samples,
}

impl Format {
    /// Every format by the name `--format` takes.
    pub const NAMES: [(&'static str, Format); 6] = [
        ("json", Format::Json),
        ("csv", Format::Csv),
        ("hgrm", Format::Hgrm),
        ("cyclictest-hist", Format::CyclictestHist),
        ("cyclictest-json", Format::CyclictestJson),
        ("samples", Format::Samples),
    ];

    pub fn parse(name: &str) -> Result<Format, String> {
        Format::NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f).ok_or_else(|| {
            let names: Vec<&str> = Format::NAMES.iter().map(|(n, _)| *n).collect();
            format!("'{name}' is not a format; use {}", names.join(", "))
        })
    }

    /// The name `--format` takes for it.
    pub fn name(self) -> &'static str {
        Format::NAMES.iter().find(|(_, f)| *f == self).map_or("?", |(n, _)| n)
    }
}

/// Options a format may use.
pub struct ExportOptions {
    /// Number of 1-µs buckets in the cyclictest histogram formats.
    pub buckets: u64,
    /// The run's raw samples as the store kept them (only the samples format reads them).
    pub raw: Vec<crate::model::ThreadSamples>,
    /// `--split`: the raw samples' IRQ latencies, in the same order (samples format only).
    pub irq: Vec<(u32, Vec<Option<u64>>)>,
}

/// Renders `run` in `format`.
pub fn render(run: &Run, format: Format, opts: &ExportOptions) -> Result<String> {
    if let (Some(why), Format::Hgrm | Format::CyclictestHist | Format::CyclictestJson | Format::Samples) =
        (run.without_distribution(), format)
    {
        return Err(crate::invalid!("{why} to write as {}; --format json or csv carry what it has", format.name()));
    }
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(&json::document(run))? + "\n",
        Format::Csv => csv::render(run),
        Format::Hgrm => hgrm::render(&run.total),
        Format::CyclictestHist => cyclictest::histogram(run, opts.buckets),
        Format::CyclictestJson => cyclictest::json(run, opts.buckets)?,
        Format::Samples => samples::render(run, &opts.raw, &opts.irq)?,
    })
}
