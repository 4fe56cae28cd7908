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

use crate::restore::Change;

/// Why a kernel cannot give the timerlat source, for the refusal and the study's skip.
pub const ABSENT: &str = "the kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)";

/// One activation's measurement in one context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub cpu: u32,
    /// CLOCK_MONOTONIC ns (the instance runs on the `mono` clock), microsecond resolution.
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
