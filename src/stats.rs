//! Full-range latency statistics: exact moments from running sums, percentiles from an HDR
//! histogram that spans 1 ns to a day, so no sample is ever an "overflow".

use std::sync::Arc;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::Serialize;

/// Largest value the histogram resolves exactly (24 h in ns); larger values are clamped into the
/// top bucket, while the exact maximum is still kept in [`Stats::max`].
pub const HIGHEST_NS: u64 = 86_400 * 1_000_000_000;
/// Significant digits kept by the histogram: every value within 0.1 %.
pub const SIGFIG: u8 = 3;

/// The percentiles every run reports, as the labels used in JSON ("99.9") and their fractions.
pub const PERCENTILES: [(&str, f64); 8] = [
    ("50", 0.50),
    ("90", 0.90),
    ("99", 0.99),
    ("99.9", 0.999),
    ("99.99", 0.9999),
    ("99.999", 0.99999),
    ("99.9999", 0.999999),
    ("100", 1.0),
];

/// An empty histogram with rtbench's fixed range and precision.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG).expect("constant histogram bounds are valid")
}

/// Running statistics of one stream of latency samples.
///
/// Invariants: `count` equals the histogram's total count; `min`/`max` are exact and meaningless
/// when `count == 0`; sums are exact integers (u128 cannot overflow for any realistic run).
///
/// The histogram is shared until written (it is 300 KB): a copy of the statistics, as every
/// checkpoint takes of every thread's, costs nothing until one side records again.
#[derive(Clone, Debug)]
pub struct Stats {
    pub count: u64,
    pub overruns: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
    pub sumsq: u128,
    pub hist: Arc<Histogram<u64>>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats { count: 0, overruns: 0, min: u64::MAX, max: 0, sum: 0, sumsq: 0, hist: Arc::new(new_histogram()) }
    }
}

impl Stats {
    /// Adds one sample. Never fails: values past the histogram's range land in its top bucket.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128;
        self.sumsq += (ns as u128) * (ns as u128);
        self.hist_mut().saturating_record(ns);
    }

    /// Adds `n` samples of the same value (imports of bucketed data).
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.count += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128 * n as u128;
        self.sumsq += (ns as u128) * (ns as u128) * n as u128;
        self.hist_mut().saturating_record_n(ns, n);
    }

    /// Adds everything `other` holds.
    pub fn merge(&mut self, other: &Stats) {
        if other.count == 0 {
            self.overruns += other.overruns;
            return;
        }
        self.count += other.count;
        self.overruns += other.overruns;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sumsq += other.sumsq;
        if self.hist.is_empty() {
            // A new window's first merge: the other's, shared, copied only when written.
            self.hist = Arc::clone(&other.hist);
        } else {
            self.hist_mut().add(&*other.hist).expect("histograms share one range");
        }
    }

    /// Adds samples known by a histogram of them (`(value, count)` pairs) and their exact
    /// moments and extremes, as a kernel's histogram gives them; returns how many.
    pub fn add_counted(
        &mut self,
        counted: impl Iterator<Item = (u64, u64)>,
        sum: u128,
        sumsq: u128,
        min: u64,
        max: u64,
    ) -> u64 {
        let hist = Arc::make_mut(&mut self.hist);
        let mut n = 0;
        for (ns, c) in counted {
            hist.saturating_record_n(ns, c);
            n += c;
        }
        if n > 0 {
            self.count += n;
            (self.sum, self.sumsq) = (self.sum + sum, self.sumsq + sumsq);
            (self.min, self.max) = (self.min.min(min), self.max.max(max));
        }
        n
    }

    /// Adds many samples, as [`Stats::record`] does one.
    pub fn record_all(&mut self, values: &[u64]) {
        if values.is_empty() {
            return;
        }
        let hist = Arc::make_mut(&mut self.hist);
        for &ns in values {
            hist.saturating_record(ns);
            self.min = self.min.min(ns);
            self.max = self.max.max(ns);
            self.sum += ns as u128;
            self.sumsq += (ns as u128) * (ns as u128);
        }
        self.count += values.len() as u64;
    }

    /// The histogram to write into: a copy of its own if it is shared.
    #[inline(always)]
    fn hist_mut(&mut self) -> &mut Histogram<u64> {
        Arc::make_mut(&mut self.hist)
    }

    /// Empties the statistics, keeping the histogram's allocation (and not zeroing it again
    /// when nothing was recorded: it is 300 KB).
    pub fn reset(&mut self) {
        if self.count > 0 {
            match Arc::get_mut(&mut self.hist) {
                Some(h) => h.reset(),
                // Shared: the other holder keeps it; an empty one is as cheap as zeroing.
                None => self.hist = Arc::new(new_histogram()),
            }
        }
        self.count = 0;
        self.overruns = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sumsq = 0;
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.sum as f64 / self.count as f64
    }

    /// Population standard deviation (numpy's default), computed from the exact sums.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as u128;
        // n·Σx² − (Σx)² is exact in integers whenever it fits; it is never negative.
        let var_n2 = match (n.checked_mul(self.sumsq), self.sum.checked_mul(self.sum)) {
            (Some(a), Some(b)) => a.saturating_sub(b) as f64,
            _ => {
                let mean = self.mean();
                return (self.sumsq as f64 / self.count as f64 - mean * mean).max(0.0).sqrt();
            }
        };
        (var_n2 / (n as f64 * n as f64)).sqrt()
    }

    /// The nearest-rank percentile `q` (0 < q ≤ 1): the smallest recorded value such that at
    /// least `q·count` samples are ≤ it, reported as its bucket's upper bound clamped to the
    /// exact max (so p100 is exactly `max`). 0 when there are no samples.
    pub fn percentile(&self, q: f64) -> u64 {
        self.percentiles(&[q])[0]
    }

    /// Several percentiles in one pass over the histogram; `qs` must be ascending.
    pub fn percentiles(&self, qs: &[f64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(qs.len());
        if self.count == 0 || !self.has_distribution() {
            out.resize(qs.len(), 0);
            return out;
        }
        let total = self.hist.len();
        let ranks: Vec<u64> = qs.iter().map(|q| ((q * total as f64).ceil() as u64).clamp(1, total)).collect();
        let mut seen = 0u64;
        let mut next = 0;
        for v in self.hist.iter_recorded() {
            seen += v.count_at_value();
            while next < ranks.len() && seen >= ranks[next] {
                // The last rank is the exact max, even past the histogram's range.
                let top =
                    if ranks[next] == total { self.max } else { self.hist.highest_equivalent(v.value_iterated_to()) };
                // max before min: stats read from an altered store may have min > max, and a
                // report must still come out.
                out.push(top.max(self.min).min(self.max));
                next += 1;
            }
            if next == ranks.len() {
                break;
            }
        }
        out.resize(qs.len(), self.max);
        out
    }

    /// Whether the samples' distribution is known: false for statistics imported from a tool
    /// that keeps only their count, min, average and max (rt-tests' IPC tools, cyclicdeadline),
    /// which have no percentile and no standard deviation.
    pub fn has_distribution(&self) -> bool {
        self.count == 0 || !self.hist.is_empty()
    }

    /// A serialisable summary with every reported number (without percentiles and standard
    /// deviation where the distribution is not known).
    pub fn summary(&self) -> Summary {
        let qs: Vec<f64> = PERCENTILES.iter().map(|p| p.1).collect();
        let known = self.has_distribution();
        let values = self.percentiles(&qs);
        Summary {
            count: self.count,
            overruns: self.overruns,
            min_ns: if self.count == 0 { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: known.then(|| self.stddev()),
            percentiles_ns: match known {
                true => PERCENTILES.iter().zip(values).map(|(p, v)| (p.0.to_string(), v.into())).collect(),
                false => serde_json::Map::new(),
            },
        }
    }
}

/// What every report, export and `show` prints for one stream.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Summary {
    pub count: u64,
    pub overruns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    #[schemars(range(min = 0.0))]
    pub mean_ns: f64,
    /// Null where the distribution is not known (a tool's min/avg/max imported).
    #[schemars(range(min = 0.0))]
    pub stddev_ns: Option<f64>,
    /// Each reported percentile by its label ("99.9"), in ns; none where the distribution is
    /// not known.
    #[schemars(schema_with = "percentiles_schema")]
    pub percentiles_ns: serde_json::Map<String, serde_json::Value>,
}

/// `percentiles_ns` holds every label of [`PERCENTILES`] and nothing else, each an integer, or
/// nothing at all (no distribution).
fn percentiles_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let labels: Vec<&str> = PERCENTILES.iter().map(|p| p.0).collect();
    let ns = schemars::json_schema!({ "type": "integer", "minimum": 0 });
    let properties: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|l| (l.to_string(), ns.clone().into())).collect();
    schemars::json_schema!({
        "oneOf": [
            { "type": "object", "properties": properties, "required": labels, "additionalProperties": false },
            { "type": "object", "maxProperties": 0 },
        ]
    })
}

impl Summary {
    /// A percentile by its label ("99.9"); 0 when absent.
    pub fn p(&self, label: &str) -> u64 {
        self.percentiles_ns.get(label).and_then(|v| v.as_u64()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_whose_min_exceeds_their_max_still_report() {
        // Such statistics come only from an altered store or a broken import; found by fuzzing.
        let mut s = Stats::default();
        s.record(5_000);
        s.min = 9_000;
        assert_eq!(s.summary().percentiles_ns["50"], 5_000);
    }

    /// xorshift64*: reproducible test data without a dependency.
    fn data(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
                // A wide spread: mostly µs, sometimes ms, rarely seconds and zero.
                match i % 1000 {
                    0 => r % 5_000_000_000,
                    1..=20 => r % 10_000_000,
                    999 => 0,
                    _ => 1000 + r % 100_000,
                }
            })
            .collect()
    }

    #[test]
    fn matches_a_naive_exact_reference() {
        for (seed, n) in [(1, 1), (2, 2), (3, 999), (4, 100_000), (5, 1_234_567)] {
            let xs = data(seed, n);
            let mut s = Stats::default();
            xs.iter().for_each(|&x| s.record(x));
            let mut sorted = xs.clone();
            sorted.sort_unstable();
            assert_eq!(s.count, n as u64);
            assert_eq!(s.min, sorted[0]);
            assert_eq!(s.max, sorted[n - 1]);
            let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
            let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
            assert!((s.mean() - mean).abs() <= 1e-9 * mean.max(1.0), "mean {} vs {mean}", s.mean());
            let sd = if n < 2 { 0.0 } else { var.sqrt() };
            assert!((s.stddev() - sd).abs() <= 1e-6 * sd.max(1.0), "stddev {} vs {sd}", s.stddev());
            let sum = s.summary();
            for (label, q) in PERCENTILES {
                let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
                let truth = sorted[rank - 1];
                let got = sum.p(label);
                let expect = s.hist.highest_equivalent(truth).clamp(s.min, s.max);
                assert_eq!(got, expect, "p{label} of {n} samples: got {got}, exact {truth}");
                assert!(got >= truth && got - truth <= truth / 1000 + 1, "p{label}: {got} not within 0.1% of {truth}");
            }
        }
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let xs = data(9, 50_000);
        let (mut a, mut b, mut all) = (Stats::default(), Stats::default(), Stats::default());
        for (i, &x) in xs.iter().enumerate() {
            if i % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!((a.count, a.min, a.max, a.sum, a.sumsq), (all.count, all.min, all.max, all.sum, all.sumsq));
        assert_eq!(a.summary().percentiles_ns, all.summary().percentiles_ns);
    }

    #[test]
    fn values_beyond_the_histogram_are_kept() {
        let mut s = Stats::default();
        s.record(HIGHEST_NS * 10);
        s.record(5);
        assert_eq!(s.count, 2);
        assert_eq!(s.hist.len(), 2);
        assert_eq!(s.max, HIGHEST_NS * 10);
        assert_eq!(s.percentile(1.0), HIGHEST_NS * 10);
    }

    /// A copy shares the histogram until one side writes: neither sees the other's samples,
    /// and emptying one leaves the other whole.
    #[test]
    fn a_copy_and_its_original_never_see_each_other_s_samples() {
        let mut a = Stats::default();
        a.record_all(&[10, 20, 30]);
        let mut b = Stats::default();
        b.merge(&a);
        assert!(Arc::ptr_eq(&a.hist, &b.hist), "an empty total takes the other's histogram as it is");
        b.record(40);
        a.reset();
        assert_eq!((a.count, a.hist.len()), (0, 0));
        assert_eq!((b.count, b.hist.len(), b.max), (4, 4, 40));
        let c = b.clone();
        b.record_all(&[50, 60]);
        assert_eq!((c.hist.len(), b.hist.len()), (4, 6));
    }

    #[test]
    fn empty_stats_report_zeros() {
        let s = Stats::default().summary();
        assert_eq!((s.count, s.min_ns, s.max_ns, s.p("99")), (0, 0, 0, 0));
    }
}
