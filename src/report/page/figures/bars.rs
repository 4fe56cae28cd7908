//! Log-scale bar chart of min, avg and max per group, values written on the bars (the seeds'
//! Figures 1, 6, 11, 16, 23, 30, 31).

use crate::report::page::svg::{Plot, Scale, Svg};
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

/// Past this many groups the bars lie down, a row per group, so every caption stays readable
/// (a lab's twenty hosts, idle and loaded, are forty groups).
const COLUMNS: usize = 12;

pub fn render(title: &str, groups: &[Group]) -> String {
    if groups.len() > COLUMNS {
        return render_rows(title, groups);
    }
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

/// A row per group, its caption on the left, min, avg and max as three bars on a log axis with
/// the max written at its end.
fn render_rows(title: &str, groups: &[Group]) -> String {
    let (left, row, bar) = (300.0, 26.0, 7.0);
    let height = 36.0 + groups.len() as f64 * row + 60.0;
    let mut svg = Svg::new(1000.0, height);
    let lo = groups.iter().map(|g| g.min).fold(f64::INFINITY, f64::min);
    let hi = groups.iter().map(|g| g.max).fold(0.0, f64::max);
    // Room right of the longest bar for its value.
    let x = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-3) * 4.0, 0.001);
    let plot = Plot {
        left,
        top: 36.0,
        width: 1000.0 - left - 30.0,
        height: groups.len() as f64 * row,
        x,
        y: Scale::Linear { min: 0.0, max: 1.0 },
    };
    svg.text(500.0, 20.0, title, "middle", 14.0, r#" font-weight="bold""#);
    let bottom = plot.top + plot.height;
    for (v, label) in x.ticks(&fmt_us) {
        let px = plot.px(v);
        svg.line(px, plot.top, px, bottom, r##"stroke="#e4e4e4""##);
        svg.text(px, bottom + 16.0, &label, "middle", 11.0, "");
    }
    svg.rect(left, plot.top, plot.width, plot.height, r##"fill="none" stroke="#444""##);
    svg.text(left + plot.width / 2.0, bottom + 34.0, "latency (µs, log scale)", "middle", 12.0, "");
    for (i, g) in groups.iter().enumerate() {
        let y = plot.top + i as f64 * row + (row - bar * 3.0) / 2.0;
        let caption = if g.line2.is_empty() { g.line1.clone() } else { format!("{} · {}", g.line1, g.line2) };
        svg.text(left - 8.0, y + bar * 2.0, &caption, "end", 11.0, "");
        for (j, ((_, color), v)) in STATS.iter().zip([g.min, g.avg, g.max]).enumerate() {
            let end = plot.px(v.max(1e-3));
            svg.rect(left, y + j as f64 * bar, end - left, bar - 1.0, &format!(r#"fill="{color}""#));
        }
        svg.text(plot.px(g.max.max(1e-3)) + 4.0, y + bar * 3.0 - 1.0, &fmt_us(g.max), "start", 10.0, "");
    }
    for (j, (name, color)) in STATS.iter().enumerate() {
        let x = left + j as f64 * 70.0;
        svg.rect(x, height - 18.0, 12.0, 12.0, &format!(r#"fill="{color}""#));
        svg.text(x + 16.0, height - 8.0, name, "start", 11.0, "");
    }
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(i: usize) -> Group {
        Group { line1: format!("rack1/host{i:02}"), line2: "idle".into(), min: 5.0, avg: 20.0, max: 100.0 * i as f64 }
    }

    #[test]
    fn many_groups_lie_down_a_row_each_with_every_caption() {
        let few: Vec<Group> = (1..=COLUMNS).map(group).collect();
        let many: Vec<Group> = (1..=40).map(group).collect();
        let height =
            |svg: &str| -> f64 { svg.split(r#"height=""#).nth(1).unwrap().split('"').next().unwrap().parse().unwrap() };
        assert_eq!(height(&render("t", &few)), 420.0, "a dozen groups stand as columns");
        let rows = render("t", &many);
        assert!(height(&rows) > 40.0 * 20.0, "a row per group");
        assert!(rows.contains(r#"width="1000""#), "as wide as a page, whatever the count");
        for i in 1..=40 {
            assert!(rows.contains(&format!(">rack1/host{i:02} · idle</text>")), "caption {i}");
        }
        assert!(rows.contains(&format!(">{}</text>", fmt_us(4000.0))), "the largest max written at its bar");
    }
}
