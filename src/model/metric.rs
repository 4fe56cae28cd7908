//! What a run's samples measure: their unit and which direction is better. Latency probes
//! record nanoseconds where smaller is better; costs per operation and bandwidths follow.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The unit of a run's samples (integers in the store).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Unit {
    /// Nanoseconds: a latency.
    #[serde(rename = "ns")]
    Nanoseconds,
    /// Picoseconds: the cost of one operation (`sysbench`), fine enough for a system call.
    #[serde(rename = "ps")]
    Picoseconds,
    /// Kilobytes (1000 bytes) per second: a bandwidth.
    #[serde(rename = "KB/s")]
    KilobytesPerSecond,
}

/// Which way a change is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Smaller,
    Bigger,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub unit: Unit,
    pub better: Better,
}

impl Metric {
    /// A latency in nanoseconds: every probe so far.
    pub const LATENCY: Metric = Metric { unit: Unit::Nanoseconds, better: Better::Smaller };

    /// The names stored in the run's `unit` and `better` columns.
    pub fn names(self) -> (&'static str, &'static str) {
        let unit = match self.unit {
            Unit::Nanoseconds => "ns",
            Unit::Picoseconds => "ps",
            Unit::KilobytesPerSecond => "KB/s",
        };
        let better = match self.better {
            Better::Smaller => "smaller",
            Better::Bigger => "bigger",
        };
        (unit, better)
    }

    /// Reads the stored names back; unknown names are `None` (a newer rtbench wrote them).
    pub fn from_names(unit: &str, better: &str) -> Option<Metric> {
        let unit = match unit {
            "ns" => Unit::Nanoseconds,
            "ps" => Unit::Picoseconds,
            "KB/s" => Unit::KilobytesPerSecond,
            _ => return None,
        };
        let better = match better {
            "smaller" => Better::Smaller,
            "bigger" => Better::Bigger,
            _ => return None,
        };
        Some(Metric { unit, better })
    }

    /// True when `candidate` is worse than `baseline` in this metric's direction.
    pub fn worse(self, baseline: f64, candidate: f64) -> bool {
        match self.better {
            Better::Smaller => candidate > baseline,
            Better::Bigger => candidate < baseline,
        }
    }
}

impl Default for Metric {
    fn default() -> Self {
        Metric::LATENCY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip() {
        for m in [Metric::LATENCY, Metric { unit: Unit::Nanoseconds, better: Better::Bigger }] {
            let (u, b) = m.names();
            assert_eq!(Metric::from_names(u, b), Some(m));
        }
        assert_eq!(Metric::from_names("furlongs", "smaller"), None);
        assert!(Metric::LATENCY.worse(1.0, 2.0) && !Metric::LATENCY.worse(2.0, 1.0));
    }
}
