//! Everything that reads the store and shows it: summaries, tables, exports. Nothing here
//! measures.

pub mod export;
pub mod show;

pub use crate::model::Run;

/// ns as µs, the unit the seeds print, to the ns.
pub fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

pub mod build;
pub mod compare;
pub mod figures;
pub mod select;
pub mod svg;
pub mod tables;
