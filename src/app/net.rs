//! The server side of the network probes: `pingpong --serve` and `response --target` answer
//! in the foreground, in a session of their own, until a signal or `--serve-for`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::RunOptions;
use crate::net::server::Server;
use crate::probe::ServeSpec;
use crate::session::Session;

/// Runs an echo server in the foreground until a signal or `serve_for`.
pub fn serve(spec: &ServeSpec, opts: &RunOptions) -> Result<i32> {
    let cpu = match opts.affinity.as_deref() {
        Some("none") | None => None,
        Some(list) => crate::parse::cpu_list(Some(list), "--affinity")?.first().copied(),
    };
    let server = Server::bind(spec.transport, &spec.addr, spec.token)?;
    let counters = Arc::clone(&server.counters);
    let mut session = Session::start()?;
    let rt = crate::runner::rt::acquire(&mut session, opts.policy, opts.priority, opts.mlock);
    for w in &rt.warnings {
        eprintln!("rtbench: WARNING: {w}");
    }
    let (policy, priority) = (rt.policy, rt.priority);
    let server = server.placed(&format!("{}, {}", crate::model::placement(cpu), policy.shown(priority)));
    let enter = move || -> Box<dyn std::any::Any> {
        let entered = crate::runner::rt::enter_thread(cpu, policy, priority);
        for problem in [entered.unpinned, entered.problem].into_iter().flatten() {
            eprintln!("rtbench: WARNING: {problem}");
        }
        Box::new(entered.guard)
    };
    println!(
        "serving {} over {:?} on {}{}; Ctrl-C stops",
        spec.what,
        spec.transport,
        server.local,
        spec.token.map_or(String::new(), |_| " (fixed token)".into())
    );
    let stop = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let worker = s.spawn(|| server.serve(&stop, &enter));
        let waited =
            session.wait(Instant::now(), spec.serve_for, Duration::from_millis(50), || worker.is_finished(), || Ok(()));
        stop.store(true, Ordering::SeqCst);
        let served = worker.join().map_err(|_| anyhow::anyhow!("the server thread panicked"))?;
        waited.and(served)
    });
    drop(session);
    println!(
        "served {} sessions, {} round trips; dropped {} foreign or malformed packets",
        counters.sessions.load(Ordering::Relaxed),
        counters.answered.load(Ordering::Relaxed),
        counters.foreign.load(Ordering::Relaxed)
    );
    result?;
    Ok(0)
}
