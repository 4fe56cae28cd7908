//! A small SVG writer with linear and log axes: just what rtbench's figures need.

use std::fmt::Write;

use crate::units::fmt_us;

/// Colours per label (distinct hues); loads are told apart by line style and shade.
pub const PALETTE: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];

/// How values map onto one axis.
#[derive(Clone, Copy, Debug)]
pub enum Scale {
    Linear {
        min: f64,
        max: f64,
    },
    /// Base-10 log; `min` > 0.
    Log {
        min: f64,
        max: f64,
    },
}

impl Scale {
    /// A log scale spanning whole decades around `lo..hi` (values ≤ 0 are lifted to `floor`).
    pub fn log_around(lo: f64, hi: f64, floor: f64) -> Scale {
        let lo = lo.max(floor);
        let hi = hi.max(lo * 10.0);
        Scale::Log { min: 10f64.powf(lo.log10().floor()), max: 10f64.powf(hi.log10().ceil()) }
    }

    /// Where `v` falls, 0 … 1.
    pub fn frac(&self, v: f64) -> f64 {
        match *self {
            Scale::Linear { min, max } => (v - min) / (max - min).max(f64::MIN_POSITIVE),
            Scale::Log { min, max } => (v.max(min * 1e-3).log10() - min.log10()) / (max.log10() - min.log10()),
        }
    }

    /// Tick values and their labels.
    pub fn ticks(&self, fmt: &dyn Fn(f64) -> String) -> Vec<(f64, String)> {
        match *self {
            Scale::Linear { min, max } => {
                let span = (max - min).max(1e-12);
                let raw = span / 6.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step =
                    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 7.0).unwrap_or(mag * 10.0);
                let mut v = (min / step).ceil() * step;
                let mut out = Vec::new();
                while v <= max + step * 1e-9 {
                    out.push((v, fmt(v)));
                    v += step;
                }
                out
            }
            Scale::Log { min, max } => {
                let (a, b) = (min.log10().round() as i32, max.log10().round() as i32);
                (a..=b).map(|e| 10f64.powi(e)).map(|v| (v, fmt(v))).collect()
            }
        }
    }
}

/// Escapes text for SVG and HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// An SVG document being written.
pub struct Svg {
    pub w: f64,
    pub h: f64,
    body: String,
}

/// The plotting area of a figure and its two scales.
#[derive(Clone, Copy, Debug)]
pub struct Plot {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub x: Scale,
    pub y: Scale,
}

impl Plot {
    pub fn px(&self, v: f64) -> f64 {
        self.left + self.x.frac(v).clamp(-0.01, 1.01) * self.width
    }
    pub fn py(&self, v: f64) -> f64 {
        self.top + self.height - self.y.frac(v).clamp(-0.01, 1.01) * self.height
    }
}

impl Svg {
    pub fn new(w: f64, h: f64) -> Svg {
        Svg { w, h, body: String::with_capacity(16 * 1024) }
    }

    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: &str, size: f64, extra: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}"{extra}>{}</text>"#,
            esc(s)
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = write!(self.body, r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" {style}/>"#);
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" {style}/>"#,
            w.max(0.0),
            h.max(0.0)
        );
    }

    /// A polyline through `pts` (pixels).
    pub fn polyline(&mut self, pts: &[(f64, f64)], style: &str) {
        if pts.is_empty() {
            return;
        }
        self.body.push_str("<polyline points=\"");
        for (x, y) in pts {
            let _ = write!(self.body, "{x:.1},{y:.1} ");
        }
        let _ = write!(self.body, "\" fill=\"none\" {style}/>");
    }

    /// A closed shape through `pts` (pixels).
    pub fn polygon(&mut self, pts: &[(f64, f64)], style: &str) {
        if pts.is_empty() {
            return;
        }
        self.body.push_str("<polygon points=\"");
        for (x, y) in pts {
            let _ = write!(self.body, "{x:.1},{y:.1} ");
        }
        let _ = write!(self.body, "\" {style}/>");
    }

    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }

    /// Title, axes, grid and tick labels around `plot`.
    pub fn frame(&mut self, plot: &Plot, title: &str, xlabel: &str, ylabel: &str, xfmt: &dyn Fn(f64) -> String) {
        self.text(self.w / 2.0, 20.0, title, "middle", 14.0, r#" font-weight="bold""#);
        let (l, t, w, h) = (plot.left, plot.top, plot.width, plot.height);
        for (v, label) in plot.y.ticks(&fmt_us) {
            let y = plot.py(v);
            self.line(l, y, l + w, y, r##"stroke="#e4e4e4""##);
            self.text(l - 6.0, y + 4.0, &label, "end", 11.0, "");
        }
        for (v, label) in plot.x.ticks(xfmt) {
            let x = plot.px(v);
            self.line(x, t + h, x, t + h + 4.0, r##"stroke="#444""##);
            self.text(x, t + h + 17.0, &label, "middle", 11.0, "");
        }
        self.rect(l, t, w, h, r##"fill="none" stroke="#444""##);
        self.text(l + w / 2.0, self.h - 8.0, xlabel, "middle", 12.0, "");
        let (cx, cy) = (14.0, t + h / 2.0);
        self.text(cx, cy, ylabel, "middle", 12.0, &format!(r#" transform="rotate(-90 {cx} {cy})""#));
    }

    /// A legend box of (colour, dash, label) entries at the top right of `plot`.
    pub fn legend(&mut self, plot: &Plot, entries: &[(String, String, String)]) {
        if entries.is_empty() {
            return;
        }
        let width = entries.iter().map(|e| e.2.chars().count()).max().unwrap_or(0) as f64 * 6.6 + 40.0;
        let (x, y) = (plot.left + plot.width - width - 6.0, plot.top + 6.0);
        self.rect(
            x,
            y,
            width,
            entries.len() as f64 * 16.0 + 6.0,
            r##"fill="white" fill-opacity="0.85" stroke="#bbb""##,
        );
        for (i, (color, dash, label)) in entries.iter().enumerate() {
            let ly = y + 12.0 + i as f64 * 16.0;
            self.line(x + 6.0, ly - 4.0, x + 28.0, ly - 4.0, &format!(r#"stroke="{color}" stroke-width="2.5" {dash}"#));
            self.text(x + 34.0, ly, label, "start", 11.0, "");
        }
    }

    pub fn finish(self) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Arial, sans-serif"><rect width="{w}" height="{h}" fill="white"/>{body}</svg>"#,
            w = self.w,
            h = self.h,
            body = self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scale_covers_whole_decades() {
        let s = Scale::log_around(3.0, 4500.0, 0.001);
        assert!(matches!(s, Scale::Log { min, max } if min == 1.0 && max == 10_000.0));
        assert_eq!(s.ticks(&fmt_us).len(), 5);
        assert!((s.frac(100.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn linear_ticks_are_round() {
        let t = Scale::Linear { min: 0.0, max: 100.0 }.ticks(&|v| format!("{v}"));
        let labels: Vec<_> = t.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["0", "20", "40", "60", "80", "100"]);
    }
}
