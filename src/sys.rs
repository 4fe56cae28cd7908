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

/// Makes `cmd` spawn a child that is owned by us: it gets `death_signal` when the spawning
/// thread exits (spawn from the main thread), joins process group `pgid` if given (Some(0): a
/// new group led by the child; None: ours), runs at SCHED_OTHER with `nice`, whatever the
/// parent runs at.
pub fn own_child(cmd: &mut std::process::Command, death_signal: i32, pgid: Option<u32>, nice: i32) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            if let Some(pgid) = pgid {
                if libc::setpgid(0, pgid as libc::pid_t) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &param);
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            Ok(())
        });
    }
}

/// Sends `sig` to a process (pid > 0) or to a process group (pid < 0).
pub fn send_signal(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory arguments.
    check(unsafe { libc::kill(pid, sig) })
}

/// The parent's pid.
pub fn parent_pid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::getppid() as u32 }
}

/// Forks the calling process. Returns the child's pid in the parent and 0 in the child, which
/// gets `death_signal` when its parent dies. The child must make only async-signal-safe calls
/// (read, write, `exit_now`): other threads' locks are not copied in a usable state.
pub fn fork_child(death_signal: i32) -> io::Result<u32> {
    // SAFETY: the caller keeps the child to async-signal-safe calls.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // SAFETY: plain prctl.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, death_signal as libc::c_ulong, 0, 0, 0) };
            Ok(0)
        }
        pid => Ok(pid as u32),
    }
}

/// Waits for any child; returns its pid, or None when there are none left.
pub fn wait_any_child() -> Option<u32> {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer.
    let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
    (pid > 0).then_some(pid as u32)
}

/// Reaps children that have ended, without blocking; returns how many.
pub fn reap_children() -> usize {
    let mut n = 0;
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return n;
        }
        n += 1;
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and threads it starts), so they
/// can be taken with [`wait_stop_signal`].
pub fn block_stop_signals() -> io::Result<()> {
    // SAFETY: the set is initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

/// Waits up to `timeout` for a blocked stop signal; returns it if one came.
pub fn wait_stop_signal(timeout: std::time::Duration) -> Option<i32> {
    // SAFETY: the set is initialised by sigemptyset; the timespec is valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        let sig = libc::sigtimedwait(&set, std::ptr::null_mut(), &ts);
        (sig > 0).then_some(sig)
    }
}

/// A raw ICMP socket connected to `addr` (needs CAP_NET_RAW).
pub fn icmp_socket(addr: std::net::Ipv4Addr) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket(2); the descriptor is owned by the returned OwnedFd right away.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_ICMP) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(addr.octets()) },
        sin_zero: [0; 8],
    };
    // SAFETY: `sa` is a valid sockaddr_in of the size passed.
    let rc = unsafe {
        libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32)
    };
    check(rc)?;
    Ok(owned)
}

/// Sets a receive timeout on a socket.
pub fn set_recv_timeout(fd: &std::os::fd::OwnedFd, timeout: std::time::Duration) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let tv = libc::timeval { tv_sec: timeout.as_secs() as libc::time_t, tv_usec: timeout.subsec_micros() as _ };
    // SAFETY: `tv` is a valid timeval of the size passed.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        )
    })
}

/// Makes the calling process adopt its orphaned descendants, so it can reap them all.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: plain prctl.
    check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) })
}
