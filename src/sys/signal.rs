//! Signal dispositions and waiting, for the runner's stop handling.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

use super::check;

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

/// The eventfd that [`wake`] writes and [`wait_wake`] waits on; -1 until first used.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

fn wake_fd() -> io::Result<i32> {
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        return Ok(fd);
    }
    // SAFETY: eventfd takes no pointers; the descriptor is kept for the life of the process.
    let new = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    match WAKE_FD.compare_exchange(-1, new, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => Ok(new),
        Err(other) => {
            // SAFETY: `new` is ours and was never shared.
            unsafe { libc::close(new) };
            Ok(other)
        }
    }
}

/// Makes ready the descriptor that [`wake`] and [`wait_wake`] share. Call it before installing
/// a signal handler that wakes: the handler itself must not create it.
pub fn prepare_wake() -> io::Result<()> {
    wake_fd().map(|_| ())
}

/// Ends a [`wait_wake`] early, in this or any thread. Async-signal-safe: a signal handler may
/// call it.
pub fn wake() {
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd; write(2) is async-signal-safe.
        unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
    }
}

/// Sleeps up to `timeout`, less when [`wake`] is called meanwhile (or was called since the last
/// wait). Returns true when woken.
pub fn wait_wake(timeout: std::time::Duration) -> bool {
    let Ok(fd) = wake_fd() else {
        std::thread::sleep(timeout);
        return false;
    };
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: one valid pollfd and a valid timespec; a null sigmask keeps the thread's own.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc <= 0 {
        return false;
    }
    let mut count: u64 = 0;
    // SAFETY: reads 8 bytes into a valid u64; the fd is non-blocking.
    unsafe { libc::read(fd, (&mut count as *mut u64).cast(), 8) };
    true
}

/// Lets SIGPIPE end the process, as it ends `cat` or `ls`: for commands that only print, so
/// `rtbench runs | head -1` stops quietly instead of failing on its next write.
pub fn default_sigpipe() {
    // SAFETY: SIG_DFL is always a valid disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The calling thread's id, for [`interrupt_thread`].
pub fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

extern "C" fn ignore_signal(_: libc::c_int) {}

/// Sends SIGUSR2 to thread `tid` of this process, with a handler that does nothing and does
/// not restart system calls: a blocking call of that thread returns EINTR, as one does when a
/// stop signal lands on it. For tests of code that must retry such a call.
pub fn interrupt_thread(tid: i32) -> io::Result<()> {
    // SAFETY: a zeroed sigaction with a plain handler, no SA_RESTART and an empty mask is
    // valid; tgkill takes plain integers.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = ignore_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        check(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()))?;
        if libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGUSR2) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
