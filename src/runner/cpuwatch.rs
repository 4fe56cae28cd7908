//! Interference on the measured CPUs, interval by interval: steal, interrupt and softirq time
//! from /proc/stat, interrupts from /proc/interrupts and scheduler calls from /proc/schedstat
//! (where the kernel keeps schedstats), read by the runner (never by a measuring thread) when an
//! envelope interval ends, so a spike can be lined up with what happened on its CPU.

use crate::model::CpuInterval;
use crate::sysinfo::CpuTimes;

/// Cumulative counters of one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// steal, irq, softirq in clock ticks (USER_HZ).
    pub ticks: [u64; 3],
    pub interrupts: u64,
    pub sched: Option<u64>,
}

/// steal, irq and softirq ticks of each `cpuN` line.
pub fn parse_stat(text: &str) -> Vec<(u32, [u64; 3])> {
    crate::sysinfo::cpu_times(text)
        .into_iter()
        .filter_map(|t| Some((t.cpu?, [t.get(CpuTimes::STEAL), t.get(CpuTimes::IRQ), t.get(CpuTimes::SOFTIRQ)])))
        .collect()
}

/// Interrupts delivered to each CPU: the column sums of /proc/interrupts.
pub fn parse_interrupts(text: &str) -> Vec<(u32, u64)> {
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect();
    let mut sums = vec![0u64; cpus.len()];
    for line in lines {
        let mut f = line.split_whitespace();
        if !f.next().is_some_and(|name| name.ends_with(':')) {
            continue;
        }
        // Counts come first, one per CPU; rows such as ERR: have fewer.
        for (sum, n) in sums.iter_mut().zip(f.map_while(|x| x.parse::<u64>().ok())) {
            *sum += n;
        }
    }
    cpus.into_iter().zip(sums).collect()
}

/// Scheduler calls of each CPU (`sched_count`, the third number of a `cpuN` line).
pub fn parse_schedstat(text: &str) -> Vec<(u32, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let cpu = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            Some((cpu, f.nth(2)?.parse().ok()?))
        })
        .collect()
}

/// Reads the counters of `cpus` now.
pub fn read(cpus: &[u32]) -> Vec<Counters> {
    let stat = parse_stat(&std::fs::read_to_string("/proc/stat").unwrap_or_default());
    let irqs = parse_interrupts(&std::fs::read_to_string("/proc/interrupts").unwrap_or_default());
    let sched = parse_schedstat(&std::fs::read_to_string("/proc/schedstat").unwrap_or_default());
    cpus.iter()
        .map(|cpu| Counters {
            ticks: stat.iter().find(|s| s.0 == *cpu).map_or([0; 3], |s| s.1),
            interrupts: irqs.iter().find(|s| s.0 == *cpu).map_or(0, |s| s.1),
            sched: sched.iter().find(|s| s.0 == *cpu).map(|s| s.1),
        })
        .collect()
}

/// Turns readings at interval boundaries into per-interval [`CpuInterval`]s.
pub struct CpuWatch {
    cpus: Vec<u32>,
    interval_ns: u64,
    ns_per_tick: u64,
    last: Vec<Counters>,
    /// The interval being accumulated.
    index: u64,
    reader: fn(&[u32]) -> Vec<Counters>,
    /// Intervals not yet handed to a checkpoint.
    pending: Vec<CpuInterval>,
}

impl CpuWatch {
    /// Starts watching `cpus` at time offset 0 with the run's envelope interval.
    pub fn start(cpus: &[u32], interval_ns: u64) -> CpuWatch {
        CpuWatch::with_reader(cpus, interval_ns, read)
    }

    pub fn with_reader(cpus: &[u32], interval_ns: u64, reader: fn(&[u32]) -> Vec<Counters>) -> CpuWatch {
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        let last = reader(&cpus);
        CpuWatch {
            cpus,
            interval_ns: interval_ns.max(1),
            ns_per_tick: 1_000_000_000 / crate::sys::clock_ticks_per_second().max(1),
            last,
            index: 0,
            reader,
            pending: Vec::new(),
        }
    }

    /// At time offset `t_ns`: when an interval has ended since the last call, what happened in
    /// it is read and kept for the next checkpoint. The runner calls this every few ms, so an
    /// interval's counters are read at most that late.
    pub fn tick(&mut self, t_ns: u64) {
        let index = t_ns / self.interval_ns;
        if index != self.index {
            self.close();
            self.index = index;
        }
    }

    /// Reads the last, partial interval.
    pub fn finish(&mut self) {
        self.close();
    }

    fn close(&mut self) {
        let now = (self.reader)(&self.cpus);
        for ((cpu, a), b) in self.cpus.iter().zip(&self.last).zip(&now) {
            let d = |i: usize| b.ticks[i].saturating_sub(a.ticks[i]) * self.ns_per_tick;
            self.pending.push(CpuInterval {
                cpu: *cpu,
                index: self.index,
                steal_ns: d(0),
                irq_ns: d(1),
                softirq_ns: d(2),
                interrupts: b.interrupts.saturating_sub(a.interrupts),
                context_switches: a.sched.zip(b.sched).map(|(a, b)| b.saturating_sub(a)),
            });
        }
        self.last = now;
    }

    /// The intervals read since the last call.
    pub fn take(&mut self) -> Vec<CpuInterval> {
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn proc_files_parse() {
        let stat = "cpu  10 0 5 900 1 2 3 4 0 0\ncpu0 5 0 2 450 0 1 2 30 0 0\ncpu1 5 0 3 450 1 1 1 7 0 0\nintr 99\n";
        assert_eq!(parse_stat(stat), [(0, [30, 1, 2]), (1, [7, 1, 1])]);
        let irqs = "           CPU0       CPU1       \n 24:          1          0  IO-APIC   5-edge  ACPI\n\
                    LOC:      500        700   Local timer interrupts\nERR:          3\n";
        assert_eq!(parse_interrupts(irqs), [(0, 504), (1, 700)]);
        let sched =
            "version 15\ntimestamp 4294\ncpu0 0 0 1234 50 60 70 80 90 100\ndomain0 3 1 2\ncpu1 0 0 99 1 2 3 4 5 6\n";
        assert_eq!(parse_schedstat(sched), [(0, 1234), (1, 99)]);
    }

    static STEAL: AtomicU64 = AtomicU64::new(0);

    fn fake(cpus: &[u32]) -> Vec<Counters> {
        let s = STEAL.load(Ordering::SeqCst);
        cpus.iter().map(|c| Counters { ticks: [s * (*c as u64 + 1), 0, 0], interrupts: s, sched: None }).collect()
    }

    #[test]
    fn each_interval_gets_what_happened_in_it() {
        let mut w = CpuWatch::with_reader(&[1, 0, 1], 1_000, fake);
        w.tick(10);
        STEAL.store(2, Ordering::SeqCst);
        w.tick(999);
        assert!(w.take().is_empty(), "interval 0 is still open");
        w.tick(1_000);
        STEAL.store(5, Ordering::SeqCst);
        w.tick(3_500);
        w.finish();
        let got: Vec<(u32, u64, u64, u64)> =
            w.take().iter().map(|c| (c.cpu, c.index, c.steal_ns / w.ns_per_tick, c.interrupts)).collect();
        assert_eq!(got, [(0, 0, 2, 2), (1, 0, 4, 2), (0, 1, 3, 3), (1, 1, 6, 3), (0, 3, 0, 0), (1, 3, 0, 0)]);
    }
}
