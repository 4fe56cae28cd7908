//! What `/metrics` shows, kept by a sink of the runner. The sink turns each checkpoint's
//! histograms into a small [`Snapshot`] (a few dozen integers per CPU) and publishes it under a
//! lock only the runner and the HTTP thread take: a scrape never reaches a recorder, so it
//! cannot hold up a measuring thread.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use hdrhistogram::Histogram;

use crate::model::{ClassifyRecord, NoiseClass, ThreadClasses, ThreadResult};
use crate::runner::segment::Closed;
use crate::runner::sink::{Checkpoint, Sink};
use crate::stats::Stats;

/// Upper bounds of the exported buckets: 1-2-5 steps from 1 µs to 10 s, in ns.
pub const BOUNDS_NS: [u64; 22] = {
    let mut b = [0u64; 22];
    let mut i = 0;
    let mut decade = 1_000u64;
    while i < 21 {
        b[i] = decade;
        b[i + 1] = 2 * decade;
        b[i + 2] = 5 * decade;
        decade *= 10;
        i += 3;
    }
    b[21] = decade;
    b
};

/// One CPU's series: everything since the monitor started, and the windows' maxima.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub cpu: String,
    /// Samples per bucket of [`BOUNDS_NS`], not cumulative; the last is above 10 s.
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_ns: u128,
    /// Samples over each threshold.
    pub over: Vec<u64>,
    pub max_current_ns: u64,
    pub max_last_ns: Option<u64>,
}

impl Series {
    fn new(cpu: String, thresholds: usize) -> Series {
        Series { cpu, buckets: vec![0; BOUNDS_NS.len() + 1], over: vec![0; thresholds], ..Series::default() }
    }

    fn add(&mut self, other: &Series) {
        self.buckets.iter_mut().zip(&other.buckets).for_each(|(a, b)| *a += b);
        self.over.iter_mut().zip(&other.over).for_each(|(a, b)| *a += b);
        self.count += other.count;
        self.sum_ns += other.sum_ns;
    }
}

/// What a scrape reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub thresholds_ns: Vec<u64>,
    pub series: Vec<Series>,
    /// `--split`: the IRQ latency of each thread's samples, as `series` holds the thread's.
    pub irq: Vec<Series>,
    /// `--noise --classify`: each thread's gaps by class and name since the monitor started.
    pub noise: Vec<NoiseSeries>,
}

/// The gaps of one class and name on one CPU (`--noise --classify`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseSeries {
    pub cpu: String,
    pub class: NoiseClass,
    /// What ran: the IRQ, softirq or task; empty for the hardware and unknown classes.
    pub name: String,
    pub count: u64,
    pub ns: u64,
}

/// The classified gaps of `classes` per CPU (the thread's, from `threads`), class and name.
fn noise_series(threads: &[ThreadResult], classes: &[ThreadClasses]) -> Vec<NoiseSeries> {
    let cpu_of = |thread: u32| threads.iter().find(|t| t.thread == thread).and_then(|t| t.cpu);
    let mut out: Vec<NoiseSeries> = Vec::new();
    for c in classes {
        let cpu = cpu_of(c.thread).map_or_else(|| format!("t{}", c.thread), |n| n.to_string());
        for t in &c.totals {
            // Tasks of one name (several pids) are one series: the name is what a dashboard shows.
            match out.iter_mut().find(|s| s.cpu == cpu && s.class == t.class && s.name == t.name) {
                Some(s) => (s.count, s.ns) = (s.count + t.count, s.ns + t.ns),
                None => out.push(NoiseSeries {
                    cpu: cpu.clone(),
                    class: t.class,
                    name: t.name.clone(),
                    count: t.count,
                    ns: t.ns,
                }),
            }
        }
    }
    out
}

pub type Shared = Arc<Mutex<Snapshot>>;

/// The samples of one histogram per bucket and over each threshold. A bin of the HDR histogram
/// counts by its highest equivalent value, so an exported bucket is exact to the HDR
/// precision (3 significant digits).
pub fn window_series(cpu: String, hist: &Histogram<u64>, thresholds_ns: &[u64]) -> Series {
    let mut s = Series::new(cpu, thresholds_ns.len());
    for v in hist.iter_recorded() {
        let (value, n) = (v.value_iterated_to(), v.count_at_value());
        let at = BOUNDS_NS.iter().position(|b| value <= *b).unwrap_or(BOUNDS_NS.len());
        s.buckets[at] += n;
        for (slot, t) in s.over.iter_mut().zip(thresholds_ns) {
            if value > *t {
                *slot += n;
            }
        }
    }
    s
}

/// The runner's side: folds closed windows into a base and publishes base + current window,
/// of the threads' latencies and (`--split`) of their IRQ part.
pub struct MetricsSink {
    pub shared: Shared,
    thresholds_ns: Vec<u64>,
    /// Everything of the windows that closed, per thread.
    base: Vec<Series>,
    base_irq: Vec<Series>,
}

/// The statistics a series counts: the thread's latency, or (`irq`) its IRQ part.
fn part(t: &ThreadResult, irq: bool) -> Option<&Stats> {
    if irq {
        t.irq.as_ref().map(|x| &x.stats)
    } else {
        Some(&t.stats)
    }
}

impl MetricsSink {
    pub fn new(shared: Shared, thresholds_ns: Vec<u64>) -> MetricsSink {
        shared.lock().unwrap_or_else(|e| e.into_inner()).thresholds_ns = thresholds_ns.clone();
        MetricsSink { shared, thresholds_ns, base: Vec::new(), base_irq: Vec::new() }
    }

    fn window(&self, t: &ThreadResult, stats: &Stats) -> Series {
        let cpu = t.cpu.map_or_else(|| format!("t{}", t.thread), |c| c.to_string());
        let mut s = window_series(cpu, &stats.hist, &self.thresholds_ns);
        s.count = stats.count;
        s.sum_ns = stats.sum;
        s.max_current_ns = stats.max;
        s
    }

    fn base_of(&mut self, irq: bool, i: usize, cpu: &str) -> &mut Series {
        let n = self.thresholds_ns.len();
        let base = if irq { &mut self.base_irq } else { &mut self.base };
        while base.len() <= i {
            base.push(Series::new(cpu.to_string(), n));
        }
        &mut base[i]
    }

    /// Per thread, the closed windows and the current one of the thread's latency or IRQ part.
    fn totals(&mut self, threads: &[ThreadResult], irq: bool) -> Vec<Series> {
        let mut series = Vec::with_capacity(threads.len());
        for (i, t) in threads.iter().enumerate() {
            let Some(stats) = part(t, irq) else { continue };
            let window = self.window(t, stats);
            let base = self.base_of(irq, i, &window.cpu);
            let mut total =
                Series { max_current_ns: window.max_current_ns, max_last_ns: base.max_last_ns, ..base.clone() };
            total.add(&window);
            series.push(total);
        }
        series
    }

    fn close(&mut self, threads: &[ThreadResult], irq: bool) {
        for (i, t) in threads.iter().enumerate() {
            let Some(stats) = part(t, irq) else { continue };
            let window = self.window(t, stats);
            let base = self.base_of(irq, i, &window.cpu);
            base.add(&window);
            base.max_last_ns = Some(window.max_current_ns);
        }
    }
}

impl Sink for MetricsSink {
    fn name(&self) -> String {
        "the metrics endpoint".into()
    }

    fn checkpoint(&mut self, cp: &Checkpoint) -> Result<()> {
        let (series, irq) = (self.totals(cp.threads, false), self.totals(cp.threads, true));
        let mut snap = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        (snap.series, snap.irq) = (series, irq);
        // The classification's totals only grow; a checkpoint without them changes nothing.
        let classify = cp.found.record::<ClassifyRecord>(crate::instrument::classify::INFO.name);
        if let Some(c) = classify.filter(|c| !c.threads.is_empty()) {
            snap.noise = noise_series(cp.threads, &c.threads);
        }
        Ok(())
    }

    fn window_closed(&mut self, closed: &Closed) -> Result<Option<i64>> {
        self.close(closed.threads, false);
        self.close(closed.threads, true);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Found;

    #[test]
    fn the_bounds_climb_one_two_five_from_a_microsecond_to_ten_seconds() {
        assert_eq!(&BOUNDS_NS[..4], &[1_000, 2_000, 5_000, 10_000]);
        assert_eq!(BOUNDS_NS[21], 10_000_000_000);
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn samples_land_in_their_bucket_and_over_their_thresholds() {
        let mut h = crate::stats::new_histogram();
        for ns in [500, 1_000, 1_001, 150_000, 150_000, 3_000_000, 20_000_000_000] {
            h.saturating_record(ns);
        }
        let s = window_series("0".into(), &h, &[100_000, 1_000_000]);
        assert_eq!(s.buckets[0], 2, "500 ns and exactly 1 µs are within le=1e-6");
        assert_eq!(s.buckets[1], 1);
        assert_eq!(s.buckets[BOUNDS_NS.iter().position(|b| *b == 200_000).unwrap()], 2);
        assert_eq!(s.buckets[BOUNDS_NS.iter().position(|b| *b == 5_000_000).unwrap()], 1);
        assert_eq!(s.buckets[BOUNDS_NS.len()], 1, "over 10 s goes to +Inf only");
        assert_eq!(s.over, vec![4, 2]);
    }

    fn cp(threads: &[ThreadResult]) -> Checkpoint<'_> {
        Checkpoint::only(threads)
    }

    #[test]
    fn closed_windows_accumulate_and_their_maximum_becomes_the_last() {
        let shared = Shared::default();
        let mut sink = MetricsSink::new(Arc::clone(&shared), vec![100_000]);
        let result = |ns: &[u64]| {
            let mut stats = crate::stats::Stats::default();
            ns.iter().for_each(|n| stats.record(*n));
            ThreadResult { thread: 0, cpu: Some(1), stats, irq: None }
        };
        let first = [result(&[5_000, 300_000])];
        sink.checkpoint(&cp(&first)).unwrap();
        sink.window_closed(&Closed { threads: &first, ran: &[], more: true }).unwrap();
        let second = [result(&[7_000])];
        sink.checkpoint(&cp(&second)).unwrap();
        let s = shared.lock().unwrap().series[0].clone();
        assert_eq!((s.cpu.as_str(), s.count, s.sum_ns), ("1", 3, 312_000));
        assert_eq!(s.over, vec![1]);
        assert_eq!((s.max_current_ns, s.max_last_ns), (7_000, Some(300_000)));
        assert!(shared.lock().unwrap().irq.is_empty(), "a run not split has no IRQ series");
    }

    #[test]
    fn the_irq_part_accumulates_beside_the_thread_s_own() {
        let shared = Shared::default();
        let mut sink = MetricsSink::new(Arc::clone(&shared), vec![100_000]);
        let result = |ns: &[(u64, u64)]| {
            let (mut stats, mut irq) = (crate::stats::Stats::default(), crate::model::IrqSplit::default());
            ns.iter().for_each(|(n, i)| {
                stats.record(*n);
                irq.stats.record(*i);
            });
            ThreadResult { thread: 0, cpu: Some(1), stats, irq: Some(irq) }
        };
        let first = [result(&[(5_000, 2_000), (300_000, 250_000)])];
        sink.checkpoint(&cp(&first)).unwrap();
        sink.window_closed(&Closed { threads: &first, ran: &[], more: true }).unwrap();
        sink.checkpoint(&cp(&[result(&[(7_000, 1_000)])])).unwrap();
        let snap = shared.lock().unwrap().clone();
        let (s, i) = (&snap.series[0], &snap.irq[0]);
        assert_eq!((s.count, s.sum_ns), (3, 312_000));
        assert_eq!((i.cpu.as_str(), i.count, i.sum_ns, i.over.clone()), ("1", 3, 253_000, vec![1]));
        assert_eq!((i.max_current_ns, i.max_last_ns), (1_000, Some(250_000)));
    }

    #[test]
    fn classified_gaps_are_counted_per_cpu_class_and_name_and_a_checkpoint_without_them_keeps_them() {
        use crate::model::{ClassTotal, NoiseClass::*};
        let shared = Shared::default();
        let mut sink = MetricsSink::new(Arc::clone(&shared), vec![]);
        let total = |class, name: &str, detail: &str, count, ns| ClassTotal {
            class,
            name: name.into(),
            detail: Some(detail.into()),
            count,
            ns,
            max_ns: ns,
            over_budget: 0,
        };
        let totals = vec![
            total(Thread, "python3", "pid 10, FIFO 99", 2, 4_000_000),
            total(Thread, "python3", "pid 11, OTHER", 1, 1_000_000),
            total(Hardware, "", "", 5, 3_000),
        ];
        let classify = ClassifyRecord {
            threads: vec![ThreadClasses { thread: 0, totals, longest: Vec::new(), interference: None }],
            ..Default::default()
        };
        let threads = [ThreadResult { thread: 0, cpu: Some(1), stats: Stats::default(), irq: None }];
        sink.checkpoint(&Checkpoint {
            found: Found { records: &[("classify", serde_json::to_value(&classify).unwrap())], ..Found::default() },
            ..cp(&threads)
        })
        .unwrap();
        let series =
            |class, name: &str, count, ns| NoiseSeries { cpu: "1".into(), class, name: name.into(), count, ns };
        let want = vec![series(Thread, "python3", 3, 5_000_000), series(Hardware, "", 5, 3_000)];
        assert_eq!(shared.lock().unwrap().noise, want, "one series per name, its pids summed");
        sink.checkpoint(&cp(&threads)).unwrap();
        assert_eq!(shared.lock().unwrap().noise, want, "the counters do not fall back to nothing");
    }
}
