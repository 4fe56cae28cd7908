//! The measurements on their way from the threads to the sinks: the runner's running totals,
//! the checkpoints it hands every sink, the windows it closes and the breaches it takes.

use std::time::{Duration, Instant};

use super::segment::Closed;
use super::sink::{Checkpoint, Fed, Progress, SampleLogSink, Sink, StoreSink};
use super::{cpuwatch, live};
use crate::instrument::classify::flow::ClassifyFlow;
use crate::instrument::split::flow::SplitFlow;
use crate::instrument::split::pair::Resolved;
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
    /// Breaches traced since the last checkpoint.
    pub(super) breaches: Vec<crate::model::Breach>,
    /// How often the totals are collected: often enough for a live view, when there is one.
    pub(super) collect_every: Duration,
    /// Samples merged over the whole run, every window included: its progress.
    pub(super) counted: u64,
    /// `--split`: the samples wait here for their expiries on their way to the sinks.
    pub(super) split: Option<SplitFlow>,
    /// Breaches of a split run waiting for their sample's split (thread's place, breach).
    pub(super) held: Vec<(usize, crate::model::Breach)>,
    /// `noise --classify`: the gaps wait here for their trace, beside their way to the sinks.
    pub(super) classify: Option<ClassifyFlow>,
}

impl Flow<'_> {
    /// The window of a pending breach, kept for the next checkpoint; its verdict is said. In a
    /// split run it first waits, held, until the pairing has settled its sample.
    pub(super) fn take_breach(
        &mut self,
        tracer: &mut crate::instrument::breach::Tracer,
        cpu_of: &dyn Fn(u32) -> Option<usize>,
    ) {
        if let Some(b) = tracer.service(self.start_ns, cpu_of) {
            match self.totals.iter().position(|t| t.index as u32 == b.thread).filter(|_| self.split.is_some()) {
                Some(i) => self.held.push((i, b)),
                None => self.keep_breach(b),
            }
        }
        self.release_breaches();
    }

    /// The held breaches whose samples the split has settled, with their IRQ part if matched.
    fn release_breaches(&mut self) {
        let Some(split) = self.split.as_ref() else { return };
        let mut settled = Vec::new();
        for (i, mut b) in std::mem::take(&mut self.held) {
            match split.split_of(i, b.mono_ns) {
                None => self.held.push((i, b)),
                Some(irq) => {
                    if let Some(irq) = irq {
                        b.irq_ns = Some(irq);
                        b.verdict = format!("{}; {}", b.verdict, split_words(irq, b.latency_ns));
                    }
                    settled.push(b);
                }
            }
        }
        for b in settled {
            self.keep_breach(b);
        }
    }

    fn keep_breach(&mut self, b: crate::model::Breach) {
        eprintln!(
            "rtbench: breach {} on thread {}: {} µs at {:.3} s: {}",
            b.seq,
            b.thread,
            crate::units::fmt_ns_as_us(b.latency_ns as f64),
            b.t_ns as f64 / 1e9,
            b.verdict
        );
        self.breaches.push(b);
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
    /// flowing to the others.
    pub(super) fn drain_thread(&mut self, i: usize) {
        let t = &mut self.totals[i];
        let thread = t.index as u32;
        let sinks = &mut self.sinks;
        let Some(split) = self.split.as_mut() else {
            let mut classify = self.classify.as_mut();
            let _ = t.collector.drain_samples(|chunk| {
                if let Some(c) = classify.as_mut() {
                    c.push(i, chunk);
                }
                for s in sinks.each() {
                    s.samples(thread, chunk);
                }
                Ok(())
            });
            if let Some(c) = classify {
                c.resolve(i, self.start_ns, false);
            }
            return;
        };
        let _ = t.collector.drain_samples(|chunk| {
            split.push(i, chunk);
            Ok(())
        });
        split.resolve(i, self.start_ns, false);
        feed(sinks, thread, &split.out);
        self.release_breaches();
    }

    /// The end of a split run: once the reader has read the last expiries, every sample still
    /// waiting is resolved, matched or not.
    pub(super) fn end_split(&mut self) {
        let Some(split) = self.split.as_mut() else { return };
        split.await_reader();
        for (i, t) in self.totals.iter().enumerate() {
            split.resolve(i, self.start_ns, true);
            feed(&mut self.sinks, t.index as u32, &split.out);
        }
        self.release_breaches();
    }

    /// The end of a classified run: once the reader has read the last events, every gap still
    /// waiting is classified, or unknown.
    pub(super) fn end_classify(&mut self) {
        let Some(c) = self.classify.as_mut() else { return };
        c.await_reader();
        for i in 0..self.totals.len() {
            c.resolve(i, self.start_ns, true);
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
        t.stats.merge(&buf.stats);
        self.counted += buf.stats.count;
        if buf.stats.count > 0 {
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
        let noise = self.classify.as_mut().map(|c| c.take_intervals()).unwrap_or_default();
        let classify = self.classify.as_ref().map(|c| c.record());
        let (envelope, breaches) = (&self.envelope, &self.breaches);
        let cp = Checkpoint {
            envelope,
            activity: &activity,
            breaches,
            noise: &noise,
            classify: classify.as_ref(),
            ..Checkpoint::only(&threads)
        };
        for s in self.sinks.each() {
            s.checkpoint(&cp);
        }
        self.envelope.clear();
        self.breaches.clear();
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
            if let Some(split) = self.split.as_mut() {
                split.reset();
            }
        }
        next
    }

    pub(super) fn results(&self) -> Vec<ThreadResult> {
        self.totals
            .iter()
            .enumerate()
            .map(|(i, t)| ThreadResult {
                thread: t.index as u32,
                cpu: t.cpu.map(|c| c as u32),
                stats: t.stats.clone(),
                irq: self.split.as_ref().map(|s| s.irq(i)),
            })
            .collect()
    }
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

/// Resolved samples to every sink, with their IRQ parts.
fn feed(sinks: &mut Sinks, thread: u32, out: &Resolved) {
    if out.samples.is_empty() {
        return;
    }
    for s in sinks.each() {
        s.samples(thread, &out.samples);
        s.irq(thread, &out.irq);
    }
}
