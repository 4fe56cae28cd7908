//! Between processes: context switches around a ring of pipes, round trips over pipes and
//! sockets, TCP connection set-up, and bandwidths. Partner processes are forked and do only
//! reads, writes and memory touching until their input ends.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::{IntoRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Instant;

use super::{since, Bench, Group, Op, Timed};
use crate::sys;

pub fn ops() -> Vec<Op> {
    let ctx = |name, help, make| Op { name, group: Group::Context, bandwidth: false, help, make };
    let lat = |name, help, make| Op { name, group: Group::Latency, bandwidth: false, help, make };
    let bw = |name, help, make| Op { name, group: Group::Bandwidth, bandwidth: true, help, make };
    vec![
        ctx("ctx-2p-0k", "context switch, 2 processes passing a token, no working set", || Ring::make(2, 0)),
        ctx("ctx-2p-16k", "context switch, 2 processes each touching 16 KB", || Ring::make(2, 16)),
        ctx("ctx-2p-64k", "context switch, 2 processes each touching 64 KB", || Ring::make(2, 64)),
        ctx("ctx-8p-16k", "context switch, 8 processes each touching 16 KB", || Ring::make(8, 16)),
        ctx("ctx-8p-64k", "context switch, 8 processes each touching 64 KB", || Ring::make(8, 64)),
        ctx("ctx-16p-16k", "context switch, 16 processes each touching 16 KB", || Ring::make(16, 16)),
        ctx("ctx-16p-64k", "context switch, 16 processes each touching 64 KB", || Ring::make(16, 64)),
        lat("lat-pipe", "round trip of a byte through two pipes to another process", || {
            let (a, b) = (pipe()?, pipe()?);
            Echo::start((a.0, b.1), (b.0, a.1))
        }),
        lat("lat-unix", "round trip of a byte over an AF_UNIX stream socket", || {
            let (mine, theirs) = UnixStream::pair()?;
            let (m, t) = (mine.into_raw_fd(), theirs.into_raw_fd());
            Echo::start((t, t), (m, m))
        }),
        lat("lat-udp", "round trip of a byte over UDP on loopback", || {
            let (mine, theirs) = (UdpSocket::bind("127.0.0.1:0")?, UdpSocket::bind("127.0.0.1:0")?);
            mine.connect(theirs.local_addr()?)?;
            theirs.connect(mine.local_addr()?)?;
            let (m, t) = (mine.into_raw_fd(), theirs.into_raw_fd());
            Echo::start((t, t), (m, m))
        }),
        lat("lat-tcp", "round trip of a byte over TCP on loopback", || {
            let (mine, theirs) = tcp_pair()?;
            let (m, t) = (mine.into_raw_fd(), theirs.into_raw_fd());
            Echo::start((t, t), (m, m))
        }),
        lat(
            "tcp-setup",
            "TCP connection set-up and close on loopback, to a listener that keeps up. Not LMbench's lat_connect ('TCP/IP connection cost'): its server process falls behind its client, its 100-deep listen queue overflows and each dropped SYN is sent again after 1 s; on a 2-CPU VM those retries made its figure milliseconds",
            TcpConnect::make,
        ),
        bw("bw-pipe", "a stream of 64 KB writes through a pipe from another process", || {
            let (r, w) = pipe()?;
            Stream::start(r, w)
        }),
        bw("bw-unix", "a stream of 64 KB writes over an AF_UNIX stream socket", || {
            let (mine, theirs) = UnixStream::pair()?;
            Stream::start(mine.into_raw_fd(), theirs.into_raw_fd())
        }),
        bw("bw-tcp", "a stream of 64 KB writes over TCP on loopback", || {
            let (mine, theirs) = tcp_pair()?;
            Stream::start(mine.into_raw_fd(), theirs.into_raw_fd())
        }),
    ]
}

/// (read end, write end), owned as raw fds.
fn pipe() -> io::Result<(RawFd, RawFd)> {
    let (r, w) = std::io::pipe()?;
    Ok((r.into_raw_fd(), w.into_raw_fd()))
}

fn tcp_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mine = TcpStream::connect(listener.local_addr()?)?;
    let (theirs, _) = listener.accept()?;
    mine.set_nodelay(true)?;
    theirs.set_nodelay(true)?;
    Ok((mine, theirs))
}

/// Forks a partner that runs `task` on its fds and exits; the parent closes the partner's fds.
/// The partner is killed with rtbench.
fn partner(task: sys::ChildTask, theirs: &[RawFd], mine: &[RawFd]) -> io::Result<u32> {
    let close: Vec<RawFd> = mine.iter().filter(|fd| !theirs.contains(fd)).copied().collect();
    let pid = sys::fork_task(task, &close)?;
    for &fd in theirs {
        if !mine.contains(&fd) {
            sys::close_fd(fd);
        }
    }
    Ok(pid)
}

/// A partner that sends back every byte it gets, until its input ends.
struct Echo {
    read: RawFd,
    write: RawFd,
    pid: u32,
}

impl Echo {
    /// `theirs`: the partner's (read, write) fds; `mine`: ours.
    fn start(theirs: (RawFd, RawFd), mine: (RawFd, RawFd)) -> io::Result<Box<dyn Bench>> {
        let task = sys::ChildTask::Echo { read: theirs.0, write: theirs.1 };
        let pid = partner(task, &[theirs.0, theirs.1], &[mine.0, mine.1])?;
        Ok(Box::new(Echo { read: mine.0, write: mine.1, pid }))
    }
}

impl Bench for Echo {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let mut b = [7u8; 1];
        let t = Instant::now();
        for _ in 0..n {
            sys::write_fd(self.write, &b)?;
            if sys::read_fd(self.read, &mut b)? != 1 {
                return Err(io::Error::other("the echo partner went away"));
            }
        }
        Ok(Timed { ns: since(t), units: n })
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        // The partner's input ends and it exits: a closed pipe or stream says so, and over UDP
        // an empty datagram does (a zero-length write on the others sends nothing).
        let _ = sys::write_fd(self.write, &[]);
        sys::close_fd(self.write);
        if self.read != self.write {
            sys::close_fd(self.read);
        }
        let _ = sys::wait_pid(self.pid);
    }
}

/// Bytes per write of the bandwidth partners.
const BLOCK: usize = 64 * 1024;

/// A partner that writes 64 KB blocks until the reader goes away.
struct Stream {
    read: RawFd,
    pid: u32,
    buf: Vec<u8>,
}

impl Stream {
    fn start(mine: RawFd, theirs: RawFd) -> io::Result<Box<dyn Bench>> {
        let block = vec![0x5au8; BLOCK];
        let pid = partner(sys::ChildTask::Stream { write: theirs, block: &block }, &[theirs], &[mine])?;
        Ok(Box::new(Stream { read: mine, pid, buf: vec![0; BLOCK] }))
    }
}

impl Bench for Stream {
    /// Reads `n` blocks' worth of bytes.
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let want = n * BLOCK as u64;
        let mut got = 0;
        let t = Instant::now();
        while got < want {
            let k = sys::read_fd(self.read, &mut self.buf[..(want - got).min(BLOCK as u64) as usize])?;
            if k == 0 {
                return Err(io::Error::other("the writing partner went away"));
            }
            got += k as u64;
        }
        Ok(Timed { ns: since(t), units: got })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Its next write fails (EPIPE, or a reset): it exits.
        sys::close_fd(self.read);
        let _ = sys::wait_pid(self.pid);
    }
}

/// A ring of processes passing a one-byte token through pipes, each touching its own working
/// set on every pass. The ring's own cost (a pipe write and read and the touching, measured in
/// one process) is taken off, as LMbench does, leaving the switch.
struct Ring {
    procs: usize,
    /// Our end of the ring: we write to the next and read from the last.
    write: RawFd,
    read: RawFd,
    pids: Vec<u32>,
    work: Vec<u64>,
    /// A pipe to ourselves, for the overhead.
    own: (RawFd, RawFd),
}

impl Ring {
    fn make(procs: usize, kb: usize) -> io::Result<Box<dyn Bench>> {
        let pipes: Vec<(RawFd, RawFd)> = (0..procs).map(|_| pipe()).collect::<io::Result<_>>()?;
        let all: Vec<RawFd> = pipes.iter().flat_map(|p| [p.0, p.1]).collect();
        let mut work = vec![1u64; kb * 1024 / 8];
        let mut pids = Vec::new();
        // Process i reads pipe i and writes pipe i + 1; we are process 0.
        for i in 1..procs {
            let (read, write) = (pipes[i].0, pipes[(i + 1) % procs].1);
            let close: Vec<RawFd> = all.iter().filter(|&&fd| fd != read && fd != write).copied().collect();
            let task = sys::ChildTask::Relay { read, write, work: &mut work, fill: i as u64 };
            let pid = sys::fork_task(task, &close)?;
            pids.push(pid);
        }
        let (read, write) = (pipes[0].0, pipes[1 % procs].1);
        for &fd in all.iter().filter(|&&fd| fd != read && fd != write) {
            sys::close_fd(fd);
        }
        for w in work.iter_mut() {
            *w = 0;
        }
        Ok(Box::new(Ring { procs, write, read, pids, work, own: pipe()? }))
    }

    fn hop(&self, write: RawFd, read: RawFd, b: &mut [u8; 1]) -> io::Result<()> {
        sys::write_fd(write, b)?;
        if sys::read_fd(read, b)? != 1 {
            return Err(io::Error::other("the ring broke"));
        }
        std::hint::black_box(sys::touch(&self.work));
        Ok(())
    }
}

impl Bench for Ring {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let mut b = [1u8; 1];
        let t = Instant::now();
        for _ in 0..n {
            self.hop(self.write, self.read, &mut b)?;
        }
        let ring = since(t);
        // The same hops without a switch: write to and read from our own pipe.
        let hops = n * self.procs as u64;
        let t = Instant::now();
        for _ in 0..hops {
            self.hop(self.own.1, self.own.0, &mut b)?;
        }
        Ok(switches(ring, since(t), n, self.procs))
    }
}

/// The time per switch of `n` passes around a ring of `procs` processes that took `ring` ns,
/// when the same hops within one process took `overhead` ns: one switch per hop.
fn switches(ring: u64, overhead: u64, n: u64, procs: usize) -> Timed {
    Timed { ns: super::less(ring, overhead), units: n * procs as u64 }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Closing our write end ends the ring process by process.
        for fd in [self.write, self.read, self.own.0, self.own.1] {
            sys::close_fd(fd);
        }
        for &pid in &self.pids {
            let _ = sys::wait_pid(pid);
        }
    }
}

/// Connects and closes TCP connections to a listener whose thread accepts them.
struct TcpConnect {
    addr: std::net::SocketAddr,
    /// The acceptor's listener, to wake it when the bench ends.
    listener: TcpListener,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl TcpConnect {
    fn make() -> io::Result<Box<dyn Bench>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let accepting = listener.try_clone()?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = std::sync::Arc::clone(&stop);
        let acceptor = std::thread::spawn(move || {
            for s in accepting.incoming() {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                // The server side closes at once too.
                drop(s);
            }
        });
        Ok(Box::new(TcpConnect { addr, listener, stop, acceptor: Some(acceptor) }))
    }
}

impl Bench for TcpConnect {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let t = Instant::now();
        for _ in 0..n {
            let mut s = TcpStream::connect(self.addr)?;
            let _ = s.flush();
            let _ = s.read(&mut [0u8; 0]);
        }
        Ok(Timed { ns: since(t), units: n })
    }
}

impl Drop for TcpConnect {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // Shutting the listener wakes the acceptor to see the flag. A last connection woke it
        // before, and the join waited for ever when none could be made (no descriptor left):
        // sysbench hung at the end of the operation, deaf to a stop (issue 29).
        if sys::shut_listener(&self.listener).is_ok() {
            if let Some(h) = self.acceptor.take() {
                let _ = h.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_is_the_ring_less_its_hops_in_one_process_per_hop() {
        // 10 passes around 2 processes: 60 µs, of which 20 µs of pipe traffic: 2 µs a switch.
        let t = switches(60_000, 20_000, 10, 2);
        assert_eq!((t.ns, t.units), (40_000, 20));
        let ctx = ops().into_iter().find(|o| o.name == "ctx-2p-0k").unwrap();
        assert_eq!(ctx.value(t), 2_000_000, "2 µs, in ps");
    }

    #[test]
    fn a_round_trip_is_one_operation() {
        let (a, b) = (pipe().unwrap(), pipe().unwrap());
        let mut echo = Echo::start((a.0, b.1), (b.0, a.1)).unwrap();
        let t = echo.iterate(40).unwrap();
        assert_eq!(t.units, 40, "one unit per byte sent and answered");
        let lat = ops().into_iter().find(|o| o.name == "lat-pipe").unwrap();
        assert_eq!(lat.value(Timed { ns: 280_000, units: 40 }), 7_000_000, "280 µs for 40 round trips: 7 µs each");
    }

    #[test]
    fn partners_answer_and_are_gone_afterwards() {
        let mut ring = Ring::make(3, 4).unwrap();
        assert_eq!(ring.iterate(50).unwrap().units, 150, "3 switches per pass");
        drop(ring);
        let (a, b) = (pipe().unwrap(), pipe().unwrap());
        let mut echo = Echo::start((a.0, b.1), (b.0, a.1)).unwrap();
        assert_eq!(echo.iterate(100).unwrap().units, 100);
        drop(echo);
        let (r, w) = pipe().unwrap();
        let mut s = Stream::start(r, w).unwrap();
        assert_eq!(s.iterate(4).unwrap().units, 4 * BLOCK as u64, "every byte asked for is read");
        drop(s);
        let mut c = TcpConnect::make().unwrap();
        assert_eq!(c.iterate(20).unwrap().units, 20);
    }

    const NO_DESCRIPTOR_LEFT: &str = "sysbench::ipc::tests::a_tcp_connect_bench_ends_with_no_descriptor_left";

    /// Run by the test below in a process of its own, with few descriptors: takes them all,
    /// then ends a tcp-setup bench.
    #[test]
    #[ignore = "run by the_acceptor_ends_when_no_connection_can_reach_it, in a process of its own"]
    fn a_tcp_connect_bench_ends_with_no_descriptor_left() {
        let bench = TcpConnect::make().unwrap();
        let mut held = Vec::new();
        while let Ok(f) = std::fs::File::open("/dev/null") {
            held.push(f);
        }
        let refused = TcpStream::connect("127.0.0.1:9").unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::EMFILE), "no connection can be made now: {refused}");
        drop(bench);
    }

    #[rtbench_testkit::needs(native)]
    #[test]
    fn the_acceptor_ends_when_no_connection_can_reach_it() {
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new("prlimit")
            .args(["--nofile=64:64", "--"])
            .arg(exe)
            .args(["--ignored", "--exact", NO_DESCRIPTOR_LEFT])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prlimit runs");
        let until = Instant::now() + std::time::Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the bench's end waited for ever for its acceptor");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && said.contains("1 passed"), "{said}");
    }
}
