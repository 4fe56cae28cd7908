//! Latency over time on a log axis (Figures 2–5, 9, 10, 14, 15). A short run is drawn sample by
//! sample; a longer one from its per-interval envelope: a min–max band and the mean per thread,
//! merged into at most `COLUMNS` columns, so a 24-hour run stays readable and small.

use crate::model::{EnvPoint, Gap};
use crate::report::page::svg::{Plot, Scale, Svg, PALETTE};
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

/// Shades the spans a resumed run did not measure, over the whole height, under the data.
fn shade_gaps(svg: &mut Svg, plot: &Plot, gaps: &[Gap], div: f64) -> Option<(String, String, String)> {
    if gaps.is_empty() {
        return None;
    }
    svg.raw(r#"<g class="gaps">"#);
    let right = plot.left + plot.width;
    for g in gaps {
        let at = |ns: u64| plot.px(ns as f64 / 1e9 / div).min(right);
        let (x0, x1) = (at(g.start_ns), at(g.end_ns));
        svg.raw(&format!(
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#7f7f7f" fill-opacity="0.3"><title>not measured: {} – {}</title></rect>"##,
            plot.top,
            (x1 - x0).max(1.5),
            plot.height,
            g.start,
            g.end
        ));
    }
    svg.raw("</g>");
    Some(("#7f7f7f".into(), String::new(), "not measured (the run was resumed)".into()))
}

/// A thread's envelope cut where the run was not measured, so no band or line crosses a gap.
fn pieces<'p>(points: &'p [EnvPoint], gaps: &[Gap], interval_s: f64) -> Vec<&'p [EnvPoint]> {
    let ns = |p: &EnvPoint| (p.index as f64 * interval_s * 1e9) as u64;
    let mut out = Vec::new();
    let mut from = 0;
    for i in 1..points.len() {
        if gaps.iter().any(|g| ns(&points[i - 1]) < g.end_ns && ns(&points[i]) >= g.end_ns) {
            out.push(&points[from..i]);
            from = i;
        }
    }
    out.push(&points[from..]);
    out
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
pub fn render_samples(
    title: &str,
    threads: &[crate::model::ThreadSamples],
    steal: &[StealMark],
    gaps: &[Gap],
) -> String {
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
    legend.extend(shade_gaps(&mut svg, &plot, gaps, div));
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
pub fn render(
    title: &str,
    threads: &[(u32, Vec<EnvPoint>)],
    interval_s: f64,
    steal: &[StealMark],
    gaps: &[Gap],
) -> String {
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
    legend.extend(shade_gaps(&mut svg, &plot, gaps, div));
    for (i, (thread, all)) in threads.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        for piece in pieces(all, gaps, interval_s) {
            draw_envelope(&mut svg, &plot, &decimate(piece), color, interval_s / div);
        }
        legend.push((color.to_string(), String::new(), format!("thread {thread}: mean, band min–max, dots max")));
    }
    svg.legend(&plot, &legend);
    svg.finish()
}

/// One stretch of a thread's envelope: its min–max band, its maxima as dots, its mean.
fn draw_envelope(svg: &mut Svg, plot: &Plot, pts: &[EnvPoint], color: &str, per_index: f64) {
    let t = |p: &EnvPoint| plot.px((p.index as f64 + 0.5) * per_index);
    let mut band: Vec<(f64, f64)> = pts.iter().map(|p| (t(p), plot.py(p.max as f64 / 1000.0))).collect();
    band.extend(pts.iter().rev().map(|p| (t(p), plot.py((p.min as f64 / 1000.0).max(1e-3)))));
    svg.polygon(&band, &format!(r#"fill="{color}" fill-opacity="0.22" stroke="none""#));
    // Maxima as dots: the spikes a reader is looking for.
    for p in pts {
        svg.raw(&format!(
            r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{color}"/>"#,
            t(p),
            plot.py(p.max as f64 / 1000.0)
        ));
    }
    let mean: Vec<(f64, f64)> = pts.iter().map(|p| (t(p), plot.py((p.mean() / 1000.0).max(1e-3)))).collect();
    svg.polyline(&mean, &format!(r#"stroke="{color}" stroke-width="1.5""#));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resumed run's gap is shaded and named, and no band or mean line crosses it.
    #[test]
    fn a_gap_is_shaded_with_its_label_and_the_envelope_breaks_there() {
        let point = |index| EnvPoint { index, min: 5_000, max: 9_000, sum: 60_000, count: 10 };
        let pts: Vec<EnvPoint> = (0..30).chain(61..90).map(point).collect();
        let gap =
            Gap { start: "a".into(), end: "b".into(), seconds: 30.5, start_ns: 30_000_000_000, end_ns: 60_500_000_000 };
        let pieces_of = pieces(&pts, std::slice::from_ref(&gap), 1.0);
        assert_eq!(pieces_of.iter().map(|p| (p[0].index, p.len())).collect::<Vec<_>>(), [(0, 30), (61, 29)]);
        let svg = render("t", &[(0, pts.clone())], 1.0, &[], &[gap]);
        assert!(svg.contains("not measured (the run was resumed)"), "the legend names it");
        assert!(svg.contains("<title>not measured: a – b</title>"));
        assert_eq!(svg.matches("<polyline").count(), 2, "the mean line is broken at the gap");
        let whole = render("t", &[(0, pts)], 1.0, &[], &[]);
        assert_eq!(whole.matches("<polyline").count(), 1);
        assert!(!whole.contains("not measured"));
    }

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
