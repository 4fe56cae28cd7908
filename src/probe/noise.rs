//! `noise`: what osnoise and oslat measure. A pinned FIFO thread reads the clock in a tight
//! loop; every gap between two reads longer than a threshold is time the CPU was taken from it
//! (an interrupt, a softirq, another task, the hypervisor) and is one sample. The envelope's sum
//! per interval is the noise per second; the run says how much of the CPU was left.
//!
//! A FIFO thread that never sleeps is stopped by RT throttling (sched_rt_runtime_us) for the
//! rest of each period, which would read as noise. Where throttling is on, the thread pauses on
//! a schedule that stays under its budget in any period, and the pauses are not counted.

use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::{anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{Metric, NoiseParams, ProbeParams, ThreadNoise};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "noise",
    help: "OS noise (osnoise, oslat): gaps in a busy clock-reading loop on a pinned FIFO thread, the floor no latency beats",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples, super::Offer::BusyGaps],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::PerCpu,
    default_loops: None,
    flags: FlagSet::of::<NoiseFlags>(),
    supported: anywhere,
    study: super::InStudy::Seed,
    resume: super::Resume::Settings,    replay: &[],
};

/// Gaps longer than this count when `--threshold` is not given, in µs; the monitor's too.
pub const THRESHOLD_US: u64 = 1;

/// `noise`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct NoiseFlags {
    /// Gaps longer than this count as noise, in µs
    #[arg(long, value_name = "US", value_parser = crate::parse::positive_us, default_value_t = THRESHOLD_US)]
    pub threshold: u64,
}

impl ProbeFlags for NoiseFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        build(self.threshold * 1000)
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Noise(p) = stored else { return None };
        Some(NoiseFlags { threshold: p.threshold_ns / 1000 })
    }
}

/// The throttling-proof pause schedule repeats every this long, or a tenth of the throttling
/// period if that is shorter. Each pause costs the loop more than its length: in the RT guest
/// under TCG the loop saw 42 ms/s of noise with 100 pauses a second (a 10 ms window) and 33
/// ms/s with throttling off and no pauses, where oslat's loop saw 28–31; rtla pauses once a
/// second.
const WINDOW_NS: u64 = 100_000_000;

/// Busy time and pause per window, when RT throttling would otherwise stop the thread.
fn pause_schedule(runtime_us: Option<i64>, period_us: Option<i64>) -> Option<(u64, u64)> {
    let (runtime, period) = (runtime_us?, period_us?);
    if runtime < 0 || period <= 0 || runtime >= period {
        return None;
    }
    // Busy for 90 % of the budget's share of each window: even with one more burst than whole
    // windows fit in a period, whatever the phase, the thread stays under its budget.
    // A period holds at least ten windows, so the extra burst costs at most a tenth.
    let window = WINDOW_NS.min(period as u64 * 100);
    let share = runtime as f64 / period as f64 * 0.9;
    let busy = ((window as f64 * share) as u64).min(window.saturating_sub(100_000));
    Some((busy, window - busy))
}

/// How much longer than the schedule's a pause is, at random: up to a quarter of it. A longer
/// pause only lowers the thread's share of any period, and the schedule no longer keeps step
/// with noise that comes on a period of its own (a once-a-second task would otherwise fall in
/// the same place of every window: always seen, or never).
fn jitter(pause: u64, rng: &mut crate::rng::SplitMix64) -> u64 {
    rng.next_u64() % (pause / 4 + 1)
}

fn build(threshold_ns: u64) -> Result<Built> {
    let t = crate::sysinfo::rt_throttling();
    let schedule = pause_schedule(t.sched_rt_runtime_us, t.sched_rt_period_us);
    let params = NoiseParams {
        threshold_ns,
        throttling_pauses: schedule.map(|(busy, pause)| {
            format!(
                "RT throttling allows {} of {} µs: the thread pauses {}–{} µs (at random) after every {} µs; \
                 pauses are not noise",
                t.sched_rt_runtime_us.unwrap_or(0),
                t.sched_rt_period_us.unwrap_or(0),
                pause / 1000,
                (pause + pause / 4) / 1000,
                busy / 1000
            )
        }),
        monitor_window_s: None,
        noise: None,
    };
    let probe = Noise { threshold_ns, schedule, findings: Mutex::new(Vec::new()) };
    Ok(Built { probe: Arc::new(probe), params: ProbeParams::Noise(params) })
}

struct Noise {
    threshold_ns: u64,
    schedule: Option<(u64, u64)>,
    findings: Mutex<Vec<ThreadNoise>>,
}

impl Probe for Noise {
    fn step_ns(&self) -> u64 {
        0
    }

    /// A sample is a gap above the threshold: on a quiet CPU none may come for minutes.
    fn sample_gap_ns(&self) -> Option<u64> {
        None
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let (mut measured, mut noise, mut pauses, mut taken) = (0u64, 0u64, 0u64, 0u64);
        let mut prev = sys::now_ns();
        let mut burst = prev;
        let mut rng = crate::rng::SplitMix64(prev ^ ctx.index as u64);
        while taken < ctx.loops && !ctx.stopped() {
            let now = sys::now_ns();
            let gap = now - prev;
            if gap > self.threshold_ns {
                ctx.rec.record(prev - ctx.start_ns, gap);
                noise += gap;
                taken += 1;
            }
            prev = now;
            if let Some((busy, pause)) = self.schedule {
                if now - burst >= busy {
                    measured += now - burst;
                    ctx.rec.pause_until(now + pause + jitter(pause, &mut rng));
                    pauses += 1;
                    prev = sys::now_ns();
                    burst = prev;
                }
            }
        }
        measured += prev - burst;
        let available_percent = if measured == 0 { 0.0 } else { (1.0 - noise as f64 / measured as f64) * 100.0 };
        let mut f = self.findings.lock().unwrap_or_else(|e| e.into_inner());
        f.push(ThreadNoise { thread: ctx.index, measured_ns: measured, noise_ns: noise, available_percent, pauses });
        f.sort_by_key(|t| t.thread);
    }

    /// One entry per thread: how long it watched, how much of that was noise.
    fn findings(&self, params: &mut ProbeParams) {
        if let ProbeParams::Noise(p) = params {
            p.noise = Some(self.findings.lock().unwrap_or_else(|e| e.into_inner()).clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_schedule_stays_under_any_throttling_budget() {
        assert_eq!(pause_schedule(Some(-1), Some(1_000_000)), None, "throttling off");
        assert_eq!(pause_schedule(Some(1_000_000), Some(1_000_000)), None, "a budget of the whole period");
        assert_eq!(pause_schedule(None, Some(1_000_000)), None);
        for (runtime, period) in
            [(950_000, 1_000_000), (500_000, 1_000_000), (999_000, 1_000_000), (95_000, 100_000), (5_000, 10_000)]
        {
            let (busy, pause) = pause_schedule(Some(runtime), Some(period)).unwrap();
            let window = busy + pause;
            assert!(window <= WINDOW_NS && pause >= 100_000);
            // The most a thread can run in any period: as many bursts as whole windows, plus one.
            let worst = (period as u64 * 1000 / window + 1) * busy;
            assert!(worst <= runtime as u64 * 1000, "{runtime}/{period}: {busy} busy per window runs {worst} ns");
        }
        // Debian's default (950 ms of each second): ten pauses a second, not a hundred.
        assert_eq!(pause_schedule(Some(950_000), Some(1_000_000)), Some((85_500_000, 14_500_000)));
    }

    #[test]
    fn pauses_are_longer_by_up_to_a_quarter_at_random() {
        let mut rng = crate::rng::SplitMix64(7);
        let extra: Vec<u64> = (0..1000).map(|_| jitter(14_500_000, &mut rng)).collect();
        assert!(extra.iter().all(|&e| e <= 14_500_000 / 4), "at most a quarter more");
        // Spread over the range, not one value: the windows drift against any period.
        let (lo, hi) = (*extra.iter().min().unwrap(), *extra.iter().max().unwrap());
        assert!(lo < 500_000 && hi > 3_000_000, "{lo}..{hi}");
    }
}
