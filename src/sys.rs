//! The one module with `unsafe`: thin, checked wrappers around the libc calls rtbench needs.
//!
//! Every function returns `io::Result` or a plain value; callers never see a raw pointer.

use std::io;

/// CLOCK_MONOTONIC in integer nanoseconds.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns`, retrying on EINTR.
#[inline(always)]
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec and the remainder pointer may be null with TIMER_ABSTIME.
        let rc =
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Scheduling policy of the calling thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Fifo,
    RoundRobin,
    Other,
}

/// Sets the calling thread's policy and priority (priority is ignored for `Other`).
pub fn set_scheduler(policy: Policy, priority: i32) -> io::Result<()> {
    let (pol, prio) = match policy {
        Policy::Fifo => (libc::SCHED_FIFO, priority),
        Policy::RoundRobin => (libc::SCHED_RR, priority),
        Policy::Other => (libc::SCHED_OTHER, 0),
    };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    check(unsafe { libc::sched_setscheduler(0, pol, &param) })
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET is bounds-checked against its size below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set))
    }
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no side effects.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as usize)
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

/// True when a process with this pid exists (it may belong to another user).
pub fn process_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// True when stdout is a terminal.
pub fn stdout_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDOUT_FILENO) == 1 }
}

/// Width of the terminal on stdout, if it is one.
pub fn terminal_width() -> Option<usize> {
    let mut ws: libc::winsize = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

/// Whether the calling process may use real-time scheduling (root or CAP_SYS_NICE / RLIMIT_RTPRIO).
pub fn effective_uid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() }
}

/// Installs `handler` for SIGINT and SIGTERM. The handler must be async-signal-safe.
pub fn on_stop_signals(handler: extern "C" fn(libc::c_int)) -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            check(libc::sigaction(sig, &sa, std::ptr::null_mut()))?;
        }
    }
    Ok(())
}

/// Puts SIGINT and SIGTERM back to their default action.
pub fn default_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: SIG_DFL is always a valid disposition.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Writes raw bytes to stderr from a signal handler (async-signal-safe).
pub fn write_stderr_raw(msg: &[u8]) {
    // SAFETY: `msg` is a valid slice; write(2) is async-signal-safe.
    unsafe { libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len()) };
}

/// Ends the process at once with `code`, without running destructors (async-signal-safe).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(code) }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
