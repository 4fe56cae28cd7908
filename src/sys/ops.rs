//! The system calls `rtbench sysbench` times: raw reads and writes for forked children,
//! waiting for them, signal handlers, select, file mappings.

use std::io;
use std::os::fd::RawFd;

use super::check;

/// read(2) on a raw fd, for a forked child (async-signal-safe). Returns bytes read.
pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// write(2) on a raw fd, for a forked child (async-signal-safe). Returns bytes written.
pub fn write_fd(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of its length.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// close(2), for fds a forked child must not keep.
pub fn close_fd(fd: RawFd) {
    // SAFETY: closing an fd this process owns.
    unsafe { libc::close(fd) };
}

/// Waits for one child to end; its exit status (or 128 + signal).
pub fn wait_pid(pid: u32) -> io::Result<i32> {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer.
    let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) })
}

extern "C" fn count_signal(_: libc::c_int) {
    CAUGHT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

static CAUGHT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Installs a handler for `sig` that counts it (sigaction: the "signal install" cost).
pub fn install_counter(sig: i32) -> io::Result<()> {
    // SAFETY: a zeroed sigaction with a plain async-signal-safe handler and an empty mask.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = count_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        check(libc::sigaction(sig, &sa, std::ptr::null_mut()))
    }
}

/// Puts `sig` back to its default action.
pub fn default_signal(sig: i32) {
    // SAFETY: SIG_DFL is always a valid disposition.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
}

/// Sends `sig` to this process and returns once its handler ran; the count so far.
pub fn raise_counted(sig: i32) -> u64 {
    // SAFETY: raise with a signal whose handler is installed.
    unsafe { libc::raise(sig) };
    CAUGHT.load(std::sync::atomic::Ordering::Relaxed)
}

/// select(2) on `fds` for reading with a zero timeout; the number ready.
pub fn select_read(fds: &[RawFd]) -> io::Result<usize> {
    // SAFETY: an fd_set is plain data, initialised by FD_ZERO before use; every fd < FD_SETSIZE
    // is checked by the caller's construction (a few hundred at most).
    unsafe {
        let mut set: libc::fd_set = std::mem::zeroed();
        libc::FD_ZERO(&mut set);
        let mut max = 0;
        for &fd in fds {
            if fd as usize >= libc::FD_SETSIZE {
                return Err(io::Error::other("an fd past FD_SETSIZE"));
            }
            libc::FD_SET(fd, &mut set);
            max = max.max(fd);
        }
        let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
        let n = libc::select(max + 1, &mut set, std::ptr::null_mut(), std::ptr::null_mut(), &mut tv);
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// A shared mapping of a file, read-only or also writable; unmapped on drop.
pub struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
    writable: bool,
}

impl Mapping {
    /// `len` bytes of `fd` (open for reading), shared and read-only.
    pub fn file(fd: RawFd, len: usize) -> io::Result<Mapping> {
        Mapping::map(fd, len, false)
    }

    /// `len` bytes of `fd` (open for reading and writing), shared, readable and writable: a
    /// write lands in the file's page-cache page, as LMbench's mapping benchmark writes.
    pub fn file_rw(fd: RawFd, len: usize) -> io::Result<Mapping> {
        Mapping::map(fd, len, true)
    }

    fn map(fd: RawFd, len: usize, writable: bool) -> io::Result<Mapping> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a fresh mapping chosen by the kernel; checked for MAP_FAILED.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr, len, writable })
    }

    /// Stores `v` at byte `at` (a write the compiler keeps: it is the fault being timed).
    pub fn write(&mut self, at: usize, v: u8) -> io::Result<()> {
        if !self.writable || at >= self.len {
            return Err(io::Error::other("a write outside a writable mapping"));
        }
        // SAFETY: `at` is inside the mapping, which is writable for as long as self lives.
        unsafe { std::ptr::write_volatile(self.ptr.cast::<u8>().add(at), v) };
        Ok(())
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes for as long as self lives.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// The minor page faults the calling thread has taken so far (getrusage RUSAGE_THREAD).
pub fn thread_minor_faults() -> io::Result<u64> {
    // SAFETY: a zeroed rusage is valid plain data for getrusage to fill.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        check(libc::getrusage(libc::RUSAGE_THREAD, &mut usage))?;
        Ok(usage.ru_minflt as u64)
    }
}

/// The size of a memory page.
pub fn page_size() -> usize {
    // SAFETY: sysconf with a valid name.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

thread_local! {
    /// The page a protection-fault round on this thread writes to (0: no round running). A
    /// thread local, so a fault elsewhere, or on another thread, is never taken for ours.
    static ROUND_PAGE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
/// The faults still to take before the handler lets the write through.
static FAULTS_LEFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A plain handler, as LMbench's: an SA_SIGINFO one would also have the kernel copy the
/// signal's details out on every fault, which the plain catch subtracted from it does not.
extern "C" fn on_segv(_: libc::c_int) {
    use std::sync::atomic::Ordering::Relaxed;
    let page = ROUND_PAGE.with(|p| p.get());
    // SAFETY: mmap and signal are plain system calls; the page is the round's own.
    unsafe {
        if page == 0 {
            // Not ours: a real fault. The default action ends the process when it recurs.
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        } else if FAULTS_LEFT.fetch_sub(1, Relaxed) <= 1 {
            // Returning re-runs the write, which faults again: LMbench's loop. The last fault
            // of a round puts a writable page in the file's place, and the write goes through.
            libc::mmap(
                page as *mut libc::c_void,
                page_size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
        }
    }
}

/// A page of a file mapped shared and read-only, as LMbench's protection-fault latency writes
/// to, and a SIGSEGV handler that counts the faults. Dropping it restores both.
pub struct ProtFault {
    page: *mut libc::c_void,
    fd: RawFd,
}

impl ProtFault {
    /// Maps the first page of `fd` (a file opened for reading, at least a page long), which
    /// must stay open while this lives.
    pub fn new(fd: RawFd) -> io::Result<ProtFault> {
        let mut p = ProtFault { page: std::ptr::null_mut(), fd };
        p.page = p.map_file(std::ptr::null_mut(), 0)?;
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_segv as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut())
        };
        check(rc)?;
        Ok(p)
    }

    /// The file's first page, read-only, at `at` (null: where the kernel chooses) with `flags`.
    fn map_file(&self, at: *mut libc::c_void, flags: libc::c_int) -> io::Result<*mut libc::c_void> {
        // SAFETY: a shared read-only mapping of our fd; at a fixed address only over our own page.
        let page = unsafe { libc::mmap(at, page_size(), libc::PROT_READ, libc::MAP_SHARED | flags, self.fd, 0) };
        if page == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(page)
    }

    /// One write to the file's read-only page, which faults `n` times over (the handler returns
    /// and the write runs again) before the last fault's handler lets it through: LMbench's
    /// protection-fault loop, plus mapping the file's page back and one first touch of a
    /// fresh page per round. Returns ns.
    pub fn round(&self, n: u64) -> io::Result<u64> {
        FAULTS_LEFT.store(n.max(1), std::sync::atomic::Ordering::Relaxed);
        let t = super::now_ns();
        self.map_file(self.page, libc::MAP_FIXED)?;
        ROUND_PAGE.with(|p| p.set(self.page as usize));
        // The handler runs on this thread, between these: keep the stores on either side.
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: our own page, mapped for the life of self; the handler makes it writable.
        unsafe { std::ptr::write_volatile(self.page.cast::<u8>(), n as u8) };
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        ROUND_PAGE.with(|p| p.set(0));
        Ok(super::now_ns() - t)
    }

    /// Where the page is mapped.
    pub fn addr(&self) -> usize {
        self.page as usize
    }

    /// The first byte of the page: what the last round wrote.
    pub fn written(&self) -> u8 {
        // SAFETY: the page is mapped readable for the life of self.
        unsafe { std::ptr::read_volatile(self.page.cast::<u8>()) }
    }
}

impl Drop for ProtFault {
    fn drop(&mut self) {
        // SAFETY: SIG_DFL is a valid disposition; unmapping exactly the page we mapped.
        unsafe {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            libc::munmap(self.page, page_size());
        }
    }
}
