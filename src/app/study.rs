//! `rtbench study`: the seed study in one command. Every probe idle and under load, then the
//! Appendix III table and the report.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::cli::{DbArg, PolicyArg, RunArgs, StudyArgs};
use crate::config::{DefaultThreads, RunConfig};
use crate::net::transport::Transport;
use crate::probe::{Gtod, Pingpong, Probe, Response, Timer};
use crate::report::select;
use crate::runner::Outcome;

/// One cell of the study's matrix.
struct Cell {
    probe: &'static str,
    load: String,
    duration: Duration,
}

/// The probes a study runs, in registry order (the synthetic probe is for tests). `peer` is
/// the echo server of the network probes.
fn probe(name: &str, peer: &str) -> Option<(Arc<dyn Probe>, serde_json::Value, DefaultThreads)> {
    let token = crate::net::wire::random_token();
    match name {
        "pingpong" => Some((
            Arc::new(Pingpong::new(Transport::Udp, peer.into(), 1, token, false, 1000, false, Duration::from_secs(2))),
            json!({ "transport": "udp", "peer": peer, "size_bytes": 1, "sample": "one-way = RTT/2", "warmup_round_trips": 1000 }),
            DefaultThreads::One,
        )),
        "response" => Some((
            Arc::new(Response::new(peer.into(), 1_000_000, token, Duration::from_millis(100))),
            json!({ "target": peer, "period_ns": 1_000_000, "timeout_ns": 100_000_000 }),
            DefaultThreads::One,
        )),
        "timer" => Some((
            Arc::new(Timer { interval_ns: 1_000_000, distance_ns: 0 }),
            json!({ "interval_us": 1000, "distance_us": 0 }),
            DefaultThreads::PerCpu,
        )),
        "gtod" => Some((Arc::new(Gtod), json!({ "pairs": null }), DefaultThreads::One)),
        _ => None,
    }
}

fn cells(a: &StudyArgs) -> Vec<Cell> {
    let probes: Vec<&'static str> =
        crate::probe::REGISTRY.iter().map(|p| p.name).filter(|n| probe(n, "").is_some()).collect();
    let mut out = Vec::new();
    let loaded = a.load.trim() != "none";
    for p in &probes {
        out.push(Cell { probe: p, load: "none".into(), duration: a.duration });
        if loaded {
            out.push(Cell { probe: p, load: a.load.clone(), duration: a.duration });
        }
    }
    if let Some(ext) = a.extended {
        for p in &probes {
            out.push(Cell { probe: p, load: a.load.clone(), duration: ext });
        }
    }
    out
}

fn run_args(a: &StudyArgs, cell: &Cell, label: &str) -> RunArgs {
    RunArgs {
        threads: None,
        affinity: None,
        priority: 95,
        policy: PolicyArg::Fifo,
        loops: None,
        duration: Some(cell.duration),
        mlockall: true,
        no_mlock: false,
        histogram: None,
        histfile: None,
        quiet: a.quiet,
        json: None,
        samples: None,
        // About 600 points per cell: a 1-minute cell draws as finely as a 24-hour one.
        envelope_interval: (cell.duration / 600).clamp(Duration::from_millis(10), Duration::from_secs(1)),
        load: cell.load.clone(),
        settle: a.settle,
        load_args: a.load_args.clone(),
        label: Some(label.to_string()),
        db: DbArg { db: a.db.db.clone() },
        help: None,
    }
}

fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

pub fn run(a: StudyArgs) -> Result<i32> {
    let label = a.label.clone().unwrap_or_else(crate::sysinfo::kernel_release);
    let cells = cells(&a);
    // The network probes talk to --peer, or to an echo server of our own on loopback.
    let local = match &a.peer {
        Some(_) => None,
        None => Some(crate::net::server::Server::bind(Transport::Udp, "127.0.0.1:0", None)?),
    };
    let peer = match (&a.peer, &local) {
        (Some(p), _) => crate::net::transport::address(Transport::Udp, Some(p)),
        (None, Some(server)) => server.local.clone(),
        (None, None) => unreachable!("a local server exists without --peer"),
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let server = local.map(|server| {
            let stop = &stop;
            s.spawn(move || {
                let enter = || {
                    let _ = crate::runner::rt::enter_thread(None, crate::model::Policy::Fifo, 95);
                };
                server.serve(stop, &enter)
            })
        });
        let result = run_cells(&a, &cells, &label, &peer);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(h) = server {
            let _ = h.join();
        }
        result
    })
}

fn run_cells(a: &StudyArgs, cells: &[Cell], label: &str, peer: &str) -> Result<i32> {
    // Everything is checked before the first cell runs: a bad load fails now, not in an hour.
    let mut configs = Vec::new();
    for cell in cells {
        let (p, params, threads) = probe(cell.probe, peer).expect("cells only hold study probes");
        configs.push(RunConfig::new(
            crate::probe::info(cell.probe).map_or("?", |i| i.name),
            p,
            params,
            &run_args(a, cell, label),
            threads,
        )?);
    }
    crate::config::check_writable(&a.output.with_extension("check"))?;
    let db = crate::store::default_path(a.db.db.as_deref());
    let mut store = super::writable_store(&db)?;
    let per_cell_extra = a.settle + Duration::from_secs(1);
    let mut done = Vec::new();
    let mut code = 0;
    for (k, (cell, cfg)) in cells.iter().zip(&configs).enumerate() {
        let left: Duration = cells[k..]
            .iter()
            .map(|c| c.duration + if c.load == "none" { Duration::ZERO } else { per_cell_extra })
            .sum();
        println!(
            "== cell {} of {}: {} {} for {}  (study time left {})",
            k + 1,
            cells.len(),
            cell.probe,
            crate::report::figures::load_name(&cell.load),
            hms(cell.duration),
            hms(left)
        );
        let (id, outcome) = crate::runner::run(cfg, &mut store)?;
        done.push(id);
        if let Outcome::Interrupted(sig) = outcome {
            code = 128 + sig;
            let missing: Vec<String> = cells[k + 1..]
                .iter()
                .map(|c| format!("{} {}", c.probe, crate::report::figures::load_name(&c.load)))
                .collect();
            println!("study interrupted: cell {} kept as run {id} (interrupted)", k + 1);
            if !missing.is_empty() {
                println!("missing cells: {}", missing.join(", "));
            }
            break;
        }
    }
    let runs = select::runs(&store, &[], &done)?;
    println!("\nAppendix III for label {label} (µs)");
    print!("{}", appendix_text(&runs));
    let files = crate::report::build::write(&a.output, &runs)?;
    println!("report: {} ({} figures)", files.index.display(), files.figures);
    Ok(code)
}

/// The Appendix III table as text.
pub fn appendix_text(runs: &[select::RunView]) -> String {
    let mut out = format!(
        "{:<10} {:<16} {:>10} {:>10} {:>10} {:>10} {:>12}\n",
        "probe", "load", "Min", "Max", "Avg", "StdDev", "samples"
    );
    for r in runs {
        let s = &r.data.total;
        let us = |ns: f64| format!("{:.3}", ns / 1000.0);
        out.push_str(&format!(
            "{:<10} {:<16} {:>10} {:>10} {:>10} {:>10} {:>12}{}\n",
            r.probe(),
            crate::report::figures::load_name(&r.load()),
            us(if s.count == 0 { 0.0 } else { s.min as f64 }),
            us(s.max as f64),
            us(s.mean()),
            us(s.stddev()),
            s.count,
            if r.data.header.warnings.is_empty() && r.data.header.status == crate::model::RunStatus::Complete {
                String::new()
            } else {
                format!("  ⚠ {} ({} warnings)", r.data.header.status, r.data.header.warnings.len())
            }
        ));
    }
    out
}
