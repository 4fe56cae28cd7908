//! `--hlog FILE`: every window's histogram per CPU, full fidelity, in the HdrHistogram
//! interval log format that HistogramLogAnalyzer and the HdrHistogram libraries read. Values
//! are nanoseconds; the max column is in milliseconds (divisor 1e6), as jHiccup writes it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::runner::segment::Closed;
use crate::runner::sink::Sink;

const MAX_VALUE_DIVISOR: f64 = 1e6;

pub struct HlogSink {
    path: PathBuf,
    out: BufWriter<File>,
    serializer: V2DeflateSerializer,
    /// The log's base time: interval start times count from here.
    base: SystemTime,
    window_from: SystemTime,
}

impl HlogSink {
    pub fn create(path: &Path) -> Result<HlogSink> {
        let file = File::create(path).map_err(|e| crate::error::InputError::Unwritable {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let mut sink = HlogSink {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
            base: SystemTime::now(),
            window_from: SystemTime::now(),
        };
        IntervalLogWriterBuilder::new()
            .add_comment("rtbench monitor: timer wake-up latency in ns, one interval per window and CPU")
            .with_start_time(sink.base)
            .with_base_time(sink.base)
            .with_max_value_divisor(MAX_VALUE_DIVISOR)
            .begin_log_with(&mut sink.out, &mut sink.serializer)?;
        sink.out.flush()?;
        Ok(sink)
    }
}

impl Sink for HlogSink {
    fn name(&self) -> String {
        format!("the interval log '{}'", self.path.display())
    }

    fn window_closed(&mut self, closed: &Closed) -> Result<Option<i64>> {
        let now = SystemTime::now();
        let since = |t: SystemTime| t.duration_since(self.base).unwrap_or(Duration::ZERO);
        let (start, length) = (since(self.window_from), now.duration_since(self.window_from).unwrap_or_default());
        // A writer with no headers writes only the intervals: the log's header went out once.
        let mut log = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(MAX_VALUE_DIVISOR)
            .begin_log_with(&mut self.out, &mut self.serializer)?;
        for t in closed.threads {
            let tag = t.cpu.map_or_else(|| format!("thread{}", t.thread), |c| format!("cpu{c}"));
            log.write_histogram(&t.stats.hist, start, length, Tag::new(&tag))
                .map_err(|e| anyhow::anyhow!("{e}"))
                .context("could not write the interval log")?;
        }
        self.out.flush().context("could not write the interval log")?;
        self.window_from = now;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadResult;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn every_window_is_an_interval_per_cpu_that_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.hlog");
        let mut sink = HlogSink::create(&path).unwrap();
        let result = |cpu: u32, ns: &[u64]| {
            let mut stats = crate::stats::Stats::default();
            ns.iter().for_each(|n| stats.record(*n));
            ThreadResult { thread: cpu, cpu: Some(cpu), stats, irq: None }
        };
        let first = [result(0, &[10_000, 20_000]), result(1, &[30_000])];
        sink.window_closed(&Closed { threads: &first, ran: &[], more: true }).unwrap();
        let second = [result(0, &[5_000_000]), result(1, &[])];
        sink.window_closed(&Closed { threads: &second, ran: &[], more: false }).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let base = sink.base.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let logged: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("#[BaseTime: ")?.split_whitespace().next()?.parse().ok())
            .expect("the header names the base time");
        assert!((logged - base).abs() < 0.01, "{logged} vs {base}");
        let mut seen = Vec::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(h) = entry.unwrap() {
                let raw = base64_decode(h.encoded_histogram());
                let hist: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut &raw[..]).unwrap();
                seen.push((h.tag().map(|t| t.as_str().to_string()), hist.len(), hist.max()));
            }
        }
        let tags: Vec<_> = seen.iter().map(|s| (s.0.clone().unwrap(), s.1)).collect();
        assert_eq!(tags, [("cpu0".into(), 2), ("cpu1".into(), 1), ("cpu0".into(), 1), ("cpu1".into(), 0)]);
        assert!(hdrhistogram::Histogram::<u64>::new(3).unwrap().equivalent(seen[2].2, 5_000_000));
    }

    fn base64_decode(s: &str) -> Vec<u8> {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0);
        for c in s.bytes().filter(|c| *c != b'=') {
            acc = acc << 6 | ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        out
    }
}
