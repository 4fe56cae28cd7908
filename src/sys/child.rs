//! Forked children and everything they run. After a fork in a threaded process the child may
//! make only async-signal-safe calls: another thread may have held the allocator's or stdout's
//! lock at the fork, and the child's copy of it stays locked for ever. So a child does not run a
//! caller's closure but one of the fixed tasks below, each of which only reads, writes and closes
//! fds, touches memory it was given, and calls `_exit`.

use std::io;
use std::os::fd::RawFd;

use super::{close_fd, exit_now, fork_child, read_fd, write_fd};

/// What a forked child does, from the fork to its `_exit`.
pub enum ChildTask<'a> {
    /// Sends back every byte it reads, until its input ends: a round-trip partner.
    Echo { read: RawFd, write: RawFd },
    /// Writes `block` again and again until the reader goes away: a bandwidth partner.
    Stream { write: RawFd, block: &'a [u8] },
    /// One process of a context-switch ring: passes each byte from `read` on to `write`,
    /// [`touch`]ing `work` in between. It first fills `work` with `fill`, so its pages are its
    /// own, no longer shared with the parent.
    Relay { read: RawFd, write: RawFd, work: &'a mut [u64], fill: u64 },
    /// Reads `bytes` bytes, at most `chunk` (up to 4 KB) at a time, or until its input ends:
    /// hackbench's receiver.
    Drain { read: RawFd, bytes: usize, chunk: usize },
    /// Writes all of `msg` to each of `writes`, `rounds` times over: hackbench's sender. It
    /// exits with 1 when a write fails.
    Send { writes: &'a [RawFd], msg: &'a [u8], rounds: usize },
}

/// Forks a child that closes `close`, runs `task` and exits; it is killed (SIGKILL) when the
/// thread that forked it ends. Returns the child's pid.
pub fn fork_task(task: ChildTask, close: &[RawFd]) -> io::Result<u32> {
    // SAFETY: the child runs only `run` below, whose every task makes async-signal-safe calls
    // (read, write, close, _exit) and touches only memory that existed before the fork.
    let pid = unsafe { fork_child(libc::SIGKILL)? };
    if pid == 0 {
        for &fd in close {
            close_fd(fd);
        }
        exit_now(run(task));
    }
    Ok(pid)
}

/// What a ring process does with its working set between passes: reads every word, one load
/// each, as LMbench's ring processes sum theirs (`sum`). The parent times the same to take
/// the ring's own cost off.
pub fn touch(work: &[u64]) -> u64 {
    super::sum(work)
}

/// The task's body, in the child; its exit status.
fn run(task: ChildTask) -> i32 {
    let mut b = [0u8; 1];
    match task {
        ChildTask::Echo { read, write } => {
            while matches!(read_fd(read, &mut b), Ok(1)) {
                if write_fd(write, &b).is_err() {
                    break;
                }
            }
        }
        ChildTask::Stream { write, block } => while write_fd(write, block).is_ok_and(|n| n > 0) {},
        ChildTask::Relay { read, write, work, fill } => {
            work.fill(fill);
            while matches!(read_fd(read, &mut b), Ok(1)) {
                std::hint::black_box(touch(work));
                if write_fd(write, &b).is_err() {
                    break;
                }
            }
        }
        ChildTask::Drain { read, bytes, chunk } => {
            let mut buf = [0u8; 4096];
            let mut left = bytes;
            while left > 0 {
                match read_fd(read, &mut buf[..chunk.min(left).min(4096)]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left -= n,
                }
            }
        }
        ChildTask::Send { writes, msg, rounds } => {
            for _ in 0..rounds {
                if !writes.iter().all(|&fd| write_all(fd, msg)) {
                    return 1;
                }
            }
        }
    }
    0
}

/// Writes all of `buf`, retrying short writes and interruptions; false on any other failure.
fn write_all(fd: RawFd, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        match write_fd(fd, buf) {
            Ok(0) => return false,
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}
