//! `rtbench import`: cyclictest's `--json` files and `-h` histograms, `rtla timerlat hist` and
//! `rtla osnoise hist` output and sockperf's `--full-log` become stored runs, so results made
//! with those tools join the same reports.

mod rt_tests;
mod rtla;
mod rtla_aa;
mod sockperf;

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::error::InputError;
use crate::model::{
    ImportedParams, LoadRecord, Metric, Preemption, RunKind, RunParams, SystemSnapshot, ThreadResult, TimerlatAnalysis,
    ToolSummary,
};
use crate::stats::Stats;
use crate::store::{RunHead, RunWriter, Store};

/// One thread of a histogram file: counts by bucket, min and max when the file says (all in
/// the file's time unit), and samples past the last bucket.
#[derive(Default)]
struct ImportedThread {
    buckets: Vec<(u64, u64)>,
    min: Option<u64>,
    max: Option<u64>,
    overflows: u64,
}

struct Imported {
    format: &'static str,
    threads: Vec<ImportedThread>,
    command_line: String,
    system: SystemSnapshot,
}

/// Another tool's file as rtbench results.
#[derive(Debug)]
pub struct Converted {
    /// The probe whose samples the file's are: `timer`, `noise` or `pingpong`.
    pub probe: &'static str,
    pub format: &'static str,
    pub threads: Vec<ThreadResult>,
    pub command_line: String,
    pub system: SystemSnapshot,
    pub warnings: Vec<String>,
    /// rtla timerlat's auto-analysis, where the file has one.
    pub analysis: Option<TimerlatAnalysis>,
    /// Which of its probe's measurements the file's are (an rt-tests IPC tool's way).
    pub variant: Option<String>,
    /// A tool's own summary, where its file holds no distribution (rt-tests' `--json`).
    pub summary: Option<ToolSummary>,
}

/// Latencies beyond a day (in µs) are no measurement: the file is broken.
const MAX_US: u64 = 86_400 * 1_000_000;

/// Reads cyclictest's `--json` output or `-h` histogram, rtla's `timerlat hist` or `osnoise
/// hist` output, or sockperf's `--full-log`. An error says what is wrong with it.
pub fn convert(text: &str) -> Result<Converted, String> {
    if let Some(c) = sockperf::convert(text).or_else(|| rtla::convert(text)) {
        return c;
    }
    if let Some(c) = serde_json::from_str::<Value>(text).ok().as_ref().and_then(rt_tests::convert) {
        return c;
    }
    let imported = if text.trim_start().starts_with('{') { from_json(text)? } else { from_histogram(text)? };
    let mut threads = Vec::new();
    let mut beyond = 0u64;
    for (i, t) in imported.threads.iter().enumerate() {
        threads.push(ThreadResult { thread: i as u32, cpu: None, stats: histogram_stats(i, t, 1000)?, irq: None });
        beyond += t.overflows;
    }
    let mut warnings = vec![format!(
        "imported from a cyclictest {}: 1 µs resolution, mean and stddev from the histogram, scheduling priority not recorded",
        imported.format
    )];
    if beyond > 0 {
        warnings.push(format!("{beyond} samples past the cyclictest histogram were counted at its max"));
    }
    Ok(Converted {
        probe: "timer",
        format: imported.format,
        threads,
        command_line: imported.command_line,
        system: imported.system,
        warnings,
        analysis: None,
        variant: None,
        summary: None,
    })
}

/// The statistics of thread `i`'s histogram, whose bucket values, min and max are in units of
/// `unit_ns`: each bucket's count at its value, the samples past the last bucket at the max.
fn histogram_stats(i: usize, t: &ImportedThread, unit_ns: u64) -> Result<Stats, String> {
    let ImportedThread { buckets, min, max, overflows } = t;
    let max_units = MAX_US * 1000 / unit_ns;
    let values = buckets.iter().map(|b| b.0).chain(*min).chain(*max);
    if let Some(v) = values.into_iter().find(|v| *v > max_units) {
        return Err(format!("has a latency of {v} {} in thread {i}, more than a day", unit_name(unit_ns)));
    }
    // Exact sums of squares must fit: a file claiming more samples than that is broken.
    let (mut count, mut sumsq) = (0u64, 0u128);
    let overflow_at = max.unwrap_or(buckets.last().map_or(0, |b| b.0 + 1));
    for &(v, n) in buckets.iter().chain(std::iter::once(&(overflow_at, *overflows))) {
        let ns = v as u128 * unit_ns as u128;
        let next = count.checked_add(n).zip((ns * ns).checked_mul(n as u128).and_then(|x| x.checked_add(sumsq)));
        (count, sumsq) =
            next.ok_or_else(|| format!("claims more samples in thread {i} than rtbench can count exactly"))?;
    }
    let mut s = Stats::default();
    for &(v, n) in buckets {
        s.record_n(v * unit_ns, n);
    }
    if *overflows > 0 {
        // Neither tool keeps values past its last bucket; its max is the best we know.
        s.record_n(overflow_at * unit_ns, *overflows);
    }
    if let Some(m) = max.filter(|_| s.count > 0) {
        s.max = s.max.max(m * unit_ns);
    }
    if let Some(m) = min.filter(|_| s.count > 0) {
        if m * unit_ns > s.max {
            return Err(format!("says thread {i}'s min latency is {m} {}, above its max", unit_name(unit_ns)));
        }
        s.min = m * unit_ns;
    }
    Ok(s)
}

fn unit_name(unit_ns: u64) -> &'static str {
    if unit_ns == 1 {
        "ns"
    } else {
        "µs"
    }
}

pub fn import(store: &mut Store, path: &Path, label: &str, load: &str) -> Result<i64> {
    let bad = |reason: String| InputError::Invalid(format!("'{}' {reason}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    let c = convert(&text).map_err(bad)?;
    let failed = c.summary.as_ref().and_then(|t| Some((t.tool.clone(), t.return_code.filter(|rc| *rc != 0)?)));
    let head = RunHead {
        label: label.to_string(),
        probe: c.probe.into(),
        kind: RunKind::Probe,
        metric: Metric::LATENCY,
        params: RunParams::Imported(ImportedParams {
            imported_from: path.display().to_string(),
            format: c.format.to_string(),
            timerlat_analysis: c.analysis,
            variant: c.variant,
            summary: c.summary,
        }),
        load: LoadRecord::named(load),
        command_line: c.command_line,
        rt_priority: false,
        warnings: c.warnings,
        system: c.system,
        envelope_ns: 1_000_000_000,
    };
    let id = RunWriter::whole(store, head, &c.threads)?;
    if let Some((tool, rc)) = failed {
        // The tool's own verdict: it failed its test (pi_stress's deadlock, rt-migrate-test's wait).
        store.mark_failed(id, &format!("{tool} failed its own test (it exited with {rc})"))?;
    }
    Ok(id)
}

fn from_json(text: &str) -> Result<Imported, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("is not valid JSON ({e})"))?;
    let threads = v["thread"].as_object().ok_or("is JSON but not cyclictest --json output (no \"thread\" object)")?;
    let mut keys: Vec<(u64, &Value)> = threads.iter().filter_map(|(k, t)| Some((k.parse().ok()?, t))).collect();
    keys.sort_by_key(|k| k.0);
    let mut out = Vec::new();
    for (n, t) in keys {
        let hist = t["histogram"].as_object().ok_or(format!(
            "thread {n} has no histogram: cyclictest was run without -h, so there is no distribution to import"
        ))?;
        let mut buckets: Vec<(u64, u64)> = hist
            .iter()
            .map(|(k, c)| Some((k.parse::<u64>().ok()?, c.as_u64()?)))
            .collect::<Option<_>>()
            .ok_or(format!("thread {n} has a malformed histogram"))?;
        buckets.sort_unstable();
        let cycles = t["cycles"].as_u64().unwrap_or(0);
        let counted: u64 = buckets.iter().map(|b| b.1).sum();
        out.push(ImportedThread {
            buckets,
            min: t["min"].as_u64(),
            max: t["max"].as_u64(),
            overflows: cycles.saturating_sub(counted),
        });
    }
    if out.is_empty() {
        return Err("has no threads".into());
    }
    Ok(Imported {
        format: "--json file",
        threads: out,
        command_line: v["cmdline:"].as_str().or(v["cmdline"].as_str()).unwrap_or("cyclictest").to_string(),
        system: system_of(&v["sysinfo"]),
    })
}

/// The machine as an rt-tests tool's `sysinfo` says it.
fn system_of(sys: &Value) -> SystemSnapshot {
    SystemSnapshot {
        hostname: sys["nodename"].as_str().map(str::to_string),
        kernel_release: sys["release"].as_str().map(str::to_string),
        kernel_version: sys["version"].as_str().map(str::to_string),
        arch: sys["machine"].as_str().map(str::to_string),
        preemption: Preemption {
            sys_kernel_realtime: sys["realtime"].as_i64().map(|r| r == 1),
            ..Preemption::default()
        },
        ..SystemSnapshot::default()
    }
}

fn from_histogram(text: &str) -> Result<Imported, String> {
    let mut rows: Vec<Vec<u64>> = Vec::new();
    let trailer = |name: &str| -> Option<Vec<u64>> {
        let line = text.lines().find(|l| l.starts_with(&format!("# {name}:")))?;
        line.split_once(':')?.1.split_whitespace().map(|x| x.parse().ok()).collect()
    };
    let (mins, maxes, overflows) = (trailer("Min Latencies"), trailer("Max Latencies"), trailer("Histogram Overflows"));
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let vals: Option<Vec<u64>> = line.split_whitespace().map(|x| x.parse().ok()).collect();
        match vals {
            Some(v) if v.len() >= 2 => rows.push(v),
            _ => return Err(format!("is not a cyclictest histogram (line {} is '{}')", n + 1, line.trim())),
        }
    }
    if rows.is_empty() || maxes.is_none() {
        return Err("is not a cyclictest histogram (no bucket rows or no '# Max Latencies' line)".into());
    }
    let threads = rows[0].len() - 1;
    if rows.iter().any(|r| r.len() - 1 < threads) {
        return Err("has rows with fewer columns than the first".into());
    }
    let out = (0..threads)
        .map(|t| {
            let buckets = rows.iter().map(|r| (r[0], r[t + 1])).filter(|b| b.1 > 0).collect();
            let pick = |v: &Option<Vec<u64>>| v.as_ref().and_then(|v| v.get(t).copied());
            ImportedThread { buckets, min: pick(&mins), max: pick(&maxes), overflows: pick(&overflows).unwrap_or(0) }
        })
        .collect();
    Ok(Imported {
        format: "histogram",
        threads: out,
        command_line: "cyclictest (histogram file)".into(),
        system: SystemSnapshot::default(),
    })
}

/// rtla timerlat's auto-analysis in `text` (`top -a` or `hist -a` output), as the import reads
/// it: `None` when there is none. Public for the guest test, which compares rtla's on `top`
/// output (quicker than `hist` to set up under emulation) with rtbench's own.
pub fn rtla_timerlat_analysis(text: &str) -> Option<Result<TimerlatAnalysis, String>> {
    rtla_aa::analysis(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_histograms_are_errors_not_overflows() {
        let ok = "# Histogram\n000001 000005\n000002 000003\n# Min Latencies: 00001\n# Max Latencies: 00002\n";
        let c = convert(ok).unwrap();
        assert_eq!(c.threads[0].stats.count, 8);
        let far = "# Histogram\n99999999999999 000001\n# Max Latencies: 99999999999999\n";
        assert!(convert(far).unwrap_err().contains("more than a day"));
        let many = format!("# Histogram\n000001 {}\n000002 {}\n# Max Latencies: 00002\n", u64::MAX, u64::MAX);
        assert!(convert(&many).unwrap_err().contains("count exactly"));
        // Found by fuzzing: a min above the max made every percentile panic.
        let upside_down = "# Histogram\n000002 000007\n# Min Latencies: 02200\n# Max Latencies: 00011\n";
        assert!(convert(upside_down).unwrap_err().contains("above its max"));
        let json = r#"{"thread":{"0":{"histogram":{"5":1},"cycles":1,"min":5,"max":18446744073709551615}}}"#;
        assert!(convert(json).unwrap_err().contains("more than a day"));
    }
}
