//! Latency against percentile, one series per label × load: linear 0–100 % (as the ØMQ study
//! drew it) and a log "nines" axis from 90 % to 99.9999 %.

use super::{dash, load_name};
use crate::report::page::svg::{Plot, Scale, Svg, PALETTE};
use crate::stats::Stats;

/// One series: its label index (colour), load (dash), legend text, statistics.
pub struct Series<'a> {
    pub color: usize,
    pub label: String,
    pub load: String,
    /// Appended to the legend entry (tells a study's extended cell from the short one).
    pub extra: String,
    pub stats: &'a Stats,
    /// Drawn thin and grey, outside the legend: a campaign's labels beside its worst few.
    pub muted: bool,
}

/// The grey of the labels a campaign's figure does not name.
const MUTED: &str = "#c4c4c4";

/// Which percentile axis to draw.
#[derive(Clone, Copy)]
pub enum View {
    Linear,
    Nines,
}

fn grid(view: View) -> Vec<(f64, f64)> {
    // (x coordinate, quantile)
    match view {
        View::Linear => (1..=200).map(|i| i as f64 * 0.5).map(|p| (p, p / 100.0)).collect(),
        View::Nines => (20..=120).map(|i| i as f64 * 0.05).map(|n| (n, 1.0 - 10f64.powf(-n))).collect(),
    }
}

pub fn render(title: &str, series: &[Series], view: View) -> String {
    let mut svg = Svg::new(620.0, 380.0);
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            let g = grid(view);
            let qs: Vec<f64> = g.iter().map(|p| p.1).collect();
            let vals = s.stats.percentiles(&qs);
            g.iter().zip(vals).map(|(p, v)| (p.0, v as f64 / 1000.0)).collect()
        })
        .collect();
    let lo = points.iter().flatten().map(|p| p.1).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let hi = points.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let y = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-3), 0.001);
    let (x, xlabel, xfmt): (Scale, &str, Box<dyn Fn(f64) -> String>) = match view {
        View::Linear => (Scale::Linear { min: 0.0, max: 100.0 }, "percentile (%)", Box::new(|v| format!("{v}"))),
        View::Nines => (Scale::Linear { min: 1.0, max: 6.0 }, "percentile (log nines)", Box::new(nines_label)),
    };
    let plot = Plot { left: 70.0, top: 36.0, width: 510.0, height: 290.0, x, y };
    svg.frame(&plot, title, xlabel, "latency (µs, log scale)", &*xfmt);
    let mut legend = Vec::new();
    // The grey lines first, so the named ones are drawn over them.
    let order =
        series.iter().zip(&points).filter(|(s, _)| s.muted).chain(series.iter().zip(&points).filter(|(s, _)| !s.muted));
    for (s, pts) in order {
        let px: Vec<(f64, f64)> = pts.iter().map(|(a, b)| (plot.px(*a), plot.py(b.max(1e-3)))).collect();
        if s.muted {
            svg.polyline(&px, &format!(r#"stroke="{MUTED}" stroke-width="1" {}"#, dash(&s.load)));
            continue;
        }
        let color = PALETTE[s.color % PALETTE.len()];
        svg.polyline(&px, &format!(r#"stroke="{color}" stroke-width="2" {}"#, dash(&s.load)));
        legend.push((
            color.to_string(),
            dash(&s.load).to_string(),
            format!("{} · {}{}", s.label, load_name(&s.load), s.extra),
        ));
    }
    let mut muted: Vec<&str> = series.iter().filter(|s| s.muted).map(|s| s.label.as_str()).collect();
    muted.sort_unstable();
    muted.dedup();
    if !muted.is_empty() {
        legend.push((MUTED.to_string(), String::new(), format!("{} more labels (grey)", muted.len())));
    }
    svg.legend(&plot, &legend);
    svg.finish()
}

/// x = n nines → "90", "99", "99.9" … percent.
fn nines_label(v: f64) -> String {
    let p = format!("{:.4}", 100.0 - 10f64.powf(2.0 - v));
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis_labels_read_as_percentiles() {
        let g = grid(View::Nines);
        assert!((g.first().unwrap().1 - 0.9).abs() < 1e-12);
        assert!((g.last().unwrap().1 - 0.999_999).abs() < 1e-12);
        assert_eq!(nines_label(1.0), "90");
        assert_eq!(nines_label(3.0), "99.9");
        assert_eq!(nines_label(6.0), "99.9999");
    }
}
