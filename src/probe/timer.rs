//! `timer`: cyclictest's measurement. Sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock on wake-up, record `now − deadline`.

use super::{Probe, ProbeInfo, ThreadCtx};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "timer",
    help: "timer wake-up latency (cyclictest): clock_nanosleep to an absolute deadline, then now − deadline",
    synthetic: false,
};

pub struct Timer {
    pub interval_ns: u64,
    /// Added to the interval per thread number (cyclictest's `-d`).
    pub distance_ns: u64,
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
