//! The transports a round trip can take, client and server side: UDP, TCP (TCP_NODELAY), UNIX
//! stream sockets, and ZeroMQ REQ/REP through libzmq.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::wire::{self, Kind};
use crate::error::InputError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Udp,
    Tcp,
    Unix,
    Zmq,
}

impl Transport {
    /// By its lowercase name, as flags and stored runs spell it.
    pub fn parse(name: &str) -> Option<Transport> {
        [Transport::Udp, Transport::Tcp, Transport::Unix, Transport::Zmq].into_iter().find(|t| t.name() == name)
    }

    /// Its lowercase name, as flags and stored runs spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
            Transport::Unix => "unix",
            Transport::Zmq => "zmq",
        }
    }
}

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

/// One client connection: fixed-size messages out and back.
pub trait Conn: Send {
    fn send(&mut self, msg: &[u8]) -> io::Result<()>;
    /// Receives one message of `len` bytes into `buf`; `TimedOut`/`WouldBlock` after the timeout.
    fn recv(&mut self, buf: &mut [u8], len: usize) -> io::Result<usize>;
    /// Changes how long `recv` waits (datagram transports; streams keep their connect timeout).
    fn set_timeout(&mut self, _timeout: Duration) -> io::Result<()> {
        Ok(())
    }
}

struct Udp {
    sock: UdpSocket,
    busy: Option<Duration>,
}

impl Conn for Udp {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.sock.send(msg).map(drop)
    }
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        match self.busy.as_mut() {
            Some(b) => *b = timeout,
            None => self.sock.set_read_timeout(Some(timeout))?,
        }
        Ok(())
    }
    fn recv(&mut self, buf: &mut [u8], _len: usize) -> io::Result<usize> {
        match self.busy {
            None => self.sock.recv(buf),
            Some(timeout) => {
                let until = Instant::now() + timeout;
                loop {
                    match self.sock.recv(buf) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < until => {
                            std::hint::spin_loop()
                        }
                        other => return other,
                    }
                }
            }
        }
    }
}

struct Stream<S: Read + Write + Send>(S);

impl<S: Read + Write + Send> Conn for Stream<S> {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.0.write_all(msg)
    }
    fn recv(&mut self, buf: &mut [u8], len: usize) -> io::Result<usize> {
        self.0.read_exact(&mut buf[..len]).map(|_| len)
    }
}

/// libzmq's sockets may move between threads (not be shared): each moves once, into its
/// measuring thread.
struct Zmq(zmq::Socket);

impl Conn for Zmq {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.0.send(msg, 0).map_err(zmq_io)
    }
    fn recv(&mut self, buf: &mut [u8], _len: usize) -> io::Result<usize> {
        self.0.recv_into(buf, 0).map_err(zmq_io)
    }
}

fn zmq_io(e: zmq::Error) -> io::Error {
    match e {
        zmq::Error::EAGAIN => io::Error::new(io::ErrorKind::TimedOut, "no answer"),
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
            sock.set_read_timeout(Some(timeout))?;
            let mut conn = Udp { sock, busy: None };
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            if busy_poll {
                conn.sock.set_nonblocking(true)?;
                conn.busy = Some(timeout);
            }
            (Box::new(conn), host)
        }
        Transport::Tcp => {
            let s = TcpStream::connect_timeout(&resolve()?, timeout).map_err(|e| unreachable(e.to_string()))?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(timeout))?;
            let mut conn = Stream(s);
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            (Box::new(conn), host)
        }
        Transport::Unix => {
            let s = UnixStream::connect(addr).map_err(|e| unreachable(e.to_string()))?;
            s.set_read_timeout(Some(timeout))?;
            let mut conn = Stream(s);
            let host = handshake(&mut conn, addr, transport, token, size, timeout)?;
            (Box::new(conn), host)
        }
        Transport::Zmq => {
            resolve()?;
            let s = zmq::Context::new().socket(zmq::REQ).map_err(|e| unreachable(e.to_string()))?;
            s.set_rcvtimeo(timeout.as_millis() as i32).map_err(|e| unreachable(e.to_string()))?;
            s.set_linger(0).map_err(|e| unreachable(e.to_string()))?;
            s.connect(&format!("tcp://{addr}")).map_err(|e| unreachable(e.to_string()))?;
            let mut conn = Zmq(s);
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
    let n = conn.recv(&mut buf, wire::HELLO_LEN).map_err(|e| {
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
