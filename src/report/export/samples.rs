//! Every sample of a run as CSV (`thread,t_ns,latency_ns`), for tools that want the raw data:
//! only for runs short enough that the store kept every sample.

use std::fmt::Write;

use anyhow::Result;

use crate::invalid;
use crate::model::{Run, ThreadSamples};

pub fn render(run: &Run, raw: &[ThreadSamples]) -> Result<String> {
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
    let mut out = String::from("thread,t_ns,latency_ns\n");
    for (thread, samples) in raw {
        for (t, lat) in samples {
            let _ = writeln!(out, "{thread},{t},{lat}");
        }
    }
    Ok(out)
}
