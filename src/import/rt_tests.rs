//! The `--json` files of rt-tests' qualification tools beside cyclictest: ptsematest,
//! sigwaittest, svsematest and pmqtest (`ipc` by a mutex, a signal, a System V semaphore, a
//! message queue), cyclicdeadline (`deadline`), rt-migrate-test (`migrate`) and pi_stress (`pi`).
//! They keep no histogram: a thread's count, min, average and max (in µs) are all there is, so the
//! run has no percentile and no standard deviation, and says so. Their keys, as 2.40 writes them:
//!
//! ```text
//! {"file_version": 1, "cmdline:": "ptsematest -a 1 …", "rt_test_version:": "2.40",
//!  "return_code": 0, "sysinfo": {…},
//!  "thread": {"0": {"sender": {"samples": 200, …}, "receiver": {"cpu": 1, "min": 1, "avg": 2.00, "max": 48}}}}
//! ```
//!
//! cyclicdeadline's threads hold `cycles`, `min`, `avg`, `max`; rt-migrate-test's one per task
//! (`prio`, and its start after each release: `min`, `avg`, `max`, `total`); pi_stress's file
//! has only `inversion`, its count.

use serde_json::Value;

use super::{Converted, MAX_US};
use crate::model::{ThreadResult, ToolSummary};
use crate::stats::Stats;

/// The tools this reads: (name, rtbench's probe, its variant).
const TOOLS: [(&str, &str, Option<&str>); 7] = [
    ("ptsematest", "ipc", Some("mutex")),
    ("sigwaittest", "ipc", Some("signal")),
    ("svsematest", "ipc", Some("sem")),
    ("pmqtest", "ipc", Some("mq")),
    ("cyclicdeadline", "deadline", None),
    ("rt-migrate-test", "migrate", None),
    ("pi_stress", "pi", None),
];

/// `None` when `v` is no rt-tests file of these tools; else the file as a run, or what is
/// wrong with it.
pub(super) fn convert(v: &Value) -> Option<Result<Converted, String>> {
    let version = v.get("rt_test_version:")?.as_str().map(str::to_string);
    let command_line = v["cmdline:"].as_str().unwrap_or_default().to_string();
    let program = command_line.split_whitespace().next().unwrap_or_default();
    let name = program.rsplit('/').next().unwrap_or_default();
    let &(tool, probe, variant) = TOOLS.iter().find(|t| t.0 == name)?;
    let threads = match tool {
        "pi_stress" => Ok(Vec::new()),
        _ => threads(tool, &v["thread"]),
    };
    Some(threads.map(|threads| {
        let summary = ToolSummary {
            tool: tool.to_string(),
            version: version.clone(),
            return_code: v["return_code"].as_i64(),
            inversions: v["inversion"].as_u64(),
        };
        let what = if threads.is_empty() {
            "its counts only (it measures no latency)"
        } else {
            "min, average and max only (the tool keeps no distribution: no percentile, no standard deviation), 1 µs \
             resolution"
        };
        Converted {
            probe,
            format: "rt-tests --json",
            threads,
            command_line: command_line.clone(),
            system: super::system_of(&v["sysinfo"]),
            warnings: vec![format!(
                "imported from {tool} {}'s --json file: {what}",
                version.as_deref().unwrap_or("(version unknown)")
            )],
            analysis: None,
            variant: variant.map(str::to_string),
            summary: Some(summary),
        }
    }))
}

/// Each thread's statistics: from its receiver for the IPC tools (whose sender says how many
/// samples), from the thread itself for the others.
fn threads(tool: &str, threads: &Value) -> Result<Vec<ThreadResult>, String> {
    let map = threads.as_object().ok_or(format!("is {tool}'s --json file without a \"thread\" object"))?;
    let mut keyed: Vec<(u32, &Value)> = map.iter().filter_map(|(k, t)| Some((k.parse().ok()?, t))).collect();
    keyed.sort_by_key(|k| k.0);
    let mut out = Vec::new();
    for (n, t) in keyed {
        let (part, count) = match tool {
            "cyclicdeadline" => (t, t["cycles"].as_u64()),
            // Its tasks' starts: the total over the average is the releases.
            "rt-migrate-test" => (t, releases(t)),
            _ => (&t["receiver"], t["sender"]["samples"].as_u64()),
        };
        let field = |k: &str| part[k].as_f64().filter(|x| x.is_finite() && *x >= 0.0 && *x <= MAX_US as f64);
        let (Some(count), Some(min), Some(avg), Some(max)) = (count, field("min"), field("avg"), field("max")) else {
            return Err(format!(
                "is {tool}'s --json file, but thread {n} lacks its count, min, avg or max (or one is no latency up to a day)"
            ));
        };
        if !(min <= avg && avg <= max) {
            return Err(format!("says thread {n}'s min {min}, avg {avg} and max {max} µs, which cannot all be"));
        }
        out.push(ThreadResult {
            thread: n,
            cpu: part["cpu"].as_u64().map(|c| c as u32),
            stats: summary(count, min, avg, max),
            irq: None,
        });
    }
    if out.is_empty() {
        return Err(format!("is {tool}'s --json file without threads"));
    }
    Ok(out)
}

/// rt-migrate-test's releases seen by a task: its total start time over its average one.
fn releases(t: &Value) -> Option<u64> {
    let (total, avg) = (t["total"].as_f64()?, t["avg"].as_f64()?);
    Some(if avg > 0.0 { (total / avg).round() as u64 } else { 0 })
}

/// Statistics of `count` samples known only by their min, average and max (µs): no histogram,
/// so no percentile, and no sum of squares.
fn summary(count: u64, min_us: f64, avg_us: f64, max_us: f64) -> Stats {
    let mut s = Stats::default();
    if count > 0 {
        s.count = count;
        s.min = (min_us * 1000.0).round() as u64;
        s.max = (max_us * 1000.0).round() as u64;
        s.sum = (avg_us * 1000.0 * count as f64).round() as u128;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(cmdline: &str, thread: &str) -> Value {
        let text = format!(
            r#"{{"cmdline:": "{cmdline}", "rt_test_version:": "2.40", "return_code": 0, "thread": {{"0": {thread}}}}}"#
        );
        serde_json::from_str(&text).unwrap()
    }

    /// A file that cannot be a run's is refused with what is wrong, never half read; another
    /// tool's file (cyclictest's, with a histogram) is left to its own reader.
    #[test]
    fn impossible_or_incomplete_summaries_are_refused() {
        let upside_down = file("/usr/bin/cyclicdeadline -i 4000", r#"{"cycles": 5, "min": 9, "avg": 5, "max": 7}"#);
        assert!(convert(&upside_down).unwrap().unwrap_err().contains("cannot all be"));
        let no_count = file("ptsematest -l 5", r#"{"receiver": {"min": 1, "avg": 2.0, "max": 3}}"#);
        assert!(convert(&no_count).unwrap().unwrap_err().contains("lacks its count"));
        let far = file("pmqtest", r#"{"sender": {"samples": 1}, "receiver": {"min": 1, "avg": 1.0, "max": 1e12}}"#);
        assert!(convert(&far).unwrap().unwrap_err().contains("up to a day"));
        let cyclictest = file("cyclictest -h 10", r#"{"histogram": {"1": 2}, "cycles": 2, "min": 1, "max": 1}"#);
        assert!(convert(&cyclictest).is_none());
        let read = convert(&file(
            "sigwaittest",
            r#"{"sender": {"samples": 4}, "receiver": {"cpu": 1, "min": 1, "avg": 2.5, "max": 6}}"#,
        ));
        let c = read.unwrap().unwrap();
        let s = &c.threads[0].stats;
        assert_eq!((c.probe, c.variant.as_deref()), ("ipc", Some("signal")));
        assert_eq!((s.count, s.min, s.max, s.mean()), (4, 1000, 6000, 2500.0));
        assert!(!s.has_distribution());
    }
}
