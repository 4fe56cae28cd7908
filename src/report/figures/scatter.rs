//! Latency over time on a log axis (Figures 2–5, 9, 10, 14, 15). A short run is drawn sample by
//! sample; a longer one from its per-interval envelope: a min–max band and the mean per thread,
//! merged into at most `COLUMNS` columns, so a 24-hour run stays readable and small.

use crate::model::EnvPoint;
use crate::report::svg::{Plot, Scale, Svg, PALETTE};
use crate::units::fmt_us;

const COLUMNS: usize = 1200;

/// An interval in which the hypervisor took a measured CPU away (steal time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StealMark {
    pub start_s: f64,
    pub end_s: f64,
    /// Steal over the measured CPUs in the interval.
    pub stolen_ms: f64,
    /// Steal was at least the interval's largest latency on its CPU: it alone can explain it.
    pub explains: bool,
}

/// Shades the intervals with steal under the data, darker where steal explains the interval's
/// maximum; neighbours merge so a day-long run draws at most `COLUMNS` bands.
fn shade_steal(svg: &mut Svg, plot: &Plot, marks: &[StealMark], div: f64) -> Option<(String, String, String)> {
    if marks.is_empty() {
        return None;
    }
    let width_s = plot_span_s(plot, div) / COLUMNS as f64;
    let mut bands: Vec<StealMark> = Vec::new();
    for m in marks {
        match bands.last_mut() {
            Some(b) if m.start_s - b.end_s < width_s && b.explains == m.explains => {
                b.end_s = m.end_s;
                b.stolen_ms += m.stolen_ms;
            }
            _ => bands.push(*m),
        }
    }
    svg.raw(r#"<g class="steal">"#);
    for b in &bands {
        let right = plot.left + plot.width;
        let (x0, x1) = (plot.px(b.start_s / div).min(right), plot.px(b.end_s / div).min(right));
        let opacity = if b.explains { 0.35 } else { 0.15 };
        svg.raw(&format!(
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#ff7f0e" fill-opacity="{opacity}"><title>steal {:.0} ms</title></rect>"##,
            plot.top,
            (x1 - x0).max(0.8),
            plot.height,
            b.stolen_ms
        ));
    }
    svg.raw("</g>");
    Some(("#ff7f0e".into(), String::new(), "hypervisor steal (dark: explains the max)".into()))
}

fn plot_span_s(plot: &Plot, div: f64) -> f64 {
    match plot.x {
        Scale::Linear { min, max } | Scale::Log { min, max } => (max - min) * div,
    }
}

/// Merges consecutive points so at most `COLUMNS` remain.
pub fn decimate(points: &[EnvPoint]) -> Vec<EnvPoint> {
    if points.len() <= COLUMNS {
        return points.to_vec();
    }
    let per = points.len().div_ceil(COLUMNS);
    points
        .chunks(per)
        .map(|c| EnvPoint {
            index: c[0].index,
            min: c.iter().map(|p| p.min).min().unwrap_or(0),
            max: c.iter().map(|p| p.max).max().unwrap_or(0),
            sum: c.iter().map(|p| p.sum).sum(),
            count: c.iter().map(|p| p.count).sum(),
        })
        .collect()
}

/// The axes of a scatter: latency range (µs), run length (s) and the time unit to show.
fn frame(svg: &mut Svg, title: &str, lo_us: f64, hi_us: f64, tmax_s: f64) -> (Plot, f64) {
    let (div, unit) = if tmax_s > 7200.0 {
        (3600.0, "h")
    } else if tmax_s > 300.0 {
        (60.0, "min")
    } else {
        (1.0, "s")
    };
    let y = Scale::log_around(if lo_us.is_finite() { lo_us } else { 1.0 }, hi_us.max(1e-3), 0.001);
    let x = Scale::Linear { min: 0.0, max: (tmax_s / div).max(1e-9) };
    let plot = Plot { left: 70.0, top: 36.0, width: 470.0, height: 250.0, x, y };
    svg.frame(&plot, title, &format!("time ({unit})"), "latency (µs, log scale)", &fmt_us);
    (plot, div)
}

/// Every sample as a dot, for runs short enough that the store kept them all.
pub fn render_samples(title: &str, threads: &[crate::model::ThreadSamples], steal: &[StealMark]) -> String {
    let mut svg = Svg::new(560.0, 340.0);
    let all = threads.iter().flat_map(|t| t.1.iter());
    let (mut lo, mut hi, mut tmax) = (f64::INFINITY, 0.0f64, 0.0f64);
    for &(t, lat) in all {
        lo = lo.min(lat as f64 / 1000.0);
        hi = hi.max(lat as f64 / 1000.0);
        tmax = tmax.max(t as f64 / 1e9);
    }
    let (plot, div) = frame(&mut svg, title, lo, hi, tmax);
    let mut legend: Vec<(String, String, String)> = shade_steal(&mut svg, &plot, steal, div).into_iter().collect();
    for (i, (thread, pts)) in threads.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        for &(t, lat) in pts {
            svg.raw(&format!(
                r#"<circle cx="{:.1}" cy="{:.1}" r="1.4" fill="{color}" fill-opacity="0.7"/>"#,
                plot.px(t as f64 / 1e9 / div),
                plot.py((lat as f64 / 1000.0).max(1e-3))
            ));
        }
        legend.push((color.to_string(), String::new(), format!("thread {thread}: every sample")));
    }
    svg.legend(&plot, &legend);
    svg.finish()
}

/// `threads`: per thread, its envelope in time order. `interval_s`: seconds per envelope index.
pub fn render(title: &str, threads: &[(u32, Vec<EnvPoint>)], interval_s: f64, steal: &[StealMark]) -> String {
    let mut svg = Svg::new(560.0, 340.0);
    let all = threads.iter().flat_map(|t| t.1.iter());
    let (mut lo, mut hi, mut tmax) = (f64::INFINITY, 0.0f64, 0.0f64);
    for p in all {
        lo = lo.min(p.min as f64 / 1000.0);
        hi = hi.max(p.max as f64 / 1000.0);
        tmax = tmax.max((p.index + 1) as f64 * interval_s);
    }
    let (plot, div) = frame(&mut svg, title, lo, hi, tmax);
    let mut legend: Vec<(String, String, String)> = shade_steal(&mut svg, &plot, steal, div).into_iter().collect();
    for (i, (thread, pts)) in threads.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts = decimate(pts);
        let t = |p: &EnvPoint| plot.px((p.index as f64 + 0.5) * interval_s / div);
        let mut band: Vec<(f64, f64)> = pts.iter().map(|p| (t(p), plot.py(p.max as f64 / 1000.0))).collect();
        band.extend(pts.iter().rev().map(|p| (t(p), plot.py((p.min as f64 / 1000.0).max(1e-3)))));
        svg.polygon(&band, &format!(r#"fill="{color}" fill-opacity="0.22" stroke="none""#));
        // Maxima as dots: the spikes a reader is looking for.
        for p in &pts {
            svg.raw(&format!(
                r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{color}"/>"#,
                t(p),
                plot.py(p.max as f64 / 1000.0)
            ));
        }
        let mean: Vec<(f64, f64)> = pts.iter().map(|p| (t(p), plot.py((p.mean() / 1000.0).max(1e-3)))).collect();
        svg.polyline(&mean, &format!(r#"stroke="{color}" stroke-width="1.5""#));
        legend.push((color.to_string(), String::new(), format!("thread {thread}: mean, band min–max, dots max")));
    }
    svg.legend(&plot, &legend);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimation_keeps_extremes_and_counts() {
        let pts: Vec<EnvPoint> = (0..86_400)
            .map(|i| EnvPoint { index: i, min: 5 + i % 7, max: 100 + i % 1000, sum: 50, count: 10 })
            .collect();
        let d = decimate(&pts);
        assert!(d.len() <= COLUMNS);
        assert_eq!(d.iter().map(|p| p.count).sum::<u64>(), 864_000);
        assert_eq!(d.iter().map(|p| p.max).max(), Some(1099));
        assert_eq!(d.iter().map(|p| p.min).min(), Some(5));
    }
}
