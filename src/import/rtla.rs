//! `rtla timerlat hist` and `rtla osnoise hist` text output, as rtla's manual pages show it:
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)
//! # Duration:   0 00:01:00
//! Index   IRQ-000   Thr-000   IRQ-001   Thr-001
//! 0         58572         0     59373         0
//! 1          1422     57021       628     57241
//! over:         0         0         0         0
//! count:    60001     60001     60001     60001
//! min:          0         1         0         1
//! avg:          0         1         0         1
//! max:          3         5         1         6
//! ```
//!
//! A row is a bucket (its lower bound, then a count per column); `over:` counts the samples
//! past the last bucket. timerlat has an IRQ and a thread column per CPU: the thread's is the
//! timer latency, the IRQ's is stored as the run's IRQ split. osnoise has one column per CPU,
//! each noise occurrence a sample.

use super::{histogram_stats, Converted, ImportedThread};
use crate::model::{IrqSplit, SystemSnapshot, ThreadResult};

/// One column's bucket counts and summary.
struct Column {
    kind: String,
    cpu: u32,
    thread: ImportedThread,
}

/// `None` when `text` is no rtla histogram; else the file as runs, or what is wrong with it.
pub(super) fn convert(text: &str) -> Option<Result<Converted, String>> {
    // `top` prints each CPU's count, min, avg and max: no distribution, so no percentiles.
    if text.contains("IRQ Timer Latency") || text.contains("Operating System Noise") {
        let tool = if text.contains("IRQ Timer Latency") { "timerlat" } else { "osnoise" };
        return Some(Err(format!(
            "is rtla {tool} top output, which has no histogram to take percentiles from: import `rtla {tool} hist` output (with -a for timerlat's auto-analysis)"
        )));
    }
    let tool = ["timerlat", "osnoise"].into_iter().find(|t| text.contains(&format!("# RTLA {t} histogram")))?;
    let analysis = super::rtla_aa::analysis(text).transpose();
    Some(analysis.and_then(|analysis| {
        let (columns, unit_ns) = columns(text)?;
        Ok(Converted { analysis, ..threads(tool, &columns, unit_ns)? })
    }))
}

/// The columns of the histogram and the nanoseconds in its time unit.
fn columns(text: &str) -> Result<(Vec<Column>, u64), String> {
    let unit_ns = if text.contains("# Time unit is nanoseconds") { 1 } else { 1000 };
    let mut columns: Vec<Column> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next().filter(|w| !w.starts_with('#')) else { continue };
        let bad = || format!("is not an rtla histogram (line {} is '{}')", n + 1, line.trim());
        if first == "Index" {
            columns = words.map(|w| column(w).ok_or_else(bad)).collect::<Result<_, _>>()?;
            continue;
        }
        // rtla's newer versions end with an all-CPU summary (`ALL:`), which the columns hold.
        if first == "ALL:" {
            break;
        }
        let values: Vec<Option<u64>> = words.map(|w| w.parse().ok()).collect();
        if columns.is_empty() || values.len() != columns.len() {
            return Err(bad());
        }
        let summary = |c: &mut Column, v: Option<u64>| match first {
            "over:" => c.thread.overflows = v.unwrap_or(0),
            "min:" => c.thread.min = v,
            "max:" => c.thread.max = v,
            _ => {}
        };
        match (first.parse::<u64>(), first) {
            (Ok(bucket), _) => {
                for (c, v) in columns.iter_mut().zip(values) {
                    let count = v.ok_or_else(bad)?;
                    if count > 0 {
                        c.thread.buckets.push((bucket, count));
                    }
                }
            }
            // A CPU without samples shows `-` for its min, avg and max.
            (_, "over:" | "count:" | "min:" | "avg:" | "max:") => {
                columns.iter_mut().zip(values).for_each(|(c, v)| summary(c, v));
            }
            _ => return Err(bad()),
        }
    }
    if columns.is_empty() {
        return Err("is not an rtla histogram (no 'Index' line naming its columns)".into());
    }
    Ok((columns, unit_ns))
}

/// `IRQ-003` as its kind and CPU.
fn column(name: &str) -> Option<Column> {
    let (kind, cpu) = name.split_once('-')?;
    Some(Column { kind: kind.to_string(), cpu: cpu.parse().ok()?, thread: ImportedThread::default() })
}

/// One thread per CPU: timerlat's thread column with its IRQ column as the split, or
/// osnoise's CPU column.
fn threads(tool: &'static str, columns: &[Column], unit_ns: u64) -> Result<Converted, String> {
    let (main, probe) = if tool == "timerlat" { ("Thr", "timer") } else { ("CPU", "noise") };
    let mut threads = Vec::new();
    for (i, c) in columns.iter().filter(|c| c.kind == main).enumerate() {
        let stats = histogram_stats(i, &c.thread, unit_ns)?;
        let irq = match columns.iter().find(|o| o.kind == "IRQ" && o.cpu == c.cpu) {
            Some(o) => {
                let irq = histogram_stats(i, &o.thread, unit_ns)?;
                Some(IrqSplit { unmatched: stats.count.saturating_sub(irq.count), stats: irq })
            }
            None => None,
        };
        threads.push(ThreadResult { thread: i as u32, cpu: Some(c.cpu), stats, irq });
    }
    if threads.is_empty() {
        return Err(format!("is an rtla {tool} histogram without a {main}-NNN column"));
    }
    // Stored, a histogram of no sample would be a `complete` run that measured nothing.
    if threads.iter().all(|t| t.stats.count == 0) {
        return Err(format!(
            "is an rtla {tool} histogram with no samples (no bucket row counts any): nothing to import"
        ));
    }
    let mut warnings = vec![format!(
        "imported from rtla {tool} hist: {} resolution at best (its bucket size), mean and stddev from the histogram",
        super::unit_name(unit_ns)
    )];
    let beyond: u64 = columns.iter().map(|c| c.thread.overflows).sum();
    if beyond > 0 {
        warnings.push(format!("{beyond} samples past the rtla histogram were counted at their column's max"));
    }
    if columns.iter().any(|c| c.kind == "Usr") {
        warnings.push(
            "the user-space (Usr) columns are not imported: the thread latency is the kernel thread's (Thr)".into(),
        );
    }
    Ok(Converted {
        probe,
        format: if tool == "timerlat" { "rtla timerlat hist" } else { "rtla osnoise hist" },
        threads,
        command_line: format!("rtla {tool} hist"),
        system: SystemSnapshot::default(),
        warnings,
        analysis: None,
        variant: None,
        summary: None,
    })
}
