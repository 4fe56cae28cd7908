//! `rtbench report`: figures, tables and one self-contained index.html, written whole or not
//! at all.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::figures::{
    bars, costs as cost_bars, histogram, load_name, percentiles, scatter, tail, timeline, windows, Figure,
};
use super::select::{Monitor, RunView};
use super::svg::{esc, PALETTE};
use super::tables;
use super::ProbeNote;
use crate::error::InputError;
use crate::model::SystemSnapshot;

const TEMPLATE: &str = include_str!("template.html");
/// Breaches per run drawn as a timeline; the table lists them all.
const BREACH_FIGURES: usize = 3;

/// Every figure of a report over `runs`.
pub fn figures(runs: &[RunView]) -> Vec<Figure> {
    let mut figs = Vec::new();
    let labels = distinct(runs.iter().map(|r| r.label().to_string()));
    let color = |label: &str| labels.iter().position(|l| l == label).unwrap_or(0);
    // Worst-case estimates, once per run: drawn alone and overlaid per label.
    let estimates: Vec<Option<crate::evt::Estimate>> =
        runs.iter().map(|r| crate::evt::for_run(&r.data, crate::evt::sample_rate(&r.data, &[]))).collect();
    let estimate = |r: &RunView| {
        runs.iter().position(|o| o.data.header.id == r.data.header.id).and_then(|i| estimates[i].as_ref())
    };
    for probe in distinct(runs.iter().map(|r| r.probe().to_string())) {
        let these: Vec<&RunView> = runs.iter().filter(|r| r.probe() == probe).collect();
        let groups: Vec<bars::Group> = these.iter().map(|r| bar_group(runs, r, r.label())).collect();
        figs.push(Figure {
            name: format!("{probe}-bars"),
            caption: format!("{probe}: min, avg and max per label and load (log scale)"),
            svg: bars::render(&format!("{probe}: min / avg / max"), &groups),
        });
        let series: Vec<percentiles::Series> = these
            .iter()
            .map(|r| percentiles::Series {
                color: color(r.label()),
                label: r.label().to_string(),
                load: r.load(),
                extra: twin_suffix(runs, r),
                stats: &r.data.total,
            })
            .collect();
        for (view, tag, what) in [
            (percentiles::View::Linear, "percentiles", "0–100 %"),
            (percentiles::View::Nines, "nines", "90 … 99.9999 %"),
        ] {
            figs.push(Figure {
                name: format!("{probe}-{tag}"),
                caption: format!("{probe}: latency by percentile, {what}; colour = label, dashed = loaded"),
                svg: percentiles::render(&format!("{probe}: latency by percentile ({what})"), &series, view),
            });
        }
        let axes = histogram::axes(&these.iter().map(|r| &r.data.total).collect::<Vec<_>>());
        for r in &these {
            let title = format!("run {} · {} · {} · {}", r.data.header.id, r.label(), probe, load_name(&r.load()));
            figs.push(Figure {
                name: format!("run{}-histogram", r.data.header.id),
                caption: format!("{title}: histogram (same axes for every {probe} run), max marked"),
                svg: histogram::render(&title, &r.data.total, axes, PALETTE[color(r.label()) % PALETTE.len()]),
            });
            let interval_s = r.data.header.envelope_ns.max(1) as f64 / 1e9;
            let steal = r.steal_marks();
            let (caption, svg) = match &r.raw {
                Some(raw) => {
                    (format!("{title}: latency over time, every sample"), scatter::render_samples(&title, raw, &steal))
                }
                None => (
                    format!("{title}: latency over time, min–max band and mean per {}", crate::units::span(interval_s)),
                    scatter::render(&title, &r.envelope, interval_s, &steal),
                ),
            };
            let caption = match steal.len() {
                0 => caption,
                n => format!(
                    "{caption}; shaded: {n} intervals in which the hypervisor took a measured CPU away ({} where it alone explains the largest latency)",
                    steal.iter().filter(|m| m.explains).count()
                ),
            };
            figs.push(Figure { name: format!("run{}-scatter", r.data.header.id), caption, svg });
            if let Some(e) = estimate(r) {
                let one = tail::Tail {
                    label: r.label().to_string(),
                    stats: &r.data.total,
                    estimate: e,
                    color: PALETTE[color(r.label()) % PALETTE.len()],
                };
                figs.push(Figure {
                    name: format!("run{}-tail", r.data.header.id),
                    caption: tail_caption(&title, e),
                    svg: tail::render(&title, &[one]),
                });
            }
            for b in r.data.breaches.iter().take(BREACH_FIGURES) {
                let what =
                    format!("{title} · breach {} ({} µs)", b.seq, crate::units::fmt_ns_as_us(b.latency_ns as f64));
                figs.push(Figure {
                    name: format!("run{}-breach{}", r.data.header.id, b.seq),
                    caption: format!(
                        "{what}: the trace around it, one lane per CPU (tasks, IRQs and vectors, softirqs); blue: the \
                         intended wake-up, red: the sample; {}",
                        b.verdict
                    ),
                    svg: timeline::render(&what, b),
                });
            }
        }
        for load in distinct(these.iter().map(|r| r.load())) {
            let here: Vec<&&RunView> = these.iter().filter(|r| r.load() == load && estimate(r).is_some()).collect();
            if distinct(here.iter().map(|r| r.label().to_string())).len() < 2 {
                continue;
            }
            let tails: Vec<tail::Tail> = here
                .iter()
                .filter_map(|r| {
                    Some(tail::Tail {
                        label: format!("{}{}", r.label(), twin_suffix(runs, r)),
                        stats: &r.data.total,
                        estimate: estimate(r)?,
                        color: PALETTE[color(r.label()) % PALETTE.len()],
                    })
                })
                .collect();
            let title = format!("{probe} · {}: tails by label", load_name(&load));
            figs.push(Figure {
                name: format!("{probe}-tails-{}", file_safe(&load)),
                caption: format!(
                    "{title}: latency exceeded with probability p per sample, observed (solid) and the fitted \
                     generalized Pareto tail (dashed) with its 95 % band down to 1e-12, one colour per label; dotted: \
                     each run's observed max"
                ),
                svg: tail::render(&title, &tails),
            });
        }
    }
    for label in &labels {
        let groups: Vec<bars::Group> =
            runs.iter().filter(|r| r.label() == label).map(|r| bar_group(runs, r, r.probe())).collect();
        figs.push(Figure {
            name: format!("label-{}-probes", file_safe(label)),
            caption: format!("{label}: every probe, idle and loaded"),
            svg: bars::render(&format!("{label}: all probes"), &groups),
        });
    }
    figs
}

/// Per label with monitor windows, the long-term plot of their maxima per CPU.
fn monitor_figures(monitors: &[Monitor]) -> Vec<Figure> {
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
fn cost_figure(costs: &[RunView]) -> Option<Figure> {
    let labels = distinct(costs.iter().map(|r| r.label().to_string()));
    let ops: Vec<cost_bars::OpBars> = crate::sysbench::ops()
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

fn distinct(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in it {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn file_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}

/// What the tail figure shows, and what the fit says.
fn tail_caption(title: &str, e: &crate::evt::Estimate) -> String {
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

fn figure_html(f: &Figure) -> String {
    format!(r#"<figure id="{}">{}<figcaption>{}</figcaption></figure>"#, f.name, f.svg, esc(&f.caption))
}

/// The whole page.
pub fn html(runs: &[RunView], costs: &[RunView], figs: &[Figure], notes: &[ProbeNote]) -> String {
    let labels = distinct(runs.iter().chain(costs).map(|r| r.label().to_string()));
    let find = |name: &str| figs.iter().find(|f| f.name == name);
    let mut b = String::new();
    let _ = write!(b, "<h1>rtbench report: {}</h1>", esc(&labels.join(" vs ")));
    let _ = write!(
        b,
        r#"<p class="note">{} runs, generated {} by rtbench {}. Latencies in µs. Figures are also in <code>figures/</code> as SVG and PNG. ⚠ marks a run with caveats (hover for them).</p>"#,
        runs.len(),
        crate::timefmt::now_rfc3339(),
        env!("CARGO_PKG_VERSION")
    );
    b.push_str("<h2>Summary (Appendix III)</h2>");
    b.push_str(&tables::appendix_iii(runs));
    b.push_str("<h2>Percentiles</h2>");
    b.push_str(&tables::percentiles(runs));
    b.push_str("<h2>By kernel and load (I-pipe layout)</h2>");
    b.push_str(&tables::ipipe(runs));
    b.push_str("<h2>Rule of thumb: worst case within 10⁵ CPU cycles</h2>");
    b.push_str(&tables::rules(runs));
    for probe in distinct(runs.iter().map(|r| r.probe().to_string())) {
        let help = notes.iter().find(|p| p.name == probe).map_or("", |p| p.help);
        let _ = write!(b, "<h2>{}</h2><p class=\"note\">{}</p>", esc(&probe), esc(help));
        for tag in ["bars", "percentiles", "nines"] {
            if let Some(f) = find(&format!("{probe}-{tag}")) {
                b.push_str(&figure_html(f));
            }
        }
        let tails = format!("{probe}-tails-");
        for f in figs.iter().filter(|f| f.name.starts_with(&tails)) {
            b.push_str(&figure_html(f));
        }
        for r in runs.iter().filter(|r| r.probe() == probe) {
            let _ = write!(
                b,
                "<h3>run {} · {} · {}{}</h3>",
                r.data.header.id,
                esc(r.label()),
                esc(&load_name(&r.load())),
                tables::caveat(r)
            );
            for kind in ["histogram", "scatter", "tail"] {
                if let Some(f) = find(&format!("run{}-{kind}", r.data.header.id)) {
                    b.push_str(&figure_html(f));
                }
            }
            if !r.data.breaches.is_empty() {
                b.push_str(&tables::breaches(&r.data));
                for breach in &r.data.breaches {
                    if let Some(f) = find(&format!("run{}-breach{}", r.data.header.id, breach.seq)) {
                        b.push_str(&figure_html(f));
                    }
                }
            }
            b.push_str(&warnings_html(r));
        }
    }
    let watched: Vec<&Figure> = figs.iter().filter(|f| f.name.starts_with("monitor-")).collect();
    if !watched.is_empty() {
        b.push_str("<h2>Long-term watch (rtbench monitor)</h2>");
        b.push_str(r#"<p class="note">Every stored window of a monitor; retention (<code>--keep</code>) decides how far back.</p>"#);
        for f in watched {
            b.push_str(&figure_html(f));
        }
    }
    if !costs.is_empty() {
        b.push_str("<h2>The price of real time (LMbench layout, rtbench sysbench)</h2>");
        b.push_str(r#"<p class="note">Median of the repetitions of each operation, one row per label; hover a value for its spread. rtbench's own implementation of LMbench's measurements.</p>"#);
        if let Some(f) = find("sysbench-costs") {
            b.push_str(&figure_html(f));
        }
        b.push_str(&tables::sysbench(costs));
        let total = tables::sysbench_total(costs);
        if !total.is_empty() {
            b.push_str("<h3>Total time of the operations under each load (the I-pipe study's table)</h3>");
            b.push_str(&total);
        }
    }
    b.push_str("<h2>Per label</h2>");
    for label in &labels {
        if let Some(f) = find(&format!("label-{}-probes", file_safe(label))) {
            b.push_str(&figure_html(f));
        }
    }
    b.push_str("<h2>Systems</h2>");
    for label in &labels {
        if let Some(r) = runs.iter().rev().find(|r| r.label() == label) {
            b.push_str(&system_html(label, &r.data.header.system));
            if let Some(findings) = &r.data.header.system.audit {
                let _ = write!(b, "<h4>audit of run {} when it began</h4>", r.data.header.id);
                b.push_str(&tables::audit(findings));
            }
        }
    }
    TEMPLATE.replace("{{title}}", &esc(&format!("rtbench report: {}", labels.join(" vs ")))).replace("{{body}}", &b)
}

fn warnings_html(r: &RunView) -> String {
    let h = &r.data.header;
    let mut items: Vec<String> = h.warnings.clone();
    if let Some((_, verdict)) = tables::rule_of_thumb(r) {
        items.push(format!("rule of thumb: {verdict}"));
    }
    if let Some(act) = h.load.report().and_then(|l| l.activity.as_ref()) {
        let b: Vec<String> = act.cpu_busy_percent.iter().map(|v| v.to_string()).collect();
        items.push(format!(
            "load: CPUs busy {} %, {} context switches/s, {} interrupts/s",
            b.join(" / "),
            json(&act.context_switches_per_s),
            json(&act.interrupts_per_s)
        ));
    }
    if items.is_empty() {
        return String::new();
    }
    let lis: String = items.iter().map(|w| format!("<li>{}</li>", esc(w))).collect();
    format!(r#"<ul class="warnings">{lis}</ul>"#)
}

/// A value as JSON writes it (`null` when unknown), as the systems table has always shown them.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn system_html(label: &str, sys: &SystemSnapshot) -> String {
    let mut rows = String::new();
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let throttling = &sys.rt_throttling;
    let fields: [(&str, String); 8] = [
        ("kernel", text(&sys.kernel_release)),
        ("version", text(&sys.kernel_version)),
        ("preemption", sys.preemption.describe()),
        ("command line", text(&sys.cmdline)),
        ("CPU", format!("{} @ {} MHz", text(&sys.cpu_model), json(&sys.cpu_mhz))),
        ("CPUs online / isolated", format!("{} / {}", json(&sys.cpus_online), json(&sys.cpus_isolated))),
        ("clocksource", text(&sys.clocksource)),
        (
            "RT throttling",
            format!("{} µs per {} µs", json(&throttling.sched_rt_runtime_us), json(&throttling.sched_rt_period_us)),
        ),
    ];
    for (k, v) in fields {
        let _ = write!(rows, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    format!(r#"<h3>{}</h3><table class="sys">{rows}</table>"#, esc(label))
}

/// Writes the report into `out` atomically: built beside it, then moved into place.
pub fn write(
    out: &Path,
    runs: &[RunView],
    costs: &[RunView],
    monitors: &[Monitor],
    notes: &[ProbeNote],
) -> Result<ReportFiles> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(InputError::Unwritable {
            path: out.display().to_string(),
            reason: format!("directory '{}' does not exist", parent.display()),
        }
        .into());
    }
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let result = (|| -> Result<ReportFiles> {
        std::fs::create_dir_all(partial.join("figures"))
            .map_err(|e| InputError::Unwritable { path: out.display().to_string(), reason: e.to_string() })?;
        let mut figs = figures(runs);
        figs.extend(cost_figure(costs));
        figs.extend(monitor_figures(monitors));
        render_files(&partial.join("figures"), &figs)?;
        let page = html(runs, costs, &figs, notes);
        std::fs::write(partial.join("index.html"), &page)?;
        Ok(ReportFiles { index: out.join("index.html"), figures: figs.len(), html_bytes: page.len() })
    })();
    match result {
        Ok(files) => {
            let old = parent.join(format!(".{name}.old-{}", std::process::id()));
            if out.exists() {
                std::fs::rename(out, &old).with_context(|| format!("could not replace '{}'", out.display()))?;
            }
            std::fs::rename(&partial, out).with_context(|| format!("could not write '{}'", out.display()))?;
            let _ = std::fs::remove_dir_all(&old);
            Ok(files)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}

/// What `write` produced.
pub struct ReportFiles {
    pub index: PathBuf,
    pub figures: usize,
    pub html_bytes: usize,
}

/// Each figure as SVG and PNG, rendered on every core.
fn render_files(dir: &Path, figs: &[Figure]) -> Result<()> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = figs.len().div_ceil(workers).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = figs
            .chunks(per)
            .map(|chunk| {
                let opt = &opt;
                // Parsing and rasterizing SVG recurse: these get a main thread's stack.
                std::thread::Builder::new().stack_size(8 << 20).spawn_scoped(s, move || -> Result<()> {
                    for f in chunk {
                        std::fs::write(dir.join(format!("{}.svg", f.name)), &f.svg)?;
                        let tree = resvg::usvg::Tree::from_str(&f.svg, opt)
                            .with_context(|| format!("figure {} is not valid SVG", f.name))?;
                        let size = tree.size().to_int_size();
                        let mut pixmap =
                            resvg::tiny_skia::Pixmap::new(size.width(), size.height()).context("figure has no size")?;
                        resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
                        pixmap.save_png(dir.join(format!("{}.png", f.name)))?;
                    }
                    Ok(())
                })
            })
            .collect::<std::io::Result<Vec<_>>>()
            .context("could not start a figure renderer")?;
        handles.into_iter().try_for_each(|h| h.join().map_err(|_| anyhow::anyhow!("figure renderer panicked"))?)
    })
}
