//! HdrHistogram's percentile distribution text (`.hgrm`), values in µs, readable by the
//! HdrHistogram plotter and HistogramLogAnalyzer.

use std::fmt::Write;

use crate::stats::Stats;

pub fn render(s: &Stats) -> String {
    let mut out = format!("{:>12} {:>14} {:>10} {:>14}\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    if s.count > 0 {
        let mut total = 0u64;
        for v in s.hist.iter_quantiles(5) {
            let value = s.hist.highest_equivalent(v.value_iterated_to()).min(s.max) as f64 / 1000.0;
            let q = v.quantile_iterated_to();
            total += v.count_since_last_iteration();
            if q < 1.0 {
                let _ = writeln!(out, "{value:12.3} {q:2.12} {total:10} {:14.2}", 1.0 / (1.0 - q));
            } else {
                let _ = writeln!(out, "{value:12.3} {q:2.12} {total:10}");
            }
        }
    }
    let _ = writeln!(out, "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]", s.mean() / 1000.0, s.stddev() / 1000.0);
    let _ = writeln!(out, "#[Max     = {:12.3}, Total count    = {:12}]", s.max as f64 / 1000.0, s.count);
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        s.hist.buckets(),
        // HdrHistogram's sub-bucket count: the power of two that resolves `SIGFIG` digits.
        (2.0 * 10f64.powi(crate::stats::SIGFIG as i32)).log2().ceil().exp2() as u64
    );
    out
}
