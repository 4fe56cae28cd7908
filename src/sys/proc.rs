//! Processes: existence checks, owned children, signals to them, reaping.

use std::io;

use super::check;

/// True when a process with this pid exists (it may belong to another user).
pub fn process_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Ends the process at once with `code`, without running destructors (async-signal-safe).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(code) }
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
/// gets `death_signal` when the thread that forked it ends. Only [`super::fork_task`] calls it,
/// so that every line a forked child runs lives in `sys`.
///
/// # Safety
///
/// In the child (the `Ok(0)` return) the caller must make only async-signal-safe calls (read,
/// write, close, `exit_now` …) until the process ends: no allocation, no lock, no printing, no
/// unwinding. The fork copies only the calling thread, so a lock another thread held at that
/// moment (the allocator's, stdout's) stays held in the child for ever.
pub(super) unsafe fn fork_child(death_signal: i32) -> io::Result<u32> {
    // SAFETY: the caller keeps the child to async-signal-safe calls (this function's contract).
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

/// Makes the calling process adopt its orphaned descendants, so it can reap them all.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: plain prctl.
    check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) })
}

/// The calling thread's id, as the kernel's trace events name it (`common_pid`).
pub fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Whether this process has root's effective user id.
pub fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
