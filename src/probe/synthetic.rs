//! `synthetic`: a deterministic probe for tests and benchmarks. It emits samples from a seeded
//! distribution — a lognormal body, a Pareto tail, rare millisecond spikes — on a synthetic clock,
//! with no privileges and no sleeping.

use std::sync::Arc;

use anyhow::Result;

use super::{anywhere, stored, Built, DefaultThreads, Flag, Kind, Probe, ProbeArgs, ProbeInfo, Shape, ThreadCtx};
use crate::model::Metric;
use crate::rng::SplitMix64;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "synthetic",
    help: "deterministic synthetic samples (lognormal body, heavy tail, rare spikes) for tests and benchmarks",
    synthetic: true,
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: Some(1_000_000),
    count_flag: None,
    flags: &[
        Flag::new("seed", Kind::Count, "Seed of the generator: the same seed gives the same samples").default("1"),
        Flag::new("interval", Kind::PositiveUs, "Synthetic time between samples, in µs")
            .short('i')
            .value_name("US")
            .default("1000"),
        Flag::new("median", Kind::Positive, "Median of the lognormal body, in ns").value_name("NS").default("5000"),
    ],
    supported: anywhere,
    build,
    serve: None,
    study: None,
};

/// Stored with the run.
#[derive(serde::Serialize)]
struct Params {
    seed: u64,
    interval_us: u64,
    median_ns: u64,
}

fn build(args: &ProbeArgs, _: &Shape) -> Result<Built> {
    let p = Params {
        seed: args.number("seed").unwrap_or(1),
        interval_us: args.number("interval").unwrap_or(1000),
        median_ns: args.number("median").unwrap_or(5000),
    };
    let probe = Synthetic { seed: p.seed, step_ns: p.interval_us * 1000, median_ns: p.median_ns as f64 };
    Ok(Built { probe: Arc::new(probe), params: stored(&p) })
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
