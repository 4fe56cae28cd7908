//! The throughput price as the Geode paper's Figure 32 draws LMbench: one group of bars per
//! operation, one bar per label, on a log scale shared by µs and MB/s; bandwidths (bigger is
//! better) are marked in their caption.

use crate::report::page::svg::{Plot, Scale, Svg, PALETTE};

/// One operation: its name, whether bigger is better (MB/s), and per label its value (µs or
/// MB/s; `None` when that label did not measure it).
pub struct OpBars {
    pub name: String,
    pub bandwidth: bool,
    pub values: Vec<Option<f64>>,
}

pub fn render(title: &str, labels: &[String], ops: &[OpBars]) -> String {
    let per_op = (labels.len() as f64 * 9.0 + 8.0).max(20.0);
    let width = (110.0 + ops.len() as f64 * per_op).max(560.0);
    let mut svg = Svg::new(width, 470.0);
    let values = ops.iter().flat_map(|o| o.values.iter().flatten().copied()).filter(|v| *v > 0.0);
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(0.0, f64::max);
    let y = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-3) * 2.0, 0.001);
    let plot =
        Plot { left: 70.0, top: 36.0, width: width - 90.0, height: 280.0, x: Scale::Linear { min: 0.0, max: 1.0 }, y };
    svg.frame(&plot, title, "", "µs per operation, or MB/s (↑), log scale", &|_| String::new());
    let slot = plot.width / ops.len().max(1) as f64;
    let bar = (slot * 0.85 / labels.len().max(1) as f64).min(16.0);
    let base = plot.top + plot.height;
    for (i, op) in ops.iter().enumerate() {
        let x0 = plot.left + slot * i as f64 + (slot - bar * labels.len() as f64) / 2.0;
        for (j, v) in op.values.iter().enumerate() {
            let Some(v) = v.filter(|v| *v > 0.0) else { continue };
            let top = plot.py(v);
            let color = PALETTE[j % PALETTE.len()];
            svg.rect(
                x0 + j as f64 * bar,
                top,
                (bar - 1.0).max(1.0),
                base - top,
                &format!(r#"fill="{color}" class="bar""#),
            );
        }
        let (cx, cy) = (plot.left + slot * (i as f64 + 0.5), base + 10.0);
        let name = if op.bandwidth { format!("{} ↑", op.name) } else { op.name.clone() };
        svg.text(cx, cy, &name, "end", 10.0, &format!(r#" transform="rotate(-60 {cx:.1} {cy:.1})""#));
    }
    for (j, label) in labels.iter().enumerate() {
        let x = plot.left + j as f64 * 170.0;
        svg.rect(x, 448.0, 12.0, 12.0, &format!(r#"fill="{}""#, PALETTE[j % PALETTE.len()]));
        svg.text(x + 16.0, 458.0, label, "start", 11.0, "");
    }
    svg.text(width - 20.0, 458.0, "↑ MB/s, bigger is better; the rest µs, smaller is better", "end", 11.0, "");
    svg.finish()
}
