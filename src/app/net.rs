//! `rtbench pingpong` and `rtbench response`: a server side that answers and a client side that
//! measures through the runner like every probe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::cli::{PingpongArgs, PolicyArg, ResponseArgs, RunArgs};
use crate::config::DefaultThreads;
use crate::net::server::Server;
use crate::net::transport::{self, Transport};
use crate::net::wire;
use crate::probe::{Pingpong, Response};

/// How long a client waits for the hello's answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

pub fn pingpong(a: PingpongArgs) -> Result<i32> {
    if let Some(addr) = &a.serve {
        let addr = transport::address(a.transport, (!addr.is_empty()).then_some(addr.as_str()));
        return serve(a.transport, &addr, a.session.token, a.session.serve_for, &a.run, "pingpong");
    }
    let addr = transport::address(a.transport, a.addr.as_deref());
    let token = a.session.token.unwrap_or_else(wire::random_token);
    let probe = Pingpong::new(a.transport, addr.clone(), a.size, token, a.rtt, a.warmup, a.busy_poll, CONNECT_TIMEOUT);
    let params = json!({
        "transport": a.transport,
        "peer": addr,
        "size_bytes": a.size,
        "sample": if a.rtt { "round trip" } else { "one-way = RTT/2" },
        "warmup_round_trips": a.warmup,
        "busy_poll": a.busy_poll,
    });
    let mut run = a.run;
    run.loops = run.loops_or(a.round_trips, 1_000_000);
    super::measure("pingpong", Arc::new(probe), params, &run, DefaultThreads::One)
}

pub fn response(a: ResponseArgs) -> Result<i32> {
    if let Some(addr) = &a.target {
        let addr = transport::address(Transport::Udp, (!addr.is_empty()).then_some(addr.as_str()));
        return serve(Transport::Udp, &addr, a.session.token, a.session.serve_for, &a.run, "response");
    }
    let Some(target) = &a.logger else {
        return Err(crate::invalid!("response needs --target (on the machine under test) or --logger TARGET"));
    };
    let target = transport::address(Transport::Udp, Some(target));
    let token = a.session.token.unwrap_or_else(wire::random_token);
    let period_ns = a.period.as_nanos() as u64;
    if period_ns < 10_000 {
        return Err(crate::invalid!("--period must be at least 10us"));
    }
    let probe = Response::new(target.clone(), period_ns, token, a.timeout);
    let params = json!({ "target": target, "period_ns": period_ns, "timeout_ns": a.timeout.as_nanos() as u64 });
    super::measure("response", Arc::new(probe), params, &a.run, DefaultThreads::One)
}

/// Runs an echo server in the foreground until a signal or `serve_for`.
fn serve(
    transport: Transport,
    addr: &str,
    token: Option<u64>,
    serve_for: Option<Duration>,
    run: &RunArgs,
    what: &str,
) -> Result<i32> {
    let server = Server::bind(transport, addr, token)?;
    let counters = Arc::clone(&server.counters);
    let policy = match run.policy {
        PolicyArg::Fifo => crate::model::Policy::Fifo,
        PolicyArg::Rr => crate::model::Policy::RoundRobin,
        PolicyArg::Other => crate::model::Policy::Other,
    };
    let rt = crate::runner::rt::RtSetup::acquire(policy, run.priority, !run.no_mlock);
    for w in &rt.warnings {
        eprintln!("rtbench: WARNING: {w}");
    }
    let cpu = match &run.affinity {
        Some(list) => crate::sysinfo::parse_cpu_list(list)
            .and_then(|c| c.first().copied())
            .ok_or_else(|| crate::invalid!("--affinity '{list}' is not a CPU list"))
            .map(Some)?,
        None => None,
    };
    let (policy, priority) = (rt.policy, rt.priority);
    let enter = move || {
        if let Some(problem) = crate::runner::rt::enter_thread(cpu, policy, priority) {
            eprintln!("rtbench: WARNING: {problem}");
        }
    };
    println!(
        "serving {what} over {transport:?} on {}{}; Ctrl-C stops",
        server.local,
        token.map_or(String::new(), |_| " (fixed token)".into())
    );
    let signals = crate::runner::signals::Installed::new()?;
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let result = std::thread::scope(|s| {
        let worker = s.spawn(|| server.serve(&stop, &enter));
        while !worker.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
            if crate::runner::signals::received().is_some() || serve_for.is_some_and(|d| started.elapsed() >= d) {
                stop.store(true, Ordering::SeqCst);
            }
        }
        worker.join().map_err(|_| anyhow::anyhow!("the server thread panicked"))?
    });
    drop(signals);
    println!(
        "served {} sessions, {} round trips; dropped {} foreign or malformed packets",
        counters.sessions.load(Ordering::Relaxed),
        counters.answered.load(Ordering::Relaxed),
        counters.foreign.load(Ordering::Relaxed)
    );
    result?;
    Ok(0)
}
