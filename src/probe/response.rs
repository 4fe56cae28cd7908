//! `response`: lpptest and the I-pipe study's logger. A trigger leaves every period on an
//! absolute schedule; the target answers at once; a sample is the answer's arrival minus the
//! trigger's *intended* send time, so a stall on either side shows up instead of hiding.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::{
    anywhere, Built, DefaultThreads, FlagSet, Probe, ProbeFlags, ProbeInfo, ServeSpec, Session, Shape, StudyEnv,
    ThreadCtx,
};
use crate::model::{Metric, ProbeParams, ResponseParams};
use crate::net::transport::{self, Conn, Transport};
use crate::net::wire::{self, Header, Kind as Packet};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "response",
    help: "response to an external trigger (lpptest, the I-pipe logger): answer time − intended trigger time",
    synthetic: false,
    offers: &[super::Offer::Samples, super::Offer::KernelSamples],
    metric: Metric::LATENCY,
    default_threads: DefaultThreads::One,
    default_loops: None,
    flags: FlagSet::of::<ResponseFlags>(),
    supported: anywhere,
    study: super::InStudy::Seed,
    resume: super::Resume::Peer { flag: "logger" },
    replay: &[],
};

/// How long the target has to answer the hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);

/// `response`'s flags: the two ends, the target (`--target`) and the logger (`--logger`).
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct ResponseFlags {
    /// Answer triggers on ADDR [default: 127.0.0.1:17700]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub target: Option<String>,
    /// Send triggers to TARGET and measure its answers
    #[arg(long, value_name = "TARGET")]
    pub logger: Option<String>,
    /// Time between triggers
    #[arg(long, value_name = "PERIOD", value_parser = crate::parse::duration, default_value = "1ms")]
    pub period: Duration,
    /// A trigger not answered within this long is lost
    #[arg(long, value_name = "TIMEOUT", value_parser = crate::parse::duration, default_value = "100ms")]
    pub timeout: Duration,
    #[command(flatten)]
    pub session: Session,
}

impl ProbeFlags for ResponseFlags {
    fn build(&self, _: &Shape) -> Result<Built> {
        let p = self.params()?;
        let probe = Response {
            target: p.target.clone(),
            period_ns: p.period_ns,
            token: self.session.token.unwrap_or_else(wire::random_token),
            timeout: Duration::from_nanos(p.timeout_ns),
            conn: Mutex::new(None),
            findings: Mutex::new(Findings::default()),
        };
        Ok(Built { probe: Arc::new(probe), params: ProbeParams::Response(p) })
    }

    fn serve(&self) -> Result<Option<ServeSpec>> {
        let Some(addr) = &self.target else { return Ok(None) };
        if self.logger.is_some() {
            return Err(crate::invalid!("--target and --logger are the two ends: give one"));
        }
        Ok(Some(ServeSpec {
            transport: Transport::Udp,
            addr: transport::address(Transport::Udp, (!addr.is_empty()).then_some(addr)),
            token: self.session.token,
            serve_for: self.session.serve_for,
            what: "response",
        }))
    }

    fn study(&mut self, env: &StudyEnv) {
        self.logger = Some(env.peer.clone());
    }

    fn resumed(stored: &ProbeParams) -> Option<Self> {
        let ProbeParams::Response(p) = stored else { return None };
        let (period, timeout) = (Duration::from_nanos(p.period_ns), Duration::from_nanos(p.timeout_ns));
        Some(ResponseFlags { period, timeout, ..Self::defaults() })
    }

    fn set_peer(&mut self, addr: &str) {
        self.logger = Some(addr.to_string());
    }
}

impl ResponseFlags {
    /// The logger's parameters as stored with the run.
    fn params(&self) -> Result<ResponseParams> {
        let Some(target) = &self.logger else {
            return Err(crate::invalid!("response needs --target (on the machine under test) or --logger TARGET"));
        };
        if self.period < Duration::from_micros(10) {
            return Err(crate::invalid!("--period must be at least 10us"));
        }
        Ok(ResponseParams {
            target: transport::address(Transport::Udp, Some(target)),
            period_ns: self.period.as_nanos() as u64,
            timeout_ns: self.timeout.as_nanos() as u64,
            // A study that serves its network cells itself says so when it plans them.
            own_peer: Some(false),
            target_host: None,
            target_placement: None,
            lost_triggers: None,
            late_answers: None,
        })
    }
}

struct Response {
    target: String,
    period_ns: u64,
    token: u64,
    /// A trigger not answered within this long is lost.
    timeout: Duration,
    conn: Mutex<Option<Box<dyn Conn>>>,
    findings: Mutex<Findings>,
}

/// What a run learns beside its samples.
#[derive(Default)]
struct Findings {
    target_host: Option<String>,
    target_placement: Option<String>,
    lost_triggers: Option<u64>,
    late_answers: Option<u64>,
}

impl Probe for Response {
    fn step_ns(&self) -> u64 {
        self.period_ns
    }

    fn prepare(&self, threads: usize) -> Result<()> {
        if threads != 1 {
            return Err(crate::invalid!("response measures with one thread (-t 1); got -t {threads}"));
        }
        let (mut c, host) = transport::connect(Transport::Udp, &self.target, self.token, 0, HANDSHAKE_TIMEOUT, false)?;
        c.set_timeout(self.timeout)?;
        *self.conn.lock().unwrap() = Some(c);
        // The hello says the host, then where the target's thread runs (as pingpong's does).
        let (host, placement) = wire::host_and_placement(&host);
        let mut findings = self.findings.lock().unwrap();
        (findings.target_host, findings.target_placement) = (Some(host), placement);
        Ok(())
    }

    fn run(&self, ctx: &mut ThreadCtx) {
        let Some(mut conn) = self.conn.lock().unwrap().take() else { return };
        let mut msg = [0u8; wire::HEADER];
        let mut back = [0u8; wire::HELLO_LEN];
        let (mut lost, mut late) = (0u64, 0u64);
        let timeout_ns = self.timeout.as_nanos() as u64;
        let mut intended = sys::now_ns() + self.period_ns;
        let mut seq = 0u64;
        let mut taken = 0u64;
        while taken < ctx.loops && !ctx.stopped() {
            sys::sleep_until(intended);
            seq += 1;
            wire::write_header(&mut msg, Header { kind: Packet::Ping, token: self.token, seq });
            let sent = conn.send(&msg).is_ok();
            let answered = sent
                && loop {
                    match conn.recv(&mut back, wire::HEADER, &|| ctx.stopped()) {
                        Ok(n) if wire::read_header(&back[..n]).is_some_and(|h| h.seq == seq) => break true,
                        Ok(_) => continue,
                        Err(_) => break false,
                    }
                };
            let now = sys::now_ns();
            if !answered && ctx.stopped() {
                // Cut short by the stop: not a trigger lost.
                break;
            }
            if answered {
                let latency = now - intended;
                ctx.rec.record(intended - ctx.start_ns, latency);
                taken += 1;
                if latency > self.period_ns {
                    late += 1;
                }
            } else {
                lost += 1;
                ctx.rec.overrun();
            }
            intended += self.period_ns;
            // Triggers whose time passed more than a timeout ago were never sent in time:
            // they count as lost, and the schedule resumes.
            while now > intended + timeout_ns {
                intended += self.period_ns;
                lost += 1;
                ctx.rec.overrun();
            }
        }
        let mut f = self.findings.lock().unwrap();
        f.lost_triggers = Some(lost);
        f.late_answers = Some(late);
    }

    fn findings(&self, params: &mut ProbeParams) {
        let f = self.findings.lock().unwrap();
        if let ProbeParams::Response(p) = params {
            p.target_host.clone_from(&f.target_host);
            p.target_placement.clone_from(&f.target_placement);
            (p.lost_triggers, p.late_answers) = (f.lost_triggers, f.late_answers);
        }
    }
}
