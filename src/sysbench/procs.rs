//! Processor and processes: system call entry, simple file operations, signals, and making
//! processes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Instant;

use super::spawn::{How, Spawner};
use super::{since, Bench, Group, Op, Timed};
use crate::sys;

/// A bench that repeats one closure.
struct Each<F: FnMut() -> io::Result<()>>(F);

impl<F: FnMut() -> io::Result<()>> Bench for Each<F> {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let t = Instant::now();
        for _ in 0..n {
            (self.0)()?;
        }
        Ok(Timed { ns: since(t), units: n })
    }
}

fn each<F: FnMut() -> io::Result<()> + 'static>(f: F) -> io::Result<Box<dyn Bench>> {
    Ok(Box::new(Each(f)))
}

pub fn ops() -> Vec<Op> {
    let op = |name, help, make| Op { name, group: Group::Processes, bandwidth: false, help, make };
    vec![
        op("null-call", "the cheapest system call (getppid)", || {
            each(|| {
                std::hint::black_box(sys::parent_pid());
                Ok(())
            })
        }),
        op("null-read", "read one byte of /dev/zero (LMbench's Simple read)", || {
            let mut zero = File::open("/dev/zero")?;
            let mut b = [0u8; 1];
            each(move || zero.read_exact(&mut b))
        }),
        op("null-write", "write one byte to /dev/null (LMbench's Simple write)", || {
            let mut null = File::options().write(true).open("/dev/null")?;
            each(move || null.write_all(&[0u8]))
        }),
        op("null-io", "the mean of null-read and null-write, as LMbench's summary's null I/O", || {
            let (zero, null) = (File::open("/dev/zero")?, File::options().write(true).open("/dev/null")?);
            Ok(Box::new(NullIo { zero, null }))
        }),
        op("stat", "stat of a file that exists", || {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("f");
            File::create(&path)?;
            each(move || {
                let _keep = &dir;
                std::fs::metadata(&path).map(drop)
            })
        }),
        op("open-close", "open a file that exists and close it", || {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("f");
            File::create(&path)?;
            each(move || {
                let _keep = &dir;
                File::open(&path).map(drop)
            })
        }),
        op("select-tcp", "select on 100 connected TCP sockets, none ready", || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            let addr = listener.local_addr()?;
            let socks: Vec<std::net::TcpStream> =
                (0..100).map(|_| std::net::TcpStream::connect(addr)).collect::<io::Result<_>>()?;
            let fds: Vec<i32> = socks.iter().map(|s| s.as_raw_fd()).collect();
            each(move || {
                let _keep = (&listener, &socks);
                sys::select_read(&fds).map(drop)
            })
        }),
        op("sig-install", "install a signal handler (sigaction)", || {
            let guard = SignalGuard;
            each(move || {
                let _keep = &guard;
                sys::install_counter(libc::SIGUSR1)
            })
        }),
        op("sig-catch", "run a signal's handler: sending this process a signal less sending it signal 0", || {
            Ok(Box::new(Catch::install()?))
        }),
        op(
            "fork-exit",
            "fork a process that calls exit at once, and wait (from a small helper linked as LMbench's lat_proc)",
            || Spawner::make(How::Exit),
        ),
        op(
            "fork-exec",
            "fork, exec a tiny program that exits, and wait (from a small helper linked as LMbench's lat_proc)",
            || Spawner::make(How::Exec),
        ),
        op(
            "fork-sh",
            "fork, exec sh -c running a tiny program, and wait (from a small helper linked as LMbench's lat_proc)",
            || Spawner::make(How::Shell),
        ),
    ]
}

/// Puts SIGUSR1 back when a signal bench ends.
struct SignalGuard;

impl Drop for SignalGuard {
    fn drop(&mut self) {
        sys::default_signal(libc::SIGUSR1);
    }
}

/// One read of /dev/zero and one write to /dev/null per iteration, two operations: the time
/// per operation is their mean.
struct NullIo {
    zero: File,
    null: File,
}

impl Bench for NullIo {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let mut b = [0u8; 1];
        let t = Instant::now();
        for _ in 0..n {
            self.zero.read_exact(&mut b)?;
            self.null.write_all(&b)?;
        }
        Ok(Timed { ns: since(t), units: 2 * n })
    }
}

/// The cost of catching a signal as LMbench states it: sending this process SIGUSR1 and
/// running its handler, less sending it signal 0 (the same call, no delivery). SIGUSR1's
/// handler is installed while it lives.
pub(super) struct Catch(SignalGuard);

impl Catch {
    pub(super) fn install() -> io::Result<Catch> {
        sys::install_counter(libc::SIGUSR1)?;
        Ok(Catch(SignalGuard))
    }

    /// `n` signals sent and caught, less `n` sends of signal 0, in ns.
    pub(super) fn net(&self, n: u64) -> u64 {
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(sys::raise_counted(libc::SIGUSR1));
        }
        let caught = since(t);
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(sys::raise_counted(0));
        }
        super::less(caught, since(t))
    }
}

impl Bench for Catch {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        Ok(Timed { ns: self.net(n), units: n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_io_counts_a_read_and_a_write_as_two_operations() {
        let op = ops().into_iter().find(|o| o.name == "null-io").unwrap();
        let t = (op.make)().unwrap().iterate(5).unwrap();
        assert_eq!(t.units, 10, "5 reads and 5 writes: the time per operation is their mean");
        // A 300 ns read and a 500 ns write: 400 ns, LMbench's summary's null I/O.
        assert_eq!(op.value(Timed { ns: 5 * (300 + 500), units: 10 }), 400_000);
    }
}
