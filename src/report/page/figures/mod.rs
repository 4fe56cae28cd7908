//! The report's figures, one file per kind. Each returns a finished SVG.

pub mod bars;
pub mod classes;
pub mod costs;
pub mod histogram;
pub mod percentiles;
pub mod scatter;
pub mod tail;
pub mod timeline;
pub mod windows;

/// One figure of the report.
pub struct Figure {
    /// File stem, unique within a report (`timer-bars`).
    pub name: String,
    /// What it shows, for the HTML caption and alt text.
    pub caption: String,
    pub svg: String,
}

/// Style of a load's series: idle solid, loaded dashed.
pub fn dash(load: &str) -> &'static str {
    if load == "none" {
        ""
    } else {
        r#"stroke-dasharray="7,4""#
    }
}

/// "idle" for no load, else the profile (the seeds' W/O and W/).
pub fn load_name(load: &str) -> String {
    if load == "none" {
        "idle".into()
    } else {
        format!("load {load}")
    }
}
