//! The report's tables: Appendix III, the ØMQ study's percentiles, the I-pipe layout, and the
//! seed's rule of thumb.

use std::fmt::Write;

use crate::model::{Finding, RunKind, RunStatus};
use crate::report::page::figures::load_name;
use crate::report::page::svg::esc;
use crate::report::select::RunView;
use crate::stats::Stats;
use crate::units::{fmt_ns_as_us as us, fmt_us};

/// A ⚠ marker carrying the run's warnings, or nothing.
pub fn caveat(r: &RunView) -> String {
    let w = &r.data.header.warnings;
    let mut notes: Vec<String> = w.clone();
    notes.splice(0..0, lacked(r));
    if !r.data.header.rt_priority {
        notes.insert(0, "not measured at real-time priority".into());
    }
    if r.data.header.status != RunStatus::Complete {
        notes.insert(0, format!("run {}", r.data.header.status));
    }
    notes.dedup();
    if notes.is_empty() {
        String::new()
    } else {
        format!(r#" <span class="warn" title="{}">⚠ {}</span>"#, esc(&notes.join("\n")), notes.len())
    }
}

/// What the run asked for and could not have, in words ("lacked rt policy, mlock").
fn lacked(r: &RunView) -> Option<String> {
    let lacked = &r.data.header.params.measured()?.lacked;
    let names: Vec<&str> = lacked.iter().map(|l| l.short()).collect();
    (!names.is_empty()).then(|| format!("lacked {}", names.join(", ")))
}

fn row_head(r: &RunView) -> String {
    format!(
        "<td>{}</td><td>{}</td><td>{}</td><td>{}{}</td>",
        esc(r.probe()),
        esc(r.label()),
        esc(&load_name(&r.load())),
        r.data.header.id,
        caveat(r)
    )
}

/// Appendix III's numbers of a run in ns: Min, Max, Avg, StdDev.
fn appendix_values(s: &Stats) -> [f64; 4] {
    let min = if s.count == 0 { 0 } else { s.min };
    [min as f64, s.max as f64, s.mean(), s.stddev()]
}

/// Appendix III: Min, Max, Avg, StdDev and samples per probe × label × load.
pub fn appendix_iii(runs: &[RunView]) -> String {
    let mut out = String::from(
        "<table><tr><th>probe</th><th>label</th><th>load</th><th>run</th><th>Min</th><th>Max</th><th>Avg</th><th>StdDev</th><th>samples</th></tr>",
    );
    for r in runs {
        let cells: String = appendix_values(&r.data.total).iter().map(|v| format!("<td>{}</td>", us(*v))).collect();
        let _ = write!(out, "<tr>{}{cells}<td>{}</td></tr>", row_head(r), r.data.total.count);
    }
    out + "</table>"
}

/// Appendix III as text, for the terminal at the end of a study: µs to the ns.
pub fn appendix_iii_text(runs: &[&RunView]) -> String {
    let mut out = format!(
        "{:<10} {:<16} {:>10} {:>10} {:>10} {:>10} {:>12}\n",
        "probe", "load", "Min", "Max", "Avg", "StdDev", "samples"
    );
    for r in runs {
        let h = &r.data.header;
        let [min, max, avg, stddev] = appendix_values(&r.data.total).map(crate::units::us);
        let lacked = lacked(r).map_or(String::new(), |l| format!("; {l}"));
        let caveat = if h.warnings.is_empty() && h.status == RunStatus::Complete {
            String::new()
        } else {
            format!("  ⚠ {} ({} warnings{lacked})", h.status, h.warnings.len())
        };
        let _ = writeln!(
            out,
            "{:<10} {:<16} {min:>10} {max:>10} {avg:>10} {stddev:>10} {:>12}{caveat}",
            r.probe(),
            load_name(&r.load()),
            r.data.total.count
        );
    }
    out
}

/// The ØMQ study's table: percentiles 50, 99, 99.9 and 100, plus the deeper tail.
pub fn percentiles(runs: &[RunView]) -> String {
    let cols = ["50", "99", "99.9", "99.99", "99.9999", "100"];
    let mut out = String::from("<table><tr><th>probe</th><th>label</th><th>load</th><th>run</th>");
    for c in cols {
        let _ = write!(out, "<th>p{c}</th>");
    }
    out.push_str("</tr>");
    for r in runs {
        let sum = r.data.total.summary();
        out.push_str(&format!("<tr>{}", row_head(r)));
        for c in cols {
            let _ = write!(out, "<td>{}</td>", us(sum.p(c) as f64));
        }
        out.push_str("</tr>");
    }
    out + "</table>"
}

/// The I-pipe study's layout: per kernel × load, Aver, Max, Min, StdDev.
pub fn ipipe(runs: &[RunView]) -> String {
    let mut out = String::from(
        "<table><tr><th>probe</th><th>kernel</th><th>load</th><th>run</th><th>Aver</th><th>Max</th><th>Min</th><th>StdDev</th></tr>",
    );
    for r in runs {
        let s = &r.data.total;
        let min = if s.count == 0 { 0 } else { s.min };
        let _ = write!(
            out,
            "<tr>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            row_head(r),
            us(s.mean()),
            us(s.max as f64),
            us(min as f64),
            us(s.stddev())
        );
    }
    out + "</table>"
}

/// The Geode paper's rule of thumb: worst case within 10⁵ cycles of the CPU clock (200 µs at
/// 500 MHz). Returns (budget µs, verdict) when the CPU clock is known.
pub fn rule_of_thumb(r: &RunView) -> Option<(f64, String)> {
    let mhz = r.data.header.system.cpu_mhz.filter(|m| *m > 0.0)?;
    let budget = 1e5 / mhz;
    let max = r.data.total.max as f64 / 1000.0;
    let verdict = if max <= budget {
        format!("within: max {} µs ≤ {} µs", fmt_us(max), fmt_us(budget))
    } else {
        format!("exceeds: max {} µs is {:.1}× the {} µs budget", fmt_us(max), max / budget, fmt_us(budget))
    };
    Some((budget, verdict))
}

/// `rtbench audit`'s findings, the worst first: what stands, and the fix.
pub fn audit(findings: &[Finding]) -> String {
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let mut out = String::from(
        r#"<table class="sys audit"><tr><th>severity</th><th>check</th><th>finding</th><th>fix</th></tr>"#,
    );
    for f in sorted {
        let evidence: Vec<String> = f.evidence.iter().map(|e| format!("{}: {}", e.source, e.value)).collect();
        let _ = write!(
            out,
            r#"<tr><td class="sev-{sev}">{sev}</td><td>{}</td><td title="{}">{}</td><td>{}</td></tr>"#,
            esc(&f.check),
            esc(&evidence.join("\n")),
            esc(&f.summary),
            esc(f.fix.as_deref().unwrap_or("")),
            sev = f.severity.as_str()
        );
    }
    out + "</table>"
}

pub fn rules(runs: &[RunView]) -> String {
    let mut out = String::from(
        "<table><tr><th>probe</th><th>label</th><th>load</th><th>run</th><th>10⁵ cycles</th><th>verdict</th></tr>",
    );
    for r in runs {
        let (budget, verdict) =
            rule_of_thumb(r).map_or(("?".into(), "CPU clock unknown".into()), |(b, v)| (fmt_us(b), v));
        let class = if verdict.starts_with("exceeds") { " class=\"bad\"" } else { "" };
        let _ = write!(out, "<tr>{}<td>{budget} µs</td><td{class}>{}</td></tr>", row_head(r), esc(&verdict));
    }
    out + "</table>"
}

/// A run's traced breaches: when, how late, and the verdict of each, with its breakdown in
/// rtla timerlat's terms on a row of its own.
pub fn breaches(run: &crate::model::Run) -> String {
    let mut out = String::from(
        r#"<table class="breaches"><tr><th>#</th><th>at (s)</th><th>thread</th><th>CPU</th><th>latency (µs)</th><th>verdict</th></tr>"#,
    );
    for b in &run.breaches {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            b.seq,
            b.t_ns as f64 / 1e9,
            b.thread,
            b.cpu.map_or("-".into(), |c| c.to_string()),
            us(b.latency_ns as f64),
            esc(&b.verdict)
        );
        if let Some(a) = &b.timerlat_analysis {
            let _ = write!(
                out,
                r#"<tr class="timerlat"><td></td><td colspan="5">{}</td></tr>"#,
                esc(&in_timerlat_terms(a))
            );
        }
    }
    out + "</table>"
}

/// A breakdown in rtla timerlat's terms in one line: each part's µs and share, what the parts
/// leave out, and any note on what the trace could not see.
fn in_timerlat_terms(a: &crate::model::TimerlatAnalysis) -> String {
    let total = a.thread_latency_ns.unwrap_or(0).max(1) as f64;
    let mut parts: Vec<String> = a
        .parts()
        .iter()
        .map(|(name, ns, share)| match share {
            true => format!("{name} {} µs ({:.1} %)", us(*ns as f64), *ns as f64 * 100.0 / total),
            false => format!("{name} {} µs", us(*ns as f64)),
        })
        .collect();
    if let Some(rest) = a.unaccounted_ns() {
        parts.push(format!("not in these parts {} µs ({:.1} %)", us(rest as f64), rest as f64 * 100.0 / total));
    }
    let notes = a.notes.iter().map(|n| format!("; {n}")).collect::<String>();
    format!("in rtla timerlat's terms: {}{notes}", parts.join(" · "))
}

/// `sysbench` as LMbench's five summary tables: one per group, one row per label, one column
/// per operation, the newest run's median (µs, or MB/s for bandwidths) with its spread on hover.
pub fn sysbench(costs: &[RunView], ops: &[crate::report::OpNote]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for r in costs {
        if !labels.contains(&r.label()) {
            labels.push(r.label());
        }
    }
    let mut out = String::new();
    for group in crate::model::OpGroup::ALL {
        let ops: Vec<String> = ops
            .iter()
            .filter(|o| o.group == group)
            .map(|o| o.name.to_string())
            .filter(|name| costs.iter().any(|r| r.sysbench_op().as_deref() == Some(name)))
            .collect();
        if ops.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<h3>{}</h3><table class=\"sysbench\"><tr><th>label</th><th>load</th><th>placement</th>",
            esc(group.title())
        );
        for op in &ops {
            let _ = write!(out, "<th>{}</th>", esc(op));
        }
        out.push_str("</tr>");
        for label in &labels {
            let mut loads: Vec<String> = Vec::new();
            for r in costs.iter().filter(|r| r.label() == *label) {
                if !loads.contains(&r.load()) {
                    loads.push(r.load());
                }
            }
            for load in loads {
                let row: Vec<&RunView> = costs.iter().filter(|r| r.label() == *label && r.load() == load).collect();
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td>",
                    esc(label),
                    esc(&load_name(&load)),
                    esc(&placements(&row))
                );
                for op in &ops {
                    let newest = costs
                        .iter()
                        .rev()
                        .find(|r| r.label() == *label && r.load() == load && r.sysbench_op().as_ref() == Some(op));
                    match newest {
                        Some(r) => out.push_str(&cost_cell(r, group == crate::model::OpGroup::Bandwidth)),
                        None => out.push_str("<td>-</td>"),
                    }
                }
                out.push_str("</tr>");
            }
        }
        out.push_str("</table>");
    }
    out
}

/// One operation's cell: its median, its spread on hover, and for a fork row the process image
/// it forked from (and its mark) beneath, in view: the number means little without it.
fn cost_cell(r: &RunView, bw: bool) -> String {
    let s = &r.data.total;
    let f = |v: u64| crate::model::op_shown(bw, v as f64);
    let image = r.data.header.sysbench_op().and_then(|p| p.image);
    let image = image.map_or(String::new(), |i| format!(r#"<br><small class="image">{}</small>"#, esc(&i.describe())));
    format!(r#"<td title="min {} max {}">{}{image}</td>"#, f(s.min), f(s.max), f(s.percentile(0.5)))
}

/// Where the sysbench runs of one row ran: "pinned to CPU 1", "unpinned", or each of them.
fn placements(runs: &[&RunView]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for r in runs {
        let cpu = r.data.threads.first().and_then(|t| t.cpu).map(|c| c as usize);
        let p = crate::model::placement(cpu);
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen.join(" / ")
}

/// `sysbench --total` as the I-pipe study's "total system load" table: a row per label, a
/// column per load, the wall time of one pass over the operations, and a % row per label
/// against the baseline the newest pass names.
pub fn sysbench_total(costs: &[RunView]) -> String {
    let totals = totals(costs);
    let Some(baseline) = totals.last().and_then(|r| r.data.header.sysbench_total()).map(|p| p.baseline) else {
        return String::new();
    };
    let mut loads: Vec<String> = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for r in &totals {
        let item = load_item(r);
        if !loads.contains(&item) {
            loads.push(item);
        }
        if !labels.contains(&r.label()) {
            labels.push(r.label());
        }
    }
    let seconds = |label: &str, item: &str| total_seconds(&totals, label, item);
    let mut out = String::from(r#"<table class="sysbench-total"><tr><th>label</th>"#);
    for l in &loads {
        let _ = write!(out, "<th>{}</th>", esc(l));
    }
    out.push_str("</tr>");
    for label in &labels {
        let _ = write!(out, "<tr><td>{}</td>", esc(label));
        for l in &loads {
            let _ = write!(out, "<td>{}</td>", seconds(label, l).map_or("-".into(), |s| format!("{s:.2} s")));
        }
        out.push_str("</tr>");
    }
    for label in labels.iter().filter(|l| **l != baseline) {
        let _ = write!(out, "<tr><td>% {} vs {}</td>", esc(label), esc(&baseline));
        for l in &loads {
            let pct = match (seconds(label, l), seconds(&baseline, l)) {
                (Some(v), Some(b)) if b > 0.0 => format!("{:+.1} %", (v / b - 1.0) * 100.0),
                _ => "-".into(),
            };
            let _ = write!(out, "<td>{pct}</td>");
        }
        out.push_str("</tr>");
    }
    out + "</table>"
}

/// The passes of `sysbench --total` in the order they ran: loads as the passes went, labels as
/// they were measured.
pub fn totals(costs: &[RunView]) -> Vec<&RunView> {
    let mut totals: Vec<&RunView> = costs.iter().filter(|r| r.kind() == RunKind::SysbenchTotal).collect();
    totals.sort_by_key(|r| r.data.header.id);
    totals
}

/// The load a total pass ran under, as its table's column names it.
pub fn load_item(r: &RunView) -> String {
    r.data.header.sysbench_total().map_or_else(|| r.load(), |p| p.load_item)
}

/// The newest total time in seconds of `label` under `item`, among `totals`.
pub fn total_seconds(totals: &[&RunView], label: &str, item: &str) -> Option<f64> {
    totals.iter().rev().find(|r| r.label() == label && load_item(r) == item).map(|r| r.data.total.max as f64 / 1e9)
}
