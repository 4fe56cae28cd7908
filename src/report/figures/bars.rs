//! Log-scale bar chart of min, avg and max per group, values written on the bars (the seeds'
//! Figures 1, 6, 11, 16, 23, 30, 31).

use crate::report::svg::{Plot, Scale, Svg};
use crate::units::fmt_us;

/// One group of three bars: two caption lines, then min, avg, max in µs.
pub struct Group {
    pub line1: String,
    pub line2: String,
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

const STATS: [(&str, &str); 3] = [("min", "#2ca02c"), ("avg", "#1f77b4"), ("max", "#d62728")];

pub fn render(title: &str, groups: &[Group]) -> String {
    let width = (160.0 + groups.len() as f64 * 120.0).clamp(560.0, 1400.0);
    let mut svg = Svg::new(width, 420.0);
    let lo = groups.iter().map(|g| g.min).fold(f64::INFINITY, f64::min);
    let hi = groups.iter().map(|g| g.max).fold(0.0, f64::max);
    // Headroom above the tallest bar for its value, written above it.
    let y = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-3) * 8.0, 0.001);
    let plot =
        Plot { left: 70.0, top: 36.0, width: width - 90.0, height: 290.0, x: Scale::Linear { min: 0.0, max: 1.0 }, y };
    svg.frame(&plot, title, "", "latency (µs, log scale)", &|_| String::new());
    let slot = plot.width / groups.len().max(1) as f64;
    let bar = (slot * 0.8 / 3.0).min(34.0);
    for (i, g) in groups.iter().enumerate() {
        let x0 = plot.left + slot * i as f64 + (slot - bar * 3.0) / 2.0;
        for (j, ((_, color), v)) in STATS.iter().zip([g.min, g.avg, g.max]).enumerate() {
            let x = x0 + j as f64 * bar;
            let top = plot.py(v.max(1e-3));
            svg.rect(x + 1.0, top, bar - 2.0, plot.top + plot.height - top, &format!(r#"fill="{color}""#));
            let (cx, cy) = (x + bar / 2.0 + 3.5, top - 4.0);
            svg.text(cx, cy, &fmt_us(v), "start", 10.0, &format!(r#" transform="rotate(-90 {cx:.1} {cy:.1})""#));
        }
        let cx = plot.left + slot * (i as f64 + 0.5);
        svg.text(cx, plot.top + plot.height + 16.0, &g.line1, "middle", 11.0, "");
        svg.text(cx, plot.top + plot.height + 30.0, &g.line2, "middle", 11.0, "");
    }
    for (j, (name, color)) in STATS.iter().enumerate() {
        let x = plot.left + j as f64 * 70.0;
        svg.rect(x, 392.0, 12.0, 12.0, &format!(r#"fill="{color}""#));
        svg.text(x + 16.0, 402.0, name, "start", 11.0, "");
    }
    svg.finish()
}
