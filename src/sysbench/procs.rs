//! Processor and processes: system call entry, simple file operations, signals, and making
//! processes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Instant;

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
        op("null-io", "read one byte of /dev/zero and write one to /dev/null", || {
            let (mut zero, mut null) = (File::open("/dev/zero")?, File::options().write(true).open("/dev/null")?);
            let mut b = [0u8; 1];
            each(move || {
                zero.read_exact(&mut b)?;
                null.write_all(&b)
            })
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
        op("sig-catch", "send this process a signal and run its handler", || {
            sys::install_counter(libc::SIGUSR1)?;
            let guard = SignalGuard;
            each(move || {
                let _keep = &guard;
                std::hint::black_box(sys::raise_counted(libc::SIGUSR1));
                Ok(())
            })
        }),
        op("fork-exit", "fork a process that exits at once, and wait for it", || {
            each(|| {
                let pid = sys::fork_task(sys::ChildTask::Exit, &[])?;
                sys::wait_pid(pid).map(drop)
            })
        }),
        op("fork-exec", "fork, exec a program that exits (true), and wait", || {
            let exec = sys::Exec::new(&which("true")?, &["true"])?;
            each(move || exec.run().map(drop))
        }),
        op("fork-sh", "fork, exec sh -c running a program (true), and wait", || {
            let t = which("true")?;
            let exec = sys::Exec::new(&which("sh")?, &["sh", "-c", &t])?;
            each(move || exec.run().map(drop))
        }),
    ]
}

/// Puts SIGUSR1 back when a signal bench ends.
struct SignalGuard;

impl Drop for SignalGuard {
    fn drop(&mut self) {
        sys::default_signal(libc::SIGUSR1);
    }
}

/// A program's path from the usual places.
fn which(name: &str) -> io::Result<String> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| format!("{d}/{name}"))
        .find(|p| std::path::Path::new(p).is_file())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no '{name}' in /usr/bin or /bin")))
}
