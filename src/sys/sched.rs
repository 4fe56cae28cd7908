//! Scheduling, CPU affinity and memory locking of the calling thread or process.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    // Sized as the kernel counts CPUs (its nr_cpu_ids): a mask too small for them is EINVAL,
    // asked again twice as large, and the size that served is kept for the next call.
    let mut bits = MASK_BITS.load(Ordering::Relaxed);
    loop {
        let mut words = mask_words(&[], bits);
        let bytes = std::mem::size_of_val(words.as_slice());
        // SAFETY: `words` is writable for `bytes` bytes; the kernel writes at most that many.
        let rc = unsafe { libc::syscall(libc::SYS_sched_getaffinity, 0, bytes, words.as_mut_ptr()) };
        if rc >= 0 {
            MASK_BITS.fetch_max(bits, Ordering::Relaxed);
            return Ok(mask_cpus(&words));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) || bits >= MAX_CPUS {
            return Err(e);
        }
        bits *= 2;
    }
}

/// How many CPUs the kernel's masks hold, as far as known: one word's worth until a mask was
/// refused as too small.
static MASK_BITS: AtomicUsize = AtomicUsize::new(libc::c_ulong::BITS as usize);

/// Lets the calling thread run on `cpus` only.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    set_thread_affinity(0, cpus)
}

/// Lets thread `tid` of any process (0: the calling thread) run on `cpus` only. The mask is as
/// large as the highest CPU named and the kernel's count of CPUs need, not glibc's fixed
/// 1024-CPU `cpu_set_t`; a CPU past any kernel's is EINVAL, as one the machine lacks is the
/// kernel's EINVAL.
pub fn set_thread_affinity(tid: u32, cpus: &[usize]) -> io::Result<()> {
    if cpus.iter().any(|&c| c >= MAX_CPUS) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // The kernel takes a shorter mask as zeros beyond it.
    let words = mask_words(cpus, MASK_BITS.load(Ordering::Relaxed));
    let bytes = std::mem::size_of_val(words.as_slice());
    // SAFETY: `words` is readable for `bytes` bytes.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setaffinity, tid as libc::pid_t, bytes, words.as_ptr()) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Linux's largest NR_CPUS: no CPU is numbered this high.
const MAX_CPUS: usize = 8192;

/// `cpus` as the kernel's affinity mask: whole `unsigned long`s, enough for `bits` CPUs and
/// for the highest one named.
fn mask_words(cpus: &[usize], bits: usize) -> Vec<libc::c_ulong> {
    let per = libc::c_ulong::BITS as usize;
    let need = cpus.iter().map(|c| c + 1).max().unwrap_or(0).max(bits).max(1);
    let mut words = vec![0; need.div_ceil(per)];
    for &c in cpus {
        words[c / per] |= 1 << (c % per);
    }
    words
}

/// The CPUs a mask holds, in order.
fn mask_cpus(words: &[libc::c_ulong]) -> Vec<usize> {
    let per = libc::c_ulong::BITS as usize;
    (0..words.len() * per).filter(|c| words[c / per] >> (c % per) & 1 == 1).collect()
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

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// SCHED_DEADLINE's number (linux/sched.h).
pub const SCHED_DEADLINE: libc::c_int = 6;

/// Puts the calling thread under SCHED_DEADLINE: `runtime_ns` of CPU in every period of
/// `period_ns`, done within `deadline_ns` of the period's start. The kernel's admission control
/// may refuse it (EBUSY: no bandwidth left), as may its rules (EINVAL: runtime ≤ deadline ≤
/// period, at least 1 µs) and privileges (EPERM).
pub fn set_deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> io::Result<()> {
    let attr = libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: SCHED_DEADLINE as u32,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: runtime_ns,
        sched_deadline: deadline_ns,
        sched_period: period_ns,
    };
    // SAFETY: `attr` is a valid sched_attr of the size it states; pid 0 is the calling thread.
    match unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const libc::sched_attr, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Gives up the CPU: a SCHED_DEADLINE thread sleeps out the rest of its runtime until its next
/// period begins.
pub fn yield_cpu() {
    // SAFETY: sched_yield takes no arguments.
    unsafe { libc::sched_yield() };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cyclictest needed fixes to pin above 64 and 96 CPUs: a mask here has room for any CPU.
    #[test]
    fn a_mask_for_cpu_130_has_its_bit_and_room_for_the_machine() {
        let words = mask_words(&[0, 130], 2);
        assert_eq!(words.len() * 64, 192, "three 64-bit words hold CPU 130");
        assert_eq!((words[0], words[1], words[2]), (1, 0, 1 << 2));
        assert_eq!(mask_cpus(&words), [0, 130]);
        assert_eq!(mask_words(&[], 300).len(), 5, "as many words as the machine's CPUs need");
        let every: Vec<usize> = (0..256).collect();
        assert_eq!(mask_cpus(&mask_words(&every, 256)), every);
    }

    #[test]
    fn a_cpu_the_machine_lacks_is_refused_not_a_crash() {
        std::thread::spawn(|| {
            let before = affinity().unwrap();
            let missing = MAX_CPUS - 1;
            let e = set_affinity(&[missing]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "CPU {missing}: {e}");
            assert_eq!(set_affinity(&[MAX_CPUS]).unwrap_err().raw_os_error(), Some(libc::EINVAL));
            assert_eq!(affinity().unwrap(), before, "and the thread stays where it was");
        })
        .join()
        .unwrap();
    }
}
