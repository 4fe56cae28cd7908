//! `--split` as it rides along a run: each thread's samples held until the split's reader has
//! read their expiries, then handed on with their IRQ part, and the IRQ statistics kept beside
//! the thread's own.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::aggregate::{self, Hist, Mode, Snapshot, BOUND_NS};
use super::pair::{Pairing, Resolved, Settled};
use super::{lock, Seen, SplitOptions, SplitTracer};
use crate::instrument::{Arming, Following, Instrument, InstrumentInfo, ThreadAsk};
use crate::model::{Breach, IrqSplit, MeasuredParams, SplitRecord, ThreadResult};

/// How far behind the reader may be before the samples it has not read are unmatched: memory
/// stays bounded over a long run whatever the reader does.
const STALE: Duration = Duration::from_secs(5);
/// How long the samples are counted before the split's mode is chosen from their rate.
const RATE_AFTER_NS: u64 = 200_000_000;

/// The armed split: its tracer, and once the threads run, their pairings.
pub struct Split {
    tracer: SplitTracer,
    flow: Option<SplitFlow>,
    /// The mode `--split-mode` asks for, and the breach threshold.
    options: SplitOptions,
}

impl Instrument for Split {
    fn info(&self) -> &'static InstrumentInfo {
        &super::INFO
    }

    /// Stored from the run's start, the record says a killed run was split, and `rtbench
    /// resume` splits its next part too.
    fn begun(&self, params: &mut MeasuredParams) {
        params.split = Some(SplitRecord::default());
    }

    /// Once every measuring thread has said its id (they do first thing), the tracer follows
    /// those threads only.
    fn follow(&mut self, run: &Following) {
        let until = Instant::now() + Duration::from_secs(1);
        while run.threads.iter().any(|t| t.tid.get().is_none()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        let tids: Vec<i32> = run.threads.iter().filter_map(|t| t.tid.get().copied()).collect();
        self.tracer.follow(&tids);
        let mut flow = SplitFlow::new(&self.tracer, run.threads.iter().map(|t| Arc::clone(&t.tid)).collect());
        flow.counted_below_ns = self.options.breach_ns.unwrap_or(BOUND_NS).min(BOUND_NS);
        if flow.hist.is_none() {
            flow.mode = Some((Mode::PerSample, "an ftrace instance keeps no histograms".into()));
        } else if self.options.mode.is_some() {
            flow.choose(0.0, self.options.mode);
        }
        self.flow = Some(flow);
    }

    fn holds_samples(&self) -> bool {
        true
    }

    /// Every sample waits for its expiry.
    fn threads(&self) -> ThreadAsk {
        ThreadAsk { every_sample: true, ..ThreadAsk::default() }
    }

    fn samples(&mut self, i: usize, chunk: &[(u64, u64)]) {
        if let Some(f) = self.flow.as_mut() {
            f.push(i, chunk);
        }
    }

    fn settle(&mut self, i: usize, start_ns: u64, end: bool, out: &mut Resolved) {
        if let Some(f) = self.flow.as_mut() {
            f.choose_by_rate(i, crate::sys::now_ns().saturating_sub(start_ns), end);
            f.resolve(i, start_ns, end, out);
        }
    }

    /// A breach's sample, once paired: its IRQ part, and the split in the verdict's words.
    fn annotate(&self, i: usize, window: &mut Breach) -> bool {
        let Some(f) = self.flow.as_ref() else { return true };
        let words = match f.split_of(i, window.mono_ns) {
            None => return false,
            Some(Settled::Matched(irq)) => {
                window.irq_ns = Some(irq);
                split_words(irq, window.latency_ns)
            }
            Some(Settled::Below(ns)) => format!(
                "the timer interrupt ran less than {} µs late (counted in the kernel's histogram)",
                crate::units::fmt_ns_as_us(ns as f64)
            ),
            Some(Settled::Unmatched) => return true,
        };
        window.verdict = format!("{}; {words}", window.verdict);
        true
    }

    fn result(&mut self, i: usize, r: &mut ThreadResult) {
        r.irq = self.flow.as_mut().map(|f| {
            f.fold(i);
            f.irq(i)
        });
    }

    fn new_window(&mut self) {
        if let Some(f) = self.flow.as_mut() {
            f.reset();
        }
    }

    fn end(&mut self) {
        if self.flow.is_some() {
            self.tracer.feed.catch_up(crate::sys::now_ns());
        }
    }

    fn record(&self, params: &mut MeasuredParams) {
        let mut record = self.tracer.record();
        if let Some((mode, why)) = self.flow.as_ref().and_then(|f| f.mode.as_ref()) {
            record.mode = Some(mode.name().to_string());
            record.mode_reason = Some(why.clone());
            record.aggregated = self.flow.as_ref().map(SplitFlow::aggregated);
        }
        params.split = Some(record);
    }
}

/// Arms the split on the measured CPUs; `Err` says why the run is not split.
pub fn arm(a: &Arming) -> Result<Box<dyn Instrument>, String> {
    // The mode its flags asked for; the breach threshold, when the breach tracer rides along.
    let breach = a.beside.iter().find_map(|p| p.settings.get::<crate::instrument::breach::BreachOptions>());
    let mode = a.settings.get::<SplitOptions>().and_then(|o| o.mode);
    let options = SplitOptions { mode, breach_ns: breach.map(|b| b.threshold_ns) };
    Ok(Box::new(Split { tracer: SplitTracer::arm(a.cpus, a.collector)?, flow: None, options }))
}

/// A breach's split, in words.
fn split_words(irq_ns: u64, latency_ns: u64) -> String {
    let us = |ns: u64| crate::units::fmt_ns_as_us(ns as f64);
    format!(
        "the timer interrupt ran {} µs late; the thread ran {} µs after it",
        us(irq_ns),
        us(latency_ns.saturating_sub(irq_ns))
    )
}

struct SplitFlow {
    seen: Arc<Mutex<Seen>>,
    /// Per thread, in the runner's order: its thread id, once it has one, and its pairing.
    threads: Vec<(Arc<OnceLock<i32>>, Pairing)>,
    /// The threads' histograms in the kernel (None from ftrace); per thread the last read
    /// folded into its pairing's split, and how many samples the window has from them.
    hist: Option<Arc<Hist>>,
    last: Vec<Snapshot>,
    folded: Vec<u64>,
    /// The mode and why, once chosen.
    mode: Option<(Mode, String)>,
    /// Samples handed over, for the rate the mode is chosen by.
    pushed: u64,
    /// In the aggregate mode, the expiries below this are counted in the kernel, the rest
    /// handed on: the bound, or the breach threshold below it.
    counted_below_ns: u64,
}

impl SplitFlow {
    fn new(tracer: &SplitTracer, tids: Vec<Arc<OnceLock<i32>>>) -> SplitFlow {
        let mut flow = SplitFlow::reading(tracer.seen(), tids);
        flow.hist = tracer.hist();
        flow
    }

    fn reading(seen: Arc<Mutex<Seen>>, tids: Vec<Arc<OnceLock<i32>>>) -> SplitFlow {
        let threads: Vec<_> = tids.into_iter().map(|t| (t, Pairing::default())).collect();
        let (last, folded) = (vec![Snapshot::default(); threads.len()], vec![0; threads.len()]);
        SplitFlow { seen, threads, hist: None, last, folded, mode: None, pushed: 0, counted_below_ns: BOUND_NS }
    }

    /// Chooses the mode, if not yet, from the samples' rate `ran` ns into the run, when thread
    /// `i`'s samples have just been handed over. The rate is taken once every thread's samples
    /// of a collection are in (the runner settles them in thread order): the first thread's
    /// alone made it many times too low, and 0 where it had no sample yet (a 72-vCPU emulated
    /// guest).
    fn choose_by_rate(&mut self, i: usize, ran: u64, end: bool) {
        let round = i + 1 == self.threads.len() && self.pushed > 0;
        if self.mode.is_none() && ((ran >= RATE_AFTER_NS && round) || end) {
            self.choose(self.pushed as f64 * 1e9 / ran.max(1) as f64, None);
        }
    }

    /// Chooses the mode for `rate` samples a second, or the one `forced`; in the aggregate mode
    /// the kernel counts the threads' expiries below its bound from now on.
    fn choose(&mut self, rate: f64, forced: Option<Mode>) {
        let (mut mode, mut why) = aggregate::choose(rate, forced);
        if mode == Mode::Aggregate {
            let tids: Vec<i32> = self.threads.iter().filter_map(|(t, _)| t.get().copied()).collect();
            let below = self.counted_below_ns;
            match self.hist.as_ref().map(|h| h.aggregate(&tids, below)) {
                Some(Ok(())) => {
                    let from = crate::sys::now_ns();
                    for (_, p) in &mut self.threads {
                        (p.counted_from_ns, p.counted_below_ns) = (from, below);
                    }
                    if below < BOUND_NS {
                        let us = crate::units::fmt_ns_as_us(below as f64);
                        why = format!("{why}; expiries from {us} µs (the breach threshold) handed on one by one");
                    }
                }
                Some(Err(e)) => {
                    (mode, why) = (Mode::PerSample, format!("{why}, but the histograms cannot be set: {e}"))
                }
                None => (mode, why) = (Mode::PerSample, format!("{why}, but there are no histograms")),
            }
        }
        self.mode = Some((mode, why));
    }

    /// Thread `i`'s histogram in the kernel as it is now, when aggregated.
    fn snapshot(&self, i: usize) -> Option<Snapshot> {
        let (tid, pairing) = &self.threads[i];
        self.hist.as_ref().filter(|_| pairing.aggregate()).and_then(|h| h.read(*tid.get()?))
    }

    /// Samples counted in the kernel's histograms over the whole run.
    fn aggregated(&self) -> u64 {
        (0..self.threads.len()).filter_map(|i| self.snapshot(i)).map(|s| s.count).sum()
    }

    fn push(&mut self, i: usize, chunk: &[(u64, u64)]) {
        self.pushed += chunk.len() as u64;
        self.threads[i].1.push(chunk);
    }

    /// Resolves thread `i`'s samples into `out`; `end`: the run is over and the reader has
    /// read all it will, so what is left is unmatched.
    fn resolve(&mut self, i: usize, start_ns: u64, end: bool, out: &mut Resolved) {
        let (tid, pairing) = &mut self.threads[i];
        if let Some(tid) = tid.get() {
            let mut seen = lock(&self.seen);
            // A reader that stopped (or fell far behind) must not make the samples wait for
            // ever: what it has not read within STALE is unmatched.
            let caught_up = seen.caught_up_ns.max(crate::sys::now_ns().saturating_sub(STALE.as_nanos() as u64));
            let expiries = seen.by_pid.entry(*tid).or_default();
            pairing.resolve(start_ns, expiries, caught_up, out);
        }
        if end {
            pairing.give_up(out);
        }
    }

    /// Thread `i`'s sample due at `due_ns` (CLOCK_MONOTONIC): None while the pairing has not
    /// settled it, then its IRQ latency if it was matched.
    fn split_of(&self, i: usize, due_ns: u64) -> Option<Settled> {
        self.threads[i].1.split_of(due_ns)
    }

    /// Adds what the kernel counted for thread `i` since the last read to its split, in place:
    /// a histogram's 1024 buckets read, not a 300 KB one made and merged each checkpoint.
    fn fold(&mut self, i: usize) {
        if let Some(now) = self.snapshot(i) {
            self.folded[i] += now.add_to(&self.last[i], &mut self.threads[i].1.split.stats);
            self.last[i] = now;
        }
    }

    /// Thread `i`'s IRQ latencies: those paired one by one, and those the kernel counted, as
    /// folded in so far this window. A sample with no record of its own that the histogram did
    /// not count either (a lost record) is unmatched.
    fn irq(&self, i: usize) -> IrqSplit {
        let pairing = &self.threads[i].1;
        let mut split = pairing.split.clone();
        split.unmatched += pairing.aggregated.saturating_sub(self.folded[i]);
        split
    }

    /// A new window counts from nothing; what the kernel counted since the last read goes to it.
    fn reset(&mut self) {
        for (i, (_, p)) in self.threads.iter_mut().enumerate() {
            self.folded[i] = 0;
            p.split = IrqSplit::default();
            p.aggregated = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that never reads (it stopped on an error) would keep every sample of a
    /// monitor's days in memory: past STALE they are unmatched, and a recent one still waits.
    #[test]
    fn the_mode_is_chosen_from_every_thread_s_samples_not_the_first_s() {
        let tids = (0..3).map(|_| Arc::new(OnceLock::new())).collect();
        let mut flow = SplitFlow::reading(Arc::new(Mutex::new(Seen::default())), tids);
        let chunk: Vec<(u64, u64)> = (0..100).map(|k| (k * 10_000_000, 50_000)).collect();
        flow.choose_by_rate(0, 0, false);
        flow.push(0, &chunk);
        flow.choose_by_rate(0, 1_000_000_000, false);
        assert!(flow.mode.is_none(), "one thread of three handed over");
        flow.push(1, &chunk);
        flow.push(2, &chunk);
        flow.choose_by_rate(2, 1_000_000_000, false);
        let (_, why) = flow.mode.as_ref().expect("chosen at the round's last thread");
        assert!(why.starts_with("300 samples/s"), "{why}");
    }

    #[test]
    fn samples_a_stopped_reader_never_read_are_unmatched_after_a_while_not_kept() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let tid = Arc::new(OnceLock::new());
        tid.set(7).unwrap();
        let mut flow = SplitFlow::reading(seen, vec![tid]);
        let now = crate::sys::now_ns();
        let start = now - 2 * STALE.as_nanos() as u64;
        flow.push(0, &[(1_000_000, 50_000), (2 * STALE.as_nanos() as u64 - 1_000_000, 50_000)]);
        let mut out = Resolved::default();
        flow.resolve(0, start, false, &mut out);
        assert_eq!(out.irq, [None], "the old sample is settled unmatched, the recent one waits");
        assert_eq!(flow.irq(0).unmatched, 1);
    }
}
