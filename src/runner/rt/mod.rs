//! Real-time setup: each system change is a guard that puts the old state back when dropped,
//! held by the session for as long as it runs. Each is a [`Held`] change, unjournalled: the end
//! of the process undoes them all (memory lock, descriptor, thread policies), so none is left
//! for the next command to replay; their kinds are in [`changes`].

mod changes;

use std::io::Write;
use std::marker::PhantomData;

use crate::model::{CollectorChoice, CollectorRecord, Lacked, Policy};
use crate::restore::{Guard, Held};
use crate::session::Session;
use crate::sys;
use changes::{Affinity, LatencyRequest, Locked, ThreadScheduling};

/// All current and future pages locked in memory; unlocked on drop.
pub struct MemoryLock {
    _held: Held<Locked>,
}

impl MemoryLock {
    pub fn acquire() -> std::io::Result<MemoryLock> {
        sys::lock_memory()?;
        Ok(MemoryLock { _held: Held::unjournalled(Locked) })
    }
}

impl Guard for MemoryLock {
    fn name(&self) -> &'static str {
        "memory lock"
    }
}

/// `/dev/cpu_dma_latency` held at 0: the kernel keeps CPUs out of deep idle states for as long
/// as the descriptor is open; closing it on drop gives them back.
pub struct DmaLatency {
    _held: Held<LatencyRequest>,
}

impl DmaLatency {
    pub fn hold() -> std::io::Result<DmaLatency> {
        let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency")?;
        f.write_all(&0i32.to_ne_bytes())?;
        Ok(DmaLatency { _held: Held::unjournalled(LatencyRequest { open: std::cell::Cell::new(Some(f)) }) })
    }
}

impl Guard for DmaLatency {
    fn name(&self) -> &'static str {
        "/dev/cpu_dma_latency"
    }
}

/// What a session got of what it asked for.
#[derive(Clone, Debug)]
pub struct Grant {
    /// The policy the measuring threads will run at: what was asked, or SCHED_OTHER when a
    /// real-time policy was refused.
    pub policy: Policy,
    pub priority: i32,
    pub memory_locked: bool,
    pub dma_latency_held: bool,
    /// What could not be had, in words for the run's warnings.
    pub warnings: Vec<String>,
}

impl Grant {
    /// What was asked for and not had (a policy or memory lock not asked for is not lacked).
    pub fn lacked(&self, asked: Policy, mlock: bool) -> Vec<Lacked> {
        let mut lacked = Vec::new();
        if asked != Policy::Other && self.policy == Policy::Other {
            lacked.push(Lacked::RealTimePolicy);
        }
        if mlock && !self.memory_locked {
            lacked.push(Lacked::MemoryLock);
        }
        if !self.dma_latency_held {
            lacked.push(Lacked::CpuDmaLatency);
        }
        lacked
    }

    /// True when the measuring threads run at a real-time priority.
    pub fn rt_priority(&self) -> bool {
        self.policy != Policy::Other
    }
}

/// Locks memory and holds /dev/cpu_dma_latency at 0 for the session, and checks the policy can
/// be had. What cannot be had becomes a warning; a refused real-time policy falls back to
/// SCHED_OTHER.
pub fn acquire(session: &mut Session, policy: Policy, priority: i32, mlock: bool) -> Grant {
    let mut warnings = Vec::new();
    let memory_locked = mlock
        && match MemoryLock::acquire() {
            Ok(guard) => session.hold(guard),
            Err(e) => {
                warnings.push(format!(
                    "memory not locked (mlockall: {e}): page faults may add latency{}",
                    fix(&e, MEMLOCK_FIX)
                ));
                false
            }
        };
    if !mlock {
        warnings.push("memory not locked (--no-mlock): page faults may add latency".into());
    }
    let dma_latency_held = match DmaLatency::hold() {
        Ok(guard) => session.hold(guard),
        Err(e) => {
            warnings.push(format!(
                "/dev/cpu_dma_latency not set ({e}): deep CPU idle states stay allowed{}",
                fix(&e, DMA_FIX)
            ));
            false
        }
    };
    let policy = match policy {
        Policy::Other => {
            warnings.push("ran at SCHED_OTHER by request (--policy other): these are not real-time numbers".into());
            Policy::Other
        }
        rt => match try_policy(rt, priority) {
            Ok(()) => rt,
            Err(e) => {
                warnings.push(format!(
                    "could not get {rt:?} priority {priority} ({e}); ran at SCHED_OTHER: these are not real-time numbers{}",
                    fix(&e, POLICY_FIX)
                ));
                Policy::Other
            }
        },
    };
    Grant { policy, priority, memory_locked, dma_latency_held, warnings }
}

/// What gives an unprivileged user locked memory.
const MEMLOCK_FIX: &str = "raise the memlock limit (`ulimit -l unlimited`, or a memlock line in \
     /etc/security/limits.d/), or give rtbench the capability cap_ipc_lock (docs/GUIDE.md: real-time privileges without root), or run as root";
/// What gives an unprivileged user a real-time policy.
const POLICY_FIX: &str =
    "give rtbench the capability cap_sys_nice (docs/GUIDE.md: real-time privileges without root), or join a group \
     with an rtprio limit in /etc/security/limits.d/, or run as root";
/// What lets an unprivileged user hold the CPUs out of deep idle states.
const DMA_FIX: &str = "make /dev/cpu_dma_latency writable for the user (its permissions, e.g. a udev rule), \
     or run as root";

/// The fix of a privilege warning, when the error says privileges were missing (ENOMEM is
/// how mlockall says RLIMIT_MEMLOCK is too low).
fn fix(e: &std::io::Error, how: &str) -> String {
    let missing = e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::ENOMEM);
    if missing {
        format!("; to fix: {how}")
    } else {
        String::new()
    }
}

/// The kernel's number for a policy.
fn sched_policy(policy: Policy) -> libc::c_int {
    match policy {
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::RoundRobin => libc::SCHED_RR,
        Policy::Other => libc::SCHED_OTHER,
        Policy::Deadline => sys::SCHED_DEADLINE,
    }
}

/// Tries the policy on a throwaway thread, so the caller's own scheduling is never changed.
fn try_policy(policy: Policy, priority: i32) -> std::io::Result<()> {
    std::thread::spawn(move || sys::set_scheduler(sched_policy(policy), priority))
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
}

/// The scheduling policy and timer slack of a measuring or serving thread: set when the thread
/// starts, the previous ones put back when dropped. It stays on its thread (policies are per thread).
pub struct ThreadPolicy {
    held: Held<ThreadScheduling>,
}

impl Guard for ThreadPolicy {
    fn name(&self) -> &'static str {
        "thread scheduling policy"
    }
}

/// How a thread's setup went.
pub struct Entered {
    /// Holds the thread's policy until the thread ends.
    pub guard: ThreadPolicy,
    /// The thread could not be pinned to its CPU (gone offline, outside the cpuset): why.
    pub unpinned: Option<String>,
    /// The policy could not be set: why.
    pub problem: Option<String>,
    /// The policy and priority the thread holds once set up, as the kernel says (None when it
    /// could not be read, or the thread could not be pinned).
    pub ran: Option<(Policy, i32)>,
    /// The thread's timer slack once set up (1 ns unless that was refused).
    pub timer_slack_ns: Option<u64>,
}

/// The calling thread (and the processes it forks) on one CPU alone, as the seeds ran
/// LMbench; its affinity comes back when dropped, on the thread that pinned it (a session's
/// guards drop on the thread that holds the session).
pub struct Pinned {
    _held: Held<Affinity>,
}

impl Pinned {
    pub fn to(cpu: usize) -> std::io::Result<Pinned> {
        Pinned::to_cpus(&[cpu])
    }

    fn to_cpus(cpus: &[usize]) -> std::io::Result<Pinned> {
        let held = Held::unjournalled(Affinity { previous: sys::affinity().ok(), on_this_thread: PhantomData });
        // A failure drops `held`, which puts the affinity found back.
        sys::set_affinity(cpus)?;
        Ok(Pinned { _held: held })
    }
}

impl Guard for Pinned {
    fn name(&self) -> &'static str {
        "CPU pinning"
    }
}

/// Where the collector is to run: the runner's main thread (checkpoints, the store's writes,
/// the CPUs' counters) and the instruments' trace readers. On the housekeeping CPUs, as rtla
/// keeps its own: its system calls would otherwise hold up a measuring thread on a kernel that
/// is not fully preemptible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectorPlan {
    /// The CPUs to pin it to; empty: left where the scheduler puts it.
    pub cpus: Vec<usize>,
    pub chosen: CollectorChoice,
    /// Each measuring thread's CPU.
    measured: Vec<Option<usize>>,
}

impl CollectorPlan {
    /// `asked` (`--main-affinity`), else the CPUs rtbench may use (`allowed`) that are online
    /// and measure nothing; none when a measuring thread floats or every such CPU is measured.
    pub fn choose(asked: Option<&[usize]>, measured: &[Option<usize>], allowed: &[usize], online: &[usize]) -> Self {
        let (cpus, chosen) = if let Some(cpus) = asked {
            (cpus.to_vec(), CollectorChoice::Asked)
        } else if measured.iter().any(Option::is_none) {
            (Vec::new(), CollectorChoice::Floating)
        } else {
            let free: Vec<usize> =
                allowed.iter().copied().filter(|c| online.contains(c) && !measured.contains(&Some(*c))).collect();
            let chosen = if free.is_empty() { CollectorChoice::Unpinned } else { CollectorChoice::Housekeeping };
            (free, chosen)
        };
        CollectorPlan { cpus, chosen, measured: measured.to_vec() }
    }

    /// What the run records of a collector allowed on `cpus` (where it was left unpinned: the
    /// CPUs it may use).
    pub fn record(&self, cpus: Vec<usize>) -> CollectorRecord {
        CollectorRecord::new(cpus, self.chosen, &self.measured)
    }
}

/// The calling (main) thread on the collector's CPUs for as long as this lives; its old
/// affinity comes back on drop. Nothing changes when the plan leaves it unpinned.
pub struct Housekeeping {
    /// Held for its drop, which gives the thread its CPUs back.
    _pinned: Option<Pinned>,
}

impl Housekeeping {
    /// Enters `plan`'s CPUs; the CPUs the thread is then allowed on, as the kernel says, and
    /// why it could not be pinned, if it could not.
    pub fn enter(plan: &CollectorPlan) -> (Housekeeping, Vec<usize>, Option<String>) {
        let (pinned, problem) = if plan.cpus.is_empty() {
            (None, None)
        } else {
            match Pinned::to_cpus(&plan.cpus) {
                Ok(p) => (Some(p), None),
                Err(e) => {
                    let cpus = crate::units::format_cpu_list(&plan.cpus);
                    (None, Some(format!("the collector could not be pinned to CPUs {cpus}: {e}")))
                }
            }
        };
        let now = sys::affinity().unwrap_or_default();
        (Housekeeping { _pinned: pinned }, now, problem)
    }
}

/// Sets up a measuring thread: pinned, prefaulted stack, the run's policy and a timer slack of
/// 1 ns for as long as the returned guard lives. Problems come back in words for the run's
/// warnings.
pub fn enter_thread(cpu: Option<usize>, policy: Policy, priority: i32) -> Entered {
    sys::prefault_stack(128 * 1024);
    let unset = ThreadScheduling { previous: None, previous_slack: None, on_this_thread: PhantomData };
    let guard = ThreadPolicy { held: Held::unjournalled(unset) };
    let mut entered = Entered { guard, unpinned: None, problem: None, ran: None, timer_slack_ns: None };
    if let Some(cpu) = cpu {
        if let Err(e) = sys::pin_to_cpu(cpu) {
            entered.unpinned = Some(format!("could not pin a thread to CPU {cpu}: {e}"));
            return entered;
        }
    }
    let mut problems = Vec::new();
    let previous = sys::current_scheduling();
    match sys::set_scheduler(sched_policy(policy), priority) {
        Ok(()) => entered.guard.held.change_mut().previous = previous.ok(),
        Err(e) => problems.push(format!("could not set {policy:?} on a thread: {e}")),
    }
    // At SCHED_OTHER the default slack (50 µs) would make every wake-up late on purpose; the
    // real-time policies have none, and asking costs nothing.
    let noted = entered.guard.held.change_mut();
    noted.previous_slack = sys::timer_slack().ok();
    if let Err(e) = sys::set_timer_slack(1) {
        let slack = noted.previous_slack.take().map_or("?".into(), |ns| crate::units::fmt_ns_as_us(ns as f64));
        problems.push(format!(
            "could not set a thread's timer slack to 1 ns ({e}): at SCHED_OTHER its wake-ups may be up to {slack} µs late"
        ));
    }
    entered.ran = scheduling_now();
    entered.timer_slack_ns = sys::timer_slack().ok();
    entered.problem = (!problems.is_empty()).then(|| problems.join("; "));
    entered
}

/// The calling thread's policy and priority, as the kernel holds them now.
pub fn scheduling_now() -> Option<(Policy, i32)> {
    sys::current_scheduling().ok().map(|s| (policy_of(s.policy()), s.priority()))
}

/// A policy from the kernel's number: batch and idle are SCHED_OTHER's kin, not real-time.
fn policy_of(policy: libc::c_int) -> Policy {
    match policy {
        libc::SCHED_FIFO => Policy::Fifo,
        libc::SCHED_RR => Policy::RoundRobin,
        sys::SCHED_DEADLINE => Policy::Deadline,
        _ => Policy::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_gets_its_cpus_back_when_the_guard_drops() {
        let before = sys::affinity().unwrap();
        let cpu = *before.last().unwrap();
        let held = Pinned::to(cpu).unwrap();
        assert_eq!(sys::affinity().unwrap(), [cpu]);
        drop(held);
        assert_eq!(sys::affinity().unwrap(), before);
    }

    #[rtbench_testkit::needs(two_cpus)]
    #[test]
    fn the_runner_leaves_the_measured_cpus_and_comes_back() {
        std::thread::spawn(|| {
            let before = sys::affinity().unwrap();
            let online = crate::sysinfo::online_cpus();
            let usable: Vec<usize> = before.iter().copied().filter(|c| online.contains(c)).collect();
            let measured = usable[0];
            let plan = CollectorPlan::choose(None, &[Some(measured)], &before, &online);
            let (held, during, problem) = Housekeeping::enter(&plan);
            assert_eq!((plan.chosen, problem), (CollectorChoice::Housekeeping, None));
            assert!(!during.contains(&measured) && !during.is_empty(), "{during:?} avoids CPU {measured}");
            assert_eq!(during, sys::affinity().unwrap(), "as the kernel says");
            drop(held);
            assert_eq!(sys::affinity().unwrap(), before, "and the old affinity is back");
            // A floating thread may be anywhere: nothing to avoid.
            let floating = CollectorPlan::choose(None, &[Some(measured), None], &before, &online);
            let (held, during, _) = Housekeeping::enter(&floating);
            assert_eq!((floating.chosen, during), (CollectorChoice::Floating, before.clone()));
            drop(held);
        })
        .join()
        .unwrap();
    }

    /// cyclictest's layout on an isolcpus machine of 128 CPUs, measured without the CPUs.
    #[test]
    fn the_collector_goes_to_the_cpus_not_measured_or_where_asked() {
        let online: Vec<usize> = (0..128).collect();
        let measured: Vec<Option<usize>> = (4..128).map(Some).collect();
        let plan = CollectorPlan::choose(None, &measured, &online, &online);
        assert_eq!((plan.cpus, plan.chosen), (vec![0, 1, 2, 3], CollectorChoice::Housekeeping));
        let asked = CollectorPlan::choose(Some(&[130]), &measured, &online, &online);
        assert_eq!((asked.cpus, asked.chosen), (vec![130], CollectorChoice::Asked));
        let every: Vec<Option<usize>> = online.iter().copied().map(Some).collect();
        let all = CollectorPlan::choose(None, &every, &online, &online);
        assert_eq!((all.cpus.len(), all.chosen), (0, CollectorChoice::Unpinned));
        let record = all.record(online.clone());
        assert_eq!(record.shared, online, "and the run says it shared them");
        // Only the CPUs rtbench may use (taskset) count as free.
        let outside = CollectorPlan::choose(None, &measured, &(64..128).collect::<Vec<_>>(), &online);
        assert_eq!(outside.chosen, CollectorChoice::Unpinned);
    }

    #[test]
    fn a_thread_measures_with_a_timer_slack_of_1_ns_whatever_its_policy() {
        std::thread::spawn(|| {
            let before = sys::timer_slack().unwrap();
            assert_ne!(before, 1, "a new thread has the default slack");
            let entered = enter_thread(None, Policy::Other, 0);
            assert_eq!(entered.problem, None);
            assert_eq!(sys::timer_slack().unwrap(), 1);
            assert_eq!((entered.ran, entered.timer_slack_ns), (Some((Policy::Other, 0)), Some(1)), "and said");
            drop(entered.guard);
            assert_eq!(sys::timer_slack().unwrap(), before, "and put back");
        })
        .join()
        .unwrap();
    }

    #[rtbench_testkit::needs(root)]
    #[test]
    fn a_thread_gets_its_policy_back_when_the_guard_drops() {
        std::thread::spawn(|| {
            let before = sys::current_scheduling().unwrap();
            sys::set_scheduler(libc::SCHED_FIFO, 1).unwrap_or_else(|e| panic!("SCHED_FIFO as root: {e}"));
            sys::restore_scheduling(before).unwrap();
            let entered = enter_thread(None, Policy::Fifo, 10);
            assert_eq!((entered.unpinned, entered.problem), (None, None));
            assert_eq!(entered.ran, Some((Policy::Fifo, 10)), "and said");
            assert_ne!(sys::current_scheduling().unwrap(), before, "the policy was set");
            drop(entered.guard);
            assert_eq!(sys::current_scheduling().unwrap(), before, "and put back");
        })
        .join()
        .unwrap();
    }
}
