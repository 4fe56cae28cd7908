//! Why a watched real-time thread slept, from the system call it was in when it left its CPU,
//! and who woke it: the kernel's `rtapp` sleep monitor's rule (Linux 6.17). A real-time thread
//! may sleep only in an absolute `clock_nanosleep` on `CLOCK_MONOTONIC` or `CLOCK_TAI`, in a
//! futex or epoll wait woken by a thread of its priority or higher (or an interrupt), or on a
//! priority-inheriting lock (`FUTEX_LOCK_PI`); any other sleep can last as long as something
//! less urgent takes.

/// The system call a thread was in: its number, its second argument's low 32 bits (a futex's
/// operation, a `clock_nanosleep`'s flags) and its first (a clock, a file descriptor); for a
/// `clock_nanosleep`, the time it asked, ns (0 for the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub nr: u32,
    pub op: u32,
    pub arg0: u64,
    pub asked: u64,
}

impl Call {
    /// When an absolute sleep on CLOCK_MONOTONIC (the clock the programs stamp with) asked to
    /// be woken, ns.
    pub fn due(&self) -> Option<u64> {
        let absolute = self.op == TIMER_ABSTIME && self.arg0 == CLOCK_MONOTONIC && self.asked > 0;
        (absolute && name(self.nr).is_some_and(|n| n.starts_with("clock_nanosleep"))).then_some(self.asked)
    }
}

/// What a sleep of a real-time thread was, by the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slept {
    /// An absolute `clock_nanosleep` on a steady clock: fine.
    Timed,
    /// On a priority-inheriting lock: fine.
    Inheriting,
    /// A futex or epoll wait woken by a thread of its priority or higher, or an interrupt: fine.
    Waited,
    /// A relative sleep, or an absolute one on `CLOCK_REALTIME` (which jumps when the time is
    /// set): its period drifts by each wake-up's lateness.
    Relative,
    /// In another system call (a blocking read, write, poll…): as long as its peer takes.
    Blocked(u32),
    /// A futex or epoll wait woken by a lower-priority thread of the application: the thread
    /// waited on that thread's progress (priority inversion when it is a lock).
    Inverted,
    /// Outside any system call (a page fault waiting, a lock in the kernel): not judged.
    Outside,
}

/// Who woke a thread: its id, kernel priority, whether it is one of the watched processes,
/// and the system call it was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waker {
    pub tid: u32,
    pub prio: u32,
    pub watched: bool,
    pub call: Option<Call>,
}

const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_TAI: u64 = 11;
const TIMER_ABSTIME: u32 = 1;
/// A futex operation without its private and clock flags.
const FUTEX_CMD: u32 = !(128 | 256);
const FUTEX_WAIT: u32 = 0;
const FUTEX_LOCK_PI: u32 = 6;
const FUTEX_WAIT_BITSET: u32 = 9;
const FUTEX_WAIT_REQUEUE_PI: u32 = 11;
const FUTEX_LOCK_PI2: u32 = 13;

/// A sleep in `call` (none: outside a system call) of a thread of kernel priority `prio`,
/// ended by `waker`, by the rule.
pub fn judge(call: Option<Call>, prio: u32, waker: Option<Waker>) -> Slept {
    let Some(c) = call else { return Slept::Outside };
    let waited = || {
        // A thread of the application, less urgent, in a system call (not an interrupt that
        // came while it ran): the wait depended on it.
        let lower = waker.is_some_and(|w| w.watched && w.prio > prio && w.call.is_some());
        if lower {
            Slept::Inverted
        } else {
            Slept::Waited
        }
    };
    match name(c.nr) {
        Some("clock_nanosleep" | "clock_nanosleep_time64") => {
            let steady = c.arg0 == CLOCK_MONOTONIC || c.arg0 == CLOCK_TAI;
            if steady && c.op == TIMER_ABSTIME {
                Slept::Timed
            } else {
                Slept::Relative
            }
        }
        Some("nanosleep") => Slept::Relative,
        Some("futex" | "futex_time64") => match c.op & FUTEX_CMD {
            FUTEX_LOCK_PI | FUTEX_LOCK_PI2 => Slept::Inheriting,
            FUTEX_WAIT | FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI => waited(),
            _ => Slept::Blocked(c.nr),
        },
        Some("epoll_wait" | "epoll_pwait" | "epoll_pwait2") => waited(),
        _ => Slept::Blocked(c.nr),
    }
}

/// A system call's name on this machine's architecture, for the calls a thread may sleep in.
pub fn name(nr: u32) -> Option<&'static str> {
    NAMES.iter().find(|(n, _)| *n as u32 == nr).map(|(_, name)| name.trim_start_matches("SYS_"))
}

/// A system call in words: its name, or its number.
pub fn words(nr: u32) -> String {
    name(nr).map_or_else(|| format!("system call {nr}"), |n| format!("{n}()"))
}

macro_rules! calls {
    ($($call:ident),* $(,)?) => {
        [$((libc::$call, stringify!($call))),*]
    };
}

/// The calls every architecture has, as libc names them (`SYS_read`).
const COMMON: [(libc::c_long, &str); 27] = calls![
    SYS_read,
    SYS_write,
    SYS_readv,
    SYS_writev,
    SYS_pread64,
    SYS_pwrite64,
    SYS_recvfrom,
    SYS_recvmsg,
    SYS_sendto,
    SYS_sendmsg,
    SYS_accept4,
    SYS_connect,
    SYS_ppoll,
    SYS_pselect6,
    SYS_ioctl,
    SYS_msgrcv,
    SYS_msgsnd,
    SYS_semtimedop,
    SYS_mq_timedreceive,
    SYS_waitid,
    SYS_rt_sigtimedwait,
    SYS_rt_sigsuspend,
    SYS_fsync,
    SYS_fdatasync,
    SYS_openat,
    SYS_flock,
    SYS_epoll_pwait,
];

#[cfg(target_pointer_width = "64")]
const TIME: [(libc::c_long, &str); 3] = calls![SYS_clock_nanosleep, SYS_nanosleep, SYS_futex];
/// 32-bit architectures' calls with a 64-bit time (Linux 5.1 on; the same numbers on every one
/// of them; libc does not name them).
#[cfg(not(target_pointer_width = "64"))]
pub const SYS_CLOCK_NANOSLEEP_TIME64: libc::c_long = 407;
#[cfg(not(target_pointer_width = "64"))]
const TIME: [(libc::c_long, &str); 5] = [
    (libc::SYS_clock_nanosleep, "SYS_clock_nanosleep"),
    (libc::SYS_nanosleep, "SYS_nanosleep"),
    (libc::SYS_futex, "SYS_futex"),
    (SYS_CLOCK_NANOSLEEP_TIME64, "SYS_clock_nanosleep_time64"),
    (422, "SYS_futex_time64"),
];

#[cfg(target_arch = "x86_64")]
const OWN: [(libc::c_long, &str); 7] =
    calls![SYS_poll, SYS_select, SYS_epoll_wait, SYS_accept, SYS_pause, SYS_wait4, SYS_epoll_pwait2];
#[cfg(not(target_arch = "x86_64"))]
const OWN: [(libc::c_long, &str); 2] = calls![SYS_wait4, SYS_epoll_pwait2];

static NAMES: std::sync::LazyLock<Vec<(libc::c_long, &'static str)>> =
    std::sync::LazyLock::new(|| COMMON.iter().chain(&TIME).chain(&OWN).copied().collect());

#[cfg(test)]
mod tests {
    use super::*;

    fn call(nr: libc::c_long, op: u32, arg0: u64) -> Option<Call> {
        Some(Call { nr: nr as u32, op, arg0, asked: 5_000 })
    }

    #[test]
    fn sleeps_are_judged_as_the_rtapp_monitor_judges_them() {
        let fifo80 = 19;
        let timed = call(libc::SYS_clock_nanosleep, TIMER_ABSTIME, CLOCK_MONOTONIC);
        assert_eq!(judge(timed, fifo80, None), Slept::Timed);
        assert_eq!(timed.unwrap().due(), Some(5_000), "its time asked, on the programs' clock");
        assert_eq!(call(libc::SYS_clock_nanosleep, 0, CLOCK_MONOTONIC).unwrap().due(), None, "relative");
        // glibc's nanosleep() and usleep() are a relative clock_nanosleep on CLOCK_REALTIME.
        assert_eq!(judge(call(libc::SYS_clock_nanosleep, 0, 0), fifo80, None), Slept::Relative);
        assert_eq!(judge(call(libc::SYS_clock_nanosleep, TIMER_ABSTIME, 0), fifo80, None), Slept::Relative);
        let private_lock_pi = FUTEX_LOCK_PI | 128;
        assert_eq!(judge(call(libc::SYS_futex, private_lock_pi, 0), fifo80, None), Slept::Inheriting);
        let read = call(libc::SYS_read, 0, 3);
        assert_eq!(judge(read, fifo80, None), Slept::Blocked(libc::SYS_read as u32));
        assert_eq!(judge(None, fifo80, None), Slept::Outside);
    }

    #[test]
    fn a_futex_wait_ended_by_a_lower_priority_thread_of_the_application_is_an_inversion() {
        let wait = call(libc::SYS_futex, FUTEX_WAIT | 128, 0);
        let wake = call(libc::SYS_futex, 1 | 128, 0);
        let holder = Waker { tid: 9, prio: 89, watched: true, call: wake };
        assert_eq!(judge(wait, 19, Some(holder)), Slept::Inverted);
        assert_eq!(judge(wait, 19, Some(Waker { prio: 19, ..holder })), Slept::Waited, "its own priority");
        assert_eq!(judge(wait, 19, Some(Waker { watched: false, ..holder })), Slept::Waited, "not the app's");
        // An interrupt that came while the lower thread ran in user space: not that thread.
        assert_eq!(judge(wait, 19, Some(Waker { call: None, ..holder })), Slept::Waited);
        assert_eq!(judge(wait, 19, None), Slept::Waited);
    }

    #[test]
    fn calls_are_named_on_this_architecture() {
        assert_eq!(name(libc::SYS_read as u32), Some("read"));
        assert_eq!(words(libc::SYS_futex as u32), "futex()");
        assert_eq!(words(100_000), "system call 100000");
    }
}
