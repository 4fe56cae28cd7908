//! What a stored run is: a probe's run, a sysbench operation or pass, a monitor's window.

/// The kind of a stored run: the report draws and tables each its own way. Stored by the name
/// [`RunKind::as_str`] gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunKind {
    /// A probe's run, measured here or imported from cyclictest.
    #[default]
    Probe,
    /// One operation of `rtbench sysbench`: a cost or bandwidth per repetition.
    SysbenchOp,
    /// One pass of `sysbench --total` under one load: its one sample is the pass's wall time.
    SysbenchTotal,
    /// One window of `rtbench monitor`, a probe's run among a chain of them.
    MonitorWindow,
}

impl RunKind {
    pub const ALL: [RunKind; 4] = [RunKind::Probe, RunKind::SysbenchOp, RunKind::SysbenchTotal, RunKind::MonitorWindow];

    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Probe => "probe",
            RunKind::SysbenchOp => "sysbench-op",
            RunKind::SysbenchTotal => "sysbench-total",
            RunKind::MonitorWindow => "monitor-window",
        }
    }

    pub fn parse(s: &str) -> Option<RunKind> {
        RunKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether the run holds costs of the system (`sysbench`) rather than latencies.
    pub fn is_sysbench(self) -> bool {
        matches!(self, RunKind::SysbenchOp | RunKind::SysbenchTotal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(RunKind::parse("sysbench.total"), None);
    }
}
