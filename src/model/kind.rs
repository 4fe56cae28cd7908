//! What a stored run is (a probe's run, a sysbench operation or pass, a monitor's window), and
//! the parameters of its own that only some kinds have, typed.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ProbeParams, RunHeader};

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

/// The probe part of a sysbench operation's parameters (see [`super::MeasuredParams::probe`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SysbenchOpParams {
    pub op: String,
    pub group: String,
    /// Iterations per repetition.
    pub iterations: u64,
    pub min_repetition_ms: f64,
    /// The process a fork row forked from, as it was mapped while measured; fork rows only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ForkImage>,
}

/// The process image of sysbench's process-creation helper, read from its /proc/PID/maps
/// while it was measured: what each fork copies and each exit tears down, and what each exec
/// of it maps again. Its cost grows with the mappings, so a fork row's number means little
/// without them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForkImage {
    /// Lines of its /proc/PID/maps.
    pub mappings: u32,
    /// The shared objects it mapped, by file name, in address order (the loader among them).
    pub libraries: Vec<String>,
    /// Set when the helper was not linked with LMbench's link line, saying how it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
}

impl ForkImage {
    /// As tables show it: "24 mappings: libc.so.6 ld-linux-x86-64.so.2", and the mark after.
    pub fn describe(&self) -> String {
        let mut s = format!("{} mappings: {}", self.mappings, self.libraries.join(" "));
        if let Some(mark) = &self.mark {
            s += &format!(" [{mark}]");
        }
        s
    }
}

/// The probe part of a `sysbench --total` pass's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SysbenchTotalParams {
    /// The `--loads` item the pass ran under.
    pub load_item: String,
    /// The label the pass's % row compares against.
    pub baseline: String,
    pub operations: usize,
    /// The work of the pass: iterations per repetition of each operation, by name.
    pub iterations: BTreeMap<String, u64>,
}

impl RunHeader {
    /// A sysbench operation's own parameters; `None` for any other kind of run, or one whose
    /// stored parameters lack them.
    pub fn sysbench_op(&self) -> Option<SysbenchOpParams> {
        match &self.params.measured()?.probe {
            ProbeParams::SysbenchOp(p) if self.kind == RunKind::SysbenchOp => Some(p.clone()),
            _ => None,
        }
    }

    /// A `sysbench --total` pass's own parameters; `None` as for [`RunHeader::sysbench_op`].
    pub fn sysbench_total(&self) -> Option<SysbenchTotalParams> {
        match &self.params.measured()?.probe {
            ProbeParams::SysbenchTotal(p) if self.kind == RunKind::SysbenchTotal => Some(p.clone()),
            _ => None,
        }
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

    #[test]
    fn an_image_is_described_with_its_mark_when_it_has_one() {
        let libraries = vec!["ld-linux-x86-64.so.2".to_string(), "libc.so.6".to_string()];
        let mut image = ForkImage { mappings: 24, libraries, mark: None };
        assert_eq!(image.describe(), "24 mappings: ld-linux-x86-64.so.2 libc.so.6");
        image.mark = Some("linked without -ltirpc".into());
        assert_eq!(image.describe(), "24 mappings: ld-linux-x86-64.so.2 libc.so.6 [linked without -ltirpc]");
    }

    #[test]
    fn a_sysbench_part_is_stored_as_its_tag_and_the_keys_it_always_was() {
        let op = SysbenchOpParams {
            op: "null-call".into(),
            group: "processes".into(),
            iterations: 7,
            min_repetition_ms: 2.0,
            image: None,
        };
        let text = serde_json::to_string(&ProbeParams::SysbenchOp(op.clone())).unwrap();
        assert_eq!(
            text,
            r#"{"probe":"sysbench-op","op":"null-call","group":"processes","iterations":7,"min_repetition_ms":2.0}"#
        );
        // A fork row adds its image, and reads back as it was written.
        let libraries = vec!["libc.so.6".to_string()];
        let image = Some(ForkImage { mappings: 23, libraries, mark: None });
        let fork = ProbeParams::SysbenchOp(SysbenchOpParams { op: "fork-exit".into(), image, ..op });
        let text = serde_json::to_string(&fork).unwrap();
        assert!(text.ends_with(r#""image":{"mappings":23,"libraries":["libc.so.6"]}}"#), "{text}");
        assert_eq!(serde_json::from_str::<ProbeParams>(&text).unwrap(), fork);
        let total = SysbenchTotalParams {
            load_item: "cpu+disk".into(),
            baseline: "k".into(),
            operations: 2,
            iterations: [("a".to_string(), 3), ("b".to_string(), 4)].into(),
        };
        let text = serde_json::to_string(&ProbeParams::SysbenchTotal(total)).unwrap();
        assert_eq!(
            text,
            r#"{"probe":"sysbench-total","load_item":"cpu+disk","baseline":"k","operations":2,"iterations":{"a":3,"b":4}}"#
        );
    }
}
