//! The measuring threads: each enters the shield if its CPU is shielded, pins itself, takes its
//! real-time policy, and runs the probe into its own recorder until the stop flag or its loop
//! count; the runner collects from each through its collector, never stopping it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use anyhow::Result;

use super::flow::ThreadTotals;
use super::rt;
use super::setup::Admit;
use crate::config::{RunConfig, ThreadPlan};
use crate::instrument::ThreadAsk;
use crate::model::{Policy, ThreadRan};
use crate::probe::ThreadCtx;
use crate::recorder::{self, Buffer};
use crate::stats::Stats;
use crate::sys;

/// A thread's last samples and what went wrong with its placement, if anything.
type Ended = (Box<Buffer>, Option<String>);

/// The running measuring threads.
pub(super) struct Threads {
    pub(super) handles: Vec<JoinHandle<Ended>>,
    /// How many are done measuring; they may still be handing over their last samples.
    pub(super) ended: Arc<AtomicUsize>,
}

impl Threads {
    pub(super) fn all_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst) == self.handles.len()
    }

    /// Waits for every thread to finish, doing `meanwhile` every millisecond (a thread may be
    /// waiting to hand over samples), as long as one ends at least every `bound`; returns the
    /// indices of those still running when none has for that long. On a starved machine the
    /// threads end one after another, slowly: in a 72-vCPU guest emulated on 2 host CPUs, all 72
    /// were still running 1.1 s after the stop, and the run failed.
    pub(super) fn wait_finished(&self, bound: std::time::Duration, mut meanwhile: impl FnMut()) -> Vec<usize> {
        let running = || self.handles.iter().enumerate().filter(|(_, h)| !h.is_finished()).map(|(i, _)| i);
        let (mut left, mut until) = (running().count(), std::time::Instant::now() + bound);
        while left > 0 && std::time::Instant::now() < until {
            meanwhile();
            std::thread::sleep(std::time::Duration::from_millis(1));
            let now = running().count();
            if now < left {
                (left, until) = (now, std::time::Instant::now() + bound);
            }
        }
        running().collect()
    }
}

/// What every thread is started with.
pub(super) struct Start<'a> {
    pub(super) grant: &'a rt::Grant,
    pub(super) admit: Option<&'a Admit>,
    /// When the threads were told to stop (CLOCK_MONOTONIC ns), 0 until then.
    pub(super) stop: &'a Arc<AtomicU64>,
    /// CLOCK_MONOTONIC ns the threads' time offsets count from.
    pub(super) start_ns: u64,
    /// What the instruments ask of the threads.
    pub(super) ask: &'a ThreadAsk,
}

/// Starts one measuring thread per plan; returns them and the runner's totals of each.
pub(super) fn spawn(cfg: &RunConfig, how: &Start) -> Result<(Threads, Vec<ThreadTotals>)> {
    let ended = Arc::new(AtomicUsize::new(0));
    let mut totals = Vec::new();
    let mut handles = Vec::new();
    for plan in cfg.threads.iter() {
        // An instrument that looks at every sample has them all handed over.
        let raw = if cfg.output.samples.is_some() || how.ask.every_sample {
            recorder::Raw::All
        } else {
            recorder::Raw::First(crate::store::RAW_IN_STORE)
        };
        let (mut rec, collector) = recorder::pair(cfg.storage.envelope_ns, raw);
        if let Some((threshold_ns, watch)) = &how.ask.watch {
            rec.watch_breaches(*threshold_ns, Arc::clone(watch), plan.index as u32);
        }
        let (ran, tid) = (Arc::new(OnceLock::new()), Arc::new(OnceLock::new()));
        let (ran_here, tid_here) = (Arc::clone(&ran), Arc::clone(&tid));
        totals.push(ThreadTotals {
            index: plan.index,
            cpu: plan.cpu,
            stats: Stats::default(),
            last: 0,
            collector,
            ran,
            tid,
        });
        // A thread on a shielded CPU enters the shield's cpuset first: only there may it pin.
        let admit = how.admit.filter(|a| plan.cpu.is_some_and(|c| a.cpus.contains(&c))).map(|a| a.tasks.clone());
        let (plan, stop, ended) = (*plan, Arc::clone(how.stop), Arc::clone(&ended));
        let (probe, loops) = (Arc::clone(&cfg.probe), cfg.loops.unwrap_or(u64::MAX));
        let (policy, priority) =
            if probe.measures_itself() { (how.grant.policy, how.grant.priority) } else { (Policy::Other, 0) };
        let start_ns = how.start_ns;
        let body = move || {
            let _ = tid_here.set(sys::gettid());
            let problem = match place(plan, admit, policy, priority) {
                // The policy's guard is held until the thread has measured.
                Ok(entered) => match probe.set_up_thread(plan.index) {
                    Ok(()) => {
                        // How it runs once the probe has set it up too (SCHED_DEADLINE).
                        if let Some((policy, priority)) = rt::scheduling_now().or(entered.ran) {
                            let (thread, timer_slack_ns) = (plan.index as u32, entered.timer_slack_ns);
                            let _ = ran_here.set(ThreadRan { thread, policy, priority, timer_slack_ns });
                        }
                        let mut ctx = ThreadCtx::new(&mut rec, plan.index, start_ns, loops, &stop);
                        probe.run(&mut ctx);
                        entered.problem
                    }
                    Err(why) => Some(format!("thread {} measured nothing: {why}", plan.index)),
                },
                Err(said) => Some(said),
            };
            // The runner sleeps until something is due: an ended thread is.
            ended.fetch_add(1, Ordering::SeqCst);
            sys::wake();
            (rec.finish(), problem)
        };
        handles.push(std::thread::Builder::new().name(format!("rtbench-{}", plan.index)).spawn(body)?);
    }
    Ok((Threads { handles, ended }, totals))
}

/// Puts the calling thread where its plan says. Err: it must measure nothing (it could not be
/// on its CPU, and the wrong CPU's numbers would be worse than none); the run goes on with the
/// others.
fn place(plan: ThreadPlan, admit: Option<PathBuf>, policy: Policy, priority: i32) -> Result<rt::Entered, String> {
    if let Some(Err(e)) = admit.map(|file| crate::shield::enter(&file)) {
        return Err(format!("thread {} measured nothing: it could not enter the shield: {e}", plan.index));
    }
    let entered = rt::enter_thread(plan.cpu, policy, priority);
    if let Some(why) = entered.unpinned {
        return Err(format!("thread {} measured nothing: {why}", plan.index));
    }
    Ok(entered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Issue 29: the runner waited for its measuring threads without a bound, so a probe that
    /// ignored the stop held the command for ever. A thread that does not end is named.
    #[test]
    fn a_thread_that_ignores_the_stop_is_waited_for_no_longer_than_the_bound() {
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let ignores = std::thread::spawn(move || -> Ended {
            let _ = held.recv();
            (Box::default(), None)
        });
        let ends = std::thread::spawn(|| -> Ended { (Box::default(), None) });
        let threads = Threads { handles: vec![ignores, ends], ended: Arc::default() };
        let (started, mut drained) = (Instant::now(), 0);
        let stuck = threads.wait_finished(Duration::from_millis(300), || drained += 1);
        assert_eq!(stuck, [0], "the thread that ignores the stop is named, the other is not");
        assert!(started.elapsed() < Duration::from_secs(20), "waited {:?}", started.elapsed());
        assert!(drained > 0, "samples are drained while waiting");
        drop(hold);
    }

    #[test]
    fn threads_that_keep_ending_are_waited_for_past_the_bound() {
        let slow = |n: u64| {
            std::thread::spawn(move || -> Ended {
                std::thread::sleep(Duration::from_millis(150 * n));
                (Box::default(), None)
            })
        };
        let threads = Threads { handles: (1..=4).map(slow).collect(), ended: Arc::default() };
        let started = Instant::now();
        let stuck = threads.wait_finished(Duration::from_millis(400), || {});
        assert!(stuck.is_empty(), "each ended within the bound of the one before: {stuck:?}");
        assert!(started.elapsed() >= Duration::from_millis(600), "the last ended after the first bound");
    }
}
