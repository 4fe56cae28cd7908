//! `gtod`: gtod_latency. The time between two back-to-back CLOCK_MONOTONIC reads.

use std::sync::Arc;

use anyhow::Result;

use super::{anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{GtodParams, Metric, ProbeParams};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "gtod",
    help: "clock read latency (gtod_latency): the delta between two back-to-back clock_gettime calls",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: Some(1_000_000),
    flags: FlagSet::of::<GtodFlags>(),
    supported: anywhere,
    study: super::InStudy::Seed,
    // Its pair count is the run's loop count, which resume reads from the run.
    resume: super::Resume::Settings,
    replay: &[],
};

/// `gtod`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct GtodFlags {
    /// Clock-read pairs per thread (the same as -l) [default: 1000000, or unlimited with -D]
    #[arg(short = 'n', long, value_name = "N", value_parser = crate::parse::positive)]
    pub pairs: Option<u64>,
}

impl ProbeFlags for GtodFlags {
    fn build(&self, shape: &Shape) -> Result<Built> {
        Ok(Built { probe: Arc::new(Gtod), params: ProbeParams::Gtod(GtodParams { pairs: shape.loops }) })
    }

    fn count(&self) -> Option<u64> {
        self.pairs
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        matches!(stored, ProbeParams::Gtod(_)).then_some(GtodFlags { pairs: None })
    }
}

/// Pairs between pauses. A FIFO thread that never sleeps is throttled by the kernel
/// (sched_rt_runtime_us), which would show up as a false 50 ms latency; LTP's gtod_latency
/// pauses the same way.
const PAIRS_PER_PAUSE: u64 = 10_000;
const PAUSE_NS: u64 = 1_000_000;

struct Gtod;

impl Probe for Gtod {
    fn step_ns(&self) -> u64 {
        0
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let mut taken = 0u64;
        while taken < ctx.loops && !ctx.stopped() {
            let t1 = sys::now_ns();
            let t2 = sys::now_ns();
            ctx.rec.record(t1 - ctx.start_ns, t2 - t1);
            taken += 1;
            if taken.is_multiple_of(PAIRS_PER_PAUSE) {
                sys::sleep_until(sys::now_ns() + PAUSE_NS);
            }
        }
    }
}
