//! The kernel's own timer latency measurement (`CONFIG_TIMERLAT_TRACER`): a per-CPU kernel
//! thread arms a timer every period, and the tracer writes, for every activation, the latency
//! of the timer interrupt's handler (context `irq`) and of the thread's wake-up (context
//! `thread`), both taken by the kernel from the timer's expiry:
//!
//! ```text
//!   <idle>-0       [001] d.h1.   54.029328: #1     context    irq timer_latency       932 ns
//!    <...>-867     [001] .....   54.029339: #1     context thread timer_latency     11700 ns
//! ```
//!
//! The tracer runs in an instance of rtbench's own; its options (which CPUs, the period) are
//! global, under `osnoise/`, so they are held ([`Options`]) and put back as they were.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ftrace::raw::{uint, Field, Format};
use crate::restore::Change;

/// Why a kernel cannot give the timerlat source, for the refusal and the study's skip.
pub const ABSENT: &str = "the kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)";

/// One activation's measurement in one context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub cpu: u32,
    /// CLOCK_MONOTONIC ns (the instance runs on the `mono` clock); to the microsecond from text.
    pub ts_ns: u64,
    /// The activation's number, the same in its `irq` and `thread` lines.
    pub activation: u64,
    /// The IRQ handler's latency (`irq`), not the thread's.
    pub irq: bool,
    pub latency_ns: u64,
}

/// The sample on a line of the tracer's output, or `None` for comments and other lines.
pub fn sample(line: &str) -> Option<Sample> {
    let e = super::ftrace::parse::line(line)?;
    // The tracer's output has no event name: "#ID context CTX timer_latency N ns" follows the
    // timestamp.
    let text = if e.detail.is_empty() { e.name } else { return None };
    let mut w = text.split_whitespace();
    let activation = w.next()?.strip_prefix('#')?.parse().ok()?;
    let irq = match (w.next()?, w.next()?) {
        ("context", "irq") => true,
        ("context", "thread") => false,
        _ => return None,
    };
    let (what, value, unit) = (w.next()?, w.next()?, w.next()?);
    if what != "timer_latency" || unit != "ns" || w.next().is_some() {
        return None;
    }
    Some(Sample { cpu: e.cpu, ts_ns: e.ts_ns, activation, irq, latency_ns: value.parse().ok()? })
}

/// Where the tracer's record keeps what a text line says, from its `format`
/// (`events/ftrace/timerlat/format`: `seqnum`, `context`, `timer_latency`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    id: u16,
    kind: Field,
    activation: Field,
    context: Field,
    latency: Field,
}

impl Record {
    pub fn read(root: &Path) -> Result<Record, String> {
        let path = root.join("events/ftrace/timerlat/format");
        Record::of(&Format::read(&path)?).ok_or_else(|| format!("{} is not timerlat's record as known", path.display()))
    }

    pub fn of(f: &Format) -> Option<Record> {
        Some(Record {
            id: f.id?,
            kind: f.field("common_type")?,
            activation: f.field("seqnum")?,
            context: f.field("context")?,
            latency: f.field("timer_latency")?,
        })
    }

    /// The sample in a record of CPU `cpu`'s buffer stamped `ts_ns`, or `None` for a record of
    /// another event or another context (a newer kernel's return to user space).
    pub fn sample(&self, cpu: u32, ts_ns: u64, data: &[u8]) -> Option<Sample> {
        if uint(data, self.kind)? != self.id as u64 {
            return None;
        }
        let irq = match uint(data, self.context)? {
            0 => true,
            1 => false,
            _ => return None,
        };
        let (activation, latency_ns) = (uint(data, self.activation)?, uint(data, self.latency)?);
        Some(Sample { cpu, ts_ns, activation, irq, latency_ns })
    }
}

/// Whether the kernel at tracefs `root` has the tracer; `Err` when tracefs cannot be read.
pub fn present(root: &Path) -> Result<bool, String> {
    let file = root.join("available_tracers");
    let tracers = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(tracers.split_whitespace().any(|t| t == "timerlat"))
}

/// The tracer's global options as rtbench found them, put back when the run ends or, after a
/// kill, by the next command.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// tracefs's `osnoise` directory.
    pub dir: PathBuf,
    /// `cpus` and `timerlat_period_us` as they were.
    pub cpus: String,
    pub period_us: String,
}

impl Options {
    /// The options at tracefs `root` as they are now.
    pub fn read(root: &Path) -> std::io::Result<Options> {
        let dir = root.join("osnoise");
        Ok(Options {
            cpus: read_whole(&dir.join("cpus"))?,
            period_us: read_whole(&dir.join("timerlat_period_us"))?,
            dir,
        })
    }

    /// Sets the tracer to `cpus` every `period_us`.
    pub fn set(&self, cpus: &[usize], period_us: u64) -> std::io::Result<()> {
        let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
        self.write("cpus", &list.join(","))?;
        self.write("timerlat_period_us", &period_us.to_string())
    }

    fn write(&self, file: &str, value: &str) -> std::io::Result<()> {
        let at = self.dir.join(file);
        std::fs::write(&at, value).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", at.display())))
    }
}

/// A tracefs file in one read: 6.1's `osnoise/cpus` refuses (EINVAL) a read into a buffer
/// smaller than its whole text, which is how `read_to_string` begins.
fn read_whole(at: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 1 << 16];
    let n = std::fs::File::open(at)
        .and_then(|mut f| f.read(&mut buf))
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", at.display())))?;
    Ok(String::from_utf8_lossy(&buf[..n]).trim().to_string())
}

impl Change for Options {
    const KIND: &'static str = "timerlat-options";
    // The options are global: two runs at once would set each other's.
    const ONE_AT_A_TIME: bool = true;

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        // A kernel that reads no CPU list as "all CPUs" shows it as an empty file.
        let cpus = if self.cpus.is_empty() { "all" } else { self.cpus.as_str() };
        let written = self.write("cpus", cpus).and_then(|()| self.write("timerlat_period_us", &self.period_us));
        written.map_err(|e| format!("the timerlat options rtbench pid {owner} changed could not be put back: {e}"))?;
        Ok(Some(format!("put back the timerlat options (CPUs, period) that rtbench pid {owner} changed")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tracer's output as the RT guest printed it (tests/fixtures/README.md).
    const CAPTURED: &str = include_str!("../../tests/fixtures/timerlat-trace.txt");

    /// A binary capture of the tracer's pages on CPU 1 and the same events as text, with the
    /// kernel's descriptions of the page and the record (tests/fixtures/README.md).
    #[test]
    fn a_binary_page_gives_the_samples_its_text_gives() {
        use crate::trace::ftrace::raw::PageLayout;
        let page = Format::parse(include_str!("../../tests/fixtures/header_page")).unwrap();
        let layout = PageLayout::of(&page).unwrap();
        let record = Record::of(&Format::parse(include_str!("../../tests/fixtures/timerlat-format")).unwrap()).unwrap();
        let pages: &[u8] = include_bytes!("../../tests/fixtures/timerlat-pages.bin");
        let mut raw = Vec::new();
        for page in pages.chunks(layout.page_size()) {
            let read = layout.records(page).unwrap();
            assert!(!read.lost, "nothing was lost in the capture");
            raw.extend(read.records.iter().filter_map(|&(ts, data)| record.sample(1, ts, data)));
        }
        let text: Vec<Sample> =
            include_str!("../../tests/fixtures/timerlat-binary.txt").lines().filter_map(sample).collect();
        assert!(raw.len() >= 100 && raw.iter().any(|s| s.irq) && raw.iter().any(|s| !s.irq), "{raw:?}");
        assert_eq!(raw.len(), text.len(), "every record is a sample, as every line");
        for (r, t) in raw.iter().zip(&text) {
            assert_eq!((r.cpu, r.activation, r.irq, r.latency_ns), (t.cpu, t.activation, t.irq, t.latency_ns));
            // The text shows the stamp rounded to the microsecond.
            assert!(r.ts_ns.abs_diff(t.ts_ns) <= 500, "{r:?} against {t:?}");
        }
        // Another event's record, or another context's, is no sample.
        let read = layout.records(&pages[..layout.page_size()]).unwrap();
        let mut other = read.records[0].1.to_vec();
        other[0] ^= 1;
        assert_eq!(record.sample(1, 0, &other), None);
    }

    #[test]
    fn a_tracer_line_is_one_activation_in_one_context() {
        let samples: Vec<Sample> = CAPTURED.lines().filter_map(sample).collect();
        let lines = CAPTURED.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(samples.len(), lines, "every line that is no comment is a sample");
        assert_eq!(
            samples[0],
            Sample { cpu: 0, ts_ns: 172_639_344_000, activation: 6, irq: true, latency_ns: 197_580 }
        );
        assert_eq!(
            samples[2],
            Sample { cpu: 1, ts_ns: 172_641_166_000, activation: 1, irq: false, latency_ns: 2_013_620 }
        );
        // Each thread line follows its own activation's IRQ line on its CPU.
        for t in samples.iter().filter(|s| !s.irq) {
            let irq = samples.iter().find(|s| s.irq && s.cpu == t.cpu && s.activation == t.activation);
            assert!(irq.is_some_and(|i| i.ts_ns <= t.ts_ns), "{t:?}");
        }
        for other in [
            "# tracer: timerlat",
            "  bash-1 [000] ..... 5.000001: sched_switch: prev_comm=bash",
            "  <idle>-0 [001] d.h1. 54.029328: #17 context softirq timer_latency 932 ns",
            "  <idle>-0 [001] d.h1. 54.029328: #17 context irq timer_latency many ns",
            "  <idle>-0 [001] d.h1. 54.029328: #17 context irq timer_latency 932 us",
        ] {
            assert_eq!(sample(other), None, "{other}");
        }
    }
}
