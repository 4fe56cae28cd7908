//! The echo server behind `pingpong --serve` and `response --target`: it answers well-formed
//! probe packets of its session at once, byte for byte, and drops everything else.

use std::io::{self, Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::transport::Transport;
use super::wire::{self, Kind};
use crate::error::InputError;

/// At most this many answers per second: the server cannot be turned into a flood.
const MAX_RATE: u64 = 2_000_000;
const POLL: Duration = Duration::from_millis(200);
/// The longest a stream session waits to write an answer: a client that sends and never reads
/// would otherwise hold its session, and the server's stop, for ever (issue 29).
const WRITE_WAIT: Duration = Duration::from_secs(1);
/// Concurrent stream sessions at most.
const MAX_SESSIONS: usize = 16;
/// UDP peers remembered at most.
const MAX_PEERS: usize = 64;

/// Sets up a serving thread; what it returns (the thread's scheduling guard) is kept until the
/// thread stops serving.
pub type Enter<'a> = &'a (dyn Fn() -> Box<dyn std::any::Any> + Sync);

/// What a server did.
#[derive(Default, Debug)]
pub struct Counters {
    pub answered: AtomicU64,
    pub foreign: AtomicU64,
    pub sessions: AtomicU64,
}

/// A bound server, ready to serve.
pub struct Server {
    kind: Bound,
    /// Only this token is accepted; without it, each session's hello sets its token.
    token: Option<u64>,
    host: String,
    pub counters: Arc<Counters>,
    pub local: String,
}

enum Bound {
    Udp(UdpSocket),
    Tcp(TcpListener),
    Unix(UnixListener, std::path::PathBuf),
    Zmq(zmq::Socket),
}

impl Server {
    /// Binds `addr`; a port in use or an address not on this host is a clear error.
    pub fn bind(transport: Transport, addr: &str, token: Option<u64>) -> Result<Server> {
        let fail = |e: String| InputError::Invalid(format!("cannot serve on {addr} over {transport:?}: {e}"));
        let (kind, local) = match transport {
            Transport::Udp => {
                let s = UdpSocket::bind(addr).map_err(|e| fail(e.to_string()))?;
                s.set_read_timeout(Some(POLL))?;
                let local = s.local_addr()?.to_string();
                (Bound::Udp(s), local)
            }
            Transport::Tcp => {
                let l = TcpListener::bind(addr).map_err(|e| fail(e.to_string()))?;
                l.set_nonblocking(true)?;
                let local = l.local_addr()?.to_string();
                (Bound::Tcp(l), local)
            }
            Transport::Unix => {
                let path = std::path::PathBuf::from(addr);
                let l = UnixListener::bind(&path).map_err(|e| fail(e.to_string()))?;
                l.set_nonblocking(true)?;
                (Bound::Unix(l, path), addr.to_string())
            }
            Transport::Zmq => {
                let s = zmq::Context::new().socket(zmq::REP).map_err(|e| fail(e.to_string()))?;
                s.set_rcvtimeo(POLL.as_millis() as i32).map_err(|e| fail(e.to_string()))?;
                s.set_linger(0).map_err(|e| fail(e.to_string()))?;
                s.bind(&format!("tcp://{addr}")).map_err(|e| fail(e.to_string()))?;
                let local = s.get_last_endpoint().ok().and_then(|r| r.ok()).unwrap_or_default();
                (Bound::Zmq(s), local.trim_start_matches("tcp://").to_string())
            }
        };
        Ok(Server { kind, token, host: crate::sysinfo::hostname(), counters: Arc::default(), local })
    }

    /// Serves until `stop` is set. `enter` runs first on every serving thread (pinning,
    /// priority); what it returns lives as long as the thread serves.
    /// Says where the serving thread runs ("CPU 1, fifo/95") in every welcome, after the
    /// hostname on a line of its own, so a client stores where its other end ran.
    pub fn placed(mut self, placement: &str) -> Server {
        self.host = format!("{}\n{placement}", self.host);
        self
    }

    pub fn serve(self, stop: &AtomicBool, enter: Enter) -> Result<()> {
        let c = &self.counters;
        match &self.kind {
            Bound::Udp(s) => {
                let _setup = enter();
                serve_udp(s, self.token, &self.host, stop, c)
            }
            Bound::Zmq(s) => {
                let _setup = enter();
                serve_zmq(s, self.token, &self.host, stop, c)
            }
            Bound::Tcp(l) => {
                serve_streams(|| l.accept().map(|(s, _)| session_stream(s)), self.token, &self.host, stop, c, enter)
            }
            Bound::Unix(l, path) => {
                let r = serve_streams(
                    || l.accept().map(|(s, _)| session_stream(s)),
                    self.token,
                    &self.host,
                    stop,
                    c,
                    enter,
                );
                let _ = std::fs::remove_file(path);
                r
            }
        }
    }

    /// Serves on a thread of its own for as long as `work` runs, and stops when `work` ends,
    /// however it ends. A panic in `work` (a `println!` to a closed stdout) used to leave the
    /// server serving and `std::thread::scope` waiting for it for ever, deaf to SIGTERM (issue
    /// 29): the stop is set by a guard that unwinding drops too. A server that fails or panics
    /// does not end `work`; its error is dropped, as a study's peer going away is.
    pub fn serve_during<R>(self, enter: Enter, work: impl FnOnce() -> R) -> R {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let server = s.spawn(|| self.serve(&stop, enter));
            let result = {
                let _stop = StopOnDrop(&stop);
                work()
            };
            // Bounded: every serving loop looks at `stop` at least every POLL.
            let _ = server.join();
            result
        })
    }
}

/// Sets its flag when dropped, on return or on unwinding alike.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Counts answers per second and says when the cap is reached.
struct RateCap {
    second: Instant,
    count: u64,
}

impl RateCap {
    fn new() -> Self {
        RateCap { second: Instant::now(), count: 0 }
    }
    fn allow(&mut self) -> bool {
        if self.second.elapsed() >= Duration::from_secs(1) {
            self.second = Instant::now();
            self.count = 0;
        }
        self.count += 1;
        self.count <= MAX_RATE
    }
}

/// The answer to one packet, if it gets one: (kind of answer, token to remember).
fn judge(pkt: &[u8], fixed: Option<u64>, session: Option<u64>) -> Option<(Kind, u64)> {
    let h = wire::read_header(pkt)?;
    match h.kind {
        Kind::Hello if pkt.len() == wire::HELLO_LEN && h.seq as usize <= wire::MAX_SIZE => {
            Some(if fixed.is_none_or(|t| t == h.token) { (Kind::Welcome, h.token) } else { (Kind::Reject, h.token) })
        }
        Kind::Ping if session == Some(h.token) => Some((Kind::Ping, h.token)),
        _ => None,
    }
}

fn serve_udp(s: &UdpSocket, fixed: Option<u64>, host: &str, stop: &AtomicBool, c: &Counters) -> Result<()> {
    let mut buf = vec![0u8; wire::HEADER + wire::MAX_SIZE];
    let mut peers: Vec<(std::net::SocketAddr, u64)> = Vec::new();
    let mut cap = RateCap::new();
    while !stop.load(Ordering::Relaxed) {
        let (n, from) = match s.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if again(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        let session = peers.iter().find(|p| p.0 == from).map(|p| p.1);
        match judge(&buf[..n], fixed, session) {
            Some((Kind::Ping, _)) if cap.allow() => {
                let _ = s.send_to(&buf[..n], from);
                c.answered.fetch_add(1, Ordering::Relaxed);
            }
            Some((kind @ (Kind::Welcome | Kind::Reject), token)) => {
                if kind == Kind::Welcome {
                    peers.retain(|p| p.0 != from);
                    if peers.len() >= MAX_PEERS {
                        peers.remove(0);
                    }
                    peers.push((from, token));
                    c.sessions.fetch_add(1, Ordering::Relaxed);
                }
                let _ = s.send_to(&wire::answer(kind, token, host, n), from);
            }
            _ => {
                c.foreign.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    Ok(())
}

fn serve_zmq(s: &zmq::Socket, fixed: Option<u64>, host: &str, stop: &AtomicBool, c: &Counters) -> Result<()> {
    let mut buf = vec![0u8; wire::HEADER + wire::MAX_SIZE];
    let mut session = None;
    let mut cap = RateCap::new();
    while !stop.load(Ordering::Relaxed) {
        let n = match s.recv_into(&mut buf, 0) {
            Ok(n) => n.min(buf.len()),
            Err(zmq::Error::EAGAIN | zmq::Error::EINTR) => continue,
            Err(e) => return Err(anyhow::anyhow!("zmq: {e}")),
        };
        // REP must answer every request: a foreign one gets an empty reply, never more bytes.
        let reply: Vec<u8> = match judge(&buf[..n], fixed, session) {
            Some((Kind::Ping, _)) if cap.allow() => {
                c.answered.fetch_add(1, Ordering::Relaxed);
                buf[..n].to_vec()
            }
            Some((kind @ (Kind::Welcome | Kind::Reject), token)) => {
                if kind == Kind::Welcome {
                    session = Some(token);
                    c.sessions.fetch_add(1, Ordering::Relaxed);
                }
                wire::answer(kind, token, host, n)
            }
            _ => {
                c.foreign.fetch_add(1, Ordering::Relaxed);
                Vec::new()
            }
        };
        s.send(reply, 0).map_err(|e| anyhow::anyhow!("zmq: {e}"))?;
    }
    Ok(())
}

trait ReadWrite: Read + Write + Send {}
impl<T: Read + Write + Send> ReadWrite for T {}

/// An accepted stream made ready for a session: blocking reads that wake up to check for stop.
trait SessionStream: ReadWrite + 'static {
    fn make_ready(&self) -> io::Result<()>;
}

impl SessionStream for std::net::TcpStream {
    fn make_ready(&self) -> io::Result<()> {
        self.set_nodelay(true)?;
        self.set_nonblocking(false)?;
        self.set_write_timeout(Some(WRITE_WAIT))?;
        self.set_read_timeout(Some(POLL))
    }
}

impl SessionStream for std::os::unix::net::UnixStream {
    fn make_ready(&self) -> io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_write_timeout(Some(WRITE_WAIT))?;
        self.set_read_timeout(Some(POLL))
    }
}

fn session_stream<S: SessionStream>(s: S) -> Box<dyn ReadWrite> {
    let _ = s.make_ready();
    Box::new(s)
}

fn serve_streams(
    accept: impl Fn() -> io::Result<Box<dyn ReadWrite>>,
    fixed: Option<u64>,
    host: &str,
    stop: &AtomicBool,
    c: &Counters,
    enter: Enter,
) -> Result<()> {
    let live = AtomicU64::new(0);
    std::thread::scope(|scope| {
        while !stop.load(Ordering::Relaxed) {
            match accept() {
                Ok(stream) if (live.load(Ordering::Relaxed) as usize) < MAX_SESSIONS => {
                    live.fetch_add(1, Ordering::Relaxed);
                    let live = &live;
                    scope.spawn(move || {
                        let _setup = enter();
                        let _ = session(stream, fixed, host, stop, c);
                        live.fetch_sub(1, Ordering::Relaxed);
                    });
                }
                Ok(_) => {
                    c.foreign.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    Ok(())
}

/// One stream session: a hello of fixed length, then fixed-size pings echoed.
fn session(
    mut s: Box<dyn ReadWrite>,
    fixed: Option<u64>,
    host: &str,
    stop: &AtomicBool,
    c: &Counters,
) -> io::Result<()> {
    let mut hello = [0u8; wire::HELLO_LEN];
    read_full(&mut s, &mut hello, stop)?;
    let (kind, token) = match judge(&hello, fixed, None) {
        Some(x) => x,
        None => {
            c.foreign.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
    };
    // The answer is padded to the hello's length: the client reads a fixed size.
    let mut answer = wire::answer(kind, token, host, wire::HELLO_LEN);
    answer.resize(wire::HELLO_LEN, 0);
    s.write_all(&answer)?;
    if kind == Kind::Reject {
        return Ok(());
    }
    c.sessions.fetch_add(1, Ordering::Relaxed);
    let size = wire::read_header(&hello).map_or(0, |h| h.seq as usize);
    let mut buf = vec![0u8; wire::HEADER + size];
    let mut cap = RateCap::new();
    loop {
        read_full(&mut s, &mut buf, stop)?;
        match judge(&buf, fixed, Some(token)) {
            Some((Kind::Ping, _)) if cap.allow() => {
                s.write_all(&buf)?;
                c.answered.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                // A stream out of step cannot be trusted again.
                c.foreign.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
    }
}

/// Whether a read that failed with `e` is tried again: its poll ran out, or a signal landed on
/// this thread (the runner's handlers do not restart calls, so a SIGTERM that the kernel gives
/// to the server's thread used to end the server; issue 29).
fn again(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

/// Reads exactly `buf.len()` bytes, waking up to check `stop`.
fn read_full(s: &mut Box<dyn ReadWrite>, buf: &mut [u8], stop: &AtomicBool) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if again(&e) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_setup() -> Box<dyn std::any::Any> {
        Box::new(())
    }

    /// Issue 29: a study whose cells panicked (a `println!` to a closed pipe) hung for ever in
    /// `thread::scope`, waiting for its echo server that nobody had told to stop.
    #[test]
    fn a_panic_in_the_work_stops_the_server_instead_of_hanging() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let server = Server::bind(Transport::Udp, "127.0.0.1:0", None).unwrap();
            let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                server.serve_during(&no_setup, || -> u32 { panic!("a cell failed") })
            }));
            let _ = tx.send(ended.is_err());
        });
        // The server polls every 200 ms: 10 s is ample, and the hang was for ever.
        let panicked = rx.recv_timeout(Duration::from_secs(10)).expect("serve_during hung after a panic");
        assert!(panicked, "the work's panic goes on to the caller");
    }

    /// Issue 29: a signal that lands on a serving thread interrupts its read (EINTR); the
    /// server reads again instead of ending.
    fn serves_on_through_signals(transport: Transport) {
        let server = Server::bind(transport, "127.0.0.1:0", None).unwrap();
        let (addr, counters) = (server.local.clone(), Arc::clone(&server.counters));
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let enter = move || -> Box<dyn std::any::Any> {
            let _ = tx.lock().unwrap().send(crate::sys::thread_id());
            Box::new(())
        };
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let serving = s.spawn(|| server.serve(&stop, &enter));
            // A failed assertion must not leave the scope waiting for the server.
            let _stop = StopOnDrop(&stop);
            let timeout = Duration::from_secs(2);
            // A stream's session thread starts with the connection; the UDP server's at once.
            let (mut conn, _) = super::super::transport::connect(transport, &addr, 7, 1, timeout, false).unwrap();
            let mut threads: Vec<i32> = Vec::new();
            // Many signals over a second: most land while a thread waits in its read.
            for _ in 0..100 {
                threads.extend(rx.try_iter());
                // A session thread that ended has no one to interrupt.
                threads.iter().for_each(|t| drop(crate::sys::interrupt_thread(*t)));
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(!threads.is_empty(), "the serving thread said who it is");
            // The same session goes on: its ping comes back.
            let mut ping = vec![0u8; wire::HEADER + 1];
            wire::write_header(&mut ping, wire::Header { kind: Kind::Ping, token: 7, seq: 1 });
            conn.send(&ping).unwrap();
            let mut back = vec![0u8; ping.len()];
            let got = conn.recv(&mut back, ping.len(), &|| false);
            assert!(!serving.is_finished(), "a signal ended the {transport:?} server");
            assert_eq!(got.expect("the session still answers after the signals"), ping.len());
            assert_eq!(back, ping);
        });
        assert_eq!(counters.answered.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_signal_on_the_udp_server_thread_does_not_end_it() {
        serves_on_through_signals(Transport::Udp);
    }

    #[test]
    fn a_signal_on_a_tcp_session_thread_does_not_end_it() {
        serves_on_through_signals(Transport::Tcp);
    }

    /// Issue 29: a client that sends pings and never reads filled the socket until the
    /// session's write blocked for ever, and with it the server's stop.
    #[test]
    fn a_client_that_never_reads_does_not_hold_the_server() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let server = Server::bind(Transport::Tcp, "127.0.0.1:0", None).unwrap();
            let addr = server.local.clone();
            server.serve_during(&no_setup, || {
                let mut s = std::net::TcpStream::connect(&addr).unwrap();
                s.write_all(&wire::hello(9, 1000)).unwrap();
                let mut welcome = [0u8; wire::HELLO_LEN];
                s.read_exact(&mut welcome).unwrap();
                s.set_write_timeout(Some(Duration::from_millis(50))).unwrap();
                let mut ping = vec![0u8; wire::HEADER + 1000];
                wire::write_header(&mut ping, wire::Header { kind: Kind::Ping, token: 9, seq: 1 });
                let until = Instant::now() + Duration::from_secs(2);
                while Instant::now() < until {
                    let _ = s.write_all(&ping);
                }
                // Kept open, unread, while the server stops.
                std::mem::forget(s);
            });
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(30)).expect("the server's stop waited on a client that never reads");
    }

    #[test]
    fn the_server_answers_while_the_work_runs_and_stops_after() {
        let server = Server::bind(Transport::Udp, "127.0.0.1:0", None).unwrap();
        let (addr, counters) = (server.local.clone(), Arc::clone(&server.counters));
        let host = server.serve_during(&no_setup, || {
            let timeout = Duration::from_secs(2);
            let (_conn, host) = super::super::transport::connect(Transport::Udp, &addr, 7, 1, timeout, false).unwrap();
            host
        });
        assert_eq!(host, crate::sysinfo::hostname());
        assert_eq!(counters.sessions.load(Ordering::Relaxed), 1, "the hello was answered");
    }
}
