//! What the system did during a load, from /proc/stat.

use crate::model::Activity;
use crate::sysinfo::CpuTimes;

/// One reading of /proc/stat.
#[derive(Clone, Debug, Default)]
pub struct CpuSample {
    /// Per CPU: (busy jiffies, total jiffies).
    pub cpus: Vec<(u64, u64)>,
    pub ctxt: u64,
    pub intr: u64,
    pub at: Option<std::time::Instant>,
}

impl CpuSample {
    pub fn read() -> CpuSample {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let mut s = CpuSample { at: Some(std::time::Instant::now()), ..CpuSample::default() };
        for t in crate::sysinfo::cpu_times(&text).iter().filter(|t| t.cpu.is_some()) {
            // Idle and iowait are not busy; guest time is already in user.
            let total: u64 = t.ticks.iter().take(8).sum();
            let idle = t.get(CpuTimes::IDLE) + t.get(CpuTimes::IOWAIT);
            s.cpus.push((total - idle, total));
        }
        for line in text.lines() {
            let mut f = line.split_whitespace();
            match f.next() {
                Some("ctxt") => s.ctxt = f.next().and_then(|x| x.parse().ok()).unwrap_or(0),
                Some("intr") => s.intr = f.next().and_then(|x| x.parse().ok()).unwrap_or(0),
                _ => {}
            }
        }
        s
    }
}

/// Utilisation between two readings.
pub fn between(a: &CpuSample, b: &CpuSample) -> Activity {
    let seconds = match (a.at, b.at) {
        (Some(x), Some(y)) => y.duration_since(x).as_secs_f64().max(1e-6),
        _ => 1e-6,
    };
    let cpu_busy_percent = a
        .cpus
        .iter()
        .zip(&b.cpus)
        .map(|(x, y)| {
            let total = y.1.saturating_sub(x.1);
            if total == 0 {
                0.0
            } else {
                (y.0.saturating_sub(x.0) as f64 / total as f64 * 1000.0).round() / 10.0
            }
        })
        .collect();
    Activity {
        cpu_busy_percent,
        context_switches_per_s: (b.ctxt.saturating_sub(a.ctxt) as f64 / seconds).round(),
        interrupts_per_s: (b.intr.saturating_sub(a.intr) as f64 / seconds).round(),
        seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_as_busy() {
        let a = CpuSample::read();
        assert!(!a.cpus.is_empty() && a.ctxt > 0);
        let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let mut x = 0u64;
        while std::time::Instant::now() < until {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        let act = between(&a, &CpuSample::read());
        assert_eq!(act.cpu_busy_percent.len(), a.cpus.len());
        assert!(act.cpu_busy_percent.iter().sum::<f64>() > 0.0, "{act:?}");
    }
}
