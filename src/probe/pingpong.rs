//! `pingpong`: the ØMQ study's latency test. Round trips of a small message to an echo server,
//! each timed on CLOCK_MONOTONIC; one-way latency is RTT/2 unless `--rtt`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::{
    anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, ServeSpec, Session, Shape, StudyEnv,
    ThreadCtx,
};
use crate::model::{Metric, PingpongParams, ProbeParams, RoundTripsApart, ThreadRoundTrips, Warmup};
use crate::net::transport::{self, Conn, Transport};
use crate::net::wire::{self, Header, Kind as Packet};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "pingpong",
    help: "message round trips to an echo server (the ØMQ study's test): one-way = RTT/2",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: Some(1_000_000),
    flags: FlagSet::of::<PingpongFlags>(),
    supported: anywhere,
    study: super::InStudy::Seed,
    // Its round-trip count is the run's loop count, which resume reads from the run; its
    // session token is new, as every session's is.
    resume: super::Resume::Peer { flag: "addr" },
    replay: &[],
};

/// What a sample is with `--rtt`, as the run stores it.
const SAMPLE_RTT: &str = "round trip";

/// How long a client waits for the hello's answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// `pingpong`'s flags: the client's, and the echo server's (`--serve`).
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct PingpongFlags {
    /// Server address (HOST:PORT, or a socket path for unix) [default: loopback]
    #[arg(value_name = "ADDR")]
    pub addr: Option<String>,
    /// Run the echo server, on ADDR [default: 127.0.0.1:17700]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub serve: Option<String>,
    /// How the messages travel
    #[arg(long, value_name = "TRANSPORT", default_value = "udp", value_parser = transport_arg())]
    pub transport: Transport,
    /// Message payload in bytes (1 to 65536)
    #[arg(short = 's', long, value_name = "BYTES", value_parser = crate::parse::message_size, default_value_t = 1)]
    pub size: usize,
    /// Round trips per thread (the same as -l) [default: 1000000, or unlimited with -D]
    #[arg(short = 'n', long, value_name = "N", value_parser = crate::parse::positive)]
    pub round_trips: Option<u64>,
    /// Store full round-trip times instead of one-way (RTT/2)
    #[arg(long)]
    pub rtt: bool,
    /// Round trips before measuring, reported apart
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub warmup: u64,
    /// Spin on a non-blocking socket instead of sleeping in recv (UDP)
    #[arg(long)]
    pub busy_poll: bool,
    #[command(flatten)]
    pub session: Session,
}

/// `--transport`: one of the transports' names.
fn transport_arg() -> impl clap::builder::TypedValueParser<Value = Transport> {
    use clap::builder::TypedValueParser;
    let names = clap::builder::PossibleValuesParser::new(Transport::ALL.map(Transport::name));
    names.map(|name: String| Transport::parse(&name).expect("one of the names"))
}

impl ProbeFlags for PingpongFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let p = self.params();
        let probe = Pingpong {
            transport: p.transport,
            addr: p.peer.clone(),
            size: p.size_bytes,
            token: self.session.token.unwrap_or_else(wire::random_token),
            rtt: p.sample == SAMPLE_RTT,
            warmup: p.warmup_round_trips,
            busy_poll: p.busy_poll,
            timeout: CONNECT_TIMEOUT,
            conns: Mutex::new(Vec::new()),
            findings: Mutex::new(Findings::default()),
        };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Pingpong(p) })
    }

    fn serve(&self) -> Result<Option<ServeSpec>> {
        let Some(addr) = &self.serve else { return Ok(None) };
        Ok(Some(ServeSpec {
            transport: self.transport,
            addr: transport::address(self.transport, (!addr.is_empty()).then_some(addr)),
            token: self.session.token,
            serve_for: self.session.serve_for,
            what: "pingpong",
        }))
    }

    fn count(&self) -> Option<u64> {
        self.round_trips
    }

    fn study(&mut self, env: &StudyEnv) {
        self.addr = Some(env.peer.clone());
    }

    /// The flags a stored run was made with (its peer aside).
    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Pingpong(p) = stored else { return None };
        Some(PingpongFlags {
            transport: p.transport,
            size: p.size_bytes,
            rtt: p.sample == SAMPLE_RTT,
            warmup: p.warmup_round_trips,
            busy_poll: p.busy_poll,
            ..Self::defaults()
        })
    }

    fn set_peer(&mut self, addr: &str) {
        self.addr = Some(addr.to_string());
    }
}

impl PingpongFlags {
    /// The client's parameters as stored with the run.
    fn params(&self) -> PingpongParams {
        PingpongParams {
            transport: self.transport,
            peer: transport::address(self.transport, self.addr.as_deref()),
            size_bytes: self.size,
            sample: if self.rtt { SAMPLE_RTT } else { "one-way = RTT/2" }.to_string(),
            warmup_round_trips: self.warmup,
            busy_poll: self.busy_poll,
            // A study that serves its network cells itself says so when it plans them.
            own_peer: Some(false),
            peer_host: None,
            peer_placement: None,
            threads: RoundTripsApart::default(),
        }
    }
}

struct Pingpong {
    transport: Transport,
    addr: String,
    size: usize,
    token: u64,
    /// Store full round trips instead of halves.
    rtt: bool,
    warmup: u64,
    busy_poll: bool,
    timeout: Duration,
    conns: Mutex<Vec<Option<Box<dyn Conn>>>>,
    findings: Mutex<Findings>,
}

/// What a run learns about its peer and its round trips outside the statistics.
#[derive(Default)]
struct Findings {
    peer_host: Option<String>,
    /// Where the echo server's thread runs, when it is an rtbench server that says.
    peer_placement: Option<String>,
    /// Per thread that ran: its first (cold) round trip and its warm-up.
    threads: Vec<ThreadRoundTrips>,
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
        let (host, placement) = wire::host_and_placement(&host);
        let mut findings = self.findings.lock().unwrap();
        findings.peer_host = Some(host);
        findings.peer_placement = placement;
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
            wire::write_header(&mut msg, Header { kind: Packet::Ping, token: self.token, seq });
            let t0 = sys::now_ns();
            if conn.send(&msg).is_err() {
                ctx.rec.overrun();
                continue;
            }
            // A late answer to an earlier, given-up round trip is skipped, not timed.
            let got = loop {
                match conn.recv(&mut back, len, &|| ctx.stopped()) {
                    Ok(n) if n == len && wire::read_header(&back[..n]).is_some_and(|h| h.seq == seq) => break true,
                    Ok(_) => continue,
                    Err(_) => break false,
                }
            };
            let t1 = sys::now_ns();
            if !got && ctx.stopped() {
                // Cut short by the stop: not a round trip lost.
                break;
            }
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
        let warmup = Warmup {
            round_trips: apart.n,
            min_rtt_ns: if apart.n == 0 { 0 } else { apart.min },
            mean_rtt_ns: if apart.n == 0 { 0.0 } else { apart.sum as f64 / apart.n as f64 },
            max_rtt_ns: apart.max,
        };
        let trips = ThreadRoundTrips { thread: ctx.index, cold_rtt_ns: apart.cold, warmup };
        self.findings.lock().unwrap().threads.push(trips);
    }

    fn findings(&self, params: &mut ProbeParams) {
        let f = self.findings.lock().unwrap();
        if let ProbeParams::Pingpong(p) = params {
            p.peer_host.clone_from(&f.peer_host);
            p.peer_placement.clone_from(&f.peer_placement);
            let mut threads = f.threads.clone();
            threads.sort_by_key(|t| t.thread);
            p.threads = RoundTripsApart(threads);
        }
    }
}
