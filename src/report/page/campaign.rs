//! A lab's report (issue 39): past a handful of labels — a campaign's hosts — the page opens
//! with one table of every label × probe × load, the worst first, and draws each probe's
//! figures with every label but not each run's own (histogram, scatter, tail: three per run,
//! 600 figures and 27 MB of page at 20 hosts). `rtbench report --label L` draws those for one.

use std::fmt::Write;

use super::file_safe;
use crate::report::page::figures::load_name;
use crate::report::page::svg::esc;
use crate::report::page::tables::caveat;
use crate::report::select::RunView;
use crate::units::fmt_ns_as_us as us;

/// Up to this many labels a report draws every run's figures, as the seeds compared kernels.
const FEW_LABELS: usize = 6;

/// Whether a report over this many labels is a campaign's.
pub fn is_campaign(labels: usize) -> bool {
    labels > FEW_LABELS
}

/// Per probe × load, every label's p99 and max, the largest p99 first; each group heads to its
/// probe's section, each label to its run's.
pub fn hosts_table(runs: &[RunView]) -> String {
    let mut groups: Vec<(String, String)> = Vec::new();
    for r in runs {
        let key = (r.probe().to_string(), r.load());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let mut out = String::from(
        r#"<table class="hosts"><tr><th>label</th><th>p99 (µs)</th><th>max (µs)</th><th>samples</th></tr>"#,
    );
    for (probe, load) in groups {
        let _ = write!(
            out,
            r##"<tr class="group"><th colspan="4"><a href="#probe-{}">{}</a> · {}</th></tr>"##,
            file_safe(&probe),
            esc(&probe),
            esc(&load_name(&load))
        );
        let mut these: Vec<(u64, &RunView)> = runs
            .iter()
            .filter(|r| r.probe() == probe && r.load() == load)
            .map(|r| (r.data.total.percentile(0.99), r))
            .collect();
        these.sort_by_key(|(p99, r)| (std::cmp::Reverse(*p99), std::cmp::Reverse(r.data.total.max)));
        for (p99, r) in these {
            let id = r.data.header.id;
            let _ = write!(
                out,
                r##"<tr><td><a href="#run{id}">{}</a>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"##,
                esc(r.label()),
                caveat(r),
                us(p99 as f64),
                us(r.data.total.max as f64),
                r.data.total.count
            );
        }
    }
    out + "</table>"
}
