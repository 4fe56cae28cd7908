//! Who ran instead: each wait of a watched thread longer than a bound, looked up in the trace
//! of its CPU (the classification `noise --classify` rides on) from its wake-up to its switch
//! in, and classified as a noise gap is: the interrupt, softirq or task that took most of it,
//! or nothing the kernel saw (the hypervisor, on a virtual machine).

use std::collections::BTreeMap;

use crate::fasthash::FastMap;
use crate::instrument::classify::{self, ClassifyTracer, Named, Verdict};
use crate::model::{ClassTotal, LongGap, NoiseClass, RanInstead};
use crate::trace::stream::lock;
use crate::trace::Policies;

/// How long after a wait its CPU's events must have been read (as the classification's).
const MARGIN_NS: u64 = 20_000_000;

/// One wait over the bound: the thread, the CPU it ran on at its end, from its wake-up to its
/// switch in (CLOCK_MONOTONIC ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Late {
    pub tid: u32,
    pub cpu: u32,
    pub from: u64,
    pub to: u64,
}

/// One thread's late waits so far, by what ran in them.
#[derive(Default)]
struct Thread {
    count: u64,
    totals: FastMap<Verdict, ClassTotal>,
    longest: Vec<LongGap>,
}

/// The classification's tracer on the CPUs the watched threads may wait on, and each thread's
/// late waits looked up in it.
pub struct Instead {
    tracer: ClassifyTracer,
    above_ns: u64,
    /// The watch's start, CLOCK_MONOTONIC ns: a long wait's time is given from it.
    start_ns: u64,
    pending: Vec<Late>,
    threads: BTreeMap<u32, Thread>,
    policies: Policies,
}

impl Instead {
    /// Follows `cpus` (read on `on`) for waits longer than `above_ns`; `Err` says why not.
    pub fn arm(cpus: &[usize], on: &[usize], above_ns: u64, start_ns: u64) -> Result<Instead, String> {
        let tracer = ClassifyTracer::arm(cpus, on)?;
        let (pending, threads, policies) = (Vec::new(), BTreeMap::new(), Policies::default());
        Ok(Instead { tracer, above_ns, start_ns, pending, threads, policies })
    }

    /// Takes `late` waits and classifies those whose CPU's events have been read; at the `end`,
    /// every one (after waiting for the reader), unknown when its events never came.
    pub fn resolve(&mut self, late: Vec<Late>, end: bool) {
        self.pending.extend(late);
        if end {
            self.tracer.catch_up(crate::sys::now_ns() + MARGIN_NS);
        }
        let timeline = self.tracer.timeline();
        let timeline = lock(&timeline);
        let caught_up = timeline.caught_up_ns;
        let mut left = Vec::new();
        for w in std::mem::take(&mut self.pending) {
            let verdict = match caught_up > w.to + MARGIN_NS {
                true => classify::classify(&timeline, w.cpu, w.tid as i32, w.from, w.to).0,
                false if end => Verdict { class: NoiseClass::Unknown, key: None },
                false => {
                    left.push(w);
                    continue;
                }
            };
            let t = self.threads.entry(w.tid).or_default();
            let ns = w.to - w.from;
            t.count += 1;
            if t.longest.len() < LongGap::KEPT || t.longest.last().is_some_and(|l| l.ns < ns) {
                let Named { name, detail } = Named::of(&verdict, &self.policies);
                let at = w.from.saturating_sub(self.start_ns);
                LongGap::keep(&mut t.longest, LongGap { t_ns: at, ns, class: verdict.class, name, detail });
            }
            classify::count(&mut t.totals, verdict, ns, (None, &self.policies));
        }
        self.pending = left;
    }

    /// Thread `tid`'s late waits so far, by what ran instead.
    pub fn of(&self, tid: u32) -> RanInstead {
        let (count, mut totals, longest) = match self.threads.get(&tid) {
            Some(t) => (t.count, t.totals.values().cloned().collect(), t.longest.clone()),
            None => (0, Vec::new(), Vec::new()),
        };
        totals.sort_by(|a: &ClassTotal, b| a.class.cmp(&b.class).then(b.ns.cmp(&a.ns)).then(a.name.cmp(&b.name)));
        let source = self.tracer.source();
        RanInstead { above_ns: self.above_ns, count, totals, longest, source }
    }
}
