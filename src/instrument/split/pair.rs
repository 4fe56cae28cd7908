//! Each sample of a measuring thread paired with the traced expiry of its own sleep: the
//! sample due at `start + t` matches the expiry due at exactly that time. A sample is resolved
//! once its expiry is there, or once the reader has read past the sample's wake-up with no
//! expiry for it (then it is unmatched: counted, never guessed).

use std::collections::VecDeque;

use super::aggregate::BOUND_NS;
use super::expiry::Expiry;
use crate::model::IrqSplit;

/// How long after a wake-up its expiry must have been read: the expiry comes before the
/// wake-up, and an event is in the buffer microseconds after it fires; this covers a reader
/// that started its pass just as the event was being written.
pub const MARGIN_NS: u64 = 20_000_000;
/// Matched samples remembered for a breach that asks after its own (due time, IRQ latency)
/// once the pairing has consumed its expiry: seconds of them at the highest rates.
const RECENT: usize = 1 << 14;

/// What became of a sample, as a breach asks after it once it is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Paired with its expiry: the IRQ latency.
    Matched(u64),
    /// No record, the kernel counting the expiries below this many ns: its IRQ latency was
    /// below it.
    Below(u64),
    /// No record (or no longer remembered).
    Unmatched,
}

/// One thread's samples waiting for their expiry, and the split of those resolved.
#[derive(Debug)]
pub struct Pairing {
    pending: VecDeque<(u64, u64)>,
    pub split: IrqSplit,
    /// What became of the last samples matched or known below the threshold: (due, what),
    /// oldest first.
    recent: VecDeque<(u64, Settled)>,
    /// The due time of the last sample settled, matched or not; every one after `give_up`.
    settled_to: u64,
    /// When the kernel began to count this thread's expiries (CLOCK_MONOTONIC ns; `u64::MAX`
    /// while it does not): a sample due since then and below the threshold can have no record,
    /// and is settled as it comes instead of waiting for the reader to read past it.
    pub counted_from_ns: u64,
    /// Below which IRQ latency the kernel counts an expiry rather than hand it on: the bound,
    /// or a breach threshold below it (a breach's own sample keeps its record).
    pub counted_below_ns: u64,
    /// Samples settled with no record while `aggregate`.
    pub aggregated: u64,
}

impl Default for Pairing {
    fn default() -> Pairing {
        let (pending, split, recent) = (VecDeque::new(), IrqSplit::default(), VecDeque::new());
        let (counted_from_ns, counted_below_ns) = (u64::MAX, BOUND_NS);
        Pairing { pending, split, recent, settled_to: 0, counted_from_ns, counted_below_ns, aggregated: 0 }
    }
}

/// Samples resolved, in order, each with its IRQ latency (None: unmatched).
#[derive(Debug, Default)]
pub struct Resolved {
    pub samples: Vec<(u64, u64)>,
    pub irq: Vec<Option<u64>>,
}

impl Resolved {
    pub fn clear(&mut self) {
        self.samples.clear();
        self.irq.clear();
    }
}

impl Pairing {
    /// Whether the kernel aggregates the expiries below its threshold: a sample with no record
    /// of its own was counted there (or lost: the histogram's count tells), not unmatched.
    pub fn aggregate(&self) -> bool {
        self.counted_from_ns != u64::MAX
    }

    /// Samples (time offset, latency) as the thread handed them over.
    pub fn push(&mut self, chunk: &[(u64, u64)]) {
        self.pending.extend(chunk);
    }

    /// Resolves what can be: `start_ns` is the run's start, `expiries` the thread's as read,
    /// `caught_up_ns` how far the reader has read. Consumed expiries are removed.
    pub fn resolve(&mut self, start_ns: u64, expiries: &mut VecDeque<Expiry>, caught_up_ns: u64, out: &mut Resolved) {
        loop {
            self.settle_counted(start_ns, out);
            let Some(&(t, latency)) = self.pending.front() else { break };
            let due = start_ns + t;
            // Older expiries have no sample left to match: the samples come in order.
            while expiries.front().is_some_and(|e| e.due_ns < due) {
                expiries.pop_front();
            }
            let irq = match expiries.front() {
                Some(e) if e.due_ns == due => {
                    let irq = e.ran_ns.saturating_sub(due);
                    expiries.pop_front();
                    self.remember(due, Settled::Matched(irq));
                    Some(irq)
                }
                _ if caught_up_ns > due + latency + MARGIN_NS => {
                    if due >= self.counted_from_ns {
                        self.remember(due, Settled::Below(self.counted_below_ns));
                    }
                    None
                }
                _ => break,
            };
            self.pending.pop_front();
            self.settled_to = due;
            self.settle(t, latency, irq, out);
        }
    }

    /// Settles in one go the samples at the front that the kernel counted: due since it began
    /// and below its threshold (their expiry ran before their wake-up, so below it too), so
    /// with no record to wait for. They are most samples in the aggregate mode, and one by one
    /// they cost the collector more than the rest of the split.
    fn settle_counted(&mut self, start_ns: u64, out: &mut Resolved) {
        if !self.aggregate() {
            return;
        }
        let (from, below) = (self.counted_from_ns, self.counted_below_ns);
        let n = self.pending.iter().take_while(|&&(t, latency)| start_ns + t >= from && latency < below).count();
        if n == 0 {
            return;
        }
        self.settled_to = start_ns + self.pending[n - 1].0;
        // As slices: a drain's iterator is copied element by element.
        let (front, back) = self.pending.as_slices();
        let first = n.min(front.len());
        out.samples.extend_from_slice(&front[..first]);
        out.samples.extend_from_slice(&back[..n - first]);
        self.pending.drain(..n);
        out.irq.resize(out.irq.len() + n, None);
        self.aggregated += n as u64;
    }

    /// Keeps what became of the sample due at `due` for a breach that may ask after it.
    fn remember(&mut self, due: u64, settled: Settled) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((due, settled));
    }

    /// The sample due at `due_ns`: None while it is not settled (not handed over yet, or
    /// waiting for its expiry), then what became of it (unmatched once no longer remembered).
    pub fn split_of(&self, due_ns: u64) -> Option<Settled> {
        (self.settled_to >= due_ns)
            .then(|| self.recent.iter().rev().find(|(due, _)| *due == due_ns).map_or(Settled::Unmatched, |(_, s)| *s))
    }

    /// Ends the pairing: what is still pending is unmatched.
    pub fn give_up(&mut self, out: &mut Resolved) {
        self.settled_to = u64::MAX;
        while let Some((t, latency)) = self.pending.pop_front() {
            self.settle(t, latency, None, out);
        }
    }

    fn settle(&mut self, t: u64, latency: u64, irq: Option<u64>, out: &mut Resolved) {
        match irq {
            Some(ns) => self.split.stats.record(ns),
            None if self.aggregate() => self.aggregated += 1,
            None => self.split.unmatched += 1,
        }
        out.samples.push((t, latency));
        out.irq.push(irq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: u64 = 1_000_000_000;

    fn expiry(due_ns: u64, irq: u64) -> Expiry {
        Expiry { due_ns: START + due_ns, ran_ns: START + due_ns + irq }
    }

    /// A pairing handed two samples, due 1 and 2 ms in, and the reader's queue of `expiries`.
    fn two_samples(expiries: &[Expiry]) -> (Pairing, Resolved, VecDeque<Expiry>) {
        let mut p = Pairing::default();
        p.push(&[(1_000_000, 9_000), (2_000_000, 7_000)]);
        (p, Resolved::default(), expiries.iter().copied().collect())
    }

    #[test]
    fn a_sample_takes_the_expiry_due_at_its_own_time_and_waits_for_it() {
        let mut p = Pairing::default();
        let mut out = Resolved::default();
        p.push(&[(1_000_000, 9_000), (2_000_000, 7_000), (3_000_000, 5_000)]);
        // A stale expiry (a sleep with no sample) and the first two samples' own.
        let mut ex: VecDeque<Expiry> = [expiry(500_000, 1), expiry(1_000_000, 4_000), expiry(2_000_000, 6_500)].into();
        p.resolve(START, &mut ex, START + 2_500_000, &mut out);
        assert_eq!(out.irq, [Some(4_000), Some(6_500)], "the third waits: the reader has not read past it");
        assert!(ex.is_empty());
        assert_eq!((p.split.stats.count, p.split.unmatched, p.split.stats.max), (2, 0, 6_500));
        p.resolve(START, &mut ex, START + 3_000_000 + 5_000 + MARGIN_NS + 1, &mut out);
        assert_eq!(out.irq, [Some(4_000), Some(6_500), None], "read past its wake-up with no expiry: unmatched");
        assert_eq!(out.samples.len(), 3);
        assert_eq!((p.split.stats.count, p.split.unmatched), (2, 1));
    }

    /// A breach waits until its sample is settled, then finds its split, however late its
    /// window was taken; an unmatched sample has none to find.
    #[test]
    fn a_breach_learns_its_sample_s_split_once_the_pairing_has_settled_it() {
        let (mut p, mut out, mut ex) = two_samples(&[expiry(1_000_000, 4_000)]);
        p.resolve(START, &mut ex, START + 2_000_000 + 7_000 + MARGIN_NS + 1, &mut out);
        assert!(ex.is_empty(), "the expiry is consumed by the pairing");
        assert_eq!(p.split_of(START + 1_000_000), Some(Settled::Matched(4_000)));
        assert_eq!(p.split_of(START + 2_000_000), Some(Settled::Unmatched), "settled, unmatched");
        assert_eq!(p.split_of(START + 3_000_000), None, "not handed over yet: the breach waits");
        p.push(&[(3_000_000, 5_000)]);
        p.resolve(START, &mut ex, START + 3_000_000, &mut out);
        assert_eq!(p.split_of(START + 3_000_000), None, "waiting for its expiry");
        p.give_up(&mut out);
        assert_eq!(p.split_of(START + 3_000_000), Some(Settled::Unmatched), "the end settles it");
    }

    /// Once the kernel counts the expiries below its bound, a sample below it has no record
    /// to wait for; one above it, or due before the counting began, still waits for its own.
    #[test]
    fn an_aggregated_sample_below_the_bound_is_settled_at_once_the_others_wait() {
        let mut p = Pairing { counted_from_ns: START + 1_500_000, ..Pairing::default() };
        let mut out = Resolved::default();
        p.push(&[(2_000_000, 9_000), (3_000_000, BOUND_NS + 5), (4_000_000, 8_000)]);
        p.resolve(START, &mut VecDeque::new(), START, &mut out);
        assert_eq!(out.irq, [None], "the first settled, the second waits for its record, the third behind it");
        assert_eq!(p.aggregated, 1);
        let mut ex: VecDeque<Expiry> = [expiry(3_000_000, BOUND_NS)].into();
        p.resolve(START, &mut ex, START, &mut out);
        assert_eq!(out.irq, [None, Some(BOUND_NS), None]);
        assert_eq!((p.split.stats.count, p.aggregated, p.split.unmatched), (1, 2, 0));
        // Past its bound with no record once the reader is past it: known to be below it.
        p.push(&[(5_000_000, BOUND_NS + 7)]);
        p.resolve(START, &mut VecDeque::new(), START + 6_000_000 + BOUND_NS + MARGIN_NS, &mut out);
        assert_eq!(p.split_of(START + 5_000_000), Some(Settled::Below(BOUND_NS)));
        assert_eq!(p.split_of(START + 3_000_000), Some(Settled::Matched(BOUND_NS)));
        // Due before the counting began: its record may still come.
        let mut early = Pairing { counted_from_ns: START + 1_500_000, ..Pairing::default() };
        early.push(&[(1_000_000, 9_000)]);
        early.resolve(START, &mut VecDeque::new(), START + 1_100_000, &mut out);
        assert_eq!(early.aggregated, 0, "waits for the reader");
    }

    /// Counted samples settled a run at a time come out whole and in order, however the queue
    /// holding them has wrapped around its buffer.
    #[test]
    fn counted_samples_settle_in_order_across_the_queue_s_wrap() {
        let mut p = Pairing { counted_from_ns: START, ..Pairing::default() };
        let (mut out, mut ex) = (Resolved::default(), VecDeque::new());
        let sample = |k: u64| (k * 1_000, if k % 50 == 49 { BOUND_NS + k } else { k });
        let mut want = Vec::new();
        for round in 0..20u64 {
            let chunk: Vec<(u64, u64)> = (round * 37..(round + 1) * 37).map(sample).collect();
            p.push(&chunk);
            want.extend(chunk);
            // The reader read past everything handed over so far: the slow ones settle too.
            p.resolve(START, &mut ex, START + (round + 1) * 37_000 + 2 * BOUND_NS + MARGIN_NS, &mut out);
        }
        assert_eq!(out.samples, want);
        assert_eq!(out.irq.len(), want.len());
        assert_eq!(p.aggregated, want.len() as u64, "all counted, or known to be below the bound");
    }

    #[test]
    fn an_expiry_of_another_time_is_never_taken_and_the_end_leaves_nothing_pending() {
        let (mut p, mut out, mut ex) = two_samples(&[expiry(1_000_001, 3)]);
        p.resolve(START, &mut ex, START + 1_500_000, &mut out);
        assert!(out.irq.is_empty(), "1 ns off is not the sample's expiry, and the reader is not past it yet");
        p.give_up(&mut out);
        assert_eq!(out.irq, [None, None]);
        assert_eq!((p.split.stats.count, p.split.unmatched), (0, 2));
        assert_eq!(p.split.matched_fraction(), 0.0);
    }
}
