//! What a run sets up before it measures, in order: the shield (before the load, so the load's
//! processes begin on the other CPUs), the instruments, the sample log, the load and its
//! settling, then real-time privileges. Every system change is held by the session (the
//! instruments' by the instruments, which the run drops before the session), and put back
//! however the run ends.

use std::path::PathBuf;

use anyhow::Result;

use super::{rt, LoadStart};
use crate::config::RunConfig;
use crate::instrument::Armed;
use crate::model::{MeasuredParams, ShieldRecord, SystemSnapshot};
use crate::session::Session;
use crate::shield::Shield;
use crate::store::samplelog::SampleLogWriter;

/// A run ready to measure.
pub(super) struct Setup {
    pub(super) grant: rt::Grant,
    /// What the run could not have, said once at the start and stored with it.
    pub(super) warnings: Vec<String>,
    pub(super) params: MeasuredParams,
    pub(super) system: SystemSnapshot,
    pub(super) samples: Option<SampleLogWriter>,
    pub(super) admit: Option<Admit>,
    /// The instruments riding along, armed.
    pub(super) instruments: Armed,
    /// Where the runner's own work and the instruments' readers run.
    pub(super) collector: rt::CollectorPlan,
}

/// The shield's tasks file and CPUs: a thread on one of them enters the shield first.
pub(super) struct Admit {
    pub(super) tasks: PathBuf,
    pub(super) cpus: Vec<usize>,
}

pub(super) fn set_up(cfg: &RunConfig, session: &mut Session) -> Result<Setup> {
    let (shield, admit) = raise_shield(cfg, session)?;
    let mut params = cfg.params();
    params.shield = shield;
    let collector = plan_collector(cfg, &mut params);
    let (instruments, skipped) = Armed::arm(&cfg.instruments, (&measured_cpus(cfg), &collector.cpus), &mut params);
    let samples = match &cfg.output.samples {
        Some(path) => Some(open_log(path, cfg)?),
        None => None,
    };
    if let Some(spec) = &cfg.load.spec {
        // Bounded: every load process ends by itself a minute after the run was due to end.
        let deadline_s = cfg.duration.map_or(0, |d| (d + cfg.load.settle).as_secs() + 60);
        let how =
            LoadStart { spec, tmp: &cfg.load.tmpdir, deadline_s, settle: cfg.load.settle, quiet: cfg.output.quiet };
        super::start_load(session, &how)?;
    }
    let grant = rt::acquire(session, cfg.threads.policy, cfg.threads.priority, cfg.threads.mlock);
    let warnings = warnings(cfg, &grant, &params, skipped);
    if !cfg.info.synthetic {
        params.lacked = grant.lacked(cfg.threads.policy, cfg.threads.mlock);
    }
    let system = snapshot(cfg, &grant);
    Ok(Setup { grant, warnings, params, system, samples, admit, instruments, collector })
}

/// Where the collector is to run, recorded in `params` as planned (the runner records where it
/// was once it is there).
fn plan_collector(cfg: &RunConfig, params: &mut MeasuredParams) -> rt::CollectorPlan {
    let measured: Vec<Option<usize>> = cfg.threads.iter().map(|t| t.cpu).collect();
    let online = crate::sysinfo::online_cpus();
    let allowed = crate::sys::affinity().unwrap_or_else(|_| online.clone());
    let plan = rt::CollectorPlan::choose(cfg.main_affinity.as_deref(), &measured, &allowed, &online);
    let cpus = if plan.cpus.is_empty() {
        allowed.into_iter().filter(|c| online.contains(c)).collect()
    } else {
        plan.cpus.clone()
    };
    params.collector = Some(plan.record(cpus));
    plan
}

/// The sample log: begun, or gone on with (a resumed run's).
fn open_log(path: &std::path::Path, cfg: &RunConfig) -> Result<SampleLogWriter> {
    let step = cfg.probe.step_ns();
    let opened = if cfg.output.samples_append {
        SampleLogWriter::reopen(path, step).map_err(crate::analyze::log_reason)
    } else {
        SampleLogWriter::create(path, step).map_err(|e| e.to_string())
    };
    Ok(opened.map_err(|reason| crate::error::InputError::Unwritable { path: path.display().to_string(), reason })?)
}

/// Raises `--shield`, held by the session.
fn raise_shield(cfg: &RunConfig, session: &mut Session) -> Result<(Option<ShieldRecord>, Option<Admit>)> {
    let Some(cpus) = &cfg.shield else { return Ok((None, None)) };
    let shield = Shield::raise(cpus)?;
    let admit = Admit { tasks: shield.tasks_file(), cpus: shield.cpus().to_vec() };
    let record = shield.record.clone();
    session.hold(shield);
    Ok((Some(record), Some(admit)))
}

/// The run's warnings so far, printed once (a synthetic run's are only stored).
/// `skipped`: the instruments that could not be armed, and why.
fn warnings(cfg: &RunConfig, grant: &rt::Grant, params: &MeasuredParams, skipped: Vec<String>) -> Vec<String> {
    let mut warnings = if cfg.info.synthetic {
        vec!["synthetic samples from a seeded generator, not a measurement of this machine".to_string()]
    } else {
        grant.warnings.clone()
    };
    warnings.extend(params.shield.as_ref().and_then(ShieldRecord::warning));
    // Synthetic samples are not held up by anything on a real CPU.
    if !cfg.info.synthetic {
        warnings.extend(params.collector.as_ref().and_then(crate::model::CollectorRecord::warning));
    }
    warnings.extend(skipped);
    if !cfg.info.synthetic {
        for w in &warnings {
            eprintln!("rtbench: WARNING: {w}");
        }
    }
    warnings
}

/// The system as the run found it, with the audit of the measured CPUs.
fn snapshot(cfg: &RunConfig, grant: &rt::Grant) -> SystemSnapshot {
    let mut system = crate::sysinfo::snapshot();
    system.cpu_dma_latency_held = Some(grant.dma_latency_held);
    if !cfg.info.synthetic {
        system.audit = Some(crate::audit::run(&measured_cpus(cfg)));
    }
    system
}

/// The CPUs the measuring threads are pinned to, each once, in order.
pub(super) fn measured_cpus(cfg: &RunConfig) -> Vec<usize> {
    let mut cpus: Vec<usize> = cfg.threads.iter().filter_map(|t| t.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}
