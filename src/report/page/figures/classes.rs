//! A noise run's noise by what ran in its gaps (`noise --classify`): one stacked bar per run,
//! the share of each class, as rtla osnoise top's columns (IRQ, softirq, thread, HW); and a
//! run's noise per envelope interval, stacked by class.

use crate::model::NoiseClass;
use crate::report::page::svg::{Plot, Scale, Svg};

/// One run's bar: its caption and the noise of each class, ns.
pub struct Bar {
    pub line: String,
    pub ns: Vec<(NoiseClass, u64)>,
}

fn color(c: NoiseClass) -> &'static str {
    match c {
        NoiseClass::Irq => "#1f77b4",
        NoiseClass::Softirq => "#17becf",
        NoiseClass::Thread => "#2ca02c",
        NoiseClass::Hardware => "#d62728",
        NoiseClass::Unknown => "#bbbbbb",
    }
}

pub fn render(title: &str, bars: &[Bar]) -> String {
    let (left, width, row) = (220.0, 440.0, 26.0);
    let height = 70.0 + bars.len() as f64 * row;
    let mut svg = Svg::new(left + width + 30.0, height);
    svg.text(left + width / 2.0, 18.0, title, "middle", 13.0, "");
    for (i, b) in bars.iter().enumerate() {
        let y = 32.0 + i as f64 * row;
        svg.text(left - 8.0, y + 14.0, &b.line, "end", 11.0, "");
        let total = b.ns.iter().map(|(_, ns)| ns).sum::<u64>().max(1) as f64;
        let mut x = left;
        for (class, ns) in &b.ns {
            let w = *ns as f64 / total * width;
            if w <= 0.0 {
                continue;
            }
            let share = *ns as f64 / total * 100.0;
            svg.rect(x, y, w, row - 6.0, &format!(r#"fill="{}""#, color(*class)));
            if w > 34.0 {
                svg.text(x + w / 2.0, y + 14.0, &format!("{share:.0} %"), "middle", 10.0, r#" fill="white""#);
            }
            x += w;
        }
    }
    key(&mut svg, height - 18.0);
    svg.finish()
}

/// The classes' colours in a row at `y`.
fn key(svg: &mut Svg, y: f64) {
    for (j, class) in NoiseClass::ALL.iter().enumerate() {
        let x = 30.0 + j as f64 * 125.0;
        svg.rect(x, y - 10.0, 12.0, 12.0, &format!(r#"fill="{}""#, color(*class)));
        svg.text(x + 16.0, y, class.heading(), "start", 11.0, "");
    }
}

/// One run's noise per interval, stacked by class: `per_interval[i]` is interval `i`'s noise
/// (ns) of each class in [`NoiseClass::ALL`]'s order; each interval `interval_s` long.
pub fn render_over_time(title: &str, interval_s: f64, per_interval: &[[u64; 5]]) -> String {
    let mut svg = Svg::new(680.0, 330.0);
    let end = (per_interval.len() as f64 * interval_s).max(interval_s);
    let most = per_interval.iter().map(|p| p.iter().sum::<u64>()).max().unwrap_or(0) as f64 / 1e3;
    let (x, y) = (Scale::Linear { min: 0.0, max: end }, Scale::Linear { min: 0.0, max: most.max(1.0) * 1.05 });
    let plot = Plot { left: 70.0, top: 36.0, width: 590.0, height: 220.0, x, y };
    svg.frame(&plot, title, "time since the start (s)", "noise per interval (µs)", &|v| format!("{v:.0}"));
    let mut below = vec![0.0; per_interval.len()];
    for (k, class) in NoiseClass::ALL.iter().enumerate() {
        let above: Vec<f64> = per_interval.iter().zip(&below).map(|(p, b)| b + p[k] as f64 / 1e3).collect();
        if above != below {
            let step = |i: usize, v: f64| [(i as f64, v), (i as f64 + 1.0, v)];
            let upper = above.iter().enumerate().flat_map(|(i, v)| step(i, *v));
            let lower: Vec<(f64, f64)> = below.iter().enumerate().flat_map(|(i, v)| step(i, *v)).collect();
            let pts: Vec<(f64, f64)> =
                upper.chain(lower.into_iter().rev()).map(|(i, v)| (plot.px(i * interval_s), plot.py(v))).collect();
            svg.polygon(&pts, &format!(r#"fill="{}" class="noise-{}""#, color(*class), class.key()));
        }
        below = above;
    }
    key(&mut svg, 318.0);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stacked_area_draws_a_shape_per_class_that_made_noise() {
        let svg = render_over_time("t", 1.0, &[[5_000, 0, 0, 90_000, 0], [0, 0, 0, 0, 0], [0, 0, 2_000, 0, 0]]);
        for k in ["irq", "thread", "hardware"] {
            assert_eq!(svg.matches(&format!(r#"class="noise-{k}""#)).count(), 1, "{k}: {svg}");
        }
        assert!(!svg.contains("noise-softirq") && !svg.contains("noise-unknown"), "{svg}");
    }
}
