//! `noise --classify` as it rides along a run: each thread's gaps held until the
//! classification's reader has read past them, then classified and counted by what ran in
//! them. The samples themselves go on to the sinks at once: nothing waits for the trace.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use super::gap::STAMP_NS;
use super::{classify, ClassifyTracer, Named, Timeline, Verdict};
use crate::fasthash::FastMap;
use crate::instrument::{Arming, Ending, Extra, Following, Instrument, InstrumentInfo, Resolved, ThreadAsk};
use crate::model::{
    ClassInterval, ClassTotal, ClassifyRecord, Interference, LongGap, MeasuredParams, NoiseClass, ThreadClasses,
};
use crate::trace::stream::lock;
use crate::trace::Policies;

/// How long after a gap its events must have been read: an event is in the buffer
/// microseconds after it fires; this covers a reader that started its pass as it was written.
const MARGIN_NS: u64 = 20_000_000;

/// One thread's gaps waiting for the trace, and its totals so far.
struct Thread {
    index: u32,
    cpu: Option<u32>,
    tid: Arc<OnceLock<i32>>,
    /// The only thread on its CPU: the stretches before its gaps are no one else's.
    alone: bool,
    pending: VecDeque<(u64, u64)>,
    /// By what the trace showed: each task or handler put in words once, at its first gap.
    totals: FastMap<Verdict, ClassTotal>,
    longest: Vec<LongGap>,
    /// The interfering events in its gaps, as rtla osnoise counts them, and their time.
    events: Interference,
    /// The interval its last gap fell in, with its gaps per class (count, ns) so far: counted
    /// here, and into the run's map once the next interval begins (most gaps fall in the same
    /// interval as the one before).
    interval: Option<(u64, [(u64, u64); CLASSES])>,
}

/// How many classes there are, counted by their order in [`NoiseClass::ALL`].
const CLASSES: usize = NoiseClass::ALL.len();

impl Thread {
    /// Its gaps of the interval counted so far, into the run's map.
    fn fold(&mut self, into: &mut BTreeMap<(u32, u64, NoiseClass), (u64, u64)>) {
        let Some((index, counts)) = self.interval.take() else { return };
        for (class, (count, ns)) in NoiseClass::ALL.into_iter().zip(counts).filter(|(_, (count, _))| *count > 0) {
            let slot = into.entry((self.index, index, class)).or_default();
            *slot = (slot.0 + count, slot.1 + ns);
        }
    }
}

/// The armed classification: its tracer, and once the threads run, their gaps.
pub struct Classify {
    tracer: ClassifyTracer,
    flow: Option<ClassifyFlow>,
}

/// Arms the classification on the measured CPUs; `Err` says why the gaps go unclassified.
pub fn arm(a: &Arming) -> Result<Box<dyn Instrument>, String> {
    let tracer = ClassifyTracer::arm(a.cpus, a.collector)?;
    Ok(Box::new(Classify { tracer, flow: None }))
}

impl Instrument for Classify {
    fn info(&self) -> &'static InstrumentInfo {
        &super::INFO
    }

    /// Every gap is looked up.
    fn threads(&self) -> ThreadAsk {
        ThreadAsk { every_sample: true, ..ThreadAsk::default() }
    }

    /// Every thread's gaps looked up in the trace of its CPU.
    fn follow(&mut self, run: &Following) {
        let threads = run.threads.iter().map(|t| (t.index, t.cpu, Arc::clone(&t.tid))).collect();
        let read = (self.tracer.timeline(), self.tracer.source(), self.tracer.transport());
        self.flow = Some(ClassifyFlow::new(read, threads, (run.budget_ns, run.envelope_ns)));
    }

    fn samples(&mut self, i: usize, chunk: &[(u64, u64)]) {
        if let Some(f) = self.flow.as_mut() {
            f.push(i, chunk);
        }
    }

    fn settle(&mut self, i: usize, start_ns: u64, end: bool, _out: &mut Resolved) {
        if let Some(f) = self.flow.as_mut() {
            f.resolve(i, start_ns, end);
        }
    }

    /// The gaps classified since the last checkpoint, and the whole so far: a run's params
    /// hold it from its first checkpoint on, so a killed run keeps it.
    fn checkpoint(&mut self, extra: &mut Extra) {
        if let Some(f) = self.flow.as_mut() {
            extra.noise = f.take_intervals();
            extra.records.push((super::INFO.name, serde_json::to_value(f.record()).unwrap_or_default()));
        }
    }

    fn end(&mut self) {
        if self.flow.is_some() {
            self.tracer.feed.catch_up(crate::sys::now_ns() + MARGIN_NS);
        }
    }

    fn record(&self, params: &mut MeasuredParams) {
        if let Some(f) = self.flow.as_ref() {
            params.classify = Some(f.record());
        }
    }

    /// Where the gaps were classified, what ran in them says what steal time could not.
    fn unseen(&self, _end: &Ending) -> anyhow::Result<Option<Option<String>>> {
        Ok(self.flow.as_ref().map(|f| f.record().warning()))
    }
}

pub(super) struct ClassifyFlow {
    timeline: Arc<Mutex<Timeline>>,
    threads: Vec<Thread>,
    /// The rule-of-thumb budget, when the CPU clock is known.
    budget_ns: Option<u64>,
    /// The run's envelope interval: the gaps are also counted per class per interval.
    interval_ns: u64,
    /// Gaps classified since the last checkpoint: (thread, interval, class) → (count, ns).
    intervals: BTreeMap<(u32, u64, NoiseClass), (u64, u64)>,
    /// Where the events come from, and how their records travel, as the run stores them.
    source: String,
    transport: Option<String>,
    policies: Policies,
}

impl ClassifyFlow {
    /// `read`: what the reader reads into, where from and how its records travel; `threads`:
    /// per thread in the runner's order, its number, CPU and id once it has one;
    /// `(budget_ns, interval_ns)`: the rule-of-thumb budget and the run's envelope interval.
    pub(super) fn new(
        (timeline, source, transport): (Arc<Mutex<Timeline>>, String, Option<String>),
        threads: Vec<(u32, Option<u32>, Arc<OnceLock<i32>>)>,
        (budget_ns, interval_ns): (Option<u64>, u64),
    ) -> ClassifyFlow {
        let on = |c: Option<u32>| threads.iter().filter(|t| t.1 == c).count();
        let alone: Vec<bool> = threads.iter().map(|t| on(t.1) == 1).collect();
        let threads = threads
            .into_iter()
            .zip(alone)
            .map(|((index, cpu, tid), alone)| Thread {
                index,
                cpu,
                tid,
                alone,
                pending: VecDeque::new(),
                totals: FastMap::default(),
                longest: Vec::new(),
                events: Interference::default(),
                interval: None,
            })
            .collect();
        let (interval_ns, intervals, policies) = (interval_ns.max(1), BTreeMap::new(), Policies::default());
        ClassifyFlow { timeline, threads, budget_ns, interval_ns, intervals, source, transport, policies }
    }

    /// Gaps (time offset, length) as the thread handed them over.
    pub(super) fn push(&mut self, i: usize, chunk: &[(u64, u64)]) {
        self.threads[i].pending.extend(chunk);
    }

    /// Classifies thread `i`'s gaps the reader has read past; `end`: the run is over and the
    /// reader has read all it will, so what is left is unknown.
    pub(super) fn resolve(&mut self, i: usize, start_ns: u64, end: bool) {
        let budget = self.budget_ns;
        let t = &mut self.threads[i];
        let mut timeline = lock(&self.timeline);
        let caught_up = timeline.caught_up_ns;
        while let Some(&(at, gap)) = t.pending.front() {
            let (t0, t1) = (start_ns + at, start_ns + at + gap);
            let verdict = match (t.cpu, t.tid.get()) {
                (Some(cpu), Some(&tid)) if caught_up > t1 + MARGIN_NS => {
                    let (verdict, events) = classify(&timeline, cpu, tid, t0, t1);
                    t.events.add(&events);
                    verdict
                }
                _ if end => Verdict { class: NoiseClass::Unknown, key: None },
                _ => break,
            };
            t.pending.pop_front();
            let (class, index) = (verdict.class, at / self.interval_ns);
            if t.interval.is_some_and(|(i, _)| i != index) {
                t.fold(&mut self.intervals);
            }
            let slot = &mut t.interval.get_or_insert((index, Default::default())).1[class as usize];
            *slot = (slot.0 + 1, slot.1 + gap);
            // Put in words only when kept: most gaps are not among the longest.
            if t.longest.len() < LongGap::KEPT || t.longest.last().is_some_and(|l| l.ns < gap) {
                let Named { name, detail } = Named::of(&verdict, &self.policies);
                LongGap::keep(&mut t.longest, LongGap { t_ns: at, ns: gap, class, name, detail });
            }
            count(&mut t.totals, verdict, gap, (budget, &self.policies));
            // The thread's next gap begins where this one ended or later: a stretch that ended
            // a stamp's length before this gap's end cannot overlap it (and the next lookup
            // would walk past it again).
            if let Some(cpu) = t.cpu.filter(|_| t.alone) {
                timeline.forget(cpu, t1.saturating_sub(STAMP_NS));
            }
        }
    }

    /// How many of the gaps classified so far went to task `pid`.
    pub(super) fn to(&self, pid: i32) -> u64 {
        let totals = self.threads.iter().flat_map(|t| t.totals.iter());
        totals.filter(|(v, _)| v.key.as_ref().and_then(|k| k.pid) == Some(pid)).map(|(_, t)| t.count).sum()
    }

    /// The gaps classified since the last call, per thread, interval and class.
    pub(super) fn take_intervals(&mut self) -> Vec<ClassInterval> {
        for t in &mut self.threads {
            t.fold(&mut self.intervals);
        }
        let taken = std::mem::take(&mut self.intervals).into_iter();
        taken.map(|((thread, index, class), (count, ns))| ClassInterval { thread, index, class, count, ns }).collect()
    }

    /// What the classification has come to so far: every thread's gaps by class, the most
    /// noise first, and the events the trace lost.
    fn record(&self) -> ClassifyRecord {
        let (lost_events, read, programs) = {
            let t = lock(&self.timeline);
            (t.lost_events, t.records, t.programs)
        };
        let threads = self.threads();
        let (source, transport) = (Some(self.source.clone()), self.transport.clone());
        let records = transport.is_some().then_some(read);
        let (programs_ns, program_runs) = (programs.map(|p| p.ns), programs.map(|p| p.runs));
        let budget_ns = self.budget_ns;
        ClassifyRecord {
            lost_events,
            budget_ns,
            threads,
            skipped: None,
            source,
            transport,
            records,
            programs_ns,
            program_runs,
        }
    }

    /// Every thread's gaps so far by class and name, the most noise first, and the events
    /// that interfered in them.
    fn threads(&self) -> Vec<ThreadClasses> {
        let by_thread = self.threads.iter().map(|t| {
            let mut totals: Vec<ClassTotal> = t.totals.values().cloned().collect();
            totals.sort_by(|a, b| a.class.cmp(&b.class).then(b.ns.cmp(&a.ns)).then(a.name.cmp(&b.name)));
            let (longest, interference) = (t.longest.clone(), Some(t.events));
            ThreadClasses { thread: t.index, totals, longest, interference }
        });
        by_thread.collect()
    }
}

/// Counts one gap `v` of `gap` ns in `totals`; `budget` is the rule-of-thumb budget, and
/// `policies` name a real-time task's policy the first time it is counted.
pub(crate) fn count(
    totals: &mut FastMap<Verdict, ClassTotal>,
    v: Verdict,
    gap: u64,
    (budget, policies): (Option<u64>, &Policies),
) {
    let t = totals.entry(v).or_insert_with_key(|v| {
        let Named { name, detail } = Named::of(v, policies);
        ClassTotal { class: v.class, name, detail, count: 0, ns: 0, max_ns: 0, over_budget: 0 }
    });
    t.count += 1;
    t.ns += gap;
    t.max_ns = t.max_ns.max(gap);
    t.over_budget += u64::from(budget.is_some_and(|b| gap > b));
}
