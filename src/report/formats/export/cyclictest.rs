//! cyclictest's own output formats, for the tools that parse them: the `-h` histogram (read by
//! rteval and OSADL's plot script) and the `--json` file.

use std::fmt::Write;

use anyhow::Result;
use serde_json::{json, Map, Value};

use crate::model::RunStatus;
use crate::report::Run;
use crate::stats::Stats;

/// Counts per 1-µs bucket below `buckets`, and the number of samples at or above it. An HDR
/// bucket counts in the µs bucket of its lowest value: exact below ~1 ms, within one µs above.
fn us_buckets(s: &Stats, buckets: u64) -> (Vec<u64>, u64) {
    let mut counts = vec![0u64; buckets as usize];
    let mut over = 0;
    for v in s.hist.iter_recorded() {
        let us = s.hist.lowest_equivalent(v.value_iterated_to()) / 1000;
        match counts.get_mut(us as usize) {
            Some(c) => *c += v.count_at_value(),
            None => over += v.count_at_value(),
        }
    }
    (counts, over)
}

fn min_us(s: &Stats) -> u64 {
    if s.count == 0 {
        1_000_000
    } else {
        s.min / 1000
    }
}

/// The `-h` histogram: rows `%06d` with tab-separated counts per thread (rows where every
/// thread has 0 are left out, as current cyclictest does), then the latency trailer.
pub fn histogram(run: &Run, buckets: u64) -> String {
    let per: Vec<(Vec<u64>, u64)> = run.threads.iter().map(|t| us_buckets(&t.stats, buckets)).collect();
    let mut out = String::from("# Histogram\n");
    for i in 0..buckets as usize {
        if per.iter().all(|(c, _)| c[i] == 0) {
            continue;
        }
        let cols: Vec<String> = per.iter().map(|(c, _)| format!("{:06}", c[i])).collect();
        let _ = writeln!(out, "{i:06} {}", cols.join("\t"));
    }
    let line = |name: &str, f: &dyn Fn(&Stats) -> u64| {
        let vals: String = run.threads.iter().map(|t| format!(" {:05}", f(&t.stats))).collect();
        format!("# {name}:{vals}\n")
    };
    out.push_str(&line("Min Latencies", &min_us));
    out.push_str(&line("Avg Latencies", &|s: &Stats| s.mean() as u64 / 1000));
    out.push_str(&line("Max Latencies", &|s: &Stats| s.max / 1000));
    let overs: String = per.iter().map(|(_, o)| format!(" {o:05}")).collect();
    let _ = writeln!(out, "# Histogram Overflows:{overs}");
    out.push_str("# Histogram Overflow at cycle number:\n");
    for t in &run.threads {
        // rtbench keeps every sample in its histogram instead of a list of overflow cycles.
        let _ = writeln!(out, "# Thread {}: ", t.thread);
    }
    out.push('\n');
    out
}

/// The `--json` file, with cyclictest's key names (including its "cmdline:" spelling).
pub fn json(run: &Run, buckets: u64) -> Result<String> {
    let h = &run.header;
    let sys = &h.system;
    let mut threads = Map::new();
    for t in &run.threads {
        let (counts, _) = us_buckets(&t.stats, buckets);
        let hist: Map<String, Value> =
            counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i.to_string(), (*c).into())).collect();
        let s = &t.stats;
        threads.insert(
            t.thread.to_string(),
            json!({
                "histogram": hist,
                "cycles": s.count,
                "min": min_us(s),
                "max": s.max / 1000,
                "avg": (s.mean() / 10.0).round() / 100.0,
                "cpu": t.cpu,
                "node": 0,
            }),
        );
    }
    let realtime = sys.preemption.is_realtime();
    let doc = json!({
        "file_version": 1,
        "cmdline:": h.command_line,
        "rt_test_version:": format!("rtbench {}", h.tool_version),
        "start_time": crate::timefmt::rfc3339_to_cyclictest(&h.start).unwrap_or_default(),
        "end_time": h.end.as_deref().and_then(crate::timefmt::rfc3339_to_cyclictest).unwrap_or_default(),
        "return_code": if h.status == RunStatus::Complete { 0 } else { -1 },
        "sysinfo": {
            "sysname": "Linux",
            "nodename": sys.hostname,
            "release": sys.kernel_release,
            "version": sys.kernel_version,
            "machine": std::env::consts::ARCH,
            "realtime": i32::from(realtime),
        },
        "num_threads": run.threads.len(),
        "resolution_in_ns": 0,
        "thread": threads,
    });
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}
