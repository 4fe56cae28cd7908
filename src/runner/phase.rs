//! The load phase of every command that measures under a load (a probe's run, sysbench, the
//! load by itself): the load started and held by the session, settled, and what it did over the
//! measurement reported when it stops. A load the session still holds when it ends is stopped
//! with it, however the command ends.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::load::{CpuSample, LoadSession, LoadSpec, FIRST_SECOND};
use crate::model::{GeneratorReport, LoadReport};
use crate::restore::Guard;
use crate::session::Session;

/// A load the session holds, and the CPUs' counters from when it had settled.
struct LoadPhase {
    load: LoadSession,
    settle: Duration,
    before: CpuSample,
}

impl Guard for LoadPhase {
    fn name(&self) -> &'static str {
        "load"
    }
}

/// How a load phase runs.
pub struct LoadStart<'a> {
    pub spec: &'a LoadSpec,
    /// Where the load's files go.
    pub tmp: &'a Path,
    /// Every load process ends by itself this long after it started (0: never).
    pub deadline_s: u64,
    pub settle: Duration,
    pub quiet: bool,
}

/// Starts the load, holds it in `session`, checks that it is past its first second and lets it
/// settle (the first second counts); a stop signal cuts the settling short (the caller sees the
/// signal). A generator that failed in its first second (bad arguments) is bad input: measuring
/// "under load" with nothing loading would store a lie.
pub fn start_load(session: &mut Session, how: &LoadStart) -> Result<()> {
    let started = Instant::now();
    let load = LoadSession::start(how.spec, how.tmp, how.deadline_s)?;
    session.hold(LoadPhase { load, settle: how.settle, before: CpuSample::read() });
    if !how.quiet {
        eprintln!("rtbench: load '{}' started; settling for {:.0} s", how.spec.profile, how.settle.as_secs_f64());
    }
    if let Err(why) = first_second(session) {
        drop(session.release::<LoadPhase>());
        return Err(crate::invalid!("{why}"));
    }
    session.pause(how.settle.saturating_sub(started.elapsed()));
    // What the load does is read over the measurement only, after its settling.
    session.with(|phase: &mut LoadPhase| phase.before = CpuSample::read());
    Ok(())
}

/// Waits until every generator is past its first second or one failed in it. Bounded: a worker
/// too slow to say either is taken as started (as before this check existed).
fn first_second(session: &Session) -> Result<(), String> {
    session.pause(FIRST_SECOND);
    let until = Instant::now() + Duration::from_secs(5);
    while session.signal().is_none() && Instant::now() < until {
        match session.with(|phase: &mut LoadPhase| phase.load.first_second()).flatten() {
            Some(r) => return r,
            None => session.pause(Duration::from_millis(50)),
        }
    }
    Ok(())
}

/// Each generator's iterations so far; empty when the session holds no load.
pub fn load_progress(session: &Session) -> Vec<GeneratorReport> {
    session.with(|phase: &mut LoadPhase| phase.load.progress()).unwrap_or_default()
}

/// Stops the load and reports what it did since it settled, with the warnings of a load that
/// fell short; None when the session holds no load.
pub fn stop_load(session: &mut Session) -> Option<(LoadReport, Vec<String>)> {
    let phase = session.release::<LoadPhase>()?;
    let after = CpuSample::read();
    let spec = phase.load.spec.clone();
    let (report, warnings) = crate::load::session_report(&spec, phase.load.stop(), &phase.before, &after);
    Some((LoadReport { settle_s: Some(phase.settle.as_secs_f64()), ..report }, warnings))
}
