//! What a run sets up before it measures, in order: the shield (before the load, so the load's
//! processes begin on the other CPUs), the tracer, the sample log, the load and its settling,
//! then real-time privileges. Every system change is held by the session, which puts it back
//! however the run ends.

use std::path::PathBuf;

use anyhow::Result;

use super::{rt, LoadStart};
use crate::config::RunConfig;
use crate::model::{BreachRecord, ClassifyRecord, MeasuredParams, ShieldRecord, SplitRecord, SystemSnapshot};
use crate::recorder::samplelog::SampleLogWriter;
use crate::session::Session;
use crate::shield::Shield;
use crate::trace::classify::ClassifyTracer;
use crate::trace::split::SplitTracer;
use crate::trace::Tracer;

/// A run ready to measure.
pub(super) struct Setup {
    pub(super) grant: rt::Grant,
    /// What the run could not have, said once at the start and stored with it.
    pub(super) warnings: Vec<String>,
    pub(super) params: MeasuredParams,
    pub(super) system: SystemSnapshot,
    pub(super) samples: Option<SampleLogWriter>,
    pub(super) admit: Option<Admit>,
}

/// The shield's tasks file and CPUs: a thread on one of them enters the shield first.
pub(super) struct Admit {
    pub(super) tasks: PathBuf,
    pub(super) cpus: Vec<usize>,
}

pub(super) fn set_up(cfg: &RunConfig, session: &mut Session) -> Result<Setup> {
    let (shield, admit) = raise_shield(cfg, session)?;
    // The split before the breach tracer: the one that mounts tracefs unmounts it, and it must
    // go last, both when the session ends (in reverse) and when the next command replays the
    // journals of a killed run (the breach tracer's first). The classification's goes last.
    let classify_skipped = arm_classify(cfg, session);
    let split = arm_split(cfg, session);
    let breach_skipped = arm_tracer(cfg, session);
    let samples = match &cfg.samples {
        Some(path) => Some(open_log(path, cfg)?),
        None => None,
    };
    if let Some(spec) = &cfg.load {
        // Bounded: every load process ends by itself a minute after the run was due to end.
        let deadline_s = cfg.duration.map_or(0, |d| (d + cfg.settle).as_secs() + 60);
        let how = LoadStart { spec, tmp: &cfg.tmpdir, deadline_s, settle: cfg.settle, quiet: cfg.quiet };
        super::start_load(session, &how)?;
    }
    let grant = rt::acquire(session, cfg.policy, cfg.priority, cfg.mlock);
    let mut warnings = warnings(cfg, &grant, shield.as_ref(), breach_skipped.as_ref());
    if let Some(why) = split.as_ref().and_then(|r| r.skipped.as_ref()) {
        let w = format!("--split: the run is not split: {why}");
        eprintln!("rtbench: WARNING: {w}");
        warnings.push(w);
    }
    if let Some(why) = classify_skipped.as_ref().and_then(|r| r.skipped.as_ref()) {
        let w = format!("--classify: the noise gaps' classes are unknown: {why}");
        eprintln!("rtbench: WARNING: {w}");
        warnings.push(w);
    }
    let mut params = cfg.params();
    params.shield = shield;
    params.breach = breach_skipped;
    params.split = split;
    params.classify = classify_skipped;
    if !cfg.info.synthetic {
        params.lacked = grant.lacked(cfg.policy, cfg.mlock);
    }
    let system = snapshot(cfg, &grant);
    Ok(Setup { grant, warnings, params, system, samples, admit })
}

/// The sample log: begun, or gone on with (a resumed run's).
fn open_log(path: &std::path::Path, cfg: &RunConfig) -> Result<SampleLogWriter> {
    let step = cfg.probe.step_ns();
    let opened = if cfg.samples_append {
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

/// Arms `--breach` on the measured CPUs, held by the session; where it cannot, the record says
/// why the run goes untraced.
fn arm_tracer(cfg: &RunConfig, session: &mut Session) -> Option<BreachRecord> {
    let b = cfg.breach?;
    match Tracer::arm(b, &measured_cpus(cfg)) {
        Ok(tracer) => {
            session.hold(tracer);
            None
        }
        Err(why) => {
            Some(BreachRecord { threshold_ns: b.threshold_ns, max: b.max, skipped: Some(why), ..Default::default() })
        }
    }
}

/// Arms `--split` on the measured CPUs, held by the session; where it cannot, the record says
/// why the run is not split. Stored from the run's start, the record says a killed run was
/// split, and `rtbench resume` splits its next part too.
fn arm_split(cfg: &RunConfig, session: &mut Session) -> Option<SplitRecord> {
    let skipped = arm_or_why(session, cfg.split.then(|| SplitTracer::arm(&measured_cpus(cfg))));
    cfg.split.then(|| SplitRecord { skipped, ..Default::default() })
}

/// Arms `--classify` on the measured CPUs, held by the session; where it cannot, the record
/// says why the gaps are not classified.
fn arm_classify(cfg: &RunConfig, session: &mut Session) -> Option<ClassifyRecord> {
    let why = arm_or_why(session, cfg.classify.then(|| ClassifyTracer::arm(&measured_cpus(cfg))))?;
    Some(ClassifyRecord { skipped: Some(why), ..Default::default() })
}

/// A tracer armed (`None`: not asked for) goes to the session; why it could not be, if not.
fn arm_or_why<T: crate::restore::Guard + 'static>(
    session: &mut Session,
    armed: Option<Result<T, String>>,
) -> Option<String> {
    match armed? {
        Ok(tracer) => {
            session.hold(tracer);
            None
        }
        Err(why) => Some(why),
    }
}

/// The run's warnings so far, printed once (a synthetic run's are only stored).
fn warnings(
    cfg: &RunConfig,
    grant: &rt::Grant,
    shield: Option<&ShieldRecord>,
    breach_skipped: Option<&BreachRecord>,
) -> Vec<String> {
    let mut warnings = if cfg.info.synthetic {
        vec!["synthetic samples from a seeded generator, not a measurement of this machine".to_string()]
    } else {
        grant.warnings.clone()
    };
    warnings.extend(shield.and_then(|r| r.warning()));
    if let Some(why) = breach_skipped.and_then(|r| r.skipped.as_ref()) {
        warnings.push(format!("--breach: the run goes untraced: {why}"));
    }
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
