//! `pingflood`: what `ping -l 100 -f localhost` does. ICMP echo requests to 127.0.0.1 from a
//! raw socket with 100 in flight; without CAP_NET_RAW, a UDP echo flood on loopback instead.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "pingflood",
    help: "ICMP echo flood to 127.0.0.1, 100 in flight (UDP echo flood without CAP_NET_RAW)",
    stresses: "network stack, softirqs",
    unit: "echo replies",
    cpu_bound: false,
    nice: 0,
    supported: |_: &LoadOptions| Ok(()),
    work,
};

const IN_FLIGHT: usize = 100;

fn work(ctx: &WorkerCtx) -> Result<()> {
    match crate::sys::icmp_socket(Ipv4Addr::LOCALHOST) {
        Ok(fd) => {
            ctx.note("icmp");
            icmp(ctx, fd)
        }
        Err(_) => {
            ctx.note("udp");
            udp(ctx)
        }
    }
}

fn icmp(ctx: &WorkerCtx, fd: std::os::fd::OwnedFd) -> Result<()> {
    crate::sys::set_recv_timeout(&fd, Duration::from_millis(100))?;
    let mut sock = std::fs::File::from(fd);
    let id = (std::process::id() & 0xffff) as u16;
    let mut seq = 0u16;
    let mut send = |sock: &mut std::fs::File| -> std::io::Result<()> {
        seq = seq.wrapping_add(1);
        sock.write_all(&echo_request(id, seq)).map(drop)
    };
    for _ in 0..IN_FLIGHT {
        send(&mut sock)?;
    }
    let mut buf = [0u8; 1500];
    while ctx.keep_going() {
        match sock.read(&mut buf) {
            Ok(n) => {
                // The reply comes with its IP header; loopback also shows us our own request.
                let ihl = ((buf[0] & 0x0f) as usize) * 4;
                if n >= ihl + 8 && buf[ihl] == 0 && u16::from_be_bytes([buf[ihl + 4], buf[ihl + 5]]) == id {
                    ctx.iteration();
                    send(&mut sock)?;
                }
            }
            // A lost reply: top the window up again.
            Err(_) => send(&mut sock)?,
        }
    }
    Ok(())
}

/// An ICMP echo request with 56 bytes of payload, as ping sends.
fn echo_request(id: u16, seq: u16) -> [u8; 64] {
    let mut p = [0u8; 64];
    p[0] = 8;
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[8..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let sum = checksum(&p);
    p[2..4].copy_from_slice(&sum.to_be_bytes());
    p
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn udp(ctx: &WorkerCtx) -> Result<()> {
    let echo = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    client.connect(echo.local_addr()?)?;
    client.set_read_timeout(Some(Duration::from_millis(100)))?;
    echo.set_read_timeout(Some(Duration::from_millis(100)))?;
    let msg = [0x55u8; 64];
    std::thread::scope(|s| -> Result<()> {
        s.spawn(|| {
            let mut buf = [0u8; 1500];
            while ctx.keep_going() {
                if let Ok((n, from)) = echo.recv_from(&mut buf) {
                    let _ = echo.send_to(&buf[..n], from);
                }
            }
        });
        for _ in 0..IN_FLIGHT {
            client.send(&msg)?;
        }
        let mut buf = [0u8; 1500];
        while ctx.keep_going() {
            if client.recv(&mut buf).is_ok() {
                ctx.iteration();
            }
            client.send(&msg)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_a_request_verifies() {
        let p = echo_request(0x1234, 7);
        assert_eq!(checksum(&p), 0, "a packet with its checksum sums to zero");
    }
}
