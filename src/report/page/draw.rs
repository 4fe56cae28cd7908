//! Which figures a report draws, in the order it draws them: per probe its comparisons, each
//! run's own figures and the tails by label; then each label's probes, sysbench's costs and the
//! monitors' long-term plots.

use super::{distinct, file_safe};
use crate::evt::Estimate;
use crate::model::NoiseClass;
use crate::report::page::figures::{
    bars, classes, costs as cost_bars, histogram, load_name, percentiles, scatter, tail, timeline, windows, Figure,
};
use crate::report::page::svg::PALETTE;
use crate::report::select::{Monitor, RunView};

/// Breaches per run drawn as a timeline; the table lists them all.
const BREACH_FIGURES: usize = 3;

/// What every latency figure of one report shares: the runs and their labels (a label's colour
/// is its place in that list, so a label keeps its colour in every figure).
struct Shared<'a> {
    runs: &'a [RunView],
    labels: Vec<String>,
}

impl<'a> Shared<'a> {
    fn new(runs: &'a [RunView]) -> Self {
        let labels = distinct(runs.iter().map(|r| r.label().to_string()));
        crate::report::select::fit_all(runs);
        Shared { runs, labels }
    }

    /// The label's place in the palette.
    fn color(&self, label: &str) -> usize {
        self.labels.iter().position(|l| l == label).unwrap_or(0)
    }

    fn paint(&self, label: &str) -> &'static str {
        PALETTE[self.color(label) % PALETTE.len()]
    }

    /// In a campaign, the few labels one probe's overlaid figures name: those with the largest
    /// p99 under any load, the worst first (twenty hosts in eight colours name none); else all.
    fn named(&self, these: &[&RunView]) -> Option<Vec<String>> {
        if !super::campaign::is_campaign(self.labels.len()) {
            return None;
        }
        let mut worst: Vec<(u64, String)> = Vec::new();
        for r in these {
            let p99 = r.data.total.percentile(0.99);
            match worst.iter_mut().find(|(_, l)| l == r.label()) {
                Some(w) => w.0 = w.0.max(p99),
                None => worst.push((p99, r.label().to_string())),
            }
        }
        worst.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Some(worst.into_iter().take(NAMED).map(|(_, l)| l).collect())
    }
}

/// Labels a campaign's overlaid figures name, each in its own colour.
const NAMED: usize = 3;

/// Every latency figure of a report over `runs`.
pub fn figures(runs: &[RunView]) -> Vec<Figure> {
    let shared = Shared::new(runs);
    let mut figs = Vec::new();
    for probe in distinct(runs.iter().map(|r| r.probe().to_string())) {
        let these: Vec<&RunView> = runs.iter().filter(|r| r.probe() == probe).collect();
        figs.push(probe_bars(&shared, &probe, &these));
        figs.extend(percentile_figures(&shared, &probe, &these));
        let axes = histogram::axes(&these.iter().map(|r| &r.data.total).collect::<Vec<_>>());
        let split_axes = split_axes(&these);
        // A campaign's page draws each probe with every label, not each run alone.
        let each_run = !super::campaign::is_campaign(shared.labels.len());
        for r in these.iter().filter(|_| each_run) {
            figs.extend(run_figures(&shared, &probe, r, axes));
            figs.extend(split_axes.and_then(|a| split_figure(probe.as_str(), r, a)));
        }
        figs.extend(tails_by_label(&shared, &probe, &these));
        figs.extend(class_figure(&probe, &these));
        figs.extend(these.iter().filter(|_| each_run).filter_map(|r| class_time_figure(&probe, r)));
    }
    if !super::campaign::is_campaign(shared.labels.len()) {
        figs.extend(label_figures(&shared));
    }
    figs
}

/// One probe's min, avg and max, a group per run.
fn probe_bars(shared: &Shared, probe: &str, these: &[&RunView]) -> Figure {
    let groups: Vec<bars::Group> = these.iter().map(|r| bar_group(shared.runs, r, r.label())).collect();
    Figure {
        name: format!("{probe}-bars"),
        caption: format!("{probe}: min, avg and max per label and load (log scale)"),
        svg: bars::render(&format!("{probe}: min / avg / max"), &groups),
    }
}

/// The noise runs' gaps by class (`noise --classify`), a bar per classified run.
fn class_figure(probe: &str, these: &[&RunView]) -> Option<Figure> {
    let bars: Vec<classes::Bar> = these
        .iter()
        .filter_map(|r| {
            let c = r.data.header.params.measured()?.classify.as_ref().filter(|c| c.skipped.is_none())?;
            let ns = NoiseClass::ALL.iter().map(|k| (*k, c.class(*k).1)).collect();
            let own = c.programs_share().map_or(String::new(), |p| format!(" · {:.1} % its BPF's own", p * 100.0));
            Some(classes::Bar {
                line: format!("run {} · {} · {}{own}", r.data.header.id, r.label(), load_name(&r.load())),
                ns,
            })
        })
        .collect();
    (!bars.is_empty()).then(|| Figure {
        name: format!("{probe}-classes"),
        caption: format!(
            "{probe}: share of the noise by what ran in each gap (IRQ, softirq, thread, or nothing the kernel saw); \
             \"its BPF's own\": the classification's programs' own time, spent inside the gaps they classify"
        ),
        svg: classes::render(&format!("{probe}: noise by class"), &bars),
    })
}

/// A classified noise run's noise per interval, stacked by class.
fn class_time_figure(probe: &str, r: &RunView) -> Option<Figure> {
    let last = r.data.noise.iter().map(|c| c.index).max()?;
    let mut per_interval = vec![[0u64; 5]; last as usize + 1];
    for c in &r.data.noise {
        let k = NoiseClass::ALL.iter().position(|k| *k == c.class).unwrap_or(4);
        per_interval[c.index as usize][k] += c.ns;
    }
    let id = r.data.header.id;
    let interval_s = r.data.header.envelope_ns.max(1) as f64 / 1e9;
    Some(Figure {
        name: format!("{probe}-classes-{id}"),
        caption: format!("run {id} · {}: noise per interval by what ran in each gap", r.label()),
        svg: classes::render_over_time(
            &format!("{probe} run {id}: noise by class over time"),
            interval_s,
            &per_interval,
        ),
    })
}

/// One probe's latency by percentile, linear and in nines.
fn percentile_figures(shared: &Shared, probe: &str, these: &[&RunView]) -> Vec<Figure> {
    let named = shared.named(these);
    let series: Vec<percentiles::Series> = these
        .iter()
        .map(|r| {
            let rank = named.as_ref().map(|n| n.iter().position(|l| l == r.label()));
            percentiles::Series {
                color: rank.flatten().unwrap_or_else(|| shared.color(r.label())),
                label: r.label().to_string(),
                load: r.load(),
                extra: twin_suffix(shared.runs, r),
                stats: &r.data.total,
                muted: rank.is_some_and(|at| at.is_none()),
            }
        })
        .collect();
    let colour = match &named {
        None => "colour = label".to_string(),
        Some(n) => format!(
            "colour = the {} labels with the largest p99, grey = the other {}",
            n.len(),
            shared.labels.len() - n.len()
        ),
    };
    [(percentiles::View::Linear, "percentiles", "0–100 %"), (percentiles::View::Nines, "nines", "90 … 99.9999 %")]
        .into_iter()
        .map(|(view, tag, what)| Figure {
            name: format!("{probe}-{tag}"),
            caption: format!("{probe}: latency by percentile, {what}; {colour}, dashed = loaded"),
            svg: percentiles::render(&format!("{probe}: latency by percentile ({what})"), &series, view),
        })
        .collect()
}

/// A run's own figures: histogram, latency over time, its tail when it has an estimate, and the
/// first breaches' timelines.
fn run_figures(shared: &Shared, probe: &str, r: &RunView, axes: histogram::Axes) -> Vec<Figure> {
    let title = format!("run {} · {} · {} · {}", r.data.header.id, r.label(), probe, load_name(&r.load()));
    let mut figs = vec![
        Figure {
            name: format!("run{}-histogram", r.data.header.id),
            caption: format!("{title}: histogram (same axes for every {probe} run), max marked"),
            svg: histogram::render(&title, &r.data.total, axes, shared.paint(r.label())),
        },
        scatter_figure(r, &title),
    ];
    if let Some(e) = r.estimate() {
        let one = tail::Tail {
            label: r.label().to_string(),
            stats: &r.data.total,
            estimate: e,
            color: shared.paint(r.label()),
        };
        figs.push(Figure {
            name: format!("run{}-tail", r.data.header.id),
            caption: tail_caption(&title, e),
            svg: tail::render(&title, &[one]),
        });
    }
    figs.extend(breach_figures(r, &title));
    figs
}

/// Colours of the split histogram: thread and IRQ, the same in every run so the two sides read
/// alike across labels.
const THREAD_COLOR: &str = PALETTE[0];
const IRQ_COLOR: &str = PALETTE[4];

/// Axes fitting the thread and the IRQ latency of every split run of one probe; `None` when
/// none of them was split.
fn split_axes(these: &[&RunView]) -> Option<histogram::Axes> {
    let irq: Vec<(&RunView, crate::stats::Stats)> =
        these.iter().filter_map(|r| Some((*r, r.data.irq_total()?))).collect();
    if irq.is_empty() {
        return None;
    }
    let all: Vec<&crate::stats::Stats> = irq.iter().flat_map(|(r, i)| [&r.data.total, i]).collect();
    Some(histogram::axes(&all))
}

/// `--split`: the run's thread latency and its IRQ latency overlaid on the same axes, as
/// `rtla timerlat hist` sets them side by side; `None` when the run was not split.
fn split_figure(probe: &str, r: &RunView, axes: histogram::Axes) -> Option<Figure> {
    let irq = r.data.irq_total()?;
    let id = r.data.header.id;
    let title = format!("run {id} · {} · {probe} · {}: IRQ and thread", r.label(), load_name(&r.load()));
    let us = |ns: u64| crate::units::fmt_ns_as_us(ns as f64);
    let (thread, all) = (&r.data.total, r.data.total.count);
    let series = [
        histogram::Series {
            stats: thread,
            color: THREAD_COLOR,
            name: format!("thread latency: {} samples, max {} µs", thread.count, us(thread.max)),
        },
        histogram::Series {
            stats: &irq,
            color: IRQ_COLOR,
            name: format!("IRQ latency: {} matched, max {} µs", irq.count, us(irq.max)),
        },
    ];
    let threads = if r.data.threads.len() > 1 { ", every thread merged" } else { "" };
    Some(Figure {
        name: format!("run{id}-split"),
        caption: format!(
            "{title}: histograms of the thread latency (the sample) and of its IRQ latency (the timer's expiry \
             handler − its expiry) on the same axes for every split {probe} run{threads}, maxima dashed; {} of {all} \
             samples matched with their expiry",
            irq.count
        ),
        svg: histogram::overlay(&title, &series, axes),
    })
}

/// Latency over time: every sample when the store kept them all, else the envelope; intervals
/// in which the hypervisor took a measured CPU away are shaded and counted in the caption.
fn scatter_figure(r: &RunView, title: &str) -> Figure {
    let interval_s = r.data.header.envelope_ns.max(1) as f64 / 1e9;
    let steal = r.steal_marks();
    let (caption, svg) = match &r.raw {
        Some(raw) => (
            format!("{title}: latency over time, every sample"),
            scatter::render_samples(title, raw, &steal, &r.data.gaps),
        ),
        None => (
            format!("{title}: latency over time, min–max band and mean per {}", crate::units::span(interval_s)),
            scatter::render(title, &r.envelope, interval_s, &steal, &r.data.gaps),
        ),
    };
    let caption = match steal.len() {
        0 => caption,
        n => format!(
            "{caption}; shaded: {n} intervals in which the hypervisor took a measured CPU away ({} where it alone explains the largest latency)",
            steal.iter().filter(|m| m.explains).count()
        ),
    };
    let caption = match r.data.gaps.len() {
        0 => caption,
        n => format!("{caption}; grey: {n} span(s) not measured, where the run stopped and was resumed"),
    };
    Figure { name: format!("run{}-scatter", r.data.header.id), caption, svg }
}

/// The trace around each of the run's first breaches.
fn breach_figures(r: &RunView, title: &str) -> Vec<Figure> {
    r.data
        .breaches
        .iter()
        .take(BREACH_FIGURES)
        .map(|b| {
            let what = format!("{title} · breach {} ({} µs)", b.seq, crate::units::fmt_ns_as_us(b.latency_ns as f64));
            Figure {
                name: format!("run{}-breach{}", r.data.header.id, b.seq),
                caption: format!(
                    "{what}: the trace around it, one lane per CPU (tasks, IRQs and vectors, softirqs); blue: the \
                     intended wake-up, red: the sample; {}",
                    b.verdict
                ),
                svg: timeline::render(&what, b),
            }
        })
        .collect()
}

/// Per load, the fitted tails of one probe's runs overlaid, when at least two labels have one
/// (in a campaign, the labels `Shared::named` picks).
fn tails_by_label(shared: &Shared, probe: &str, these: &[&RunView]) -> Vec<Figure> {
    let named = shared.named(these);
    let shown = |r: &RunView| named.as_ref().is_none_or(|n| n.iter().any(|l| l == r.label()));
    let paint = |label: &str| match named.as_ref().and_then(|n| n.iter().position(|l| l == label)) {
        Some(rank) => PALETTE[rank % PALETTE.len()],
        None => shared.paint(label),
    };
    let mut figs = Vec::new();
    for load in distinct(these.iter().map(|r| r.load())) {
        let here: Vec<&&RunView> =
            these.iter().filter(|r| r.load() == load && shown(r) && r.estimate().is_some()).collect();
        if distinct(here.iter().map(|r| r.label().to_string())).len() < 2 {
            continue;
        }
        let tails: Vec<tail::Tail> = here
            .iter()
            .filter_map(|r| {
                Some(tail::Tail {
                    label: format!("{}{}", r.label(), twin_suffix(shared.runs, r)),
                    stats: &r.data.total,
                    estimate: r.estimate()?,
                    color: paint(r.label()),
                })
            })
            .collect();
        let title = format!("{probe} · {}: tails by label", load_name(&load));
        let which = match &named {
            None => "one colour per label".to_string(),
            Some(n) => format!("the {} labels with the largest p99 of {}", n.len(), shared.labels.len()),
        };
        figs.push(Figure {
            name: format!("{probe}-tails-{}", file_safe(&load)),
            caption: format!(
                "{title}: latency exceeded with probability p per sample, observed (solid) and the fitted \
                 generalized Pareto tail (dashed) with its 95 % band down to 1e-12, {which}; dotted: \
                 each run's observed max"
            ),
            svg: tail::render(&title, &tails),
        });
    }
    figs
}

/// Per label, every probe idle and loaded.
fn label_figures(shared: &Shared) -> Vec<Figure> {
    shared
        .labels
        .iter()
        .map(|label| {
            let groups: Vec<bars::Group> = shared
                .runs
                .iter()
                .filter(|r| r.label() == label)
                .map(|r| bar_group(shared.runs, r, r.probe()))
                .collect();
            Figure {
                name: format!("label-{}-probes", file_safe(label)),
                caption: format!("{label}: every probe, idle and loaded"),
                svg: bars::render(&format!("{label}: all probes"), &groups),
            }
        })
        .collect()
}

/// Per label with monitor windows, the long-term plot of their maxima per CPU.
pub(super) fn monitor_figures(monitors: &[Monitor]) -> Vec<Figure> {
    monitors
        .iter()
        .map(|m| {
            let runs = distinct(m.windows.iter().map(|w| w.run.to_string())).len();
            let what = if m.probe == "timer" { String::new() } else { format!(" ({})", m.probe) };
            let title = format!("{}: largest latency per monitor window{what}", m.label);
            Figure {
                name: match m.probe.as_str() {
                    "timer" => format!("monitor-{}", file_safe(&m.label)),
                    other => format!("monitor-{}-{}", file_safe(&m.label), file_safe(other)),
                },
                caption: format!(
                    "{title}, one colour per CPU, {runs} windows (the OSADL farm's long-term plot): a point is the \
                     largest latency of one window on that CPU"
                ),
                svg: windows::render(&title, &m.windows),
            }
        })
        .collect()
}

/// `sysbench` as the Geode paper's Figure 32: every operation, a bar per label (the newest
/// run's median), when any label measured one.
pub(super) fn cost_figure(costs: &[RunView], ops: &[crate::report::OpNote]) -> Option<Figure> {
    let labels = distinct(costs.iter().map(|r| r.label().to_string()));
    let ops: Vec<cost_bars::OpBars> = ops
        .iter()
        .filter(|o| costs.iter().any(|r| r.sysbench_op().as_deref() == Some(o.name)))
        .map(|o| cost_bars::OpBars {
            name: o.name.to_string(),
            bandwidth: o.bandwidth,
            values: labels
                .iter()
                .map(|l| {
                    let r =
                        costs.iter().rev().find(|r| r.label() == l && r.sysbench_op().as_deref() == Some(o.name))?;
                    let v = r.data.total.percentile(0.5) as f64;
                    Some(if o.bandwidth { v / 1e3 } else { v / 1e6 })
                })
                .collect(),
        })
        .collect();
    if ops.is_empty() {
        return None;
    }
    Some(Figure {
        name: "sysbench-costs".into(),
        caption: "The throughput price per operation and label (Figure 32's layout): µs per operation, or MB/s for \
                  the bandwidths marked ↑ (bigger is better); log scale"
            .into(),
        svg: cost_bars::render("sysbench: cost of each operation per label", &labels, &ops),
    })
}

/// A run's min, avg and max in µs, captioned `first` over its load.
fn bar_group(all: &[RunView], r: &RunView, first: &str) -> bars::Group {
    let s = &r.data.total;
    bars::Group {
        line1: first.to_string(),
        line2: format!("{}{}", load_name(&r.load()), twin_suffix(all, r)),
        min: if s.count == 0 { 0.0 } else { s.min as f64 / 1000.0 },
        avg: s.mean() / 1000.0,
        max: s.max as f64 / 1000.0,
    }
}

/// " · 24 h" when another run of the same label, probe and load is drawn too (a study's
/// extended cells), so the two can be told apart; else nothing.
fn twin_suffix(all: &[RunView], r: &RunView) -> String {
    let twins = all.iter().filter(|o| o.label() == r.label() && o.probe() == r.probe() && o.load() == r.load()).count();
    if twins < 2 {
        return String::new();
    }
    match r.data.header.params.duration_s() {
        Some(d) => format!(" · {}", crate::units::length(d)),
        None => format!(" · run {}", r.data.header.id),
    }
}

/// What the tail figure shows, and what the fit says.
fn tail_caption(title: &str, e: &Estimate) -> String {
    let us = |ns: f64| crate::units::fmt_ns_as_us(ns);
    match (e.threshold_ns, e.xi, e.levels.iter().find(|l| l.name == "1e-9")) {
        (Some(u), Some(xi), Some(l)) => format!(
            "{title}: the tail on log-log axes: latency exceeded with probability p per sample, observed (solid) and the \
             generalized Pareto tail fitted above {} µs (ξ = {xi:.2}, dashed) with its 95 % band, observed max marked; \
             1e-9 level {} µs ({} to {} µs){}",
            us(u as f64),
            us(l.ns),
            us(l.lo_ns),
            l.hi_ns.map_or("unbounded".into(), us),
            if e.stable { "" } else { "; the shape did not settle over the thresholds: do not trust the fit" }
        ),
        _ => format!("{title}: the tail on log-log axes, observed only: too few samples in the tail for a fit"),
    }
}
