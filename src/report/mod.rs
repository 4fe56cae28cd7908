//! Everything that reads the store and shows it: summaries, tables, exports. Nothing here
//! measures.

pub mod export;
pub mod show;

pub use crate::model::Run;

/// What the report is told about a probe by the command that asks for a report: its name and
/// one line on what a sample is. The list's order is the order reports show probes in. The
/// report reads only the store and this, never the measuring side.
#[derive(Clone, Copy, Debug)]
pub struct ProbeNote {
    pub name: &'static str,
    pub help: &'static str,
}

pub mod build;
pub mod compare;
pub mod compare_noise;
pub mod figures;
pub mod findings;
pub mod junit;
pub mod lava;
pub mod select;
pub mod split;
pub mod svg;
pub mod tables;
