//! The split's in-kernel aggregation (issue 38), as rtla keeps its histograms: at 128 CPUs ×
//! 10 kHz a record per sample is 1.28 M records a second for one housekeeping CPU to take in,
//! so the BPF program counts each followed thread's IRQ latencies into a histogram of its own
//! in a map (1.024 µs buckets up to [`BOUND_NS`], with exact count, sums, min and max), read at
//! each checkpoint, and hands on a record only for an expiry at or above the thread's
//! threshold: those the pairing matches sample by sample, as before.
//!
//! Per thread, not per CPU: the run stores its IRQ statistics per thread, and a thread's expiries
//! never run at once (it sleeps on one timer at a time), so the program adds without atomics.
//! The threshold is the map value's first word: 0 (or no entry) hands every expiry on.

use std::os::fd::OwnedFd;

use crate::stats::Stats;
use crate::trace::bpf::asm::*;

/// A bucket is 2^SHIFT ns wide (1.024 µs).
const SHIFT: i32 = 10;
const BUCKETS: usize = 1024;
/// Threshold, count, sum, sum of squares, min, max; then the buckets.
const HEADER: usize = 6;
const VALUE: usize = 8 * (HEADER + BUCKETS);
/// Expiries at least this late are handed on one by one; the buckets hold every one below.
pub const BOUND_NS: u64 = (BUCKETS as u64) << SHIFT;
/// Threads a run may follow.
const THREADS: u32 = 4096;
const HASH: u32 = 1;

/// How the split takes its expiries in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A record per expiry, paired with its sample.
    PerSample,
    /// Histograms in the kernel; records only for expiries at or above [`BOUND_NS`].
    Aggregate,
}

impl Mode {
    /// As a run stores it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::PerSample => "per-sample",
            Mode::Aggregate => "aggregate",
        }
    }
}

/// What one sample costs the collector read one by one (the split's reader and main thread per
/// record), measured by bench/scale.sh on the 2-CPU development VM (405 + 141 ns): the budget
/// is 10 % of one housekeeping CPU, so past ~180 000 samples/s the kernel aggregates.
pub const PER_SAMPLE_NS: f64 = 550.0;
const BUDGET_NS_PER_S: f64 = 1e8;

/// The mode for `rate` samples a second (all threads), or the one `forced` (`--split-mode`),
/// and why, in the run's words.
pub fn choose(rate: f64, forced: Option<Mode>) -> (Mode, String) {
    if let Some(m) = forced {
        return (m, format!("{} asked for (--split-mode)", m.name()));
    }
    let share = rate * PER_SAMPLE_NS / BUDGET_NS_PER_S * 10.0;
    let said = format!("{rate:.0} samples/s × {PER_SAMPLE_NS:.0} ns a record = {share:.1} % of one CPU");
    if share > 10.0 {
        (Mode::Aggregate, format!("{said}, over the 10 % budget"))
    } else {
        (Mode::PerSample, format!("{said}, within the 10 % budget"))
    }
}

/// The threads' histograms, by thread id; they go with the fd.
pub struct Hist {
    map: OwnedFd,
}

impl Hist {
    pub fn make() -> Result<Hist, String> {
        let map = crate::sys::bpf_map(HASH, 4, VALUE as u32, THREADS).map_err(|e| format!("cannot make a map: {e}"))?;
        Ok(Hist { map })
    }

    /// The program's part, with the record (pid, due, now) at `fp-24`: an expiry of a thread
    /// with a histogram and below its threshold is counted there and ends the program; the
    /// jumps returned go where the record is handed on.
    pub fn count(&self, a: &mut Asm) -> Vec<usize> {
        a.map(1, &self.map).stack(2, -24).call(MAP_LOOKUP);
        let none = a.jump(JEQ_K, 0, 0, 0);
        // r6: the value; r1: now, r2: due.
        a.mov(6, 0).op(LDX_DW, 1, FP, -8, 0).op(LDX_DW, 2, FP, -16, 0);
        let early = a.jump(JGT_X, 2, 1, 0);
        a.op(ALU64 | SUB | X, 1, 2, 0, 0).op(LDX_DW, 3, 6, 0, 0);
        let over = a.jump(JGE_X, 1, 3, 0);
        // count += 1, sum += irq, sumsq += irq²
        a.op(LDX_DW, 4, 6, 8, 0).add_k(4, 1).op(STX_DW, 6, 4, 8, 0);
        a.op(LDX_DW, 4, 6, 16, 0).op(ALU64 | ADD | X, 4, 1, 0, 0).op(STX_DW, 6, 4, 16, 0);
        a.mov(5, 1).op(ALU64 | MUL | X, 5, 1, 0, 0);
        a.op(LDX_DW, 4, 6, 24, 0).op(ALU64 | ADD | X, 4, 5, 0, 0).op(STX_DW, 6, 4, 24, 0);
        // min, max
        a.op(LDX_DW, 4, 6, 32, 0).op(JGE_X, 1, 4, 1, 0).op(STX_DW, 6, 1, 32, 0);
        a.op(LDX_DW, 4, 6, 40, 0).op(JGE_X, 4, 1, 1, 0).op(STX_DW, 6, 1, 40, 0);
        // buckets[irq >> SHIFT] += 1; the threshold keeps it in range, the verifier wants it shown.
        a.op(ALU64 | RSH, 1, 0, 0, SHIFT).exit_on(JGT_K, 1, BUCKETS as i32 - 1);
        a.op(ALU64 | LSH, 1, 0, 0, 3).op(ALU64 | ADD | X, 1, 6, 0, 0);
        let at = (8 * HEADER) as i16;
        a.op(LDX_DW, 4, 1, at, 0).add_k(4, 1).op(STX_DW, 1, 4, at, 0);
        a.ret();
        vec![none, early, over]
    }

    /// From now on, the expiries of `pids` below `below_ns` (at most [`BOUND_NS`]) are counted,
    /// not handed on; their histograms start empty.
    pub fn aggregate(&self, pids: &[i32], below_ns: u64) -> std::io::Result<()> {
        let mut value = vec![0u8; VALUE];
        value[..8].copy_from_slice(&below_ns.min(BOUND_NS).to_ne_bytes());
        value[32..40].copy_from_slice(&u64::MAX.to_ne_bytes());
        for pid in pids {
            crate::sys::bpf_update(&self.map, &pid.to_ne_bytes(), &value)?;
        }
        Ok(())
    }

    /// Thread `pid`'s histogram as it is now (None: it has none).
    pub fn read(&self, pid: i32) -> Option<Snapshot> {
        let mut value = vec![0u8; VALUE];
        crate::sys::bpf_lookup(&self.map, &pid.to_ne_bytes(), &mut value).ok()?;
        let w = |i: usize| u64::from_ne_bytes(value[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Some(Snapshot {
            count: w(1),
            sum: w(2),
            sumsq: w(3),
            min: w(4),
            max: w(5),
            buckets: (0..BUCKETS).map(|b| w(HEADER + b)).collect(),
        })
    }
}

/// A thread's histogram at one read: every count since aggregation began.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub count: u64,
    pub sum: u64,
    pub sumsq: u64,
    pub min: u64,
    pub max: u64,
    pub buckets: Vec<u64>,
}

impl Snapshot {
    /// Adds to `into` what was counted between `last` (an earlier read; empty: since
    /// aggregation began) and this read; returns how many samples that was. Each bucket's
    /// samples go in at its middle; the sums are exact (they wrap in the kernel, a difference
    /// between two checkpoints' reads never does, and `into`'s do not); the min and max are
    /// exact when counted from the beginning, else to a bucket.
    pub fn add_to(&self, last: &Snapshot, into: &mut Stats) -> u64 {
        let width = 1u64 << SHIFT;
        let counted: Vec<(u64, u64)> = (self.buckets.iter().enumerate())
            .map(|(b, n)| (b as u64, n.wrapping_sub(last.buckets.get(b).copied().unwrap_or(0))))
            .filter(|(_, n)| *n > 0)
            .collect();
        let (Some(first), Some(end)) = (counted.first(), counted.last()) else { return 0 };
        let (min, max) = if last.count == 0 {
            (self.min, self.max)
        } else {
            ((first.0 * width).max(self.min), (end.0 * width + width - 1).min(self.max))
        };
        let sum = u128::from(self.sum.wrapping_sub(last.sum));
        let sumsq = u128::from(self.sumsq.wrapping_sub(last.sumsq));
        into.add_counted(counted.iter().map(|&(b, n)| (b * width + width / 2, n)), sum, sumsq, min, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(values: &[u64]) -> Snapshot {
        let mut s = Snapshot { min: u64::MAX, buckets: vec![0; BUCKETS], ..Default::default() };
        for v in values {
            s.count += 1;
            s.sum += v;
            s.sumsq += v * v;
            s.min = s.min.min(*v);
            s.max = s.max.max(*v);
            s.buckets[(*v >> SHIFT) as usize] += 1;
        }
        s
    }

    fn since(now: &Snapshot, last: &Snapshot) -> Stats {
        let mut s = Stats::default();
        assert_eq!(now.add_to(last, &mut s), s.count);
        s
    }

    #[test]
    fn a_histogram_read_from_the_start_keeps_exact_moments_and_extremes() {
        let s = since(&snap(&[3_000, 3_500, 40_000]), &Snapshot::default());
        assert_eq!((s.count, s.min, s.max, s.sum), (3, 3_000, 40_000, 46_500));
        assert_eq!(s.sumsq, 9_000_000 + 12_250_000 + 1_600_000_000);
        assert_eq!(s.hist.len(), 3, "the histogram holds every sample");
    }

    #[test]
    fn a_window_counts_only_what_came_after_its_base() {
        let base = snap(&[3_000, 900_000]);
        let now = snap(&[3_000, 900_000, 5_000, 6_000]);
        let s = since(&now, &base);
        assert_eq!((s.count, s.sum), (2, 11_000));
        assert!(s.min <= 5_000 && s.min >= 4_096 && s.max >= 6_000 && s.max < 7_168, "{} {}", s.min, s.max);
        assert_eq!(since(&now, &now).count, 0);
    }

    /// Folded a checkpoint at a time into one window, the reads add up to the window's whole,
    /// and a window longer than the kernel's u64 sum of squares can hold keeps it exact.
    #[test]
    fn reads_folded_one_after_another_add_up_and_the_squares_do_not_wrap() {
        let (a, b, c) = (snap(&[3_000]), snap(&[3_000, 5_000]), snap(&[3_000, 5_000, 6_000, 9_000]));
        let mut folded = Stats::default();
        let n = b.add_to(&a, &mut folded) + c.add_to(&b, &mut folded);
        assert_eq!((n, folded.count, folded.sum), (3, 3, 20_000));
        assert_eq!(folded.sumsq, since(&c, &a).sumsq);
        // The kernel's sum of squares wraps past 2^64 between two reads a second apart.
        let mut before = c.clone();
        before.sumsq = u64::MAX - 2;
        let mut after = before.clone();
        (after.sumsq, after.count) = (before.sumsq.wrapping_add(7), before.count + 1);
        after.buckets[1] += 1;
        let mut total = Stats::default();
        total.record(2);
        total.sumsq = u128::from(u64::MAX);
        after.add_to(&before, &mut total);
        assert_eq!(total.sumsq, u128::from(u64::MAX) + 7, "summed in 128 bits, not wrapped");
    }

    #[test]
    fn the_mode_follows_the_rate_against_the_budget_unless_forced() {
        assert_eq!(choose(1_280_000.0, None).0, Mode::Aggregate);
        assert_eq!(choose(20_000.0, None).0, Mode::PerSample);
        assert_eq!(choose(200_000.0, None).0, Mode::Aggregate);
        let (m, why) = choose(1_280_000.0, Some(Mode::PerSample));
        assert_eq!(m, Mode::PerSample);
        assert!(why.contains("asked"), "{why}");
        assert!(choose(20_000.0, None).1.contains("within the 10 % budget"));
    }
}
