//! `timer`: cyclictest's measurement. Sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock on wake-up, record `now − deadline`.

use std::sync::Arc;

use anyhow::Result;

use super::{anywhere, Built, DefaultThreads, Flag, FlagValue, Kind, Probe, ProbeArgs, ProbeInfo, Shape, ThreadCtx};
use crate::model::{Metric, ProbeParams, TimerParams};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "timer",
    help: "timer wake-up latency (cyclictest): clock_nanosleep to an absolute deadline, then now − deadline",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples, super::Offer::TimerExpiry],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::PerCpu,
    default_loops: None,
    count_flag: None,
    flags: &[INTERVAL, DISTANCE],
    supported: anywhere,
    build,
    serve: None,
    study: Some(|_, _| {}),
    resume: super::Resume::Settings(|p| {
        let ProbeParams::Timer(p) = p else { return None };
        Some(vec![(INTERVAL, FlagValue::Number(p.interval_us)), (DISTANCE, FlagValue::Number(p.distance_us))])
    }),
};

/// Wake-up interval when `-i` is not given, in µs (cyclictest's); the monitor's too.
pub const INTERVAL_US: u64 = 1000;
/// Per-thread addition to the interval when `-d` is not given, in µs.
const DISTANCE_US: u64 = 0;

pub const INTERVAL: Flag = Flag::new("interval", Kind::PositiveUs, "Wake-up interval in µs")
    .short('i')
    .value_name("US")
    .default_number(INTERVAL_US);
const DISTANCE: Flag = Flag::new("distance", Kind::Us, "Added to the interval per thread, in µs (cyclictest's -d)")
    .short('d')
    .value_name("US")
    .default_number(DISTANCE_US);

/// The timer's parameters, stored with the run as they are.
fn params(args: &ProbeArgs) -> TimerParams {
    TimerParams {
        interval_us: args.number(&INTERVAL).unwrap_or(INTERVAL_US),
        distance_us: args.number(&DISTANCE).unwrap_or(DISTANCE_US),
        monitor_window_s: None,
    }
}

fn build(args: &ProbeArgs, _: &Shape) -> Result<Built> {
    let p = params(args);
    let probe = Timer { interval_ns: p.interval_us * 1000, distance_ns: p.distance_us * 1000 };
    Ok(Built { probe: Arc::new(probe), params: ProbeParams::Timer(p) })
}

struct Timer {
    interval_ns: u64,
    /// Added to the interval per thread number (cyclictest's `-d`).
    distance_ns: u64,
}

impl Probe for Timer {
    fn step_ns(&self) -> u64 {
        self.interval_ns
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let interval = self.interval_ns + ctx.index as u64 * self.distance_ns;
        let mut next = sys::now_ns() + interval;
        let mut taken = 0u64;
        while taken < ctx.loops && !ctx.stopped() {
            sys::sleep_until(next);
            let now = sys::now_ns();
            ctx.rec.record(next - ctx.start_ns, now.saturating_sub(next));
            taken += 1;
            next += interval;
            // Like cyclictest: a wake-up later than the next deadline skips the missed periods.
            while now > next {
                next += interval;
                ctx.rec.overrun();
            }
        }
    }
}
