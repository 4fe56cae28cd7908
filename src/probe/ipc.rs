//! `ipc`: one thread wakes another, and the woken one says how long that took. What rt-tests'
//! ptsematest (a POSIX mutex), sigwaittest (a signal), svsematest (a System V semaphore) and
//! pmqtest (a POSIX message queue) measure, and a bare futex besides.
//!
//! Each measuring thread is a receiver with a sender of its own, which it starts: the sender
//! inherits its CPU and policy (both on one CPU, at one priority, as those tools run a pair with
//! `-a`). A cycle: the receiver pauses for the interval (relative, as those tools sleep), tells
//! the sender to go (a futex, untimed), and waits; the sender reads the clock and wakes it; the
//! receiver reads the clock as its wait returns. The sample is the difference: one way, sender
//! to receiver, as those tools report it, but on CLOCK_MONOTONIC in ns where they read
//! gettimeofday in µs.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::timer::Interval;
use super::{anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, Shape, ThreadCtx};
use crate::model::{IpcParams, IpcVia, Metric, ProbeParams};
use crate::restore::{Change, Guard, Held};
use crate::sys::{self, Futex, MessageQueue, PosixMutex, SysvSemaphore};

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
    in_study: false,
    resume: super::Resume::Settings,
    replay: &[crate::restore::replay::<Semaphores>],
};

/// `-d` when not given, in µs: the rt-tests tools' default distance.
const DISTANCE_US: u64 = 500;

/// How long a wait lasts before the thread looks whether the run is over.
const WAIT: Duration = Duration::from_millis(50);

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

/// What wakes the receiver.
enum Wake {
    /// Locked by the receiver, which waits to lock it again; the sender unlocks it (the mutex's
    /// default kind lets another thread unlock it, as ptsematest relies on).
    Mutex(PosixMutex),
    Signal,
    Sem(SysvSemaphore),
    Mq(MessageQueue),
    Futex(Futex),
}

/// A receiver and its sender.
struct Pair {
    wake: Wake,
    /// CLOCK_MONOTONIC ns the sender read just before it woke the receiver.
    sent_ns: AtomicU64,
    /// 1: the receiver is ready and the sender may wake it.
    go: Futex,
    /// The receiver's thread id, for the signal.
    receiver: AtomicI32,
    done: AtomicBool,
}

impl Pair {
    fn new(via: IpcVia, index: usize) -> Result<Pair> {
        let wake = match via {
            IpcVia::Mutex => Wake::Mutex(PosixMutex::new(false)?),
            IpcVia::Signal => Wake::Signal,
            IpcVia::Sem => Wake::Sem(SysvSemaphore::create(semaphore_key(index))?),
            IpcVia::Mq => Wake::Mq(MessageQueue::new(&index.to_string())?),
            IpcVia::Futex => Wake::Futex(Futex::default()),
        };
        let (sent_ns, go, receiver, done) = Default::default();
        Ok(Pair { wake, sent_ns, go, receiver, done })
    }

    /// The receiver, before its first wait.
    fn set_up_receiver(&self) -> std::io::Result<()> {
        self.receiver.store(sys::thread_id(), Ordering::Release);
        match &self.wake {
            Wake::Mutex(m) => m.lock(),
            Wake::Signal => sys::block_wake_signal(),
            _ => Ok(()),
        }
    }

    /// The receiver waits to be woken, without a limit, as the rt-tests tools wait (a limit
    /// arms a kernel timer the wake-up cancels, which costs the wake-up time): it waits only
    /// once it has let the sender go, and the sender always wakes it. False: the way failed
    /// (its semaphore removed under it), and the run ends.
    fn wait(&self) -> bool {
        match &self.wake {
            Wake::Mutex(m) => m.lock().is_ok(),
            Wake::Signal => loop {
                if sys::wait_wake_signal_forever() {
                    break true;
                }
            },
            Wake::Sem(s) => loop {
                match s.take() {
                    Ok(()) => break true,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break false,
                }
            },
            Wake::Mq(q) => loop {
                match q.receive() {
                    Ok(_) => break true,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break false,
                }
            },
            Wake::Futex(f) => {
                while f.load() == 0 {
                    f.wait(0);
                }
                f.store(0);
                true
            }
        }
    }

    /// The sender wakes the receiver.
    fn wake(&self, sent_ns: u64) {
        // A failure leaves the receiver waiting: its run ends on the watchdog, which says so.
        let _ = match &self.wake {
            Wake::Mutex(m) => {
                m.unlock();
                Ok(())
            }
            Wake::Signal => sys::send_wake_signal(self.receiver.load(Ordering::Acquire)),
            Wake::Sem(s) => s.post(),
            Wake::Mq(q) => q.send(sent_ns),
            Wake::Futex(f) => {
                f.store(1);
                f.wake_one();
                Ok(())
            }
        };
    }

    /// The sender's loop: wait for the go, read the clock, wake the receiver.
    fn send(&self) {
        sys::prefault_stack(64 * 1024);
        loop {
            while self.go.load() == 0 && !self.done.load(Ordering::Acquire) {
                self.go.wait_while(0, WAIT);
            }
            if self.done.load(Ordering::Acquire) {
                return;
            }
            self.go.store(0);
            let now = sys::now_ns();
            self.sent_ns.store(now, Ordering::Release);
            self.wake(now);
        }
    }

    fn release_sender(&self) {
        self.go.store(1);
        self.go.wake_one();
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
        Ok((removed > 0 && !own).then(|| format!("removed {removed} System V semaphore(s) of killed process {owner}")))
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
        if pair.set_up_receiver().is_err() {
            return;
        }
        let pause = (self.params.interval_us + ctx.index as u64 * self.params.distance_us) * 1000;
        let sender = {
            let pair = pair.clone();
            // Started from this thread, it inherits its CPUs and its policy.
            std::thread::Builder::new().name("rtbench-ipc-tx".into()).spawn(move || pair.send())
        };
        let mut taken = 0u64;
        'run: while taken < ctx.loops && !ctx.stopped() {
            sys::sleep_until(sys::now_ns() + pause);
            pair.release_sender();
            if !pair.wait() {
                break 'run;
            }
            let now = sys::now_ns();
            let sent = pair.sent_ns.load(Ordering::Acquire);
            ctx.rec.record(sent.saturating_sub(ctx.start_ns), now.saturating_sub(sent));
            taken += 1;
        }
        pair.done.store(true, Ordering::Release);
        pair.release_sender();
        if let Ok(sender) = sender {
            let _ = sender.join();
        }
    }
}
