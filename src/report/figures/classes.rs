//! A noise run's noise by what ran in its gaps (`noise --classify`): one stacked bar per run,
//! the share of each class, as rtla osnoise top's columns (IRQ, softirq, thread, HW).

use crate::model::NoiseClass;
use crate::report::svg::Svg;

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
    let y = height - 18.0;
    for (j, class) in NoiseClass::ALL.iter().enumerate() {
        let x = 30.0 + j as f64 * 125.0;
        svg.rect(x, y - 10.0, 12.0, 12.0, &format!(r#"fill="{}""#, color(*class)));
        svg.text(x + 16.0, y, class.heading(), "start", 11.0, "");
    }
    svg.finish()
}
