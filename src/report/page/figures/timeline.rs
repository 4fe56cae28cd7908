//! The trace window of one breach: a lane per CPU with three rows — which task ran (idle
//! pale), interrupt handlers and vectors, softirqs — and the intended and actual wake-ups.

use std::collections::BTreeMap;

use crate::model::{Breach, TraceEvent};
use crate::report::page::svg::{Plot, Scale, Svg, PALETTE};

/// One drawn stretch: (from µs, to µs, label).
type Spans = Vec<(f64, f64, String)>;

/// What one CPU's lane draws.
#[derive(Default)]
struct Lane {
    tasks: Spans,
    irqs: Spans,
    softirqs: Spans,
}

/// Replays one CPU's events into spans. The task row follows the task each line names (and
/// what a switch names as next); interrupt rows pair entries with exits.
fn lane(events: &[&TraceEvent], end_us: f64) -> Lane {
    let mut l = Lane::default();
    let field = |e: &TraceEvent, key: &str| e.field(key).map(str::to_string);
    let mut task: Option<(f64, String)> = None;
    let mut irq: Vec<(f64, String)> = Vec::new();
    let mut softirq: Option<(f64, String)> = None;
    for e in events {
        let at = e.at_ns as f64 / 1000.0;
        let named = if e.pid == 0 { "idle".to_string() } else { format!("{}-{}", e.task, e.pid) };
        if task.as_ref().is_none_or(|(_, t)| *t != named) {
            if let Some((from, t)) = task.take() {
                l.tasks.push((from, at, t));
            }
            task = Some((at, named));
        }
        match e.event.as_str() {
            "sched_switch" => {
                let next = match (field(e, "next_comm"), field(e, "next_pid")) {
                    (_, Some(p)) if p == "0" => "idle".to_string(),
                    (Some(c), Some(p)) => format!("{c}-{p}"),
                    _ => continue,
                };
                if let Some((from, t)) = task.replace((at, next)) {
                    l.tasks.push((from, at, t));
                }
            }
            "irq_handler_entry" => irq.push((at, format!("IRQ {}", field(e, "irq").unwrap_or_default()))),
            "softirq_entry" => softirq = Some((at, field(e, "action").unwrap_or_default())),
            "softirq_exit" => {
                if let Some((from, s)) = softirq.take() {
                    l.softirqs.push((from, at, s));
                }
            }
            name if name.ends_with("_entry") && name != "workqueue_execute_start" && !name.starts_with("hrtimer") => {
                irq.push((at, name.trim_end_matches("_entry").replace('_', " ")));
            }
            name if name == "irq_handler_exit" || (name.ends_with("_exit") && !name.starts_with("softirq")) => {
                if let Some((from, s)) = irq.pop() {
                    l.irqs.push((from, at, s));
                }
            }
            _ => {}
        }
    }
    if let Some((from, t)) = task {
        l.tasks.push((from, end_us, t));
    }
    l.irqs.extend(irq.into_iter().map(|(from, s)| (from, end_us, s)));
    l.softirqs.extend(softirq.map(|(from, s)| (from, end_us, s)));
    l
}

/// A colour per task name, the same in every lane.
fn task_color(name: &str) -> &'static str {
    if name == "idle" {
        return "#e8e8e8";
    }
    let h = name
        .rsplit_once('-')
        .map_or(name, |(comm, _)| comm)
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
    PALETTE[h as usize % PALETTE.len()]
}

pub fn render(title: &str, b: &Breach) -> String {
    let late_us = b.latency_ns as f64 / 1000.0;
    let from = b.window.iter().map(|e| e.at_ns).min().unwrap_or(0).min(0) as f64 / 1000.0;
    let to = (b.window.iter().map(|e| e.at_ns).max().unwrap_or(0) as f64 / 1000.0).max(late_us * 1.05);
    let mut by_cpu: BTreeMap<u32, Vec<&TraceEvent>> = BTreeMap::new();
    for e in &b.window {
        by_cpu.entry(e.cpu).or_default().push(e);
    }
    if let Some(c) = b.cpu {
        by_cpu.entry(c).or_default();
    }
    let rows = ["tasks", "IRQs", "softirqs"];
    let row_h = 22.0;
    let lane_h = row_h * rows.len() as f64 + 14.0;
    let height = 70.0 + lane_h * by_cpu.len() as f64 + 30.0;
    let mut svg = Svg::new(760.0, height);
    let plot = Plot {
        left: 120.0,
        top: 36.0,
        width: 610.0,
        height: lane_h * by_cpu.len() as f64,
        x: Scale::Linear { min: from, max: to },
        y: Scale::Linear { min: 0.0, max: 1.0 },
    };
    svg.text(svg.w / 2.0, 20.0, title, "middle", 14.0, r#" font-weight="bold""#);
    for (v, label) in plot.x.ticks(&|v| format!("{:.0}", if v.abs() < 0.5 { 0.0 } else { v })) {
        let x = plot.px(v);
        svg.line(x, plot.top, x, plot.top + plot.height, r##"stroke="#eee""##);
        svg.text(x, plot.top + plot.height + 15.0, &label, "middle", 11.0, "");
    }
    svg.text(
        plot.left + plot.width / 2.0,
        height - 8.0,
        "µs from the intended wake-up (0); the thread's sample came at the red line",
        "middle",
        12.0,
        "",
    );
    let x_of = |us: f64| plot.px(us.clamp(from, to));
    for (i, (cpu, events)) in by_cpu.iter().enumerate() {
        let top = plot.top + i as f64 * lane_h;
        let lane = lane(events, to);
        svg.text(10.0, top + 14.0, &format!("CPU {cpu}"), "start", 12.0, r#" font-weight="bold""#);
        for (r, (name, spans)) in rows.iter().zip([&lane.tasks, &lane.irqs, &lane.softirqs]).enumerate() {
            let y = top + 4.0 + r as f64 * row_h;
            svg.text(plot.left - 6.0, y + row_h * 0.65, name, "end", 10.0, "");
            svg.rect(plot.left, y, plot.width, row_h - 4.0, r##"fill="#fafafa" stroke="#ddd""##);
            for (a, z, label) in spans {
                let (xa, xz) = (x_of(*a), x_of(*z));
                let color = match r {
                    0 => task_color(label),
                    1 => "#d62728",
                    _ => "#ff7f0e",
                };
                svg.rect(xa, y, (xz - xa).max(1.0), row_h - 4.0, &format!(r#"fill="{color}" class="span""#));
                if xz - xa > 7.0 * label.chars().count() as f64 {
                    let ink = if r == 0 && label == "idle" { "#666" } else { "white" };
                    svg.text((xa + xz) / 2.0, y + row_h * 0.6, label, "middle", 10.0, &format!(r#" fill="{ink}""#));
                }
            }
        }
    }
    let (bottom, top) = (plot.top + plot.height, plot.top);
    svg.line(x_of(0.0), top, x_of(0.0), bottom, r##"stroke="#1f77b4" stroke-width="2" class="intended""##);
    svg.line(x_of(late_us), top, x_of(late_us), bottom, r##"stroke="#c0392b" stroke-width="2" class="actual""##);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at_us: i64, task: &str, pid: i32, event: &str, detail: &str) -> TraceEvent {
        TraceEvent { cpu: 1, at_ns: at_us * 1000, task: task.into(), pid, event: event.into(), detail: detail.into() }
    }

    #[test]
    fn the_lane_shows_the_hog_its_interrupt_and_the_switch_back() {
        let events = [
            ev(-500, "<idle>", 0, "local_timer_entry", "vector=236"),
            ev(-490, "<idle>", 0, "local_timer_exit", "vector=236"),
            ev(10, "hog", 77, "irq_handler_entry", "irq=36 name=virtio1"),
            ev(60, "hog", 77, "irq_handler_exit", "irq=36 ret=handled"),
            ev(100, "hog", 77, "softirq_entry", "vec=1 [action=TIMER]"),
            ev(150, "hog", 77, "softirq_exit", "vec=1 [action=TIMER]"),
            ev(
                5000,
                "hog",
                77,
                "sched_switch",
                "prev_comm=hog prev_pid=77 ==> next_comm=rtbench-0 next_pid=500 next_prio=4",
            ),
        ];
        let refs: Vec<&TraceEvent> = events.iter().collect();
        let l = lane(&refs, 6000.0);
        let tasks: Vec<(f64, f64, &str)> = l.tasks.iter().map(|(a, z, t)| (*a, *z, t.as_str())).collect();
        assert_eq!(tasks, [(-500.0, 10.0, "idle"), (10.0, 5000.0, "hog-77"), (5000.0, 6000.0, "rtbench-0-500")]);
        assert!(l.irqs.contains(&(-500.0, -490.0, "local timer".into())), "{:?}", l.irqs);
        assert!(l.irqs.contains(&(10.0, 60.0, "IRQ 36".into())), "{:?}", l.irqs);
        assert_eq!(l.softirqs, [(100.0, 150.0, "TIMER".to_string())]);
    }
}
