//! sockperf's `--full-log` CSV: its summary, then one row per sample of the measured part of
//! the run (the warm-up is not logged):
//!
//! ```text
//! test was performed using the following parameters: --mps=1000 --burst=1 --reply-every=1 --msg-size=14 --time=1
//! ...
//! packet, txTime(sec), rxTime(sec), latency(usec)
//! 0, 2.421149571, 2.431178197, 5014.313
//! ```
//!
//! The latency column is what sockperf reports: half the round trip, in µs to the ns.

use super::{Converted, MAX_US};
use crate::model::{SystemSnapshot, ThreadResult};
use crate::stats::Stats;

const HEADER: &str = "packet, txTime(sec), rxTime(sec), latency(usec)";

/// `None` when `text` is no sockperf full log; else the file as a run, or what is wrong with it.
pub(super) fn convert(text: &str) -> Option<Result<Converted, String>> {
    let (head, rows) = text.split_once(HEADER)?;
    Some(samples(rows).map(|stats| {
        let parameters = head.lines().find_map(|l| l.split_once("using the following parameters:")).map(|p| p.1.trim());
        Converted {
            probe: "pingpong",
            format: "sockperf --full-log",
            threads: vec![ThreadResult { thread: 0, cpu: None, stats, irq: None }],
            command_line: format!("sockperf ping-pong {}", parameters.unwrap_or("--full-log")).trim_end().to_string(),
            system: SystemSnapshot::default(),
            warnings: vec![
                "imported from a sockperf --full-log: each sample is half its round trip, as sockperf reports it; scheduling priority not recorded".into(),
            ],
            analysis: None,
            variant: None,
            summary: None,
        }
    }))
}

/// Every sample's latency, to the ns.
fn samples(rows: &str) -> Result<Stats, String> {
    let mut stats = Stats::default();
    // The rows end at sockperf's closing line of dashes.
    for (n, row) in rows.lines().skip(1).enumerate().take_while(|(_, r)| !r.starts_with("---")) {
        if row.trim().is_empty() {
            continue;
        }
        let latency = row.split(',').nth(3).and_then(|us| crate::parse::time_ns(us, Some("us")));
        match latency.map(f64::round) {
            Some(ns) if ns <= (MAX_US * 1000) as f64 => stats.record(ns as u64),
            _ => {
                return Err(format!(
                    "is a sockperf full log whose sample {} is '{}', not a latency up to a day",
                    n + 1,
                    row.trim()
                ))
            }
        }
    }
    if stats.count == 0 {
        return Err("is a sockperf full log without samples".into());
    }
    Ok(stats)
}
