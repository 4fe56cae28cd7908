//! sysbench's operations as the store and the report know them: the table each belongs to
//! (LMbench's summary tables) and how its stored value reads. The operations themselves, and how
//! each is measured, are `sysbench`'s.

/// LMbench's summary tables, in their order: the group of an operation, stored with its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpGroup {
    Processes,
    Context,
    Latency,
    FileVm,
    Bandwidth,
}

impl OpGroup {
    pub const ALL: [OpGroup; 5] =
        [OpGroup::Processes, OpGroup::Context, OpGroup::Latency, OpGroup::FileVm, OpGroup::Bandwidth];

    pub fn name(self) -> &'static str {
        match self {
            OpGroup::Processes => "processes",
            OpGroup::Context => "context",
            OpGroup::Latency => "latency",
            OpGroup::FileVm => "file-vm",
            OpGroup::Bandwidth => "bandwidth",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            OpGroup::Processes => "Processor, processes (µs, smaller is better)",
            OpGroup::Context => "Context switching (µs, smaller is better)",
            OpGroup::Latency => "Local communication latencies (µs, smaller is better)",
            OpGroup::FileVm => "File and VM system latencies (µs, smaller is better)",
            OpGroup::Bandwidth => "Local communication bandwidths (MB/s, bigger is better)",
        }
    }
}

/// A stored value as shown: µs per operation, or MB/s.
pub fn op_shown(bandwidth: bool, v: f64) -> String {
    if bandwidth {
        format!("{:.1}", v / 1000.0)
    } else {
        format!("{:.4}", v / 1e6)
    }
}
