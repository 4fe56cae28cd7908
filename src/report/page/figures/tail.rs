//! The tail on log-log axes, as extreme-value analysis draws it: the latency exceeded with
//! probability p per sample, observed (from the histogram) down to the run's rarest sample, and
//! the fitted generalized Pareto tail with its 95 % band down to 1e-12. One run per figure, or
//! one run per label overlaid so kernels' tails can be compared.

use crate::evt::{gpd, Estimate};
use crate::report::page::svg::{Plot, Scale, Svg};
use crate::stats::Stats;

/// The rarest probability drawn: 1e-12 per sample.
const DECADES: f64 = 12.0;

/// Points as (−log10 p, µs).
type Curve = Vec<(f64, f64)>;

/// One run's tail in a figure.
pub struct Tail<'a> {
    /// Named in the legend when several are overlaid.
    pub label: String,
    pub stats: &'a Stats,
    pub estimate: &'a Estimate,
    pub color: &'a str,
}

/// Observed: for each recorded bucket, the share of samples at or above it, as (−log10 p, µs).
fn observed(stats: &Stats) -> Curve {
    let n = stats.count.max(1) as f64;
    let mut out = Vec::new();
    let mut above = stats.count;
    for v in stats.hist.iter_recorded() {
        let p = above as f64 / n;
        if p <= 0.5 {
            out.push((-p.log10(), stats.hist.lowest_equivalent(v.value_iterated_to()) as f64 / 1000.0));
        }
        above -= v.count_at_value();
    }
    out
}

/// The fitted tail from its threshold down to 1e-12, as (−log10 p, µs).
fn fitted(stats: &Stats, e: &Estimate) -> Curve {
    let mut out = Vec::new();
    if let (Some(u), Some(xi), Some(sigma)) = (e.threshold_ns, e.xi, e.sigma_ns) {
        let zeta = e.exceedances as f64 / stats.count.max(1) as f64;
        let mut x = -zeta.log10();
        while x <= DECADES + 1e-9 {
            let w = gpd::quantile(10f64.powf(-x) / zeta, sigma, xi);
            out.push((x, (u as f64 + w) / 1000.0));
            x += 0.1;
        }
    }
    out
}

/// The band through the levels' intervals, from the threshold (where it has no width) on, as
/// (−log10 p, low µs, high µs); high is infinite where the data rule out no value above.
fn band(e: &Estimate, fitted: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    let mut band: Vec<(f64, f64, f64)> = e
        .levels
        .iter()
        .filter(|l| l.lo_ns < l.ns || l.hi_ns.is_none_or(|h| h > l.ns))
        .map(|l| (-l.probability.log10(), l.lo_ns / 1000.0, l.hi_ns.map_or(f64::INFINITY, |h| h / 1000.0)))
        .collect();
    if let (Some(first), Some(u)) = (fitted.first(), e.threshold_ns) {
        band.push((first.0, u as f64 / 1000.0, u as f64 / 1000.0));
    }
    band.sort_by(|a, b| a.0.total_cmp(&b.0));
    band
}

/// The points of a line in pixels, less those within half a pixel of the last one kept (the
/// observed tail has a point per histogram bucket: hundreds where a pixel holds a few, and
/// twenty labels' tails made a figure of 700 KB), the line's last point always kept.
fn thin(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(pts.len());
    for (i, p) in pts.iter().enumerate() {
        let near = out.last().is_some_and(|l| (l.0 - p.0).abs() < 0.5 && (l.1 - p.1).abs() < 0.5);
        if !near || i + 1 == pts.len() {
            out.push(*p);
        }
    }
    out
}

/// A figure of one or more tails on shared axes.
pub fn render(title: &str, tails: &[Tail]) -> String {
    let drawn: Vec<(Curve, Curve)> = tails.iter().map(|t| (observed(t.stats), fitted(t.stats, t.estimate))).collect();
    let max_us = tails.iter().map(|t| t.stats.max as f64 / 1000.0).fold(0.0, f64::max);
    let ys = drawn.iter().flat_map(|(o, f)| o.iter().chain(f)).map(|p| p.1);
    let lo = ys.clone().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let top = ys.fold(max_us, f64::max).min(max_us.max(0.001) * 1e4);
    let y = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, top, 0.001);
    let Scale::Log { min: ymin, max: ymax } = y else { unreachable!("log_around makes a log scale") };
    let x = Scale::Linear { min: 0.0, max: DECADES };
    let mut svg = Svg::new(620.0, 380.0);
    let plot = Plot { left: 86.0, top: 36.0, width: 494.0, height: 290.0, x, y };
    svg.frame(&plot, title, "probability of exceeding, per sample", "latency (µs, log scale)", &|v| {
        if v == 0.0 {
            "1".into()
        } else {
            format!("1e-{v:.0}")
        }
    });
    let clamp = |v: f64| v.clamp(ymin, ymax);
    let px = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        thin(pts.iter().map(|(a, b)| (plot.px(*a), plot.py(clamp(*b)))).collect())
    };
    let mut legend = Vec::new();
    for (t, (obs, fit)) in tails.iter().zip(&drawn) {
        let color = t.color;
        let band = band(t.estimate, fit);
        if band.len() >= 2 {
            let mut poly: Vec<(f64, f64)> = band.iter().map(|b| (plot.px(b.0), plot.py(clamp(b.2)))).collect();
            poly.extend(band.iter().rev().map(|b| (plot.px(b.0), plot.py(clamp(b.1)))));
            svg.polygon(&poly, &format!(r#"fill="{color}" fill-opacity="0.15" stroke="none" class="band""#));
        }
        svg.polyline(&px(obs), &format!(r#"stroke="{color}" stroke-width="2" class="observed""#));
        if !fit.is_empty() {
            svg.polyline(&px(fit), &format!(r#"stroke="{color}" stroke-width="2" stroke-dasharray="6 3" class="fit""#));
        }
        let max = t.stats.max as f64 / 1000.0;
        let y = plot.py(clamp(max));
        svg.line(
            plot.left,
            y,
            plot.left + plot.width,
            y,
            &format!(r#"stroke="{color}" stroke-width="1" stroke-dasharray="2 3" class="max""#),
        );
        let who = if tails.len() > 1 { format!("{}: ", t.label) } else { String::new() };
        legend.push((
            color.to_string(),
            String::new(),
            format!("{who}observed (dotted: max {} µs)", crate::units::fmt_us(max)),
        ));
        if !fit.is_empty() {
            legend.push((
                color.to_string(),
                r#"stroke-dasharray="6 3""#.into(),
                format!("{who}fitted tail, 95 % band"),
            ));
        }
    }
    svg.legend(&plot, &legend);
    svg.finish()
}
