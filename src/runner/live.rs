//! What rtbench draws on a terminal while it runs, redrawn in place, only on a terminal and
//! never with -q: a run's line per thread and progress bar, or a load's line per generator.

use std::io::Write;
use std::time::Duration;

use crate::model::{GeneratorReport, ThreadRan};
use crate::stats::Stats;
use crate::units::{compact as hms, us_rounded as us};

pub struct Live {
    lines_drawn: usize,
}

/// What one thread's line shows.
pub struct Row<'a> {
    pub thread: usize,
    pub cpu: Option<usize>,
    /// How the thread runs; None until it has set itself up.
    pub ran: Option<ThreadRan>,
    pub stats: &'a Stats,
    pub last_ns: u64,
}

impl Live {
    /// A live view if stdout is a terminal and the user did not ask for quiet.
    pub fn new(quiet: bool) -> Option<Live> {
        (!quiet && crate::sys::stdout_is_tty()).then_some(Live { lines_drawn: 0 })
    }

    pub fn draw(&mut self, rows: &[Row], elapsed: Duration, duration: Option<Duration>) {
        let mut out = String::new();
        if self.lines_drawn > 0 {
            out.push_str(&format!("\x1b[{}A", self.lines_drawn));
        }
        for r in rows {
            let s = r.stats;
            let cpu = r.cpu.map_or("-".to_string(), |c| c.to_string());
            let (min, avg) = if s.count == 0 { (0, 0) } else { (us(s.min), us(s.mean() as u64)) };
            out.push_str(&format!(
                "\x1b[2KT:{:>3} CPU:{:>3} P:{} C:{:>10} Min:{:>7} Act:{:>7} Avg:{:>7} Max:{:>8}  (µs)\n",
                r.thread,
                cpu,
                r.ran.map_or("-".to_string(), |r| r.policy.shown(r.priority)),
                s.count,
                min,
                us(r.last_ns),
                avg,
                us(s.max)
            ));
        }
        out.push_str("\x1b[2K");
        out.push_str(&progress(elapsed, duration, crate::sys::terminal_width().unwrap_or(80)));
        out.push('\n');
        self.lines_drawn = rows.len() + 1;
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }
}

/// A load by itself: one line per generator and the time left.
pub struct LoadView {
    lines_drawn: usize,
}

impl LoadView {
    pub fn new(quiet: bool) -> Option<LoadView> {
        (!quiet && crate::sys::stdout_is_tty()).then_some(LoadView { lines_drawn: 0 })
    }

    pub fn draw(&mut self, generators: &[GeneratorReport], left: Duration) {
        let mut out = String::new();
        if self.lines_drawn > 0 {
            out.push_str(&format!("\x1b[{}A", self.lines_drawn));
        }
        for g in generators {
            let state = if g.ran { "running" } else { "starting" };
            out.push_str(&format!("\x1b[2K  {:<24} {:<9} {:>10} {}\n", g.name, state, g.iterations, g.unit));
        }
        out.push_str(&format!("\x1b[2K  {} s left (Ctrl-C stops and cleans up)\n", left.as_secs()));
        self.lines_drawn = generators.len() + 1;
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }
}

/// `[#####.....]  12s / 60s, 48s left`, or just the elapsed time without a duration.
pub fn progress(elapsed: Duration, duration: Option<Duration>, width: usize) -> String {
    let e = elapsed.as_secs();
    match duration {
        None => format!("running {}  (Ctrl-C stops and saves)", hms(e)),
        Some(d) => {
            let total = d.as_secs_f64().max(1e-9);
            let frac = (elapsed.as_secs_f64() / total).clamp(0.0, 1.0);
            let bar = width.saturating_sub(40).clamp(10, 50);
            let done = (frac * bar as f64).round() as usize;
            let left = d.saturating_sub(elapsed).as_secs();
            format!(
                "[{}{}] {:>3.0}%  {} / {}, {} left",
                "#".repeat(done),
                ".".repeat(bar - done),
                frac * 100.0,
                hms(e),
                hms(d.as_secs()),
                hms(left)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_down() {
        let p = progress(Duration::from_secs(15), Some(Duration::from_secs(60)), 80);
        assert!(p.contains("25%"), "{p}");
        assert!(p.contains("45s left"), "{p}");
    }
}
