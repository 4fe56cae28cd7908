//! What happened on a measured CPU besides our threads, interval by interval, and how much of
//! a run's latency it explains. On a virtual machine the hypervisor takes CPUs away (steal
//! time); a wake-up that waited for that is not the kernel's latency, and a report must say so.

use std::collections::HashMap;

use super::EnvPoint;

/// One CPU during one envelope interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInterval {
    pub cpu: u32,
    /// Envelope interval number since the start of the run.
    pub index: u64,
    /// Time the hypervisor ran something else on this virtual CPU.
    pub steal_ns: u64,
    /// Time spent in hard and soft interrupt handlers.
    pub irq_ns: u64,
    pub softirq_ns: u64,
    /// Interrupts delivered to this CPU.
    pub interrupts: u64,
    /// Calls into the scheduler on this CPU, where the kernel counts them (schedstats).
    pub context_switches: Option<u64>,
}

/// True when steal time on the interval's CPU was at least the interval's largest latency:
/// the hypervisor alone can explain it.
pub fn stolen(point: &EnvPoint, steal_ns: u64) -> bool {
    steal_ns > 0 && steal_ns >= point.max
}

/// What steal time did to one CPU's measurements over a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StealFinding {
    pub cpu: u32,
    /// Steal during the run.
    pub stolen_ns: u64,
    /// Intervals with samples whose largest latency steal can explain.
    pub stolen_intervals: u64,
    /// The largest latency measured on this CPU.
    pub max_ns: u64,
    /// The largest latency in intervals steal cannot explain; `None` when it explains all.
    pub max_outside_ns: Option<u64>,
}

impl StealFinding {
    /// True when no interval of the CPU's largest latency had steal enough to explain it.
    pub fn explains_none(&self) -> bool {
        self.max_outside_ns.is_some_and(|o| o >= self.max_ns)
    }

    /// The run's warning.
    pub fn warning(&self) -> String {
        let ms = self.stolen_ns as f64 / 1e6;
        let us = |ns: u64| crate::units::fmt_ns_as_us(ns as f64);
        match self.max_outside_ns {
            Some(outside) if outside < self.max_ns => format!(
                "the hypervisor took {ms:.0} ms of CPU {} during the run (steal time); latencies above {} µs are not \
                 the kernel's: the largest outside the {} intervals steal explains is {} µs, the raw max {} µs",
                self.cpu,
                us(outside),
                self.stolen_intervals,
                us(outside),
                us(self.max_ns)
            ),
            // Steal is counted a tick at a time and the host does not account every stall as
            // steal: its absence does not make a latency the kernel's (issue 27).
            Some(_) => format!(
                "the hypervisor took {ms:.0} ms of CPU {} during the run (steal time), none of it in the intervals \
                 of the largest latencies (max {} µs); steal time is too coarse here to tell whether the kernel or \
                 the hypervisor made them: trace them with --breach, or classify the CPU's noise with \
                 `rtbench noise --classify`",
                self.cpu,
                us(self.max_ns)
            ),
            None => format!(
                "the hypervisor took {ms:.0} ms of CPU {} during the run (steal time), at least the largest latency \
                 of every interval: none of this CPU's latencies can be told from the hypervisor's",
                self.cpu
            ),
        }
    }
}

/// Lines up each thread's envelope with the steal on its CPU in the same intervals. `threads`:
/// per thread, its CPU and its envelope points. Returns one finding per CPU that had steal.
pub fn attribute(threads: &[(Option<u32>, &[EnvPoint])], activity: &[CpuInterval]) -> Vec<StealFinding> {
    let mut out: Vec<StealFinding> = Vec::new();
    // A day at 1 s intervals is 86,400 points per thread: look steal up, do not scan for it.
    let mut by_interval: HashMap<(u32, u64), u64> = HashMap::new();
    for a in activity {
        *by_interval.entry((a.cpu, a.index)).or_default() += a.steal_ns;
    }
    let steal_of = |cpu: u32, index: u64| by_interval.get(&(cpu, index)).copied().unwrap_or(0);
    let mut cpus: Vec<u32> = activity.iter().filter(|a| a.steal_ns > 0).map(|a| a.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus {
        let stolen_ns = activity.iter().filter(|a| a.cpu == cpu).map(|a| a.steal_ns).sum();
        let mut f = StealFinding { cpu, stolen_ns, stolen_intervals: 0, max_ns: 0, max_outside_ns: None };
        for (_, points) in threads.iter().filter(|(c, _)| *c == Some(cpu)) {
            for p in points.iter().filter(|p| p.count > 0) {
                f.max_ns = f.max_ns.max(p.max);
                if stolen(p, steal_of(cpu, p.index)) {
                    f.stolen_intervals += 1;
                } else {
                    f.max_outside_ns = Some(f.max_outside_ns.unwrap_or(0).max(p.max));
                }
            }
        }
        out.push(f);
    }
    out
}

/// One of a run's worst intervals, beside what happened on its CPU then.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstInterval {
    pub thread: u32,
    pub cpu: Option<u32>,
    pub point: EnvPoint,
    /// The CPU's interference in the same interval, when it was watched.
    pub activity: Option<CpuInterval>,
}

/// The `n` intervals with the largest latencies over all threads, largest first, each lined
/// up with its CPU's interference in the same interval.
pub fn worst_intervals(
    threads: &[(u32, Option<u32>, &[EnvPoint])],
    activity: &[CpuInterval],
    n: usize,
) -> Vec<WorstInterval> {
    let mut all: Vec<(u32, Option<u32>, EnvPoint)> = threads
        .iter()
        .flat_map(|(t, cpu, pts)| pts.iter().filter(|p| p.count > 0).map(move |p| (*t, *cpu, *p)))
        .collect();
    all.sort_by(|a, b| b.2.max.cmp(&a.2.max).then(a.2.index.cmp(&b.2.index)));
    all.truncate(n);
    all.into_iter()
        .map(|(thread, cpu, point)| WorstInterval {
            thread,
            cpu,
            point,
            activity: activity.iter().find(|a| Some(a.cpu) == cpu && a.index == point.index).copied(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(index: u64, max: u64) -> EnvPoint {
        EnvPoint { index, min: 1_000, max, sum: max, count: 1 }
    }

    fn steal(cpu: u32, index: u64, steal_ns: u64) -> CpuInterval {
        CpuInterval { cpu, index, steal_ns, irq_ns: 0, softirq_ns: 0, interrupts: 0, context_switches: None }
    }

    #[test]
    fn a_spike_in_a_stolen_interval_is_set_apart_from_the_kernels_latency() {
        // CPU 1: a 99 ms spike in interval 2 while the hypervisor took 100 ms; 140 µs elsewhere.
        let cpu1 = [point(0, 120_000), point(1, 140_000), point(2, 99_000_000), point(3, 90_000)];
        let cpu0 = [point(0, 50_000), point(1, 60_000)];
        let activity = [steal(1, 2, 100_000_000), steal(1, 3, 10_000_000), steal(0, 0, 0)];
        let found = attribute(&[(Some(0), &cpu0), (Some(1), &cpu1)], &activity);
        assert_eq!(found.len(), 1, "only CPU 1 had steal: {found:?}");
        let f = &found[0];
        assert_eq!((f.cpu, f.stolen_ns, f.max_ns), (1, 110_000_000, 99_000_000));
        // Interval 3's 90 µs is below its 10 ms of steal: explained too.
        assert_eq!(f.stolen_intervals, 2);
        assert_eq!(f.max_outside_ns, Some(140_000));
        let w = f.warning();
        assert!(w.contains("took 110 ms of CPU 1") && w.contains("above 140 µs") && w.contains("99"), "{w}");
    }

    #[test]
    fn the_worst_intervals_come_with_their_cpus_activity() {
        let t0 = [point(0, 10), point(1, 500), point(2, 30)];
        let t1 = [point(0, 400), point(1, 20)];
        let activity = [steal(0, 1, 7), steal(1, 0, 9), steal(1, 1, 3)];
        let worst = worst_intervals(&[(0, Some(0), &t0), (1, Some(1), &t1)], &activity, 2);
        let got: Vec<(u32, u64, u64, Option<u64>)> =
            worst.iter().map(|w| (w.thread, w.point.index, w.point.max, w.activity.map(|a| a.steal_ns))).collect();
        assert_eq!(got, [(0, 1, 500, Some(7)), (1, 0, 400, Some(9))]);
    }

    #[test]
    fn steal_smaller_than_the_spike_explains_nothing() {
        let pts = [point(0, 5_000_000)];
        let found = attribute(&[(Some(0), &pts)], &[steal(0, 0, 1_000_000)]);
        assert_eq!(found[0].stolen_intervals, 0);
        assert_eq!(found[0].max_outside_ns, Some(5_000_000));
        let w = found[0].warning();
        assert!(!w.contains("explains none") && w.contains("too coarse") && w.contains("--breach"), "{w}");
        assert!(w.contains("noise --classify"), "{w}");
    }

    #[test]
    fn steal_in_every_interval_leaves_nothing_outside() {
        let pts = [point(0, 1_000), point(1, 2_000)];
        let found = attribute(&[(Some(0), &pts)], &[steal(0, 0, 10_000_000), steal(0, 1, 10_000_000)]);
        assert_eq!(found[0].max_outside_ns, None);
        assert!(found[0].warning().contains("none of this CPU's latencies"), "{}", found[0].warning());
    }
}
