//! The transports a round trip can take, client and server side: UDP, TCP (TCP_NODELAY), UNIX
//! stream sockets, and ZeroMQ REQ/REP through libzmq.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::wire::{self, Kind};
use crate::error::InputError;

/// The transport, as the run's parameters store it.
pub use crate::model::Transport;

/// Default port of the network probes' servers.
pub const DEFAULT_PORT: u16 = 17_700;

/// `HOST`, `HOST:PORT` or, for unix, a socket path; the server default is loopback.
pub fn address(transport: Transport, given: Option<&str>) -> String {
    match (transport, given) {
        (Transport::Unix, None) => std::env::temp_dir().join("rtbench-pingpong.sock").display().to_string(),
        (Transport::Unix, Some(p)) => p.to_string(),
        (_, None) => format!("127.0.0.1:{DEFAULT_PORT}"),
        (_, Some(a)) if a.contains(':') => a.to_string(),
        (_, Some(a)) => format!("{a}:{DEFAULT_PORT}"),
    }
}

/// How often a receive that waits looks whether its run was told to stop: a round trip whose
/// answer never comes ends this long after a stop, not its whole timeout later (issue 29).
const SLICE: Duration = Duration::from_millis(100);

/// Says whether the run a receive waits for was told to stop.
pub type Stop<'a> = &'a dyn Fn() -> bool;

/// One client connection: fixed-size messages out and back.
pub trait Conn: Send {
    fn send(&mut self, msg: &[u8]) -> io::Result<()>;
    /// Receives one message of `len` bytes into `buf`; an error (`TimedOut`, `WouldBlock`) after
    /// the timeout, or within [`SLICE`] of `stop` saying so.
    fn recv(&mut self, buf: &mut [u8], len: usize, stop: Stop) -> io::Result<usize>;
    /// Changes how long `recv` waits.
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()>;
}

/// The time a receive may still wait, read from the clock only once it has had to wait: an
/// answer that is already there costs no clock read inside the timed round trip.
struct Deadline {
    timeout: Duration,
    /// How long the first failed read already waited (one slice, or nothing when polling).
    first_wait: Duration,
    until: Option<Instant>,
}

impl Deadline {
    fn new(timeout: Duration, first_wait: Duration) -> Deadline {
        Deadline { timeout, first_wait: first_wait.min(timeout), until: None }
    }

    /// Whether a receive that failed with `e` waits on: its slice ran out, or a signal landed
    /// on this thread, and neither its time is up nor its run stopped.
    fn wait_on(&mut self, e: &io::Error, stop: Stop) -> bool {
        use io::ErrorKind::{Interrupted, TimedOut, WouldBlock};
        if !matches!(e.kind(), WouldBlock | TimedOut | Interrupted) {
            return false;
        }
        let (timeout, first) = (self.timeout, self.first_wait);
        let until = *self.until.get_or_insert_with(|| Instant::now() + (timeout - first));
        Instant::now() < until && !stop()
    }
}

struct Udp {
    sock: UdpSocket,
    timeout: Duration,
    /// Polls without sleeping (`--busy-poll`): the socket is non-blocking.
    busy: bool,
}

impl Conn for Udp {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.sock.send(msg).map(drop)
    }
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.timeout = timeout;
        if !self.busy {
            self.sock.set_read_timeout(Some(timeout.min(SLICE)))?;
        }
        Ok(())
    }
    fn recv(&mut self, buf: &mut [u8], _len: usize, stop: Stop) -> io::Result<usize> {
        let slice = if self.busy { Duration::ZERO } else { SLICE };
        let mut deadline = Deadline::new(self.timeout, slice);
        loop {
            match self.sock.recv(buf) {
                Err(e) if deadline.wait_on(&e, stop) => {
                    if self.busy {
                        std::hint::spin_loop()
                    }
                }
                other => return other,
            }
        }
    }
}

struct Stream<S: Read + Write + Send> {
    s: S,
    timeout: Duration,
}

impl<S: Read + Write + Send> Conn for Stream<S> {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.s.write_all(msg)
    }
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.timeout = timeout;
        Ok(())
    }
    /// The socket's own timeout is one slice: what a slice read stays in the buffer, so a
    /// message split over two slices is still read whole.
    fn recv(&mut self, buf: &mut [u8], len: usize, stop: Stop) -> io::Result<usize> {
        let mut deadline = Deadline::new(self.timeout, SLICE);
        let mut got = 0;
        while got < len {
            match self.s.read(&mut buf[got..len]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => got += n,
                Err(e) if deadline.wait_on(&e, stop) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(len)
    }
}

/// libzmq's sockets may move between threads (not be shared): each moves once, into its
/// measuring thread.
struct Zmq {
    s: zmq::Socket,
    timeout: Duration,
}

impl Conn for Zmq {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.s.send(msg, 0).map_err(zmq_io)
    }
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.timeout = timeout;
        Ok(())
    }
    fn recv(&mut self, buf: &mut [u8], _len: usize, stop: Stop) -> io::Result<usize> {
        let mut deadline = Deadline::new(self.timeout, SLICE);
        loop {
            match self.s.recv_into(buf, 0).map_err(zmq_io) {
                Err(e) if deadline.wait_on(&e, stop) => {}
                other => return other,
            }
        }
    }
}

fn zmq_io(e: zmq::Error) -> io::Error {
    match e {
        zmq::Error::EAGAIN => io::Error::new(io::ErrorKind::TimedOut, "no answer"),
        zmq::Error::EINTR => io::ErrorKind::Interrupted.into(),
        e => io::Error::other(e.to_string()),
    }
}

/// Connects and says hello. Returns the connection and the server's hostname.
pub fn connect(
    transport: Transport,
    addr: &str,
    token: u64,
    size: usize,
    timeout: Duration,
    busy_poll: bool,
) -> Result<(Box<dyn Conn>, String)> {
    let unreachable = |why: String| InputError::Invalid(format!("cannot reach {addr} over {transport:?}: {why}"));
    let resolve = || -> Result<std::net::SocketAddr, InputError> {
        addr.to_socket_addrs()
            .map_err(|e| unreachable(format!("{e} (expected HOST:PORT)")))?
            .next()
            .ok_or_else(|| unreachable("no address".into()))
    };
    Ok(match transport {
        Transport::Udp => {
            let target = resolve()?;
            let local = if target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
            let sock = UdpSocket::bind(local).map_err(|e| unreachable(e.to_string()))?;
            sock.connect(target).map_err(|e| unreachable(e.to_string()))?;
            sock.set_read_timeout(Some(timeout.min(SLICE)))?;
            let mut conn = Udp { sock, timeout, busy: false };
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            if busy_poll {
                conn.sock.set_nonblocking(true)?;
                conn.busy = true;
            }
            (Box::new(conn), host)
        }
        Transport::Tcp => {
            let s = TcpStream::connect_timeout(&resolve()?, timeout).map_err(|e| unreachable(e.to_string()))?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(timeout.min(SLICE)))?;
            let mut conn = Stream { s, timeout };
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            (Box::new(conn), host)
        }
        Transport::Unix => {
            let s = UnixStream::connect(addr).map_err(|e| unreachable(e.to_string()))?;
            s.set_read_timeout(Some(timeout.min(SLICE)))?;
            let mut conn = Stream { s, timeout };
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            (Box::new(conn), host)
        }
        Transport::Zmq => {
            resolve()?;
            let s = zmq::Context::new().socket(zmq::REQ).map_err(|e| unreachable(e.to_string()))?;
            s.set_rcvtimeo(timeout.min(SLICE).as_millis() as i32).map_err(|e| unreachable(e.to_string()))?;
            s.set_linger(0).map_err(|e| unreachable(e.to_string()))?;
            s.connect(&format!("tcp://{addr}")).map_err(|e| unreachable(e.to_string()))?;
            let mut conn = Zmq { s, timeout };
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            (Box::new(conn), host)
        }
    })
}

/// Sends the hello and checks the answer; returns the server's hostname.
fn handshake(
    conn: &mut dyn Conn,
    addr: &str,
    transport: Transport,
    token: u64,
    size: usize,
    timeout: Duration,
) -> Result<String> {
    let unreachable = |why: String| InputError::Invalid(format!("cannot reach {addr} over {transport:?}: {why}"));
    conn.send(&wire::hello(token, size)).map_err(|e| unreachable(e.to_string()))?;
    let mut buf = vec![0u8; wire::HELLO_LEN];
    let n = conn.recv(&mut buf, wire::HELLO_LEN, &|| false).map_err(|e| {
        unreachable(match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock | io::ErrorKind::UnexpectedEof => format!(
                "no answer within {:.1} s (is an rtbench server running there with this transport?)",
                timeout.as_secs_f64()
            ),
            _ => e.to_string(),
        })
    })?;
    match wire::read_header(&buf[..n]) {
        Some(h) if h.kind == Kind::Welcome && h.token == token => {}
        Some(h) if h.kind == Kind::Reject => {
            return Err(InputError::Invalid(format!("{addr} refused the session token (see --token)")).into())
        }
        _ => return Err(unreachable("the answer is not an rtbench probe packet".into()).into()),
    }
    Ok(String::from_utf8_lossy(&buf[wire::HEADER..n]).trim_end_matches('\0').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::server::Server;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn no_setup() -> Box<dyn std::any::Any> {
        Box::new(())
    }

    /// Issue 29: a round trip whose answer never comes held a stopped run for its whole
    /// timeout (2 s); it ends within a slice of the stop.
    fn a_wait_for_an_answer_ends_soon_after_the_stop(transport: Transport, addr: &str) {
        let server = Server::bind(transport, addr, None).unwrap();
        let local = server.local.clone();
        let waited = server.serve_during(&no_setup, || {
            let timeout = Duration::from_secs(20);
            let (mut conn, _) = connect(transport, &local, 5, 1, timeout, false).unwrap();
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(300));
                    stop.store(true, Ordering::SeqCst);
                });
                let started = Instant::now();
                // No ping was sent: no answer comes.
                let got = conn.recv(&mut [0u8; wire::HELLO_LEN], wire::HEADER + 1, &|| stop.load(Ordering::SeqCst));
                assert!(got.is_err(), "{got:?}");
                started.elapsed()
            })
        });
        assert!(waited < Duration::from_secs(10), "{transport:?}: a stopped receive waited {waited:?}");
    }

    #[test]
    fn a_stop_ends_a_udp_wait() {
        a_wait_for_an_answer_ends_soon_after_the_stop(Transport::Udp, "127.0.0.1:0");
    }

    #[test]
    fn a_stop_ends_a_tcp_wait() {
        a_wait_for_an_answer_ends_soon_after_the_stop(Transport::Tcp, "127.0.0.1:0");
    }

    // ZeroMQ has no such test: a REQ socket refuses to wait without a request, and the echo
    // server answers every request.

    #[test]
    fn a_stop_ends_a_unix_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("echo.sock");
        a_wait_for_an_answer_ends_soon_after_the_stop(Transport::Unix, path.to_str().unwrap());
    }
}
