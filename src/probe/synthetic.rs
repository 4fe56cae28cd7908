//! `synthetic`: a deterministic probe for tests and benchmarks. It emits samples from a seeded
//! distribution — a lognormal body, a Pareto tail, rare millisecond spikes — on a synthetic clock,
//! with no privileges and no sleeping.

use std::sync::Arc;

use anyhow::Result;

use super::{anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{Metric, ProbeParams, SyntheticParams};
use crate::rng::SplitMix64;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "synthetic",
    help: "deterministic synthetic samples (lognormal body, heavy tail, rare spikes) for tests and benchmarks",
    synthetic: true,
    offers: &[super::Offer::Samples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: Some(1_000_000),
    flags: FlagSet::of::<SyntheticFlags>(),
    supported: anywhere,
    study: super::InStudy::No,
    resume: super::Resume::Settings,
    replay: &[],
};

/// `synthetic`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct SyntheticFlags {
    /// Seed of the generator: the same seed gives the same samples
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Synthetic time between samples, in µs
    #[arg(short = 'i', long, value_name = "US", value_parser = crate::parse::positive_us, default_value_t = 1000)]
    pub interval: u64,
    /// Median of the lognormal body, in ns
    #[arg(long, value_name = "NS", value_parser = crate::parse::positive, default_value_t = 5000)]
    pub median: u64,
}

impl ProbeFlags for SyntheticFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let p = SyntheticParams { seed: self.seed, interval_us: self.interval, median_ns: self.median };
        let probe = Synthetic { seed: p.seed, step_ns: p.interval_us * 1000, median_ns: p.median_ns as f64 };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Synthetic(p) })
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Synthetic(p) = stored else { return None };
        Some(SyntheticFlags { seed: p.seed, interval: p.interval_us, median: p.median_ns })
    }
}

struct Synthetic {
    seed: u64,
    /// Synthetic time between samples.
    step_ns: u64,
    /// Median of the lognormal body.
    median_ns: f64,
}

/// Probability of a tail sample and of a spike.
const TAIL_P: f64 = 1e-3;
const SPIKE_P: f64 = 1e-6;

impl Probe for Synthetic {
    fn step_ns(&self) -> u64 {
        self.step_ns
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        // Mix seed and thread number so threads draw unrelated streams, not shifted copies.
        let mut rng =
            SplitMix64(SplitMix64(self.seed).next_u64() ^ (ctx.index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let ln_median = self.median_ns.ln();
        let mut taken = 0u64;
        while taken < ctx.loops {
            // Checking the stop flag every sample would cost as much as the sample itself.
            if taken.is_multiple_of(4096) && ctx.stopped() {
                break;
            }
            let u = rng.unit();
            let v = if u < SPIKE_P {
                1_000_000.0 + rng.unit() * 4_000_000.0
            } else if u < SPIKE_P + TAIL_P {
                // Pareto, alpha 1.5, from 8× the median, capped at 1 ms.
                (8.0 * self.median_ns / (1.0 - rng.unit()).powf(1.0 / 1.5)).min(1_000_000.0)
            } else {
                (ln_median + 0.25 * rng.normal()).exp()
            };
            ctx.rec.record(taken * self.step_ns, v as u64);
            taken += 1;
        }
    }
}
