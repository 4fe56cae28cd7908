//! The runner's side of `--split`: each thread's samples held until the split's reader has read
//! their expiries, then handed to the sinks with their IRQ part, and the IRQ statistics kept
//! beside the thread's own.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::instrument::split::pair::{Pairing, Resolved};
use crate::instrument::split::{lock, Seen, SplitTracer};
use crate::model::IrqSplit;

/// How long the end of a run waits for the reader to read the last expiries.
const LAST_READ: Duration = Duration::from_secs(1);
/// How far behind the reader may be before the samples it has not read are unmatched: memory
/// stays bounded over a long run whatever the reader does.
const STALE: Duration = Duration::from_secs(5);

pub(crate) struct SplitFlow {
    seen: Arc<Mutex<Seen>>,
    /// Per thread, in the runner's order: its thread id, once it has one, and its pairing.
    threads: Vec<(Arc<OnceLock<i32>>, Pairing)>,
    /// Reused between resolutions.
    pub(crate) out: Resolved,
}

impl SplitFlow {
    pub(crate) fn new(tracer: &SplitTracer, tids: Vec<Arc<OnceLock<i32>>>) -> SplitFlow {
        SplitFlow::reading(tracer.seen(), tids)
    }

    fn reading(seen: Arc<Mutex<Seen>>, tids: Vec<Arc<OnceLock<i32>>>) -> SplitFlow {
        let threads = tids.into_iter().map(|t| (t, Pairing::default())).collect();
        SplitFlow { seen, threads, out: Resolved::default() }
    }

    pub(crate) fn push(&mut self, i: usize, chunk: &[(u64, u64)]) {
        self.threads[i].1.push(chunk);
    }

    /// Resolves thread `i`'s samples into `self.out` (cleared first); `end`: the run is over
    /// and the reader has read all it will, so what is left is unmatched.
    pub(crate) fn resolve(&mut self, i: usize, start_ns: u64, end: bool) {
        self.out.clear();
        let (tid, pairing) = &mut self.threads[i];
        if let Some(tid) = tid.get() {
            let mut seen = lock(&self.seen);
            // A reader that stopped (or fell far behind) must not make the samples wait for
            // ever: what it has not read within STALE is unmatched.
            let caught_up = seen.caught_up_ns.max(crate::sys::now_ns().saturating_sub(STALE.as_nanos() as u64));
            let expiries = seen.by_pid.entry(*tid).or_default();
            pairing.resolve(start_ns, expiries, caught_up, &mut self.out);
        }
        if end {
            pairing.give_up(&mut self.out);
        }
    }

    /// Waits (up to a bound) for the reader to have read everything up to now.
    pub(crate) fn await_reader(&self) {
        let (now, since) = (crate::sys::now_ns(), Instant::now());
        while lock(&self.seen).caught_up_ns < now && since.elapsed() < LAST_READ {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Thread `i`'s sample due at `due_ns` (CLOCK_MONOTONIC): None while the pairing has not
    /// settled it, then its IRQ latency if it was matched.
    pub(crate) fn split_of(&self, i: usize, due_ns: u64) -> Option<Option<u64>> {
        self.threads[i].1.split_of(due_ns)
    }

    pub(crate) fn irq(&self, i: usize) -> IrqSplit {
        self.threads[i].1.split.clone()
    }

    /// A new window counts from nothing.
    pub(crate) fn reset(&mut self) {
        for (_, p) in &mut self.threads {
            p.split = IrqSplit::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that never reads (it stopped on an error) would keep every sample of a
    /// monitor's days in memory: past STALE they are unmatched, and a recent one still waits.
    #[test]
    fn samples_a_stopped_reader_never_read_are_unmatched_after_a_while_not_kept() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let tid = Arc::new(OnceLock::new());
        tid.set(7).unwrap();
        let mut flow = SplitFlow::reading(seen, vec![tid]);
        let now = crate::sys::now_ns();
        let start = now - 2 * STALE.as_nanos() as u64;
        flow.push(0, &[(1_000_000, 50_000), (2 * STALE.as_nanos() as u64 - 1_000_000, 50_000)]);
        flow.resolve(0, start, false);
        assert_eq!(flow.out.irq, [None], "the old sample is settled unmatched, the recent one waits");
        assert_eq!(flow.irq(0).unmatched, 1);
    }
}
