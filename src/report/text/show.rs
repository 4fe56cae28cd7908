//! `rtbench show` and the summary printed after a run: cyclictest's final lines plus the
//! percentiles it cannot give.

use std::fmt::Write;

use crate::model::{ClassifyRecord, CpuInterval, EnvPoint, LongGap, NoiseClass, ProbeParams, RunHeader};
use crate::report::Run;
use crate::stats::{Stats, PERCENTILES};
use crate::units::us;

/// The full text summary of a run.
/// Where the run was resumed: each span it did not measure, which its statistics leave out.
fn gaps(gaps: &[crate::model::Gap]) -> String {
    if gaps.is_empty() {
        return String::new();
    }
    let not_measured: f64 = gaps.iter().map(|g| g.seconds).sum();
    let mut out = format!(
        "resumed {} time{}: {} not measured, left out of the statistics\n",
        gaps.len(),
        if gaps.len() == 1 { "" } else { "s" },
        crate::units::span(not_measured)
    );
    for g in gaps {
        let _ = writeln!(out, "  gap {} – {} ({})", g.start, g.end, crate::units::span(g.seconds));
    }
    out
}

pub fn summary(run: &Run) -> String {
    let h = &run.header;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "run {}  label {}  probe {}  status {}  rt_priority {}",
        h.id, h.label, h.probe, h.status, h.rt_priority
    );
    let _ = writeln!(out, "start {}  end {}", h.start, h.end.as_deref().unwrap_or("-"));
    out.push_str(&gaps(&run.gaps));
    if let Some(vm) = &h.system.vm {
        let _ = writeln!(out, "ran in a virtual machine: {}", vm.describe());
    }
    if h.metric != crate::model::Metric::LATENCY {
        // A cost or a bandwidth (`sysbench`): its repetitions, not latencies.
        let bw = h.metric.better == crate::model::Better::Bigger;
        let s = &run.total;
        let f = |v: u64| crate::model::op_shown(bw, v as f64);
        let _ = writeln!(
            out,
            "median {}  min {}  max {}  ({}, {} repetitions; {} is better)",
            f(s.percentile(0.5)),
            f(s.min),
            f(s.max),
            if bw { "MB/s" } else { "µs per operation" },
            s.count,
            h.metric.names().1
        );
        let cpu = run.threads.first().and_then(|t| t.cpu).map(|c| c as usize);
        let _ = writeln!(out, "placement: {}", crate::model::placement(cpu));
        if let Some(image) = h.sysbench_op().and_then(|p| p.image) {
            let _ = writeln!(out, "forked from: {}", image.describe());
        }
        return out;
    }
    out.push_str(&threads(run));
    if let Some((peer, placed)) = peer_end(h) {
        let _ = writeln!(out, "{peer}: {placed}");
    }
    if let Some((collector, placed)) = collector(h) {
        let _ = writeln!(out, "{collector}: {placed}");
    }
    // Instruments the model names no field for: their records as they wrote them.
    for (name, record) in h.params.measured().into_iter().flat_map(|m| m.instruments.iter()) {
        let _ = writeln!(out, "{name}: {record}");
    }
    out.push('\n');
    // A run whose samples are busy-loop gaps, as its stored parameters say.
    if h.params.measured().is_some_and(|m| matches!(m.probe, crate::model::ProbeParams::Noise(_))) {
        out.push_str(&noise_classes(h));
    }
    if let Some(crate::model::ProbeParams::Migrate(m)) = h.params.measured().map(|m| &m.probe) {
        out.push_str(&migrations(m));
    }
    if let crate::model::RunParams::Imported(crate::model::ImportedParams { summary: Some(t), .. }) = &h.params {
        out.push_str(&tool_summary(t));
    }
    if let Some(crate::model::ProbeParams::Pi(p)) = h.params.measured().map(|m| &m.probe) {
        out.push_str(&inversions(p));
    }
    if let Some(crate::model::ProbeParams::Watch(w)) = h.params.measured().map(|m| &m.probe) {
        out.push_str(&super::watched::lines(w));
    }
    out.push_str(&percentile_table(run));
    for w in &h.warnings {
        let _ = writeln!(out, "WARNING: {w}");
    }
    out
}

/// A line per thread as cyclictest prints it (with its IRQ part under it, as `rtla timerlat
/// top`, where split), then how the timer's samples were split, or the deadline threads'
/// reservations.
fn threads(run: &Run) -> String {
    let h = &run.header;
    let mut out = String::new();
    let deadline = match h.params.measured().map(|m| &m.probe) {
        Some(crate::model::ProbeParams::Deadline(d)) => Some(d),
        _ => None,
    };
    for t in &run.threads {
        let cpu = t.cpu.map_or("-".into(), |c| c.to_string());
        let head = format!("T:{:>3} CPU:{:>3} P:{} ", t.thread, cpu, policy(h, t.thread));
        out.push_str(&cyclictest_line(&head, &t.stats, &format!("Overruns:{}", t.stats.overruns)));
        // `--split`, as `rtla timerlat top` shows it: the IRQ part under the thread's line.
        if let Some(irq) = &t.irq {
            let matched = format!("Unmatched:{} ({:.2} % matched)", irq.unmatched, irq.matched_fraction() * 100.0);
            out.push_str(&cyclictest_line(&format!("{:<w$}", "  IRQ", w = head.chars().count()), &irq.stats, &matched));
        }
    }
    if let Some(split) = h.params.measured().and_then(|m| m.split.as_ref()) {
        if let Some(source) = &split.source {
            let _ = writeln!(out, "IRQ latency from {source}{}", by(&split.transport));
        }
        if let Some(n) = split.missed.filter(|n| *n > 0) {
            let _ = writeln!(out, "the kernel did not run the split's program for {n} timer expiries (it was running)");
        }
        if let (Some(mode), Some(why)) = (&split.mode, &split.mode_reason) {
            let counted =
                split.aggregated.filter(|n| *n > 0).map_or(String::new(), |n| format!("; {n} counted in the kernel"));
            let _ = writeln!(out, "split mode: {mode} ({why}{counted})");
        }
    }
    if let Some(d) = deadline {
        let each: Vec<String> =
            d.reservations.iter().enumerate().map(|(i, [run, period])| format!("T{i} {run} of {period} µs")).collect();
        let _ = writeln!(
            out,
            "SCHED_DEADLINE, unpinned (the kernel admits a deadline thread only with every CPU of its root domain): {}",
            each.join(", ")
        );
    }
    out
}

/// The policy a measuring thread ran at, as the kernel held it ("fifo/95", "other").
fn policy(h: &RunHeader, thread: u32) -> String {
    h.params.ran_at(thread, h.rt_priority).map_or("?".to_string(), |(p, prio)| p.shown(prio))
}

/// Where the other end ran: a ping-pong's echo server says so when it is rtbench's
/// ("echo server (host)", "pinned to CPU 1, fifo/95").
/// How BPF records travelled, in words after where they came from: the mode the run used.
fn by(transport: &Option<String>) -> String {
    match transport.as_deref() {
        Some("ringbuf") => " (records read from a ring buffer)".into(),
        Some("queue") => " (records popped from a queue: the kernel has no ring buffers)".into(),
        Some(other) => format!(" (records through {other})"),
        None => String::new(),
    }
}

fn peer_end(h: &RunHeader) -> Option<(String, String)> {
    let ProbeParams::Pingpong(p) = &h.params.measured()?.probe else { return None };
    let placed = p.peer_placement.as_ref()?;
    Some((format!("echo server ({})", p.peer_host.as_deref().unwrap_or("?")), placed.clone()))
}

/// Where rtbench's own work ran while it measured, when the run says.
fn collector(h: &RunHeader) -> Option<(String, String)> {
    let c = h.params.measured()?.collector.as_ref()?;
    Some(("collector (main thread, trace readers, store writes)".into(), c.describe()))
}

/// Where each end of a run ran, as `show` says it: every measuring thread (its CPU, or
/// unpinned, and its policy), the peer that said where it ran, and the collector.
pub fn ends(run: &Run) -> Vec<(String, String)> {
    let h = &run.header;
    let mut ends: Vec<(String, String)> = run
        .threads
        .iter()
        .map(|t| {
            let placed = crate::model::placement(t.cpu.map(|c| c as usize));
            (format!("thread {}", t.thread), format!("{placed}, {}", policy(h, t.thread)))
        })
        .collect();
    ends.extend(peer_end(h));
    ends.extend(collector(h));
    ends
}

/// `migrate`: its intervals' violations, the first few in words.
fn migrations(m: &crate::model::MigrateParams) -> String {
    let mut out = String::new();
    let pinned = if m.inject { "; the two highest pinned to one CPU (--inject)" } else { "" };
    let _ = writeln!(
        out,
        "{} FIFO tasks from priority {} on CPUs {}, {} ms each per {} ms interval{pinned}",
        m.tasks,
        m.base_priority,
        crate::units::format_cpu_list(&m.task_cpus),
        m.run_ms,
        m.interval_ms
    );
    match (m.intervals, m.violations) {
        (Some(intervals), Some(v)) => {
            let steal = m.violations_in_steal.filter(|n| *n > 0).map_or(String::new(), |n| {
                format!(" ({n} in intervals where the hypervisor stole time: not the kernel's)")
            });
            let _ = writeln!(
                out,
                "violations: {v} in {intervals} intervals, a higher task waiting over {} µs while a lower one ran{steal}",
                m.max_wait_us
            );
        }
        _ => out.push_str("violations: unknown (the run ended before it said)\n"),
    }
    for said in &m.first_violations {
        let _ = writeln!(out, "  {said}");
    }
    out + "\n"
}

/// An imported tool's own verdict and counts.
fn tool_summary(t: &crate::model::ToolSummary) -> String {
    let version = t.version.as_deref().map_or(String::new(), |v| format!(" {v}"));
    let verdict = match t.return_code {
        Some(0) => "passed its own test (exit 0)".to_string(),
        Some(rc) => format!("failed its own test (exit {rc})"),
        None => "did not say how it ended".to_string(),
    };
    let inversions = t.inversions.map_or(String::new(), |n| format!("; inversions: {n}"));
    format!("{}{version}: {verdict}{inversions}\n\n", t.tool)
}

/// `pi`: the inversions its groups went through, and any deadlock in words.
fn inversions(p: &crate::model::PiParams) -> String {
    let mut out = String::new();
    let inherit = if p.inject { "without priority inheritance (--inject)" } else { "with priority inheritance" };
    let _ = writeln!(
        out,
        "inversion groups: low/medium/high at FIFO {}/{}/{}, a mutex {inherit}; deadlocked after {} ms without a round",
        p.base_priority,
        p.base_priority + 1,
        p.base_priority + 2,
        p.deadlock_ms
    );
    match (p.inversions, p.deadlocks) {
        (Some(n), Some(d)) => {
            let rate = p.inversions_per_s.map_or(String::new(), |r| format!(" ({r:.0} a second)"));
            let _ = writeln!(out, "inversions: {n}{rate}, deadlocks: {d}");
        }
        _ => out.push_str("inversions: unknown (the run ended before it said)\n"),
    }
    for said in &p.first_deadlocks {
        let _ = writeln!(out, "  {said}");
    }
    out + "\n"
}

/// A noise run's gaps by what ran in them (`--classify`), a line per class as rtla osnoise
/// top's columns: IRQ, softirq, thread, HW/hypervisor.
fn noise_classes(h: &RunHeader) -> String {
    let Some(c) = h.params.measured().and_then(|m| m.classify.as_ref()) else {
        return "noise by class: unknown (measured without --classify)\n\n".into();
    };
    if let Some(why) = &c.skipped {
        return format!("noise by class: unknown ({why})\n\n");
    }
    let from = c.source.as_ref().map_or(String::new(), |s| format!("noise classified from {s}{}\n", by(&c.transport)));
    let total = c.noise_ns().max(1);
    let secs = h.params.duration_s().filter(|s| *s > 0.0);
    let mut out = format!(
        "noise by class (what ran in each gap){}\n{:<15}{:>9}{:>10}{:>14}{:>8}{:>12}  most noise\n",
        if c.lost_events > 0 { format!(", {} trace events lost", c.lost_events) } else { String::new() },
        "class",
        "gaps",
        "gaps/s",
        "noise µs",
        "share",
        "max µs"
    );
    for class in NoiseClass::ALL {
        let (count, ns, max, _) = c.class(class);
        if class == NoiseClass::Unknown && count == 0 {
            continue;
        }
        let top = c.threads.iter().flat_map(|t| &t.totals).filter(|t| t.class == class).max_by_key(|t| t.ns);
        let most = top.map_or(String::new(), |t| t.what());
        let line = format!(
            "{:<15}{count:>9}{:>10}{:>14}{:>7.1}%{:>12}  {most}",
            class.heading(),
            secs.map_or("-".into(), |s| format!("{:.1}", count as f64 / s)),
            us(ns as f64),
            ns as f64 / total as f64 * 100.0,
            us(max as f64)
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out.push_str(&interference(c, secs));
    out.push_str(&own_time(c, secs));
    out.push_str(&longest_gaps(c));
    out.push_str(&from);
    out.push('\n');
    out
}

/// The interfering events of the measured CPUs a second, as rtla osnoise top's IRQ, softirq
/// and thread columns count them (an event each, where a gap may hold several or none of
/// them), and its HW column's gaps in which none ran; nothing for runs that did not count them.
fn interference(c: &ClassifyRecord, secs: Option<f64>) -> String {
    let counted: Vec<_> = c.threads.iter().filter_map(|t| t.interference).collect();
    let Some(secs) = secs.filter(|_| !counted.is_empty()) else { return String::new() };
    let mut all = crate::model::Interference::default();
    counted.iter().for_each(|i| all.add(i));
    // HW and the time are shown where every thread counted them (runs made before did not).
    let hw = match all.hw.filter(|_| counted.iter().all(|i| i.hw.is_some())) {
        Some(n) => format!("  HW {:.1}", n as f64 / secs),
        None => String::new(),
    };
    let per_s = |n: u64| n as f64 / secs;
    let events = format!(
        "interfering events/s, as rtla osnoise counts them: IRQ {:.1}  softirq {:.1}  thread {:.1}{hw}\n",
        per_s(all.irq),
        per_s(all.softirq),
        per_s(all.thread)
    );
    let Some(t) = all.time.filter(|_| counted.iter().all(|i| i.time.is_some())) else { return events };
    let per_s = |ns: u64| ns as f64 / 1e3 / secs;
    format!(
        "{events}their time, µs/s, as osnoise's noise events add it up: IRQ {:.1}  softirq {:.1}  thread {:.1}  HW {:.1}\n",
        per_s(t.irq),
        per_s(t.softirq),
        per_s(t.thread),
        per_s(t.hw)
    )
}

/// What the classification's own programs took of the measured CPUs, inside the gaps they
/// classify: about as much of the noise is theirs (less what they took in RT throttling's
/// pauses, which are no gaps; more, the kernel's calls into them, which no clock of theirs
/// sees: under TCG as much again). The noise without them is the plain loop's.
fn own_time(c: &ClassifyRecord, secs: Option<f64>) -> String {
    let (Some(ns), Some(runs), Some(share), Some(secs)) = (c.programs_ns, c.program_runs, c.programs_share(), secs)
    else {
        return String::new();
    };
    format!(
        "the classification's BPF programs ran {:.0} times/s on the measured CPUs and took {:.1} µs/s there by \
         their own clock: they run inside the gaps they classify, so about {:.1} % of the noise above is theirs, \
         and the kernel's calls into them add more; the CPU's noise without them: `rtbench noise` without \
         --classify\n",
        runs as f64 / secs,
        ns as f64 / 1e3 / secs,
        share * 100.0
    )
}

/// The run's longest gaps (of every thread's kept ones, as many as `show` has room for) and
/// what ran in each; nothing for runs that kept none.
fn longest_gaps(c: &ClassifyRecord) -> String {
    const SHOWN: usize = 5;
    let mut all: Vec<(u32, &LongGap)> =
        c.threads.iter().flat_map(|t| t.longest.iter().map(|g| (t.thread, g))).collect();
    all.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.1.t_ns.cmp(&b.1.t_ns)));
    if all.is_empty() {
        return String::new();
    }
    let mut out = format!("longest gaps\n{:<8}{:>10}{:>12}  {:<15}what ran\n", "thread", "at s", "µs", "class");
    for (thread, g) in all.into_iter().take(SHOWN) {
        let at = g.t_ns as f64 / 1e9;
        let line = format!("{thread:<8}{at:>10.3}{:>12}  {:<15}{}", us(g.ns as f64), g.class.heading(), g.what());
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// cyclictest's line: `head`, count, min, avg and max, `tail`.
fn cyclictest_line(head: &str, s: &Stats, tail: &str) -> String {
    let (min, avg) = if s.count == 0 { (0, 0.0) } else { (s.min, s.mean()) };
    format!(
        "{head}C:{:>10} Min:{:>9} Avg:{:>9} Max:{:>10} {tail}  (µs)\n",
        s.count,
        us(min as f64),
        us(avg),
        us(s.max as f64)
    )
}

/// Percentiles per thread (and of its IRQ part, when split) and merged, in µs. Every column is
/// led by a space: a value of 100 ms and more ("171525.810") fills its width, and must not run
/// into the one before it.
pub fn percentile_table(run: &Run) -> String {
    let mut out = String::new();
    let _ = write!(out, "{:<8}{:>12} {:>10} {:>10}", "thread", "samples", "mean", "stddev");
    for (label, _) in PERCENTILES {
        let _ = write!(out, " {:>10}", format!("p{label}"));
    }
    out.push_str("   (µs)\n");
    let mut row = |name: String, s: &Stats| {
        let sum = s.summary();
        // "-" where the distribution is not known (a tool's min/avg/max imported).
        let stddev = sum.stddev_ns.map_or("-".into(), us);
        let _ = write!(out, "{:<8}{:>12} {:>10} {:>10}", name, s.count, us(sum.mean_ns), stddev);
        for (label, _) in PERCENTILES {
            let known = sum.percentiles_ns.get(label).and_then(|v| v.as_u64());
            let _ = write!(out, " {:>10}", known.map_or("-".into(), |v| us(v as f64)));
        }
        out.push('\n');
    };
    for t in &run.threads {
        row(t.thread.to_string(), &t.stats);
        if let Some(irq) = &t.irq {
            row(format!("{} IRQ", t.thread), &irq.stats);
        }
    }
    if run.threads.len() > 1 {
        row("all".into(), &run.total);
    }
    out
}

/// The run's worst intervals beside what happened on their CPUs then: where a spike came from.
/// Empty when the run has no interference record (imports, synthetic samples).
pub fn worst_intervals_table(run: &Run, envelope: &[(u32, EnvPoint)], activity: &[CpuInterval]) -> String {
    if activity.is_empty() {
        return String::new();
    }
    let per_thread: Vec<(u32, Option<u32>, Vec<EnvPoint>)> = run
        .threads
        .iter()
        .map(|t| (t.thread, t.cpu, envelope.iter().filter(|(n, _)| *n == t.thread).map(|(_, p)| *p).collect()))
        .collect();
    let threads: Vec<(u32, Option<u32>, &[EnvPoint])> =
        per_thread.iter().map(|(t, c, p)| (*t, *c, p.as_slice())).collect();
    let interval_s = run.header.envelope_ns as f64 / 1e9;
    let mut out = format!(
        "\nworst intervals and their CPU then (µs; {} per interval)\n{:>16} {:>6} {:>4} {:>12} {:>12} {:>10} {:>10} {:>11}\n",
        crate::units::span(interval_s),
        "time (s)",
        "thread",
        "CPU",
        "max",
        "steal",
        "irq",
        "softirq",
        "interrupts"
    );
    for w in crate::model::worst_intervals(&threads, activity, 5) {
        let t = w.point.index as f64 * interval_s;
        let a = w.activity;
        let cell = |f: fn(&CpuInterval) -> u64| a.as_ref().map_or("-".to_string(), |a| us(f(a) as f64));
        let _ = writeln!(
            out,
            "{:>16} {:>6} {:>4} {:>12} {:>12} {:>10} {:>10} {:>11}",
            format!("{:.2}–{:.2}", t, t + interval_s),
            w.thread,
            w.cpu.map_or("-".into(), |c| c.to_string()),
            us(w.point.max as f64),
            cell(|a| a.steal_ns),
            cell(|a| a.irq_ns),
            cell(|a| a.softirq_ns),
            a.map_or("-".into(), |a| a.interrupts.to_string())
        );
    }
    out
}

/// One line per run for `rtbench runs`.
pub fn runs_table(runs: &[RunHeader], samples: &[u64]) -> String {
    let mut out = format!(
        "{:>5}  {:<24} {:<10} {:<12} {:<24} {:>12}  {}\n",
        "id", "label", "probe", "status", "start", "samples", "warnings"
    );
    for (h, n) in runs.iter().zip(samples) {
        let _ = writeln!(
            out,
            "{:>5}  {:<24} {:<10} {:<12} {:<24} {:>12}  {}",
            h.id,
            h.label,
            h.probe,
            h.status,
            h.start,
            n,
            h.warnings.len()
        );
    }
    out
}

/// The breaches `--breach` traced, one verdict each, and what tracing could not take.
pub fn breaches(run: &Run) -> String {
    let Some(rec) = run.header.params.measured().and_then(|m| m.breach.as_ref()) else { return String::new() };
    let mut out =
        format!("\nbreaches over {} µs traced with ftrace", crate::units::fmt_ns_as_us(rec.threshold_ns as f64));
    if let Some(why) = &rec.skipped {
        let _ = writeln!(out, ": none, the run went untraced ({why})");
        return out;
    }
    let _ = writeln!(
        out,
        ": {} stored (at most {}), {} more not traced (while a window was taken or after the last)",
        rec.traced, rec.max, rec.untraced
    );
    for b in &run.breaches {
        let _ = writeln!(
            out,
            "  #{:<3} {:>9.3} s  thread {}  CPU {}  {:>10} µs  {}",
            b.seq,
            b.t_ns as f64 / 1e9,
            b.thread,
            b.cpu.map_or("-".into(), |c| c.to_string()),
            us(b.latency_ns as f64),
            b.verdict
        );
        if let Some(a) = &b.timerlat_analysis {
            let _ = writeln!(
                out,
                "        in rtla timerlat's terms (IRQ latency to the timer's callback, times to the µs):"
            );
            out.push_str(&analysis_lines(a, "        ", "not in these parts (own, idle, untraced)"));
        }
    }
    if !rec.events_missing.is_empty() {
        let _ = writeln!(out, "  events this kernel lacks: {}", rec.events_missing.join(", "));
    }
    out
}

/// rtla timerlat's auto-analysis of an imported run: each part in µs and its share of the
/// thread latency, then the tasks rtla lists under them.
pub fn timerlat_analysis(run: &Run) -> String {
    let crate::model::RunParams::Imported(p) = &run.header.params else { return String::new() };
    let Some(a) = &p.timerlat_analysis else { return String::new() };
    let head = format!("\nrtla timerlat auto-analysis of the activation that stopped it (CPU {})\n", a.cpu);
    head + &analysis_lines(a, "  ", "not in rtla's parts")
}

/// A breakdown in timerlat's terms, one part a line under `indent`: its µs and share, the
/// sources listed under it, what the parts leave out (`left`), the total, and any notes.
pub fn analysis_lines(a: &crate::model::TimerlatAnalysis, indent: &str, left: &str) -> String {
    let total = a.thread_latency_ns;
    let mut out = String::new();
    let share = |ns: u64| total.filter(|t| *t > 0).map(|t| format!("{:6.2} %", ns as f64 * 100.0 / t as f64));
    for (name, ns, is_share) in a.parts() {
        let share = share(ns).filter(|_| is_share);
        let _ = writeln!(out, "{indent}{name:<44} {:>12} µs  {}", us(ns as f64), share.unwrap_or_default());
    }
    for i in &a.interference {
        let _ = writeln!(
            out,
            "{indent}  {:<8} {:<33} {:>12} µs",
            i.class,
            format!("{}:{}", i.task.name, i.task.id),
            us(i.task.duration_ns as f64)
        );
    }
    if let (Some(t), Some(rest)) = (total, a.unaccounted_ns()) {
        let _ = writeln!(out, "{indent}{left:<44} {:>12} µs  {}", us(rest as f64), share(rest).unwrap_or_default());
        let _ = writeln!(out, "{indent}{:<44} {:>12} µs  100.00 %", "thread latency", us(t as f64));
    }
    for n in &a.notes {
        let _ = writeln!(out, "{indent}note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::model::Metric;

    /// An instrument's record the model names no field for is shown as it was stored.
    #[test]
    fn the_record_of_an_instrument_without_a_field_is_shown_under_its_name() {
        let mut run = crate::report::formats::export::test_run(Metric::LATENCY);
        let params = serde_json::json!({"threads": 1, "cpus": [1], "policy": "fifo", "priority": 95, "mlock": true,
            "loops": 100, "duration_s": null, "envelope_interval_ns": 1_000_000_000u64, "samples_file": null,
            "interval_us": 1000, "distance_us": 0, "instruments": {"noop": {"seen": 100}}});
        run.header.params = serde_json::from_value(params).unwrap();
        let said = super::summary(&run);
        assert!(said.lines().any(|l| l == r#"noop: {"seen":100}"#), "{said}");
    }

    /// A latency of 100 ms and more fills a column's width: the columns still part.
    #[test]
    fn every_percentile_column_stays_apart_however_wide_its_value() {
        let mut run = crate::report::formats::export::test_run(Metric::LATENCY);
        run.threads[0].stats.record(171_525_810);
        let table = super::percentile_table(&run);
        let mut lines = table.lines();
        let columns = lines.next().unwrap().split_whitespace().count() - 1; // "(µs)" is no column
        for row in lines {
            assert_eq!(row.split_whitespace().count(), columns, "{table}");
        }
    }
}
