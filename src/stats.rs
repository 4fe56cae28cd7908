//! Full-range latency statistics: exact moments from running sums, percentiles from an HDR
//! histogram that spans 1 ns to a day, so no sample is ever an "overflow".

use hdrhistogram::Histogram;
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
#[derive(Clone, Debug)]
pub struct Stats {
    pub count: u64,
    pub overruns: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
    pub sumsq: u128,
    pub hist: Histogram<u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats { count: 0, overruns: 0, min: u64::MAX, max: 0, sum: 0, sumsq: 0, hist: new_histogram() }
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
        self.hist.saturating_record(ns);
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
        self.hist.add(&other.hist).expect("histograms share one range");
    }

    /// Empties the statistics, keeping the histogram's allocation.
    pub fn reset(&mut self) {
        self.count = 0;
        self.overruns = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sumsq = 0;
        self.hist.reset();
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
        if self.count == 0 {
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
                let top = self.hist.highest_equivalent(v.value_iterated_to());
                out.push(top.clamp(self.min, self.max));
                next += 1;
            }
            if next == ranks.len() {
                break;
            }
        }
        out.resize(qs.len(), self.max);
        out
    }

    /// A serialisable summary with every reported number.
    pub fn summary(&self) -> Summary {
        let qs: Vec<f64> = PERCENTILES.iter().map(|p| p.1).collect();
        let values = self.percentiles(&qs);
        Summary {
            count: self.count,
            overruns: self.overruns,
            min_ns: if self.count == 0 { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            percentiles_ns: PERCENTILES.iter().zip(values).map(|(p, v)| (p.0.to_string(), v.into())).collect(),
        }
    }
}

/// What every report, export and `show` prints for one stream.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub count: u64,
    pub overruns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    pub percentiles_ns: serde_json::Map<String, serde_json::Value>,
}

impl Summary {
    /// A percentile by its label ("99.9"); 0 when absent.
    pub fn p(&self, label: &str) -> u64 {
        self.percentiles_ns.get(label).and_then(|v| v.as_u64()).unwrap_or(0)
    }
}
