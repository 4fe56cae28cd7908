//! Sockets the standard library does not offer.

use std::io;

use super::check;

/// A raw ICMP socket connected to `addr` (needs CAP_NET_RAW).
pub fn icmp_socket(addr: std::net::Ipv4Addr) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket(2); the descriptor is owned by the returned OwnedFd right away.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_ICMP) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(addr.octets()) },
        sin_zero: [0; 8],
    };
    // SAFETY: `sa` is a valid sockaddr_in of the size passed.
    let rc = unsafe {
        libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32)
    };
    check(rc)?;
    Ok(owned)
}

/// Sets a receive timeout on a socket.
pub fn set_recv_timeout(fd: &std::os::fd::OwnedFd, timeout: std::time::Duration) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let tv = libc::timeval { tv_sec: timeout.as_secs() as libc::time_t, tv_usec: timeout.subsec_micros() as _ };
    // SAFETY: `tv` is a valid timeval of the size passed.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        )
    })
}

/// Wakes every thread blocked in accept(2) on a listening socket (Linux answers it EINVAL)
/// and refuses connections from then on: a stop that needs no connection to get through.
pub fn shut_listener(listener: &std::net::TcpListener) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: shutdown(2) on a socket this borrow keeps open; no memory arguments.
    check(unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) })
}
