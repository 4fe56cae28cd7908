//! Everything that reads the store and shows it: summaries, tables, exports. Nothing here
//! measures.

pub use crate::model::Run;

/// What the report is told about a probe by the command that asks for a report: its name and
/// one line on what a sample is. The list's order is the order reports show probes in. The
/// report reads only the store and this, never the measuring side.
#[derive(Clone, Copy, Debug)]
pub struct ProbeNote {
    pub name: &'static str,
    pub help: &'static str,
}

/// One sysbench operation, as `app` hands it to the report from sysbench's catalogue: the list's
/// order is the order its tables and figure show operations in.
#[derive(Clone, Copy, Debug)]
pub struct OpNote {
    pub name: &'static str,
    pub group: crate::model::OpGroup,
    /// Its value is a bandwidth (MB/s, bigger is better), not a cost.
    pub bandwidth: bool,
}

/// What the report knows of the measuring side, handed to it by `app`.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub probes: Vec<ProbeNote>,
    pub ops: Vec<OpNote>,
}

pub mod findings;
pub mod formats;
pub mod page;
pub mod select;
pub mod text;
