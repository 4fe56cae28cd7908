//! A run's latency histogram: log count over log latency, the max marked (Figures 7, 8, 12 …).
//! Every run of one probe is drawn on the same axes so kernels compare by eye.

use crate::report::page::svg::{Plot, Scale, Svg};
use crate::stats::Stats;
use crate::units::fmt_us;

/// Bins per decade of latency.
const PER_DECADE: f64 = 20.0;

/// Shared axes of a probe's histograms: latency range (µs) and the largest bin count.
#[derive(Clone, Copy, Debug)]
pub struct Axes {
    pub x: Scale,
    pub max_count: f64,
}

/// Counts per log-spaced bin, starting at the axis minimum.
pub fn bins(s: &Stats, x: Scale) -> Vec<u64> {
    let Scale::Log { min, max } = x else { return vec![] };
    let n = ((max / min).log10() * PER_DECADE).ceil() as usize;
    let mut out = vec![0u64; n.max(1)];
    for v in s.hist.iter_recorded() {
        let us = s.hist.median_equivalent(v.value_iterated_to()) as f64 / 1000.0;
        let i = (((us.max(min) / min).log10() * PER_DECADE) as usize).min(out.len() - 1);
        out[i] += v.count_at_value();
    }
    out
}

/// Axes that fit every one of `runs`.
pub fn axes(runs: &[&Stats]) -> Axes {
    let lo = runs.iter().filter(|s| s.count > 0).map(|s| s.min as f64 / 1000.0).fold(f64::INFINITY, f64::min);
    let hi = runs.iter().map(|s| s.max as f64 / 1000.0).fold(0.0, f64::max);
    let x = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-3), 0.001);
    let max_count = runs.iter().flat_map(|s| bins(s, x)).max().unwrap_or(1) as f64;
    Axes { x, max_count }
}

/// One series of an overlaid histogram: its statistics, colour and legend text.
pub struct Series<'a> {
    pub stats: &'a Stats,
    pub color: &'a str,
    pub name: String,
}

/// The canvas of a histogram on `axes`: the SVG and its plotting area.
fn canvas(axes: Axes) -> (Svg, Plot) {
    let svg = Svg::new(560.0, 340.0);
    let y = Scale::Log { min: 0.5, max: 10f64.powf(axes.max_count.max(1.0).log10().ceil() + 0.3) };
    (svg, Plot { left: 70.0, top: 36.0, width: 470.0, height: 250.0, x: axes.x, y })
}

/// A bar per non-empty bin of `s`, styled `style`.
fn draw_bins(svg: &mut Svg, plot: &Plot, s: &Stats, style: &str) {
    let Scale::Log { min, .. } = plot.x else { unreachable!("histogram x is a log scale") };
    for (i, c) in bins(s, plot.x).iter().enumerate().filter(|(_, c)| **c > 0) {
        let (a, b) = (min * 10f64.powf(i as f64 / PER_DECADE), min * 10f64.powf((i + 1) as f64 / PER_DECADE));
        let (x0, x1) = (plot.px(a), plot.px(b));
        let top = plot.py(*c as f64);
        svg.rect(x0, top, (x1 - x0 - 0.5).max(1.0), plot.py(0.5) - top, style);
    }
}

/// A dashed vertical line at `s`'s max, in `color`; returns where it is.
fn mark_max(svg: &mut Svg, plot: &Plot, s: &Stats, color: &str) -> f64 {
    let x = plot.px(s.max as f64 / 1000.0);
    svg.line(
        x,
        plot.top,
        x,
        plot.top + plot.height,
        &format!(r#"stroke="{color}" stroke-width="1.5" stroke-dasharray="4,3""#),
    );
    x
}

pub fn render(title: &str, s: &Stats, axes: Axes, color: &str) -> String {
    let (mut svg, plot) = canvas(axes);
    draw_bins(&mut svg, &plot, s, &format!(r#"fill="{color}""#));
    svg.frame(&plot, title, "latency (µs, log scale)", "samples (log scale)", &fmt_us);
    if s.count > 0 {
        let x = mark_max(&mut svg, &plot, s, "#d62728");
        let anchor = if x > plot.left + plot.width * 0.7 { "end" } else { "start" };
        let dx = if anchor == "end" { -4.0 } else { 4.0 };
        let max_us = s.max as f64 / 1000.0;
        svg.text(x + dx, plot.top + 14.0, &format!("max {} µs", fmt_us(max_us)), anchor, 11.0, r##" fill="#d62728""##);
    }
    svg.finish()
}

/// Several histograms on the same axes, each translucent in its colour with its max dashed,
/// named in a legend (as `rtla timerlat hist` sets the IRQ and the thread side by side).
pub fn overlay(title: &str, series: &[Series], axes: Axes) -> String {
    let (mut svg, plot) = canvas(axes);
    for s in series {
        draw_bins(&mut svg, &plot, s.stats, &format!(r#"fill="{}" fill-opacity="0.55""#, s.color));
    }
    svg.frame(&plot, title, "latency (µs, log scale)", "samples (log scale)", &fmt_us);
    for s in series.iter().filter(|s| s.stats.count > 0) {
        mark_max(&mut svg, &plot, s.stats, s.color);
    }
    let legend: Vec<(String, String, String)> =
        series.iter().map(|s| (s.color.to_string(), String::new(), s.name.clone())).collect();
    svg.legend(&plot, &legend);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(values: &[u64]) -> Stats {
        let mut s = Stats::default();
        values.iter().for_each(|v| s.record(*v));
        s
    }

    /// The IRQ side sits left of the thread's (it is part of it): both must be drawn in their
    /// own colour on the same axes, each named in the legend.
    #[test]
    fn an_overlay_draws_every_series_in_its_colour_and_names_it() {
        let (thread, irq) = (stats(&[20_000, 30_000, 900_000]), stats(&[5_000, 8_000, 400_000]));
        let axes = axes(&[&thread, &irq]);
        let series = [
            Series { stats: &thread, color: "#000001", name: "thread side".into() },
            Series { stats: &irq, color: "#000002", name: "IRQ side".into() },
        ];
        let svg = overlay("t", &series, axes);
        for (color, bins) in [("#000001", 3), ("#000002", 3)] {
            assert_eq!(svg.matches(&format!(r#"fill="{color}" fill-opacity"#)).count(), bins, "{color}: {svg}");
            assert!(
                svg.contains(&format!(r#"stroke="{color}" stroke-width="1.5" stroke-dasharray"#)),
                "max of {color}"
            );
        }
        assert!(svg.contains(">thread side</text>") && svg.contains(">IRQ side</text>"), "{svg}");
    }
}
