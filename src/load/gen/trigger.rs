//! `trigger`: the I-pipe study's "IRQ test" on one machine. A logger sends a small UDP packet
//! to a target on loopback every millisecond and waits for its answer, so the system takes an
//! interrupt-driven round trip each period, as with an external trigger.

use std::net::UdpSocket;
use std::time::Duration;

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "trigger",
    help: "a UDP trigger every 1 ms to a target on loopback, answered (the I-pipe study's IRQ test)",
    stresses: "network interrupts and softirqs, timer wake-ups",
    unit: "answered triggers",
    cpu_bound: false,
    nice: 0,
    supported: |_: &LoadOptions| Ok(()),
    work,
};

const PERIOD_NS: u64 = 1_000_000;

fn work(ctx: &WorkerCtx) -> Result<()> {
    let target = UdpSocket::bind("127.0.0.1:0")?;
    let logger = UdpSocket::bind("127.0.0.1:0")?;
    logger.connect(target.local_addr()?)?;
    target.set_read_timeout(Some(Duration::from_millis(100)))?;
    logger.set_read_timeout(Some(Duration::from_millis(100)))?;
    std::thread::scope(|s| -> Result<()> {
        s.spawn(|| {
            let mut b = [0u8; 64];
            while ctx.keep_going() {
                if let Ok((n, from)) = target.recv_from(&mut b) {
                    let _ = target.send_to(&b[..n], from);
                }
            }
        });
        let mut next = crate::sys::now_ns() + PERIOD_NS;
        let mut b = [0u8; 64];
        while ctx.keep_going() {
            crate::sys::sleep_until(next);
            next += PERIOD_NS;
            logger.send(&next.to_ne_bytes())?;
            if logger.recv(&mut b).is_ok() {
                ctx.iteration();
            }
            // Behind by more than a period: skip ahead rather than burst.
            let now = crate::sys::now_ns();
            if now > next {
                next = now + PERIOD_NS - (now - next) % PERIOD_NS;
            }
        }
        Ok(())
    })
}
