//! One CSV row per thread plus a merged row; integer ns.

use std::fmt::Write;

use crate::report::Run;
use crate::stats::{Stats, PERCENTILES};

pub fn render(run: &Run) -> String {
    let mut out = String::from("run,label,probe,thread,cpu,count,overruns,min_ns,max_ns,mean_ns,stddev_ns");
    for (p, _) in PERCENTILES {
        let _ = write!(out, ",p{p}_ns");
    }
    out.push('\n');
    let h = &run.header;
    let mut row = |thread: &str, cpu: String, s: &Stats| {
        let sum = s.summary();
        let _ = write!(
            out,
            "{},{},{},{thread},{cpu},{},{},{},{},{:.3},{}",
            h.id,
            quote(&h.label),
            h.probe,
            sum.count,
            sum.overruns,
            sum.min_ns,
            sum.max_ns,
            sum.mean_ns,
            // Empty where the distribution is not known (a tool's min/avg/max imported).
            sum.stddev_ns.map_or(String::new(), |sd| format!("{sd:.3}"))
        );
        for (p, _) in PERCENTILES {
            let known = sum.percentiles_ns.get(p).and_then(|v| v.as_u64());
            let _ = write!(out, ",{}", known.map_or(String::new(), |v| v.to_string()));
        }
        out.push('\n');
    };
    for t in &run.threads {
        row(&t.thread.to_string(), t.cpu.map(|c| c.to_string()).unwrap_or_default(), &t.stats);
    }
    row("all", String::new(), &run.total);
    out
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
