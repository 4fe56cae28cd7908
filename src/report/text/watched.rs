//! What `show` says of a thread `watch` followed: whose thread it was and how it ran, then the
//! mistakes found that name it, as the watch's own output ended.

use std::fmt::Write;

use crate::model::{RanInstead, WatchParams};

pub fn lines(w: &WatchParams) -> String {
    let mut out = String::new();
    let policy = match (&w.sched_policy, w.sched_priority) {
        (Some(p), Some(prio)) if prio > 0 => format!("{p}/{prio}"),
        (Some(p), _) => p.clone(),
        (None, _) => "started while watched".into(),
    };
    let cpus = match w.allowed_cpus.is_empty() {
        true => String::new(),
        false => format!(", CPUs {}", crate::units::format_cpu_list(&w.allowed_cpus)),
    };
    let _ = writeln!(out, "watched ({}): thread {} {} of process {}, {policy}{cpus}", w.target, w.tid, w.comm, w.pid);
    if w.watch_runs.len() > 1 {
        let runs: Vec<String> = w.watch_runs.iter().map(i64::to_string).collect();
        let _ = writeln!(out, "one watch with runs {} (a thread each)", runs.join(", "));
    }
    let _ = writeln!(
        out,
        "ran {:.1} ms in {} switches in; preempted {} times, moved {} times; {} scheduler events, {} lost, from {}",
        w.runtime_ns as f64 / 1e6,
        w.switches_in,
        w.preemptions,
        w.migrations,
        w.events,
        w.lost_events,
        w.source
    );
    if let Some(p) = &w.period {
        let us = crate::units::us;
        let _ = writeln!(
            out,
            "periodic: every {} µs, inferred from {} times between its runs after a wake-up; p1 {}, p99 {}, min {}, max {} µs",
            us(p.period_ns as f64),
            p.intervals,
            us(p.p1_ns as f64),
            us(p.p99_ns as f64),
            us(p.min_ns as f64),
            us(p.max_ns as f64)
        );
    }
    if let Some(l) = &w.lateness {
        let us = crate::units::us;
        let _ = writeln!(
            out,
            "late after its absolute sleeps (its period's jitter), µs: p50 {}, p99 {}, max {} of {} wake-ups",
            us(l.p50_ns as f64),
            us(l.p99_ns as f64),
            us(l.max_ns as f64),
            l.count
        );
    }
    if let Some(r) = &w.instead {
        let above = crate::units::fmt_ns_as_us(r.above_ns as f64);
        match r.count {
            0 => {
                let _ = writeln!(out, "no wait over {above} µs");
            }
            n => {
                let _ = writeln!(out, "{n} waits over {above} µs; what ran instead: {}", instead_words(r));
            }
        }
    }
    for (i, f) in w.findings.iter().enumerate() {
        let _ = writeln!(out, "mistake {}: {f}", i + 1);
    }
    out
}

/// What ran instead, in a line: each cause with its count and time, the most time first.
pub fn instead_words(r: &RanInstead) -> String {
    let mut by: Vec<&crate::model::ClassTotal> = r.totals.iter().collect();
    by.sort_by_key(|t| std::cmp::Reverse(t.ns));
    let each: Vec<String> = by
        .iter()
        .take(4)
        .map(|t| {
            let what = match t.name.is_empty() {
                true => t.class.heading().to_string(),
                false => format!("{} {}", t.class.heading(), t.name),
            };
            let detail = t.detail.as_ref().map_or(String::new(), |d| format!(" ({d})"));
            format!("{what}{detail} {} times, {} µs", t.count, crate::units::fmt_ns_as_us(t.ns as f64))
        })
        .collect();
    each.join("; ")
}
