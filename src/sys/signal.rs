//! Signal dispositions and waiting, for the runner's stop handling.

use std::io;

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
