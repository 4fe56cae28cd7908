//! The probe packets of the network probes. Every packet starts with the same 24-byte header;
//! a server answers only well-formed packets carrying its session's token, and never with more
//! bytes than it received.
//!
//! Header (little endian): magic `RTB1` (4), kind (1), 3 bytes zero, token (8), sequence or
//! argument (8). A ping is the header followed by `size` payload bytes.

pub const MAGIC: &[u8; 4] = b"RTB1";
pub const HEADER: usize = 24;
/// Largest payload a user may ask for.
pub const MAX_SIZE: usize = 64 * 1024;
/// A hello is padded to this length so the server's answer (with its hostname) is no larger.
pub const HELLO_LEN: usize = 96;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Client → server: token and payload size (in `seq`).
    Hello = 1,
    /// Server → client: accepted; hostname follows the header.
    Welcome = 2,
    /// Server → client: the token is not this server's.
    Reject = 3,
    /// A round trip or trigger; echoed verbatim.
    Ping = 4,
}

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub token: u64,
    pub seq: u64,
}

pub fn write_header(buf: &mut [u8], h: Header) {
    buf[0..4].copy_from_slice(MAGIC);
    buf[4] = h.kind as u8;
    buf[5..8].fill(0);
    buf[8..16].copy_from_slice(&h.token.to_le_bytes());
    buf[16..24].copy_from_slice(&h.seq.to_le_bytes());
}

/// The header of `buf`, or None for anything malformed or foreign.
pub fn read_header(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER || &buf[0..4] != MAGIC || buf[5..8] != [0, 0, 0] {
        return None;
    }
    let kind = match buf[4] {
        1 => Kind::Hello,
        2 => Kind::Welcome,
        3 => Kind::Reject,
        4 => Kind::Ping,
        _ => return None,
    };
    Some(Header {
        kind,
        token: u64::from_le_bytes(buf[8..16].try_into().ok()?),
        seq: u64::from_le_bytes(buf[16..24].try_into().ok()?),
    })
}

/// A hello for `token` asking for `size`-byte payloads.
pub fn hello(token: u64, size: usize) -> Vec<u8> {
    let mut b = vec![0u8; HELLO_LEN];
    write_header(&mut b, Header { kind: Kind::Hello, token, seq: size as u64 });
    b
}

/// A welcome's text: the server's hostname, and where its serving thread runs when it says.
pub fn host_and_placement(text: &str) -> (String, Option<String>) {
    match text.split_once('\n') {
        Some((host, placement)) => (host.to_string(), Some(placement.to_string())),
        None => (text.to_string(), None),
    }
}

/// The server's answer to a hello, no longer than the hello itself.
pub fn answer(kind: Kind, token: u64, host: &str, limit: usize) -> Vec<u8> {
    let mut b = vec![0u8; HEADER];
    write_header(&mut b, Header { kind, token, seq: 0 });
    b.extend(host.bytes().take(limit.saturating_sub(HEADER)));
    b
}

/// A random session token (from the kernel's entropy pool, no dependency).
pub fn random_token() -> u64 {
    let mut b = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    u64::from_le_bytes(b) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_welcome_carries_the_placement_after_the_hostname_when_the_server_says_it() {
        let text = "lab\npinned to CPU 1, fifo/95";
        let b = answer(Kind::Welcome, 7, text, HELLO_LEN);
        let (host, placement) = host_and_placement(std::str::from_utf8(&b[HEADER..]).unwrap());
        assert_eq!((host.as_str(), placement.as_deref()), ("lab", Some("pinned to CPU 1, fifo/95")));
        assert_eq!(host_and_placement("old-server"), ("old-server".to_string(), None), "an older server's welcome");
    }

    #[test]
    fn headers_round_trip_and_foreign_bytes_are_refused() {
        let mut b = [0u8; HEADER];
        let h = Header { kind: Kind::Ping, token: 42, seq: 7 };
        write_header(&mut b, h);
        assert_eq!(read_header(&b), Some(h));
        assert_eq!(read_header(&b[..10]), None);
        b[4] = 99;
        assert_eq!(read_header(&b), None);
        assert_eq!(read_header(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), None);
    }

    #[test]
    fn answers_never_exceed_the_hello() {
        let long_host = "h".repeat(500);
        assert!(answer(Kind::Welcome, 1, &long_host, HELLO_LEN).len() <= HELLO_LEN);
    }
}
