//! Scheduling, CPU affinity and memory locking of the calling thread or process.

use std::io;

use super::check;

/// Sets the calling thread's policy (`libc::SCHED_FIFO`, `SCHED_RR`, `SCHED_OTHER` …) and
/// priority; the priority counts only for the real-time policies, the others get 0.
pub fn set_scheduler(policy: libc::c_int, priority: i32) -> io::Result<()> {
    set_thread_scheduler(0, policy, priority)
}

/// [`set_scheduler`] for thread `tid` of any process (0: the calling thread).
pub fn set_thread_scheduler(tid: u32, policy: libc::c_int, priority: i32) -> io::Result<()> {
    let prio = if matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR) { priority } else { 0 };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: a thread id (0: the calling thread); `param` is a valid sched_param.
    check(unsafe { libc::sched_setscheduler(tid as libc::pid_t, policy, &param) })
}

/// A thread's scheduling as the kernel holds it, whatever the policy (batch and idle included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduling {
    policy: libc::c_int,
    priority: libc::c_int,
}

impl Scheduling {
    /// The kernel's number for the policy (`libc::SCHED_FIFO` …).
    pub fn policy(&self) -> libc::c_int {
        self.policy
    }

    /// The real-time priority; 0 for the other policies.
    pub fn priority(&self) -> i32 {
        self.priority
    }
}

/// The calling thread's scheduling.
pub fn current_scheduling() -> io::Result<Scheduling> {
    // SAFETY: pid 0 is the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, writable sched_param.
    check(unsafe { libc::sched_getparam(0, &mut param) })?;
    Ok(Scheduling { policy, priority: param.sched_priority })
}

/// Gives the calling thread back a scheduling read by [`current_scheduling`].
pub fn restore_scheduling(s: Scheduling) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: s.priority };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    check(unsafe { libc::sched_setscheduler(0, s.policy, &param) })
}

/// Sets the calling thread's timer slack: how late the kernel may fire its timers to group
/// wake-ups (50 µs by default; ignored at the real-time policies, which get none).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: plain prctl on the calling thread.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) })
}

/// The calling thread's timer slack in ns.
pub fn timer_slack() -> io::Result<u64> {
    // SAFETY: plain prctl on the calling thread; the slack is its return value.
    let ns = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    if ns < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ns as u64)
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    set_affinity(&[cpu])
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data, filled by the kernel; CPU_ISSET stays within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        check(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set))?;
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Lets the calling thread run on `cpus` only.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    set_thread_affinity(0, cpus)
}

/// Lets thread `tid` of any process (0: the calling thread) run on `cpus` only.
pub fn set_thread_affinity(tid: u32, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; every CPU is bounds-checked against its size first.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(cpu, &mut set);
        }
        check(libc::sched_setaffinity(tid as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &set))
    }
}

/// Locks all current and future pages of the process in memory.
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: plain flags; no memory is touched.
    check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) })
}

/// Undoes `lock_memory`.
pub fn unlock_memory() {
    // SAFETY: no arguments; failure is harmless.
    unsafe { libc::munlockall() };
}

/// Touches `bytes` of the calling thread's stack so later calls never page-fault on it.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 4096;
    let buf = [0u8; 64 * CHUNK];
    let n = bytes.min(buf.len());
    let mut sum = 0u8;
    for i in (0..n).step_by(CHUNK) {
        // A volatile read forces the page in without the optimiser removing the array.
        // SAFETY: `i < n <= buf.len()`.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(buf.as_ptr().add(i)) });
    }
    std::hint::black_box(sum);
}
