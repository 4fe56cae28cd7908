//! The OSADL farm's long-term plot: the largest latency of every monitor window, one colour
//! per CPU, over days, so a spike that happens once a day stands out from the 5-minute noise;
//! a maximum the hypervisor's steal explains is ringed, so it is not taken for the kernel's.

use crate::model::WindowMax;
use crate::report::page::svg::{Plot, Scale, Svg, PALETTE};
use crate::units::fmt_us;

/// `windows` oldest first; their starts as RFC 3339. Windows whose start cannot be read are
/// left out (an imported or altered row).
pub fn render(title: &str, windows: &[WindowMax]) -> String {
    let mut svg = Svg::new(760.0, 360.0);
    let points: Vec<(f64, &WindowMax)> =
        windows.iter().filter_map(|w| Some((crate::timefmt::parse_rfc3339(&w.start)?, w))).collect();
    let t0 = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let span = points.iter().map(|p| p.0 - t0).fold(0.0, f64::max);
    let (div, unit) = match span {
        s if s > 3.0 * 86_400.0 => (86_400.0, "days"),
        s if s > 7200.0 => (3600.0, "h"),
        s if s > 300.0 => (60.0, "min"),
        _ => (1.0, "s"),
    };
    let us = |w: &WindowMax| (w.max_ns as f64 / 1000.0).max(1e-3);
    let irq_us = |w: &WindowMax| w.irq_max_ns.filter(|_| w.count > 0).map(|ns| (ns as f64 / 1000.0).max(1e-3));
    let lowest = |w: &WindowMax| irq_us(w).map_or(us(w), |i| i.min(us(w)));
    let lo = points.iter().map(|p| lowest(p.1)).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| us(p.1)).fold(0.0, f64::max);
    let y = Scale::log_around(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-3), 0.001);
    let x = Scale::Linear { min: 0.0, max: (span / div).max(1e-9) };
    let plot = Plot { left: 70.0, top: 36.0, width: 660.0, height: 260.0, x, y };
    let since = if t0.is_finite() { points.iter().find(|p| p.0 == t0).map_or("", |p| p.1.start.as_str()) } else { "" };
    let xlabel = format!("time since the first window ({unit}; {} UTC)", since.get(..16).unwrap_or(since));
    svg.frame(&plot, title, &xlabel, "largest latency per window (µs, log scale)", &fmt_us);
    let mut cpus: Vec<Option<u32>> = points.iter().map(|p| p.1.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut legend = Vec::new();
    for (i, cpu) in cpus.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mine: Vec<(f64, f64, bool)> = points
            .iter()
            .filter(|p| p.1.cpu == *cpu && p.1.count > 0)
            .map(|p| (plot.px((p.0 - t0) / div), plot.py(us(p.1)), p.1.stolen))
            .collect();
        let line: Vec<(f64, f64)> = mine.iter().map(|(x, y, _)| (*x, *y)).collect();
        svg.polyline(&line, &format!(r#"stroke="{color}" stroke-width="1" stroke-opacity="0.6""#));
        for (x, y, stolen) in &mine {
            svg.raw(&format!(r#"<circle class="window-max" cx="{x:.1}" cy="{y:.1}" r="2" fill="{color}"/>"#));
            if *stolen {
                svg.raw(&format!(
                    r#"<circle class="window-stolen" cx="{x:.1}" cy="{y:.1}" r="5" fill="none" stroke="{STOLEN}" stroke-width="1.5"/>"#
                ));
            }
        }
        let name = cpu.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
        legend.push((color.to_string(), String::new(), format!("{name}: {} windows", mine.len())));
        // `--split`: the largest IRQ latency of each window beside it, as timerlat's IRQ max
        // beside its thread max: how much of the worst the interrupt side can account for.
        let irq: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.1.cpu == *cpu)
            .filter_map(|p| Some((plot.px((p.0 - t0) / div), plot.py(irq_us(p.1)?))))
            .collect();
        if !irq.is_empty() {
            let dashed = format!(r#"stroke="{color}" stroke-width="1" stroke-opacity="0.5" stroke-dasharray="4 3""#);
            svg.polyline(&irq, &dashed);
            for (x, y) in &irq {
                let (x, y) = (x - 2.5, y - 2.5);
                svg.raw(&format!(
                    r#"<rect class="window-irq-max" x="{x:.1}" y="{y:.1}" width="5" height="5" fill="none" stroke="{color}"/>"#
                ));
            }
            let what = format!("{name}: largest IRQ latency per window (--split)");
            legend.push((color.to_string(), r#"stroke-dasharray="4 3""#.into(), what));
        }
    }
    let stolen = points.iter().filter(|p| p.1.stolen && p.1.count > 0).count();
    if stolen > 0 {
        legend.push((STOLEN.into(), String::new(), format!("ringed: {stolen} maxima the hypervisor's steal explains")));
    }
    svg.legend(&plot, &legend);
    svg.finish()
}

/// The ring around a window's maximum that steal time explains (the scatter's steal colour).
const STOLEN: &str = "#ff7f0e";

#[cfg(test)]
mod tests {
    use super::*;

    fn window(run: i64, start: &str, cpu: u32, max_ns: u64) -> WindowMax {
        let start = start.into();
        let (probe, stolen, irq_max_ns) = ("timer".into(), false, None);
        WindowMax { run, probe, start, thread: cpu, cpu: Some(cpu), max_ns, count: 10, stolen, irq_max_ns }
    }

    #[test]
    fn one_point_per_window_and_cpu_and_unreadable_starts_left_out() {
        let w = [
            window(1, "2026-11-22T00:00:00.000Z", 0, 20_000),
            window(1, "2026-11-22T00:00:00.000Z", 1, 30_000),
            window(2, "2026-11-22T00:10:00.000Z", 0, 90_000_000),
            window(2, "2026-11-22T00:10:00.000Z", 1, 25_000),
            window(3, "garbage", 0, 1),
        ];
        let svg = render("t", &w);
        assert_eq!(svg.matches(r#"class="window-max""#).count(), 4);
        assert!(svg.contains("CPU 0: 2 windows") && svg.contains("CPU 1: 2 windows"), "{svg}");
        assert!(svg.contains("time since the first window (min; 2026-11-22T00:00 UTC)"), "{svg}");
        assert!(!svg.contains("window-stolen") && !svg.contains("ringed"), "no steal, no ring");
        assert!(!svg.contains("window-irq-max") && !svg.contains("IRQ latency"), "not split, no IRQ part");
    }

    #[test]
    fn a_split_window_draws_its_irq_part_beside_its_max_on_the_same_scale() {
        let mut split = window(2, "2026-11-22T00:10:00.000Z", 0, 90_000_000);
        // Below every window's max: the scale must reach down to it.
        split.irq_max_ns = Some(3_000);
        let plain = window(1, "2026-11-22T00:00:00.000Z", 1, 20_000);
        let svg = render("t", &[window(1, "2026-11-22T00:00:00.000Z", 0, 20_000), split, plain]);
        assert_eq!(svg.matches(r#"class="window-irq-max""#).count(), 1, "one split window");
        assert!(svg.contains("CPU 0: largest IRQ latency per window (--split)"), "{svg}");
        assert!(!svg.contains("CPU 1: largest IRQ"), "CPU 1 was not split: {svg}");
        let y = |class: &str, attr: &str| -> f64 {
            let at = svg.find(&format!(r#"class="{class}""#)).unwrap();
            let rest = &svg[at..];
            let v = &rest[rest.find(&format!(r#"{attr}=""#)).unwrap() + attr.len() + 2..];
            v[..v.find('"').unwrap()].parse().unwrap()
        };
        assert!(y("window-irq-max", "y") > y("window-max", "cy"), "3 µs is drawn below 20 µs, inside the plot");
        assert!(y("window-irq-max", "y") < 36.0 + 260.0, "inside the plot");
    }

    #[test]
    fn a_maximum_steal_explains_is_ringed_and_counted() {
        let mut spike = window(2, "2026-11-22T00:10:00.000Z", 0, 90_000_000);
        spike.stolen = true;
        let svg = render("t", &[window(1, "2026-11-22T00:00:00.000Z", 0, 20_000), spike]);
        assert_eq!(svg.matches(r#"class="window-max""#).count(), 2);
        assert_eq!(svg.matches(r#"class="window-stolen""#).count(), 1);
        assert!(svg.contains("ringed: 1 maxima the hypervisor's steal explains"), "{svg}");
    }
}
