//! Every sample of a run as CSV (`thread,t_ns,latency_ns`, and `irq_ns` when the run was split:
//! empty for a sample no expiry matched), for tools that want the raw data: only for runs short
//! enough that the store kept every sample.

use std::fmt::Write;

use anyhow::Result;

use crate::invalid;
use crate::model::{Run, ThreadSamples};

pub fn render(run: &Run, raw: &[ThreadSamples], irq: &[(u32, Vec<Option<u64>>)]) -> Result<String> {
    for t in &run.threads {
        let kept = raw.iter().find(|(n, _)| *n == t.thread).map_or(0, |(_, v)| v.len() as u64);
        if kept != t.stats.count {
            return Err(invalid!(
                "run {} kept {kept} of thread {}'s {} samples; record with --samples FILE and read every sample with `rtbench analyze`",
                run.header.id,
                t.thread,
                t.stats.count
            ));
        }
    }
    let split = run.threads.iter().any(|t| t.irq.is_some());
    let mut out = String::from(if split { "thread,t_ns,latency_ns,irq_ns\n" } else { "thread,t_ns,latency_ns\n" });
    for (thread, samples) in raw {
        let irqs = irq.iter().find(|(n, _)| n == thread).map_or(&[][..], |(_, v)| v.as_slice());
        for (i, (t, lat)) in samples.iter().enumerate() {
            let _ = write!(out, "{thread},{t},{lat}");
            if split {
                let _ = write!(out, ",{}", irqs.get(i).copied().flatten().map_or(String::new(), |n| n.to_string()));
            }
            out.push('\n');
        }
    }
    Ok(out)
}
