//! `pingpong`: the ØMQ study's latency test. Round trips of a small message to an echo server,
//! each timed on CLOCK_MONOTONIC; one-way latency is RTT/2 unless `--rtt`.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use super::{Probe, ProbeInfo, ThreadCtx};
use crate::net::transport::{self, Conn, Transport};
use crate::net::wire::{self, Header, Kind};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "pingpong",
    help: "message round trips to an echo server (the ØMQ study's test): one-way = RTT/2",
    synthetic: false,
};

pub struct Pingpong {
    pub transport: Transport,
    pub addr: String,
    pub size: usize,
    pub token: u64,
    /// Store full round trips instead of halves.
    pub rtt: bool,
    pub warmup: u64,
    pub busy_poll: bool,
    pub timeout: Duration,
    conns: Mutex<Vec<Option<Box<dyn Conn>>>>,
    extras: Mutex<serde_json::Map<String, serde_json::Value>>,
}

impl Pingpong {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        transport: Transport,
        addr: String,
        size: usize,
        token: u64,
        rtt: bool,
        warmup: u64,
        busy_poll: bool,
        timeout: Duration,
    ) -> Self {
        Pingpong {
            transport,
            addr,
            size,
            token,
            rtt,
            warmup,
            busy_poll,
            timeout,
            conns: Mutex::new(Vec::new()),
            extras: Mutex::new(serde_json::Map::new()),
        }
    }
}

/// Round-trip times outside the statistics: the first (cold) one and the warm-up.
#[derive(Default)]
struct Apart {
    cold: Option<u64>,
    n: u64,
    min: u64,
    max: u64,
    sum: u64,
}

impl Probe for Pingpong {
    fn step_ns(&self) -> u64 {
        0
    }

    fn prepare(&self, threads: usize) -> Result<()> {
        let mut conns = Vec::new();
        let mut host = String::new();
        for _ in 0..threads {
            let (c, h) =
                transport::connect(self.transport, &self.addr, self.token, self.size, self.timeout, self.busy_poll)?;
            conns.push(Some(c));
            host = h;
        }
        *self.conns.lock().unwrap() = conns;
        self.extras.lock().unwrap().insert("peer_host".into(), host.into());
        Ok(())
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let Some(mut conn) = self.conns.lock().unwrap().get_mut(ctx.index).and_then(Option::take) else { return };
        let len = wire::HEADER + self.size;
        let mut msg = vec![0u8; len];
        let mut back = vec![0u8; len.max(wire::HELLO_LEN)];
        let mut seq = 0u64;
        let mut apart = Apart { min: u64::MAX, ..Apart::default() };
        let mut taken = 0u64;
        while taken < ctx.loops && !ctx.stopped() {
            seq += 1;
            wire::write_header(&mut msg, Header { kind: Kind::Ping, token: self.token, seq });
            let t0 = sys::now_ns();
            if conn.send(&msg).is_err() {
                ctx.rec.overrun();
                continue;
            }
            // A late answer to an earlier, given-up round trip is skipped, not timed.
            let got = loop {
                match conn.recv(&mut back, len) {
                    Ok(n) if n == len && wire::read_header(&back[..n]).is_some_and(|h| h.seq == seq) => break true,
                    Ok(_) => continue,
                    Err(_) => break false,
                }
            };
            let t1 = sys::now_ns();
            if !got {
                ctx.rec.overrun();
                if self.transport != Transport::Udp {
                    // A stream or REQ socket that lost a message is out of step for good.
                    break;
                }
                continue;
            }
            let rtt = t1 - t0;
            if apart.cold.is_none() {
                apart.cold = Some(rtt);
            } else if apart.n < self.warmup {
                apart.n += 1;
                apart.min = apart.min.min(rtt);
                apart.max = apart.max.max(rtt);
                apart.sum += rtt;
            } else {
                ctx.rec.record(t0 - ctx.start_ns, if self.rtt { rtt } else { rtt / 2 });
                taken += 1;
            }
        }
        let mut ex = self.extras.lock().unwrap();
        ex.insert(format!("thread{}_cold_rtt_ns", ctx.index), apart.cold.into());
        ex.insert(
            format!("thread{}_warmup", ctx.index),
            json!({
                "round_trips": apart.n,
                "min_rtt_ns": if apart.n == 0 { 0 } else { apart.min },
                "mean_rtt_ns": if apart.n == 0 { 0.0 } else { apart.sum as f64 / apart.n as f64 },
                "max_rtt_ns": apart.max,
            }),
        );
    }

    fn extras(&self) -> serde_json::Value {
        serde_json::Value::Object(self.extras.lock().unwrap().clone())
    }
}
