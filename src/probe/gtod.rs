//! `gtod`: gtod_latency. The time between two back-to-back CLOCK_MONOTONIC reads.

use std::sync::Arc;

use anyhow::Result;

use super::{anywhere, Built, DefaultThreads, Flag, Kind, Probe, ProbeArgs, ProbeInfo, Shape, ThreadCtx};
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
    count_flag: Some(PAIRS),
    flags: &[PAIRS],
    supported: anywhere,
    build,
    serve: None,
    study: Some(|_, _| {}),
    // Its pair count is the run's loop count, which resume reads from the run.
    resume: super::Resume::Settings(|p| matches!(p, ProbeParams::Gtod(_)).then(Vec::new)),
};

const PAIRS: Flag = Flag::new(
    "pairs",
    Kind::Positive,
    "Clock-read pairs per thread (the same as -l) [default: 1000000, or unlimited with -D]",
)
.short('n')
.value_name("N");

fn build(_: &ProbeArgs, shape: &Shape) -> Result<Built> {
    Ok(Built { probe: Arc::new(Gtod), params: ProbeParams::Gtod(GtodParams { pairs: shape.loops }) })
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
