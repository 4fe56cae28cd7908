//! The measurements on their way from the threads to the sinks: the runner's running totals,
//! the instruments they pass by, the checkpoints it hands every sink, the windows it closes
//! and the windows around samples the instruments take.

use std::time::{Duration, Instant};

use super::segment::Closed;
use super::sink::{Checkpoint, Fed, Progress, SampleLogSink, Sink, StoreSink};
use super::{cpuwatch, live};
use crate::instrument::{Armed, Followed, Following, Resolved, Service};
use crate::model::{EnvPoint, ThreadRan, ThreadResult};
use crate::recorder::{Buffer, Collector};
use crate::stats::Stats;
use crate::sys;

/// The runner's cumulative view of one thread.
pub(super) struct ThreadTotals {
    pub(super) index: usize,
    pub(super) cpu: Option<usize>,
    pub(super) stats: Stats,
    pub(super) last: u64,
    pub(super) collector: Collector,
    /// How the thread runs, set by the thread once it is set up.
    pub(super) ran: std::sync::Arc<std::sync::OnceLock<ThreadRan>>,
    /// The thread's id, set by the thread first thing.
    pub(super) tid: std::sync::Arc<std::sync::OnceLock<i32>>,
}

/// Where the measurements go: the sample log, the store's writer, and the observers.
pub(super) struct Sinks<'s> {
    pub(super) log: Option<Fed<SampleLogSink>>,
    pub(super) store: Fed<StoreSink<'s>>,
    /// The caller's (a metrics endpoint, an interval log) and the live view.
    pub(super) observers: Vec<Fed<Box<dyn Sink + 's>>>,
}

impl<'s> Sinks<'s> {
    /// Every sink in the order a checkpoint reaches them: the sample log first (it is flushed
    /// before the store's checkpoint names the samples it holds), the store, the observers.
    pub(super) fn each(&mut self) -> impl Iterator<Item = &mut Fed<dyn Sink + 's>> {
        let log = self.log.iter_mut().map(|f| f as &mut Fed<dyn Sink + 's>);
        let store = std::iter::once(&mut self.store as &mut Fed<dyn Sink + 's>);
        log.chain(store).chain(self.observers.iter_mut().map(|f| f as &mut Fed<dyn Sink + 's>))
    }

    /// Whether the last checkpoint reached every sink.
    pub(super) fn all_current(&mut self) -> bool {
        self.each().all(|s| s.current())
    }

    /// What the run should say about the sinks that failed.
    pub(super) fn warnings(&mut self) -> Vec<String> {
        self.each().filter_map(|s| s.warning()).collect()
    }
}

/// The measurements on their way from the threads to the sinks.
pub(super) struct Flow<'s> {
    pub(super) totals: Vec<ThreadTotals>,
    pub(super) sinks: Sinks<'s>,
    /// Envelope intervals completed since the last checkpoint.
    pub(super) envelope: Vec<(u32, EnvPoint)>,
    pub(super) started: Instant,
    pub(super) duration: Option<Duration>,
    /// CLOCK_MONOTONIC ns the threads' time offsets count from.
    pub(super) start_ns: u64,
    /// Interference on the measured CPUs; `None` for synthetic samples.
    pub(super) watch: Option<cpuwatch::CpuWatch>,
    /// Windows the instruments took around samples since the last checkpoint.
    pub(super) windows: Vec<crate::model::Breach>,
    /// How often the totals are collected: often enough for a live view, when there is one.
    pub(super) collect_every: Duration,
    /// Samples merged over the whole run, every window included: its progress.
    pub(super) counted: u64,
    /// The instruments riding along: one may hold the samples on their way to the sinks.
    pub(super) instruments: Armed,
    /// The probe, for what it measures beside its samples (the IRQ latencies of `timerlat`).
    pub(super) probe: std::sync::Arc<dyn crate::probe::Probe>,
    /// Windows waiting for the instrument that holds the samples to settle theirs (thread's
    /// place, window).
    pub(super) held: Vec<(usize, crate::model::Breach)>,
    /// Reused between settlings: the samples the holding instrument lets go.
    pub(super) settled: Resolved,
}

impl Flow<'_> {
    /// The instruments follow the measuring threads once they have started. `(budget_ns,
    /// interval_ns)`: the rule-of-thumb budget and the run's envelope interval.
    pub(super) fn follow(&mut self, (budget_ns, envelope_ns): (Option<u64>, u64)) {
        let threads: Vec<Followed> = self
            .totals
            .iter()
            .map(|t| Followed {
                index: t.index as u32,
                cpu: t.cpu.map(|c| c as u32),
                tid: std::sync::Arc::clone(&t.tid),
            })
            .collect();
        self.instruments.follow(&Following { threads: &threads, budget_ns, envelope_ns });
    }

    /// A pass of the instruments: the windows they took are kept for the next checkpoint and
    /// said; while one instrument holds the samples, a window first waits, held, until its
    /// sample is settled. Returns whether an instrument asks the run to end.
    pub(super) fn service(&mut self, cpu_of: &dyn Fn(u32) -> Option<usize>) -> bool {
        let (windows, stop) = self.instruments.service(&Service { start_ns: self.start_ns, cpu_of });
        let holding = self.instruments.hold_samples();
        for w in windows {
            match self.totals.iter().position(|t| t.index as u32 == w.thread).filter(|_| holding) {
                Some(i) => self.held.push((i, w)),
                None => self.keep_window(w),
            }
        }
        self.release_windows();
        stop
    }

    /// The held windows whose samples have been settled, with what the holder adds to them.
    fn release_windows(&mut self) {
        let mut settled = Vec::new();
        for (i, mut w) in std::mem::take(&mut self.held) {
            match self.instruments.annotate(i, &mut w) {
                false => self.held.push((i, w)),
                true => settled.push(w),
            }
        }
        for w in settled {
            self.keep_window(w);
        }
    }

    fn keep_window(&mut self, w: crate::model::Breach) {
        eprintln!("rtbench: {}", w.said());
        self.windows.push(w);
    }

    pub(super) fn watch_tick(&mut self) {
        if let Some(w) = self.watch.as_mut() {
            w.tick(sys::now_ns().saturating_sub(self.start_ns));
        }
    }

    /// Hands the raw samples every thread has passed over so far to the sinks.
    pub(super) fn drain_samples(&mut self) {
        for i in 0..self.totals.len() {
            self.drain_thread(i);
        }
    }

    /// A sink that fails says so and is retried or left out (see [`Fed`]); the samples keep
    /// flowing to the others. Every instrument sees them first; when one holds them, they
    /// reach the sinks as it settles them.
    pub(super) fn drain_thread(&mut self, i: usize) {
        let t = &mut self.totals[i];
        let thread = t.index as u32;
        let (sinks, instruments) = (&mut self.sinks, &mut self.instruments);
        let holding = instruments.hold_samples();
        let _ = t.collector.drain_samples(|chunk| {
            instruments.samples(i, chunk);
            if !holding {
                for s in sinks.each() {
                    s.samples(thread, chunk);
                }
            }
            Ok(())
        });
        self.settle(i, false);
    }

    /// Thread `i`'s samples settled by the instruments, those let go handed to the sinks, and
    /// the windows waiting for them released.
    fn settle(&mut self, i: usize, end: bool) {
        let thread = self.totals[i].index as u32;
        self.instruments.settle(i, self.start_ns, end, &mut self.settled);
        feed(&mut self.sinks, thread, &self.settled);
        self.release_windows();
    }

    /// The end of the run: once the instruments' readers have read the last events, every
    /// sample still waiting is settled.
    pub(super) fn end_instruments(&mut self) {
        self.instruments.end();
        for i in 0..self.totals.len() {
            self.settle(i, true);
        }
    }

    /// Swaps every thread's buffer out and merges it, without waiting for a sleeping thread,
    /// then shows the totals.
    pub(super) fn collect(&mut self) {
        for t in &mut self.totals {
            t.collector.request();
        }
        for i in 0..self.totals.len() {
            if let Some(buf) = self.totals[i].collector.take(Duration::from_millis(5)) {
                self.merge(i, buf);
            }
        }
        self.progress()
    }

    pub(super) fn merge(&mut self, i: usize, buf: Box<Buffer>) {
        let t = &mut self.totals[i];
        buf.add_to(&mut t.stats);
        self.counted += buf.count();
        if buf.count() > 0 {
            t.last = buf.last;
        }
        self.envelope.extend(buf.envelope.iter().map(|p| (t.index as u32, *p)));
        t.collector.recycle(buf);
        self.drain_thread(i);
    }

    /// How each thread that set itself up ran.
    pub(super) fn ran(&self) -> Vec<ThreadRan> {
        self.totals.iter().filter_map(|t| t.ran.get().copied()).collect()
    }

    pub(super) fn progress(&mut self) {
        let rows: Vec<live::Row> = self
            .totals
            .iter()
            .map(|t| live::Row {
                thread: t.index,
                cpu: t.cpu,
                ran: t.ran.get().copied(),
                stats: &t.stats,
                last_ns: t.last,
            })
            .collect();
        let p = Progress { rows: &rows, elapsed: self.started.elapsed(), duration: self.duration };
        for s in self.sinks.each() {
            s.progress(&p);
        }
    }

    pub(super) fn checkpoint(&mut self) {
        let threads = self.results();
        let activity = self.watch.as_mut().map(|w| w.take()).unwrap_or_default();
        let extra = self.instruments.checkpoint();
        let cp = Checkpoint {
            envelope: &self.envelope,
            activity: &activity,
            found: extra.found(&self.windows),
            ..Checkpoint::only(&threads)
        };
        for s in self.sinks.each() {
            s.checkpoint(&cp);
        }
        self.envelope.clear();
        self.windows.clear();
    }

    /// The last checkpoint again, for the sinks it did not reach: what they kept is written.
    pub(super) fn retry_checkpoint(&mut self) {
        let threads = self.results();
        let cp = Checkpoint::only(&threads);
        for s in self.sinks.each().filter(|s| !s.current()) {
            s.checkpoint(&cp);
        }
    }

    /// Ends the window at the last checkpoint: the store's sink first (the next segment's id),
    /// then the others, then the totals start again. `None` and nothing changed when the store
    /// could not begin the next segment.
    pub(super) fn close_window(&mut self, more: bool) -> Option<i64> {
        let (threads, ran) = (self.results(), self.ran());
        let closed = Closed { threads: &threads, ran: &ran, more };
        let next = self.sinks.store.window_closed(&closed);
        if more && next.is_none() {
            return None;
        }
        let Sinks { log, observers, .. } = &mut self.sinks;
        for s in log.iter_mut() {
            s.window_closed(&closed);
        }
        for s in observers.iter_mut() {
            s.window_closed(&closed);
        }
        if more {
            for t in &mut self.totals {
                t.stats = Stats::default();
            }
            self.instruments.new_window();
        }
        next
    }

    pub(super) fn results(&mut self) -> Vec<ThreadResult> {
        self.totals
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut r = ThreadResult {
                    thread: t.index as u32,
                    cpu: t.cpu.map(|c| c as u32),
                    stats: t.stats.clone(),
                    irq: None,
                };
                self.instruments.result(i, &mut r);
                if r.irq.is_none() {
                    r.irq = self.probe.irq(i, r.stats.count);
                }
                r
            })
            .collect()
    }
}

/// Settled samples to every sink, with their IRQ parts.
fn feed(sinks: &mut Sinks, thread: u32, out: &Resolved) {
    if out.samples.is_empty() {
        return;
    }
    for s in sinks.each() {
        s.samples(thread, &out.samples);
        s.irq(thread, &out.irq);
    }
}
