//! What one thread wakes another with, as the `ipc` probe measures it: a POSIX mutex, a signal,
//! a System V semaphore, a POSIX message queue, a futex. Each has a wait without a limit, as the
//! rt-tests tools wait (a limit arms a timer in the kernel, which the wake-up then cancels: it
//! made their wake-ups slower by up to half a µs here), and one with a limit.

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::check;

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long }
}

/// CLOCK_REALTIME `d` from now, as the POSIX timed waits take their limit.
fn realtime_in(d: Duration) -> libc::timespec {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let ns = now.tv_nsec as u64 + d.subsec_nanos() as u64;
    libc::timespec {
        tv_sec: now.tv_sec + d.as_secs() as libc::time_t + (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// A futex word of this process: a thread waits while it holds a value, another changes it and
/// wakes it.
#[derive(Default)]
pub struct Futex(AtomicU32);

impl Futex {
    pub fn load(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    pub fn store(&self, v: u32) {
        self.0.store(v, Ordering::Release)
    }

    /// Waits at most `limit` while the word holds `expected`; true once it holds another value.
    pub fn wait_while(&self, expected: u32, limit: Duration) -> bool {
        self.futex_wait(expected, &timespec(limit));
        self.load() != expected
    }

    /// Waits while the word holds `expected`, however long (a wake-up or a change ends it).
    pub fn wait(&self, expected: u32) {
        self.futex_wait(expected, std::ptr::null());
    }

    /// FUTEX_WAIT, for at most the relative `limit` (null: no limit).
    fn futex_wait(&self, expected: u32, limit: *const libc::timespec) {
        // SAFETY: the word is a valid, aligned u32 that outlives the call; `limit` is null or a
        // valid relative timeout borrowed for the call.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.0.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                limit,
            )
        };
    }

    /// Wakes every thread waiting on the word.
    pub fn wake_all(&self) {
        // SAFETY: the word is a valid, aligned u32; FUTEX_WAKE reads nothing else.
        unsafe {
            libc::syscall(libc::SYS_futex, self.0.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX)
        };
    }

    /// Wakes one thread waiting on the word.
    pub fn wake_one(&self) {
        // SAFETY: the word is a valid, aligned u32; FUTEX_WAKE reads nothing else.
        unsafe { libc::syscall(libc::SYS_futex, self.0.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1) };
    }
}

/// A POSIX mutex of this process (`pthread_mutex_t`), with priority inheritance or without.
pub struct PosixMutex(Box<UnsafeCell<libc::pthread_mutex_t>>);

// SAFETY: a pthread mutex is made to be shared between threads; it never moves (boxed).
unsafe impl Send for PosixMutex {}
// SAFETY: as above: every operation on it is the pthread library's, thread-safe by design.
unsafe impl Sync for PosixMutex {}

impl PosixMutex {
    /// An unlocked mutex; `inherit`: PTHREAD_PRIO_INHERIT.
    pub fn new(inherit: bool) -> io::Result<PosixMutex> {
        let m = PosixMutex(Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)));
        // SAFETY: `attr` is initialised before use and destroyed after; the mutex is boxed,
        // valid and not yet shared.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            check(libc::pthread_mutexattr_init(&mut attr))?;
            let protocol = if inherit { libc::PTHREAD_PRIO_INHERIT } else { libc::PTHREAD_PRIO_NONE };
            let set = libc::pthread_mutexattr_setprotocol(&mut attr, protocol);
            let init = if set == 0 { libc::pthread_mutex_init(m.0.get(), &attr) } else { set };
            libc::pthread_mutexattr_destroy(&mut attr);
            if init != 0 {
                return Err(io::Error::from_raw_os_error(init));
            }
        }
        Ok(m)
    }

    /// Locks it, however long that takes.
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the mutex is initialised and lives as long as `self`.
        match unsafe { libc::pthread_mutex_lock(self.0.get()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// Locks it, waiting at most `limit`; false when the limit passed first.
    pub fn lock_within(&self, limit: Duration) -> io::Result<bool> {
        let until = realtime_in(limit);
        // SAFETY: the mutex is initialised and lives as long as `self`.
        match unsafe { libc::pthread_mutex_timedlock(self.0.get(), &until) } {
            0 => Ok(true),
            libc::ETIMEDOUT => Ok(false),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// Unlocks it: the caller holds it.
    pub fn unlock(&self) {
        // SAFETY: the mutex is initialised; the caller locked it (the probe's protocol).
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
}

impl Drop for PosixMutex {
    fn drop(&mut self) {
        // SAFETY: nothing else holds the mutex once it is dropped.
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

/// Blocks signal `sig` in the calling thread, which then takes it only by [`wait_signal`]. A
/// thread that blocked it never unblocks it: one still pending would end the process.
pub fn block_signal(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: the set is initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        check(libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()))
    }
}

/// Waits for signal `sig` (blocked in this thread), however long; true once it came, false
/// when the wait was interrupted.
pub fn wait_signal(sig: libc::c_int) -> bool {
    // SAFETY: the set is initialised before use; no siginfo is asked.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigwaitinfo(&set, std::ptr::null_mut()) == sig
    }
}

/// Sends signal `sig` to thread `tid` of this process.
pub fn signal_thread(tid: i32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: tgkill takes plain integers.
    match unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A System V semaphore set, made under a key its maker chose (and journalled): it outlives the
/// process, and only [`remove_sysv_semaphore`] removes it.
pub struct SysvSemaphores(libc::c_int);

impl SysvSemaphores {
    /// A new set of `n` semaphores at 0 under `key`; an error when the key has one already.
    pub fn create(key: i32, n: i32) -> io::Result<SysvSemaphores> {
        // SAFETY: semget takes plain integers.
        let id = unsafe { libc::semget(key, n, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SysvSemaphores(id))
    }

    /// Adds one to semaphore `i`.
    pub fn post(&self, i: u16) -> io::Result<()> {
        let mut op = libc::sembuf { sem_num: i, sem_op: 1, sem_flg: 0 };
        // SAFETY: one valid sembuf.
        check(unsafe { libc::semop(self.0, &mut op, 1) })
    }

    /// Takes one of semaphore `i`, however long that takes.
    pub fn take(&self, i: u16) -> io::Result<()> {
        let mut op = libc::sembuf { sem_num: i, sem_op: -1, sem_flg: 0 };
        // SAFETY: one valid sembuf.
        check(unsafe { libc::semop(self.0, &mut op, 1) })
    }

    /// Takes one of semaphore `i`, waiting at most `limit`; false when the limit passed first.
    pub fn take_within(&self, i: u16, limit: Duration) -> io::Result<bool> {
        let mut op = libc::sembuf { sem_num: i, sem_op: -1, sem_flg: 0 };
        let ts = timespec(limit);
        // SAFETY: one valid sembuf and a valid relative timeout.
        let rc = unsafe { libc::syscall(libc::SYS_semtimedop, self.0, &mut op as *mut libc::sembuf, 1, &ts) };
        match rc {
            0 => Ok(true),
            _ => match io::Error::last_os_error() {
                e if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => Ok(false),
                e => Err(e),
            },
        }
    }
}

/// Removes the System V semaphore set under `key`; false when there is none.
pub fn remove_sysv_semaphore(key: i32) -> io::Result<bool> {
    // SAFETY: semget and semctl take plain integers; IPC_RMID takes no fourth argument.
    unsafe {
        let id = libc::semget(key, 0, 0);
        if id < 0 {
            return match io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
                e => Err(e),
            };
        }
        check(libc::semctl(id, 0, libc::IPC_RMID))?;
    }
    Ok(true)
}

/// A POSIX message queue of this process carrying one u64 a message, its name unlinked as soon
/// as it is open (nothing is left behind, whatever ends the process).
pub struct MessageQueue(libc::mqd_t);

impl MessageQueue {
    /// A new queue; `tag` makes its short-lived name unique within the process.
    pub fn new(tag: &str) -> io::Result<MessageQueue> {
        let name = CString::new(format!("/rtbench-{}-{tag}", std::process::id()))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a zeroed mq_attr with its sizes set is valid for mq_open.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = 1;
        attr.mq_msgsize = 8;
        // SAFETY: `name` is a valid C string; `attr` is valid; O_CREAT takes mode and attr.
        let q = unsafe {
            libc::mq_open(name.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600 as libc::mode_t, &attr)
        };
        if q < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `name` is a valid C string.
        unsafe { libc::mq_unlink(name.as_ptr()) };
        Ok(MessageQueue(q))
    }

    /// Sends `value`.
    pub fn send(&self, value: u64) -> io::Result<()> {
        let bytes = value.to_ne_bytes();
        // SAFETY: `bytes` is 8 valid bytes, the queue's message size.
        check(unsafe { libc::mq_send(self.0, bytes.as_ptr() as *const libc::c_char, 8, 0) })
    }

    /// Receives a value, however long that takes.
    pub fn receive(&self) -> io::Result<u64> {
        let mut bytes = [0u8; 8];
        // SAFETY: `bytes` is 8 writable bytes, the queue's message size.
        let n = unsafe { libc::mq_receive(self.0, bytes.as_mut_ptr() as *mut libc::c_char, 8, std::ptr::null_mut()) };
        match n {
            8 => Ok(u64::from_ne_bytes(bytes)),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Receives a value, waiting at most `limit`; `None` when the limit passed first.
    pub fn receive_within(&self, limit: Duration) -> io::Result<Option<u64>> {
        let mut bytes = [0u8; 8];
        let until = realtime_in(limit);
        // SAFETY: `bytes` is 8 writable bytes, the queue's message size; `until` is valid.
        let n = unsafe {
            libc::mq_timedreceive(self.0, bytes.as_mut_ptr() as *mut libc::c_char, 8, std::ptr::null_mut(), &until)
        };
        match n {
            8 => Ok(Some(u64::from_ne_bytes(bytes))),
            _ => match io::Error::last_os_error() {
                e if matches!(e.raw_os_error(), Some(libc::ETIMEDOUT | libc::EINTR)) => Ok(None),
                e => Err(e),
            },
        }
    }
}

impl Drop for MessageQueue {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this queue's, closed once.
        unsafe { libc::mq_close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(10);
    const SHORT: Duration = Duration::from_millis(20);

    /// Each way: a wait with nothing sent runs out; one with something sent returns it.
    #[test]
    fn every_way_waits_out_its_limit_alone_and_returns_once_woken() {
        let f = Futex::default();
        assert!(!f.wait_while(0, SHORT));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(SHORT);
                f.store(1);
                f.wake_one();
            });
            while !f.wait_while(0, LONG) {}
        });
        assert_eq!(f.load(), 1);

        let q = MessageQueue::new("test").unwrap();
        assert_eq!(q.receive_within(SHORT).unwrap(), None);
        q.send(42).unwrap();
        assert_eq!(q.receive_within(LONG).unwrap(), Some(42));

        let m = PosixMutex::new(false).unwrap();
        assert!(m.lock_within(LONG).unwrap());
        assert!(!m.lock_within(SHORT).unwrap(), "held: the wait runs out");
        m.unlock();
        assert!(m.lock_within(SHORT).unwrap());
        m.unlock();
    }

    /// A semaphore lives under its key until removed; a second under the same key is refused.
    #[test]
    fn a_semaphore_is_found_and_removed_by_its_key() {
        let key = 0x5eed_0000 | (std::process::id() & 0xffff) as i32;
        let s = SysvSemaphores::create(key, 2).unwrap();
        assert!(SysvSemaphores::create(key, 2).is_err(), "the key is taken");
        assert!(!s.take_within(1, SHORT).unwrap());
        s.post(1).unwrap();
        assert!(!s.take_within(0, SHORT).unwrap(), "the other one is still at 0");
        assert!(s.take_within(1, LONG).unwrap());
        assert!(remove_sysv_semaphore(key).unwrap());
        assert!(!remove_sysv_semaphore(key).unwrap(), "already gone");
    }
}
