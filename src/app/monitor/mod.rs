//! `rtbench monitor`: the timer probe at low cost (or, asked for, the noise probe), for as
//! long as the machine runs, through the same runner as every run. Each window is a stored
//! run; `/metrics` shows the latency to a Prometheus server.

mod hlog;
mod metrics;
mod serve;

use std::sync::Arc;

use anyhow::Result;

use crate::app::task::MonitorConfig;
use crate::runner::segment::Extras;

pub fn run(a: MonitorConfig) -> Result<i32> {
    let mut cfg = a.run;
    let probe = cfg.info.name;
    // Every window records its length; its kind, which retention goes by, the runner stores.
    cfg.probe_params.set_monitor_window(a.window.as_secs_f64());
    let shared = metrics::Shared::default();
    let endpoint = match &a.listen {
        None => None,
        Some(listen) => Some(serve::Endpoint::start(listen, a.token.clone(), Arc::clone(&shared), probe)?),
    };
    if let Some(e) = &endpoint {
        eprintln!("rtbench: serving metrics at http://{}/metrics", e.addr);
    }
    let mut store = super::writable_store(&cfg.storage.db)?;
    let mut sinks: Vec<Box<dyn crate::runner::sink::Sink + Send>> =
        vec![Box::new(metrics::MetricsSink::new(shared, a.thresholds))];
    if let Some(path) = &a.hlog {
        sinks.push(Box::new(hlog::HlogSink::create(path)?));
    }
    let extras = Extras { window: Some(a.window), keep: Some(a.keep), sinks, ..Extras::default() };
    let (id, outcome) = crate::runner::run_with(&cfg, &mut store, extras)?;
    if let (Some(linger), Some(_), crate::session::Outcome::Complete) = (a.linger, &endpoint, outcome) {
        std::thread::sleep(linger);
    }
    drop(endpoint);
    eprintln!("rtbench: monitor ended; its last window is run {id} in {}", store.path().display());
    Ok(outcome.exit_code())
}
