//! `response`: lpptest and the I-pipe study's logger. A trigger leaves every period on an
//! absolute schedule; the target answers at once; a sample is the answer's arrival minus the
//! trigger's *intended* send time, so a stall on either side shows up instead of hiding.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;

use super::{Probe, ProbeInfo, ThreadCtx};
use crate::net::transport::{self, Conn, Transport};
use crate::net::wire::{self, Header, Kind};
use crate::sys;

pub const INFO: ProbeInfo = ProbeInfo {
    name: "response",
    help: "response to an external trigger (lpptest, the I-pipe logger): answer time − intended trigger time",
    synthetic: false,
};

/// How long the target has to answer the hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);

pub struct Response {
    pub target: String,
    pub period_ns: u64,
    pub token: u64,
    /// A trigger not answered within this long is lost.
    pub timeout: Duration,
    conn: Mutex<Option<Box<dyn Conn>>>,
    extras: Mutex<serde_json::Map<String, serde_json::Value>>,
}

impl Response {
    pub fn new(target: String, period_ns: u64, token: u64, timeout: Duration) -> Self {
        Response {
            target,
            period_ns,
            token,
            timeout,
            conn: Mutex::new(None),
            extras: Mutex::new(serde_json::Map::new()),
        }
    }
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
        self.extras.lock().unwrap().insert("target_host".into(), host.into());
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
            wire::write_header(&mut msg, Header { kind: Kind::Ping, token: self.token, seq });
            let sent = conn.send(&msg).is_ok();
            let answered = sent
                && loop {
                    match conn.recv(&mut back, wire::HEADER) {
                        Ok(n) if wire::read_header(&back[..n]).is_some_and(|h| h.seq == seq) => break true,
                        Ok(_) => continue,
                        Err(_) => break false,
                    }
                };
            let now = sys::now_ns();
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
        let mut ex = self.extras.lock().unwrap();
        ex.insert("lost_triggers".into(), lost.into());
        ex.insert("late_answers".into(), late.into());
    }

    fn extras(&self) -> serde_json::Value {
        serde_json::Value::Object(self.extras.lock().unwrap().clone())
    }
}
