//! The tail of one run on log-log axes, as extreme-value analysis draws it: the latency
//! exceeded with probability p per sample, observed (from the histogram) down to the run's
//! rarest sample, and the fitted generalized Pareto tail with its 95 % band down to 1e-12.

use crate::evt::{gpd, Estimate};
use crate::report::svg::{Plot, Scale, Svg};
use crate::stats::Stats;

/// The rarest probability drawn: 1e-12 per sample.
const DECADES: f64 = 12.0;

pub fn render(title: &str, stats: &Stats, e: &Estimate, color: &str) -> String {
    let n = stats.count.max(1) as f64;
    // Observed: for each recorded bucket, the share of samples at or above it.
    let mut observed: Vec<(f64, f64)> = Vec::new();
    let mut above = stats.count;
    for v in stats.hist.iter_recorded() {
        let p = above as f64 / n;
        if p <= 0.5 {
            observed.push((-p.log10(), stats.hist.lowest_equivalent(v.value_iterated_to()) as f64 / 1000.0));
        }
        above -= v.count_at_value();
    }
    let mut fitted: Vec<(f64, f64)> = Vec::new();
    if let (Some(u), Some(xi), Some(sigma)) = (e.threshold_ns, e.xi, e.sigma_ns) {
        let zeta = e.exceedances as f64 / n;
        let start = -zeta.log10();
        let mut x = start;
        while x <= DECADES + 1e-9 {
            let w = gpd::quantile(10f64.powf(-x) / zeta, sigma, xi);
            fitted.push((x, (u as f64 + w) / 1000.0));
            x += 0.1;
        }
    }
    // The band through the levels' intervals, from the threshold (where it has no width) on.
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
    let max_us = stats.max as f64 / 1000.0;
    let ys = observed.iter().chain(&fitted).map(|p| p.1);
    let lo = ys.clone().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let top = ys.fold(max_us, f64::max).min(max_us * 1e4);
    let y = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, top, 0.001);
    let Scale::Log { min: ymin, max: ymax } = y else { unreachable!("log_around makes a log scale") };
    let x = Scale::Linear { min: 0.0, max: DECADES };
    let mut svg = Svg::new(620.0, 380.0);
    let plot = Plot { left: 70.0, top: 36.0, width: 510.0, height: 290.0, x, y };
    svg.frame(&plot, title, "probability of exceeding, per sample", "latency (µs, log scale)", &|v| {
        if v == 0.0 {
            "1".into()
        } else {
            format!("1e-{v:.0}")
        }
    });
    let clamp = |v: f64| v.clamp(ymin, ymax);
    if band.len() >= 2 {
        let mut poly: Vec<(f64, f64)> = band.iter().map(|b| (plot.px(b.0), plot.py(clamp(b.2)))).collect();
        poly.extend(band.iter().rev().map(|b| (plot.px(b.0), plot.py(clamp(b.1)))));
        svg.polygon(&poly, &format!(r#"fill="{color}" fill-opacity="0.15" stroke="none" class="band""#));
    }
    let px = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        pts.iter().map(|(a, b)| (plot.px(*a), plot.py(clamp(*b)))).collect()
    };
    svg.polyline(&px(&observed), r##"stroke="#222" stroke-width="2" class="observed""##);
    if !fitted.is_empty() {
        svg.polyline(&px(&fitted), &format!(r#"stroke="{color}" stroke-width="2" stroke-dasharray="6 3" class="fit""#));
    }
    let ymax_px = plot.py(clamp(max_us));
    svg.line(
        plot.left,
        ymax_px,
        plot.left + plot.width,
        ymax_px,
        r##"stroke="#c0392b" stroke-dasharray="2 3" class="max""##,
    );
    let mut legend = vec![("#222".to_string(), String::new(), "observed".to_string())];
    if !fitted.is_empty() {
        legend.push((color.to_string(), r#"stroke-dasharray="6 3""#.into(), "fitted tail, 95 % band".into()));
    }
    legend.push((
        "#c0392b".into(),
        r#"stroke-dasharray="2 3""#.into(),
        format!("observed max {}", crate::units::fmt_us(max_us)),
    ));
    svg.legend(&plot, &legend);
    svg.finish()
}
