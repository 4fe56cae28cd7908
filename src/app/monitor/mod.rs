//! `rtbench monitor`: the timer probe at low cost (or, asked for, the noise probe), for as
//! long as the machine runs, through the same runner as every run. Each window is a stored
//! run; `/metrics` shows the latency to a Prometheus server.

mod hlog;
mod metrics;
mod serve;

use std::sync::Arc;

use anyhow::Result;

use crate::cli::MonitorArgs;
use crate::config::{RunConfig, RunOptions};
use crate::runner::segment::Extras;

pub fn run(a: MonitorArgs) -> Result<i32> {
    let probe = if a.noise { "noise" } else { "timer" };
    let info = crate::probe::info(probe).expect("the monitor's probes are registered");
    (info.supported)().map_err(|why| crate::invalid!("the monitor cannot run here: {why}"))?;
    let thresholds = thresholds(&a.threshold)?;
    let mut args = info.defaults();
    match a.noise {
        // The busy loop has no interval: what it counts is set by its threshold.
        true => args.set(&crate::probe::noise::THRESHOLD, crate::probe::FlagValue::Number(a.noise_threshold)),
        false => args.set(&crate::probe::timer::INTERVAL, crate::probe::FlagValue::Number(a.interval)),
    }
    let opts = RunOptions {
        affinity: a.affinity.clone(),
        priority: a.priority,
        duration: a.duration,
        quiet: true,
        label: a.label.clone(),
        db: a.db.db.clone(),
        ..RunOptions::default()
    };
    let mut cfg = RunConfig::new(info, &args, &opts)?;
    // Marks every window as a monitor's: retention deletes these and nothing else.
    cfg.probe_params.insert(crate::store::WINDOW_PARAM.into(), a.window.as_secs_f64().into());
    let shared = metrics::Shared::default();
    let endpoint = match a.listen.as_str() {
        "off" => None,
        listen => Some(serve::Endpoint::start(listen, a.token.clone(), Arc::clone(&shared), probe)?),
    };
    if let Some(e) = &endpoint {
        eprintln!("rtbench: serving metrics at http://{}/metrics", e.addr);
    }
    let mut store = super::writable_store(&cfg.db)?;
    let mut sinks: Vec<Box<dyn crate::runner::sink::Sink + Send>> =
        vec![Box::new(metrics::MetricsSink::new(shared, thresholds))];
    if let Some(path) = &a.hlog {
        sinks.push(Box::new(hlog::HlogSink::create(path)?));
    }
    let extras = Extras { window: Some(a.window), keep: Some(a.keep), sinks };
    let (id, outcome) = crate::runner::run_with(&cfg, &mut store, extras)?;
    if let (Some(linger), Some(_), crate::runner::Outcome::Complete) = (a.linger, &endpoint, outcome) {
        std::thread::sleep(linger);
    }
    drop(endpoint);
    eprintln!("rtbench: monitor ended; its last window is run {id} in {}", store.path().display());
    Ok(outcome.exit_code())
}

/// `--threshold 100us,1ms`: latencies in ns.
fn thresholds(list: &str) -> Result<Vec<u64>> {
    list.split(',')
        .map(|item| {
            let item = item.trim();
            let ns = match item.strip_suffix("us") {
                Some(us) => us.parse::<f64>().ok().map(|v| v * 1e3),
                None => crate::parse::duration(item).ok().map(|d| d.as_nanos() as f64),
            };
            ns.filter(|v| v.is_finite() && *v >= 1.0)
                .map(|v| v as u64)
                .ok_or_else(|| crate::invalid!("--threshold: '{item}' is not a latency; use e.g. 100us,1ms"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn thresholds_take_microseconds_and_durations_and_refuse_the_rest() {
        assert_eq!(super::thresholds("100us, 1ms,2s").unwrap(), vec![100_000, 1_000_000, 2_000_000_000]);
        for bad in ["", "fast", "0us", "-5us"] {
            let e = super::thresholds(bad).unwrap_err();
            assert!(e.to_string().contains("--threshold"), "{bad}: {e}");
        }
    }
}
