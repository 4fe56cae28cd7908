//! `--split` in the report: how much of a run's p99 and max was the timer interrupt (IRQ
//! latency) and how much scheduling (thread − IRQ), from the stored statistics of both sides.
//! Both shares are ratios of percentiles of two histograms, not a split of one sample: the
//! sample at the thread's p99 need not be the one at the IRQ's p99.

use std::fmt::Write;

use crate::report::page::figures::load_name;
use crate::report::page::svg::esc;
use crate::report::select::RunView;
use crate::units::fmt_ns_as_us as us;

/// One split run's thread and IRQ sides at p99 and at the max, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shares {
    pub thread_p99: u64,
    pub irq_p99: u64,
    pub thread_max: u64,
    pub irq_max: u64,
    /// The share of the samples matched with their timer's expiry, 0 … 1.
    pub matched: f64,
}

impl Shares {
    /// The run's shares; `None` when it was not split. Every thread merged.
    pub fn of(r: &RunView) -> Option<Shares> {
        let irq = r.data.irq_total()?;
        let unmatched: u64 = r.data.threads.iter().filter_map(|t| t.irq.as_ref()).map(|i| i.unmatched).sum();
        let all = irq.count + unmatched;
        let thread = &r.data.total;
        Some(Shares {
            thread_p99: thread.percentile(0.99),
            irq_p99: irq.percentile(0.99),
            thread_max: thread.max,
            irq_max: irq.max,
            matched: if all == 0 { 1.0 } else { irq.count as f64 / all as f64 },
        })
    }

    /// IRQ p99 / thread p99; 0 when the thread's p99 is 0.
    pub fn irq_share_p99(&self) -> f64 {
        ratio(self.irq_p99, self.thread_p99)
    }

    /// IRQ max / thread max; 0 when the thread's max is 0.
    pub fn irq_share_max(&self) -> f64 {
        ratio(self.irq_max, self.thread_max)
    }

    /// The side more of the p99 came from: "the interrupt" or "scheduling" (a tie is scheduling's).
    pub fn p99_mostly(&self) -> &'static str {
        if self.irq_share_p99() > 0.5 {
            "the interrupt"
        } else {
            "scheduling"
        }
    }

    /// The scheduling part of the p99: thread − IRQ, in ns (negative when the IRQ side's p99,
    /// over the matched samples only, is the larger).
    pub fn scheduling_p99(&self) -> i64 {
        self.thread_p99 as i64 - self.irq_p99 as i64
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The anchor of one label's table in a probe's section.
pub fn anchor(probe: &str, label: &str) -> String {
    format!("split-{}-{}", crate::report::page::file_safe(probe), crate::report::page::file_safe(label))
}

/// A share as the table and the sentences print it.
pub fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

/// The split runs of `probe`, a small table per label: IRQ vs scheduling at p99 and at the
/// max. Nothing when no run of the probe was split.
pub fn section(runs: &[RunView], probe: &str) -> String {
    let split: Vec<(&RunView, Shares)> =
        runs.iter().filter(|r| r.probe() == probe).filter_map(|r| Some((r, Shares::of(r)?))).collect();
    if split.is_empty() {
        return String::new();
    }
    let mut b = String::from(
        r#"<h3>Where the latency went: IRQ vs scheduling (--split)</h3><p class="note">IRQ latency: when the timer's expiry handler ran − when the timer was due; scheduling: the thread latency (the sample) − the IRQ latency. Each share is a ratio of percentiles (IRQ p99 / thread p99, IRQ max / thread max) of the stored histograms, not a per-sample split: the sample at one side's p99 need not be the one at the other's. The IRQ side counts the samples matched with their timer's expiry only.</p>"#,
    );
    for label in crate::report::page::distinct(split.iter().map(|(r, _)| r.label().to_string())) {
        let _ = write!(b, r#"<h4 id="{}">{}</h4>"#, esc(&anchor(probe, &label)), esc(&label));
        b.push_str(
            "<table><tr><th>load</th><th>run</th><th>matched</th><th>p99 thread</th><th>p99 IRQ</th><th>IRQ share of p99</th><th>scheduling share of p99</th><th>max thread</th><th>max IRQ</th><th>IRQ share of max</th><th>scheduling share of max</th></tr>",
        );
        for (r, s) in split.iter().filter(|(r, _)| r.label() == label) {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&load_name(&r.load())),
                r.data.header.id,
                percent(s.matched),
                us(s.thread_p99 as f64),
                us(s.irq_p99 as f64),
                percent(s.irq_share_p99()),
                percent(1.0 - s.irq_share_p99()),
                us(s.thread_max as f64),
                us(s.irq_max as f64),
                percent(s.irq_share_max()),
                percent(1.0 - s.irq_share_max()),
            );
        }
        b.push_str("</table>");
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_are_irq_over_thread_and_scheduling_is_the_rest() {
        let s = Shares { thread_p99: 800, irq_p99: 200, thread_max: 5000, irq_max: 4000, matched: 1.0 };
        assert_eq!((s.irq_share_p99(), s.irq_share_max(), s.scheduling_p99()), (0.25, 0.8, 600));
        assert_eq!(percent(s.irq_share_p99()), "25.0 %");
        assert_eq!(s.p99_mostly(), "scheduling");
        assert_eq!(Shares { irq_p99: 600, ..s }.p99_mostly(), "the interrupt");
        let empty = Shares { thread_p99: 0, irq_p99: 0, thread_max: 0, irq_max: 0, matched: 1.0 };
        assert_eq!((empty.irq_share_p99(), empty.irq_share_max()), (0.0, 0.0), "no samples: no share, no NaN");
    }
}
