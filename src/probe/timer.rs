//! `timer`: cyclictest's measurement. Sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock on wake-up, record `now − deadline`.

use std::sync::Arc;

use anyhow::Result;

use super::{anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
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
    flags: FlagSet::of::<TimerFlags>(),
    supported: anywhere,
    study: super::InStudy::Seed,
    resume: super::Resume::Settings,
    replay: &[],
};

/// Wake-up interval when `-i` is not given, in µs (cyclictest's); the monitor's too.
pub const INTERVAL_US: u64 = 1000;

/// `-i`, the wake-up interval: the timer's, and timerlat's period.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct Interval {
    /// Wake-up interval in µs
    #[arg(short = 'i', long, value_name = "US", value_parser = crate::parse::positive_us, default_value_t = INTERVAL_US)]
    pub interval: u64,
}

/// `timer`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct TimerFlags {
    #[command(flatten)]
    pub interval: Interval,
    /// Added to the interval per thread, in µs (cyclictest's -d)
    #[arg(short = 'd', long, value_name = "US", value_parser = crate::parse::us, default_value_t = 0)]
    pub distance: u64,
}

impl ProbeFlags for TimerFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let p = TimerParams { interval_us: self.interval.interval, distance_us: self.distance, monitor_window_s: None };
        let probe = Timer { interval_ns: p.interval_us * 1000, distance_ns: p.distance_us * 1000 };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Timer(p) })
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Timer(p) = stored else { return None };
        Some(TimerFlags { interval: Interval { interval: p.interval_us }, distance: p.distance_us })
    }
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
