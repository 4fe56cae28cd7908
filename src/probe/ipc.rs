//! `ipc`: one thread wakes another, and the woken one says how long that took. What rt-tests'
//! ptsematest (a POSIX mutex), sigwaittest (a signal), svsematest (a System V semaphore) and
//! pmqtest (a POSIX message queue) measure, and a bare futex besides.
//!
//! Each measuring thread is a receiver with a sender of its own, which it starts: the sender
//! inherits its CPU and policy (both on one CPU, at one priority, as those tools run a pair with
//! `-a`). A cycle: the receiver pauses for the interval (relative, as those tools sleep), lets
//! the sender go through the same kind of way back (a second mutex, the other signal, the set's
//! other semaphore, a second queue, as the tools do), and waits; the sender reads the clock,
//! wakes it, and goes back to wait for its next go, which on one CPU at one priority is when the
//! receiver gets the CPU. The receiver reads the clock as its wait returns. The sample is the
//! difference: one way, sender to receiver, as those tools report it, but on CLOCK_MONOTONIC in
//! ns where they read gettimeofday in µs. Every wait is without a limit, as theirs (a limit arms
//! a kernel timer the wake-up cancels, which the sample would count).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::timer::Interval;
use super::{anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{IpcParams, IpcVia, Metric, ProbeParams};
use crate::restore::{Change, Guard, Held};
use crate::sys::{self, Futex, MessageQueue, PosixMutex, SysvSemaphores};

pub const INFO: ProbeInfo = ProbeInfo {
    name: "ipc",
    help: "thread-to-thread wake-up latency through a mutex, signal, semaphore, message queue or futex \
           (ptsematest, sigwaittest, svsematest, pmqtest): woken − sender's clock before the wake",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: None,
    flags: FlagSet::of::<IpcFlags>(),
    supported: anywhere,
    study: super::InStudy::Qualification,
    resume: super::Resume::Settings,
    replay: &[crate::restore::replay::<Semaphores>],
};

/// `-d` when not given, in µs: the rt-tests tools' default distance.
const DISTANCE_US: u64 = 500;

/// `ipc`'s flags.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct IpcFlags {
    /// What the sender wakes the receiver with: mutex (ptsematest), signal (sigwaittest), sem
    /// (svsematest: System V), mq (pmqtest: POSIX message queue), futex
    #[arg(long, value_name = "VIA", default_value = "mutex", value_parser = via_arg())]
    pub via: IpcVia,
    #[command(flatten)]
    pub interval: Interval,
    /// Added to the interval per thread, in µs (the rt-tests tools' -d)
    #[arg(short = 'd', long, value_name = "US", value_parser = crate::parse::us, default_value_t = DISTANCE_US)]
    pub distance: u64,
}

/// `--via`: one of the ways' names.
fn via_arg() -> impl clap::builder::TypedValueParser<Value = IpcVia> {
    use clap::builder::TypedValueParser;
    let names = clap::builder::PossibleValuesParser::new(IpcVia::ALL.map(IpcVia::name));
    names.map(|name: String| IpcVia::parse(&name).expect("one of the names"))
}

impl ProbeFlags for IpcFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let p = IpcParams { via: self.via, interval_us: self.interval.interval, distance_us: self.distance };
        let probe = Ipc { params: p.clone(), pairs: Mutex::new(Vec::new()) };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Ipc(p) })
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Ipc(p) = stored else { return None };
        Some(IpcFlags { via: p.via, interval: Interval { interval: p.interval_us }, distance: p.distance_us })
    }
}

struct Ipc {
    params: IpcParams,
    /// One a measuring thread, made when the run is armed.
    pairs: Mutex<Vec<Arc<Pair>>>,
}

/// One way of waking a thread, one end waiting, the other waking it. A pair has two of the same
/// kind: the measured one, sender to receiver, and the receiver's go back to the sender, as the
/// rt-tests tools have (their sender, like this one, goes back to wait in the same kind of call
/// at once, and on one CPU at one priority the receiver runs only once it has).
enum Way {
    /// Locked from the start; the waiting end waits by locking it (again), the other end unlocks
    /// it (the mutex's default kind lets any thread unlock it, as ptsematest relies on).
    Mutex(PosixMutex),
    /// The waiting end's thread id, once it has blocked the signal.
    Signal {
        sig: libc::c_int,
        waiter: AtomicI32,
    },
    /// One semaphore of the pair's set: 0 the measured way, 1 the way back.
    Sem(Arc<SysvSemaphores>, u16),
    Mq(MessageQueue),
    Futex(Futex),
}

impl Way {
    fn new(via: IpcVia, index: usize, end: u16, set: Option<&Arc<SysvSemaphores>>) -> Result<Way> {
        Ok(match via {
            IpcVia::Mutex => {
                let m = PosixMutex::new(false)?;
                m.lock()?;
                Way::Mutex(m)
            }
            IpcVia::Signal => {
                // sigwaittest's signals: SIGUSR2 to the receiver, SIGUSR1 back.
                let sig = if end == 0 { libc::SIGUSR2 } else { libc::SIGUSR1 };
                Way::Signal { sig, waiter: AtomicI32::new(0) }
            }
            IpcVia::Sem => Way::Sem(set.cloned().context("the pair's semaphores")?, end),
            IpcVia::Mq => Way::Mq(MessageQueue::new(&format!("{index}-{end}"))?),
            IpcVia::Futex => Way::Futex(Futex::default()),
        })
    }

    /// The waiting end, on its own thread, before the other end may wake it.
    fn set_up_waiter(&self) -> std::io::Result<()> {
        match self {
            Way::Signal { sig, waiter } => {
                sys::block_signal(*sig)?;
                waiter.store(sys::thread_id(), Ordering::Release);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether the waiting end is set up, so the other may wake it.
    fn ready(&self) -> bool {
        match self {
            Way::Signal { waiter, .. } => waiter.load(Ordering::Acquire) != 0,
            _ => true,
        }
    }

    /// Waits to be woken, without a limit, as the rt-tests tools wait (a limit arms a kernel
    /// timer the wake-up then cancels). False: the way failed (its semaphores removed under it).
    fn wait(&self) -> bool {
        let retried = |r: &dyn Fn() -> std::io::Result<()>| loop {
            match r() {
                Ok(()) => break true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break false,
            }
        };
        match self {
            Way::Mutex(m) => m.lock().is_ok(),
            Way::Signal { sig, .. } => loop {
                if sys::wait_signal(*sig) {
                    break true;
                }
            },
            Way::Sem(set, i) => retried(&|| set.take(*i)),
            Way::Mq(q) => retried(&|| q.receive().map(|_| ())),
            Way::Futex(f) => {
                while f.load() == 0 {
                    f.wait(0);
                }
                f.store(0);
                true
            }
        }
    }

    /// Wakes the waiting end. A failure leaves it waiting: the run's watchdog then says so.
    fn wake(&self, stamp: u64) {
        let _ = match self {
            Way::Mutex(m) => {
                m.unlock();
                Ok(())
            }
            Way::Signal { sig, waiter } => sys::signal_thread(waiter.load(Ordering::Acquire), *sig),
            Way::Sem(set, i) => set.post(*i),
            Way::Mq(q) => q.send(stamp),
            Way::Futex(f) => {
                f.store(1);
                f.wake_one();
                Ok(())
            }
        };
    }
}

/// A receiver and its sender.
struct Pair {
    /// The measured way: the sender wakes the receiver.
    wake: Way,
    /// The way back: the receiver lets the sender go.
    go: Way,
    /// CLOCK_MONOTONIC ns the sender read just before it woke the receiver.
    sent_ns: AtomicU64,
    done: AtomicBool,
}

impl Pair {
    fn new(via: IpcVia, index: usize) -> Result<Pair> {
        let set = match via {
            IpcVia::Sem => Some(Arc::new(SysvSemaphores::create(semaphore_key(index), 2)?)),
            _ => None,
        };
        let (wake, go) = (Way::new(via, index, 0, set.as_ref())?, Way::new(via, index, 1, set.as_ref())?);
        Ok(Pair { wake, go, sent_ns: AtomicU64::new(0), done: AtomicBool::new(false) })
    }

    /// The sender's loop: wait for the go, read the clock, wake the receiver.
    fn send(&self) {
        sys::prefault_stack(64 * 1024);
        if self.go.set_up_waiter().is_err() {
            return;
        }
        loop {
            if !self.go.wait() || self.done.load(Ordering::Acquire) {
                return;
            }
            let now = sys::now_ns();
            self.sent_ns.store(now, Ordering::Release);
            self.wake.wake(now);
        }
    }
}

/// The System V key of thread `index`'s semaphore: this process's, so the journal names it
/// before it exists and the next command can remove a killed run's.
fn semaphore_key(index: usize) -> i32 {
    (((std::process::id() & 0x3f_ffff) << 9) | (index as u32 & 0x1ff)) as i32
}

/// The System V semaphores a run made: a killed run's outlive it, so they are journalled
/// (by key) before they are made, and removed by the next command.
#[derive(Serialize, Deserialize)]
pub struct Semaphores {
    keys: Vec<i32>,
}

impl Change for Semaphores {
    const KIND: &'static str = "ipc-semaphores";

    fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
        let mut removed = 0;
        for &key in &self.keys {
            match sys::remove_sysv_semaphore(key) {
                Ok(true) => removed += 1,
                Ok(false) => {}
                Err(e) => return Err(format!("could not remove System V semaphore key {key:#x}: {e}")),
            }
        }
        let own = owner == std::process::id();
        Ok((removed > 0 && !own)
            .then(|| format!("removed {removed} System V semaphore set(s) of killed process {owner}")))
    }
}

impl Probe for Ipc {
    fn step_ns(&self) -> u64 {
        self.params.interval_us * 1000
    }

    /// A pair per measuring thread; the semaphores journalled before they are made.
    fn arm(&self, cpus: &[Option<usize>], _collector: &[usize]) -> Result<Option<Box<dyn Guard>>> {
        let via = self.params.via;
        if via == IpcVia::Sem && cpus.len() > 512 {
            anyhow::bail!("ipc --via sem: at most 512 threads (each has a semaphore key of its own)");
        }
        let held = match via {
            IpcVia::Sem => {
                let keys = (0..cpus.len()).map(semaphore_key).collect();
                Some(Held::journalled(Semaphores { keys }).context("ipc --via sem: the journal")?)
            }
            _ => None,
        };
        let pairs: Result<Vec<Arc<Pair>>> = (0..cpus.len())
            .map(|i| Pair::new(via, i).map(Arc::new).with_context(|| format!("ipc --via {}", via.name())))
            .collect();
        *self.pairs.lock().unwrap_or_else(|e| e.into_inner()) = pairs?;
        Ok(held.map(|h| Box::new(h) as Box<dyn Guard>))
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let pair = self.pairs.lock().unwrap_or_else(|e| e.into_inner()).get(ctx.index).cloned();
        let Some(pair) = pair else { return };
        if pair.wake.set_up_waiter().is_err() {
            return;
        }
        let pause = (self.params.interval_us + ctx.index as u64 * self.params.distance_us) * 1000;
        let sender = {
            let pair = pair.clone();
            // Started from this thread, it inherits its CPUs and its policy.
            std::thread::Builder::new().name("rtbench-ipc-tx".into()).spawn(move || pair.send())
        };
        while !pair.go.ready() {
            sys::sleep_until(sys::now_ns() + 100_000);
        }
        let mut taken = 0u64;
        while taken < ctx.loops && !ctx.stopped() {
            sys::sleep_until(sys::now_ns() + pause);
            pair.go.wake(0);
            if !pair.wake.wait() {
                break;
            }
            let now = sys::now_ns();
            let sent = pair.sent_ns.load(Ordering::Acquire);
            ctx.rec.record(sent.saturating_sub(ctx.start_ns), now.saturating_sub(sent));
            taken += 1;
        }
        pair.done.store(true, Ordering::Release);
        pair.go.wake(0);
        if let Ok(sender) = sender {
            let _ = sender.join();
        }
    }
}
