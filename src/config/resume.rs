//! `rtbench resume RUN`: the settings of a stored run, read back from its typed parameters,
//! checked as a command line's are, for the run's next part.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::{RunConfig, RunOptions, ThreadPlan};
use crate::invalid;
use crate::model::{LoadRecord, MeasuredParams, RunHeader, RunKind, RunStatus};

/// `rtbench resume RUN`: the run to continue, and for how long.
#[derive(Debug)]
pub struct ResumeConfig {
    pub run: i64,
    /// `-D`: how long to continue [default: what is left of the run's duration].
    pub duration: Option<Duration>,
    pub quiet: bool,
    pub db: PathBuf,
    /// `--peer`: the peer of a network probe's run, given again.
    pub peer: Option<String>,
}

/// Where the next part of a network probe's run finds its peer.
#[derive(Clone, Debug, PartialEq)]
pub enum Peer {
    /// The probe has none.
    NoPeer,
    /// rtbench's own, started again for the part: the run's was a study's echo server.
    Own,
    /// The address given again (`--peer`).
    Given(String),
}

/// Where the next part of run `h` finds its peer: rtbench's own again where the run's was
/// (a study run without `--peer` served its network cells itself, on loopback), else the one
/// given again; refused, naming what is missing, when a peer rtbench did not start is not given.
pub fn peer(h: &RunHeader, given: Option<&str>) -> Result<Peer> {
    let id = h.id;
    if crate::probe::info(&h.probe).and_then(|info| info.peer()).is_none() {
        return match given {
            Some(_) => Err(invalid!("--peer: run {id} ({}) has no peer", h.probe)),
            None => Ok(Peer::NoPeer),
        };
    }
    let stored = &resumable(h)?.probe;
    // A run stored before rtbench said whose the peer was tells by its command line.
    let own = stored.own_peer().unwrap_or_else(|| own_peer(&h.command_line));
    let stored = stored.peer().unwrap_or("?");
    match (own, given) {
        (true, None) => Ok(Peer::Own),
        (true, Some(_)) => Err(invalid!(
            "--peer: run {id} ({}) measured against the study's own echo server, which resume starts again: \
             leave --peer out",
            h.probe
        )),
        (false, Some(addr)) => Ok(Peer::Given(addr.to_string())),
        (false, None) => Err(invalid!(
            "run {id} ({}) measured against {stored}, a peer rtbench did not start: give it again with --peer HOST[:PORT]",
            h.probe
        )),
    }
}

/// Whether a run's command line started its peer itself: a study without `--peer`. How runs
/// stored before their parameters said ([`crate::model::ProbeParams::own_peer`]) tell.
fn own_peer(command_line: &str) -> bool {
    let mut words = command_line.split_whitespace().skip(1);
    words.next() == Some("study") && !words.any(|w| w == "--peer" || w.starts_with("--peer="))
}

/// How much more of the run to measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rest {
    For(Duration),
    /// Samples per thread.
    Loops(u64),
    /// Until stopped, as the run was asked.
    Unbounded,
}

/// The measured parameters of `h` when it can be resumed; else why not, naming the run.
pub fn resumable(h: &RunHeader) -> Result<&MeasuredParams> {
    let id = h.id;
    match h.status {
        RunStatus::Interrupted | RunStatus::Aborted => {}
        RunStatus::Complete => return Err(invalid!("run {id} is complete: there is nothing to resume")),
        RunStatus::Running => return Err(invalid!("run {id} is still running (its process is alive)")),
        RunStatus::Failed => {
            return Err(invalid!(
                "run {id} failed: only an interrupted or aborted run can be resumed (see `show {id}`)"
            ))
        }
    }
    match h.kind {
        RunKind::Probe => {}
        RunKind::MonitorWindow => {
            return Err(invalid!(
                "run {id} is a window of `rtbench monitor`: a monitor window is not resumable; start the monitor \
                 again and its windows go on as new runs"
            ))
        }
        RunKind::SysbenchOp | RunKind::SysbenchTotal => {
            return Err(invalid!("run {id} is a sysbench measurement, made whole: it is not resumable"))
        }
    }
    h.params.measured().ok_or_else(|| invalid!("run {id} was not measured by rtbench (imported): it is not resumable"))
}

/// What is left of a run that measured `measured_s`, or `asked` (`-D`).
pub fn rest(h: &RunHeader, measured_s: f64, fewest_samples: u64, asked: Option<Duration>) -> Result<Rest> {
    let m = resumable(h)?;
    if let Some(d) = asked {
        return Ok(Rest::For(d));
    }
    let done = || invalid!("run {} has measured all it was asked already; give -D to continue it longer", h.id);
    match (m.duration_s, m.loops) {
        (Some(total), _) => {
            let left = total - measured_s;
            // Less than a checkpoint's worth: what a stop at its very end leaves.
            if left < 1.0 {
                return Err(done());
            }
            Ok(Rest::For(Duration::from_secs_f64(left)))
        }
        (None, Some(loops)) => match loops.saturating_sub(fewest_samples) {
            0 => Err(done()),
            left => Ok(Rest::Loops(left)),
        },
        (None, None) => Ok(Rest::Unbounded),
    }
}

impl RunConfig {
    /// The settings stored run `h` was made with, for `rest` more: its probe and its settings,
    /// threads and their CPUs, policy, memory locking, envelope, load, label, shield, breach
    /// tracing and split. Checked as a command line's are (a CPU gone, root needed).
    /// `peer`: the address of a network probe's peer for this part.
    pub fn resumed(h: &RunHeader, rest: Rest, quiet: bool, db: PathBuf, peer: Option<&str>) -> Result<RunConfig> {
        let m = resumable(h)?;
        let id = h.id;
        let info = crate::probe::info(&h.probe)
            .ok_or_else(|| invalid!("run {id}'s probe '{}' is not one this rtbench knows", h.probe))?;
        (info.supported)().map_err(|why| invalid!("run {id}: {} cannot run here: {why}", info.name))?;
        let mut args =
            info.resumed_args(&m.probe).map_err(|why| invalid!("run {id} ({}) cannot be resumed: {why}", h.probe))?;
        if let Some(addr) = peer {
            args.set_peer(addr);
        }
        let (duration, loops) = match rest {
            Rest::For(d) => (Some(d), None),
            Rest::Loops(n) => (None, Some(n)),
            Rest::Unbounded => (None, None),
        };
        let (load, settle) = load_of(&h.load);
        let opts = RunOptions {
            threads: Some(m.threads as u64),
            affinity: Some(affinity(&m.cpus)),
            priority: m.priority,
            policy: m.policy,
            loops,
            duration,
            mlock: m.mlock,
            quiet,
            envelope_interval: Duration::from_nanos(m.envelope_interval_ns),
            load,
            settle,
            load_flags: m.load_flags.clone().unwrap_or_default(),
            label: Some(h.label.clone()),
            db: Some(db),
            shield: m.shield.as_ref().map(|s| crate::units::format_cpu_list(&s.cpus)),
            // Each instrument the stored run had armed, again (not one it had skipped).
            instruments: crate::instrument::REGISTRY.iter().filter_map(|i| (i.resumed)(m)).collect(),
            main_affinity: main_affinity(m),
            ..RunOptions::default()
        };
        let mut cfg = RunConfig::new(info, &args, &opts)?;
        // Each thread on the CPU it measured on, as stored (the flags pin them round-robin).
        cfg.threads.plans = m.cpus.iter().enumerate().map(|(index, &cpu)| ThreadPlan { index, cpu }).collect();
        Ok(cfg)
    }
}

/// What the next part of run `h` does differently from the run, said when it starts and stored
/// with the run's warnings.
pub fn notes(h: &RunHeader) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(m) = h.params.measured() else { return notes };
    if !h.load.is_idle() && m.load_flags.is_none() {
        notes.push(format!(
            "resumed with the load's default flags (--jobs, --kernel-tree, --fswalk-path, --hackbench-groups, \
             --tmpdir): run {} was stored before rtbench kept them",
            h.id
        ));
    }
    notes
}

/// A peer given again at another address than the run's (`--peer`): the run keeps the one it
/// was made with, and this note says where the part after gap `resumes + 1` measured.
pub fn peer_note(h: &RunHeader, resumes: usize, cfg: &RunConfig, peer: &Peer) -> Option<String> {
    let Peer::Given(_) = peer else { return None };
    let stored = h.params.measured()?.probe.peer()?;
    let now = cfg.probe_params.peer()?;
    (now != stored)
        .then(|| format!("the part after gap {} measured against {now}, not the run's {stored}", resumes + 1))
}

/// Where the next part of run `h` logs its samples, when the run had a sample log (`--samples
/// FILE`): after what FILE holds, the format allowing it; where FILE cannot take more (gone,
/// not a log, logged with another step), in FILE.resumed-N (N: this resume's number), which
/// the note returned says.
pub fn sample_log(h: &RunHeader, resumes: usize, cfg: &mut RunConfig) -> Result<Option<String>> {
    let Some(file) = h.params.measured().and_then(|m| m.samples_file.as_deref()) else { return Ok(None) };
    let path = PathBuf::from(file);
    let why = match crate::store::samplelog::scan(&path) {
        Ok(index) if index.step_ns == cfg.probe.step_ns() => {
            super::check_writable(&path)?;
            cfg.output.samples = Some(path);
            cfg.output.samples_append = true;
            return Ok(None);
        }
        Ok(index) => crate::store::samplelog::LogError::Step { logged: index.step_ns, now: cfg.probe.step_ns() },
        Err(e) => e,
    };
    let n = resumes + 1;
    let other = PathBuf::from(format!("{file}.resumed-{n}"));
    super::check_writable(&other)?;
    cfg.output.samples = Some(other.clone());
    Ok(Some(format!(
        "the sample log '{file}' {}: the samples after gap {n} are logged in '{}'",
        crate::analyze::log_reason(why),
        other.display()
    )))
}

/// The CPUs the threads ran on, as `-a` takes them; `none` when unpinned.
/// The `--main-affinity` a stored run was given, if it was given one.
fn main_affinity(m: &MeasuredParams) -> Option<String> {
    let c = m.collector.as_ref().filter(|c| c.chosen == crate::model::CollectorChoice::Asked)?;
    Some(crate::units::format_cpu_list(&c.cpus))
}

fn affinity(cpus: &[Option<usize>]) -> String {
    let mut pinned: Vec<usize> = cpus.iter().flatten().copied().collect();
    pinned.sort_unstable();
    pinned.dedup();
    if pinned.is_empty() {
        "none".into()
    } else {
        crate::units::format_cpu_list(&pinned)
    }
}

/// The load profile and its settling time as the run stored them.
fn load_of(load: &LoadRecord) -> (String, Duration) {
    let settle_s = match load {
        LoadRecord::Measured(r) => r.settle_s,
        LoadRecord::Planned(p) => Some(p.settle_s),
        LoadRecord::Named(_) => None,
    };
    let default = RunOptions::default().settle;
    (load.profile().to_string(), settle_s.map_or(default, Duration::from_secs_f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        LoadFlags, LoadPlan, Metric, ProbeParams, RoundTripsApart, RunParams, RunStatus, SysbenchOpParams,
        SysbenchTotalParams, SystemSnapshot, ThreadNoise, ThreadRoundTrips, Warmup,
    };
    use crate::store::{RunHead, RunWriter, Store};

    /// A run of `params` under the `cpu` load, stored and stopped: its header as read back.
    fn stopped(store: &mut Store, params: MeasuredParams) -> RunHeader {
        stopped_as(store, ("timer", RunKind::Probe), params, "rtbench timer --load cpu")
    }

    /// A run of `probe` (its name and kind), made by `command_line`, stored and stopped.
    fn stopped_as(store: &mut Store, probe: (&str, RunKind), params: MeasuredParams, command_line: &str) -> RunHeader {
        let load = LoadPlan { profile: "cpu".into(), generators: vec!["cpu".into()], settle_s: 3.0 };
        let head = RunHead {
            label: "l".into(),
            probe: probe.0.into(),
            kind: probe.1,
            metric: Metric::default(),
            params: RunParams::Measured(params),
            load: LoadRecord::Planned(load),
            command_line: command_line.into(),
            rt_priority: true,
            warnings: Vec::new(),
            system: SystemSnapshot::default(),
            envelope_ns: 1_000_000_000,
        };
        let id = RunWriter::begin(store, head).unwrap().finish(RunStatus::Interrupted, &[]).unwrap();
        store.header(id).unwrap()
    }

    /// The load's flags go into the run's stored parameters and come back as the resumed
    /// part's, which shape its load as the run's was. A run stored without them resumes with
    /// the defaults, and says so.
    #[test]
    fn a_loaded_run_resumes_with_the_load_flags_it_was_stored_with() {
        let dir = tempfile::tempdir().unwrap();
        let flags = LoadFlags {
            jobs: Some(3),
            kernel_tree: Some("/src/linux".into()),
            fswalk_path: "/usr".into(),
            hackbench_groups: 7,
            tmpdir: Some(dir.path().into()),
        };
        let opts = RunOptions { load: "cpu".into(), load_flags: flags.clone(), ..RunOptions::default() };
        let timer = crate::probe::info("timer").unwrap();
        let cfg = RunConfig::new(timer, &timer.defaults(), &opts).unwrap();
        let db = dir.path().join("s.db");
        let mut store = Store::open(&db).unwrap();
        let h = stopped(&mut store, cfg.params());
        let rest = Rest::For(Duration::from_secs(5));
        let again = RunConfig::resumed(&h, rest, true, db.clone(), None).unwrap();
        assert_eq!(again.load.flags.as_ref(), Some(&flags));
        let o = &again.load.spec.as_ref().unwrap().options;
        assert_eq!(
            (o.jobs, o.kernel_tree.as_deref(), o.fswalk_path.as_str(), o.hackbench_groups),
            (3, Some("/src/linux"), "/usr", 7)
        );
        assert_eq!(again.load.tmpdir, dir.path());
        assert!(notes(&h).is_empty());

        let older = stopped(&mut store, MeasuredParams { load_flags: None, ..cfg.params() });
        let again = RunConfig::resumed(&older, rest, true, db, None).unwrap();
        assert_eq!(again.load.flags, Some(LoadFlags::default()));
        let [note] = &notes(&older)[..] else { panic!("{:?}", notes(&older)) };
        assert!(note.starts_with("resumed with the load's default flags (--jobs"), "{note}");
        let idle = RunConfig::new(timer, &timer.defaults(), &RunOptions::default()).unwrap();
        assert_eq!(idle.params().load_flags, None, "an idle run stores none");
    }

    #[test]
    fn only_a_study_without_peer_started_its_peer_itself() {
        assert!(own_peer("rtbench study -D 4s --load none"));
        assert!(!own_peer("rtbench study -D 4s --peer 10.0.0.2"));
        assert!(!own_peer("/usr/bin/rtbench study --peer=10.0.0.2:17700"));
        assert!(!own_peer("rtbench pingpong 127.0.0.1:17700 -D 4s"));
        assert!(!own_peer("rtbench response --logger 127.0.0.1"));
    }

    /// The run settings of `probe` at its defaults, its peer (if it has one) on loopback.
    fn config(probe: &str) -> RunConfig {
        let info = crate::probe::info(probe).unwrap();
        let mut args = info.defaults();
        if info.peer().is_some() {
            args.set_peer("127.0.0.1:9");
        }
        RunConfig::new(info, &args, &RunOptions::default()).unwrap()
    }

    /// What a run of the probe learns, filled in as its end would.
    fn found(mut p: ProbeParams) -> ProbeParams {
        match &mut p {
            ProbeParams::Pingpong(p) => {
                (p.peer_host, p.peer_placement) = (Some("lab".into()), Some("pinned to CPU 1, fifo/95".into()));
                let warmup = Warmup { round_trips: 3, min_rtt_ns: 1, mean_rtt_ns: 2.5, max_rtt_ns: 4 };
                p.threads = RoundTripsApart(vec![ThreadRoundTrips { thread: 0, cold_rtt_ns: Some(9), warmup }]);
            }
            ProbeParams::Response(p) => {
                (p.target_host, p.lost_triggers, p.late_answers) = (Some("lab".into()), Some(1), Some(0));
            }
            ProbeParams::Noise(p) => {
                let t = ThreadNoise { thread: 0, measured_ns: 10, noise_ns: 1, available_percent: 90.0, pauses: 2 };
                p.noise = Some(vec![t]);
            }
            _ => {}
        }
        p
    }

    /// A run of each probe (and of sysbench, and a monitor's window), stored with its typed
    /// parameters, reads back with the same ones.
    #[test]
    fn every_kind_of_run_reads_back_the_probe_params_it_was_stored_with() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let mut runs: Vec<(String, RunKind, MeasuredParams)> = crate::probe::REGISTRY
            .iter()
            .map(|info| {
                let mut cfg = config(info.name);
                *cfg.probe_params = found(*cfg.probe_params);
                (info.name.to_string(), RunKind::Probe, cfg.params())
            })
            .collect();
        let mut window = config("timer");
        window.probe_params.set_monitor_window(1.0);
        runs.push(("timer".into(), RunKind::MonitorWindow, window.params()));
        let op = SysbenchOpParams {
            op: "null-call".into(),
            group: "processes".into(),
            iterations: 7,
            min_repetition_ms: 2.0,
            image: None,
        };
        let op = MeasuredParams { probe: ProbeParams::SysbenchOp(op), ..window.params() };
        runs.push(("sysbench.null-call".into(), RunKind::SysbenchOp, op));
        let iterations = [("null-call".to_string(), 7)].into();
        let total = SysbenchTotalParams { load_item: "cpu".into(), baseline: "l".into(), operations: 1, iterations };
        let total = MeasuredParams { probe: ProbeParams::SysbenchTotal(total), ..window.params() };
        runs.push(("sysbench.total".into(), RunKind::SysbenchTotal, total));
        for (probe, kind, params) in runs {
            let h = stopped_as(&mut store, (&probe, kind), params.clone(), "rtbench");
            assert_eq!(h.params.measured(), Some(&params), "{probe} ({})", kind.as_str());
        }
    }

    /// Whether the peer was rtbench's own is stored with a network probe's run, and resume goes
    /// by it; a run stored before rtbench said goes by its command line.
    #[test]
    fn resume_goes_by_the_stored_word_on_whose_the_peer_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        for probe in ["pingpong", "response"] {
            let mut cfg = config(probe);
            assert_eq!(cfg.probe_params.own_peer(), Some(false), "{probe}: said by every run");
            cfg.probe_params.set_own_peer(true);
            // Its command line would say otherwise: the stored word counts.
            let own = stopped_as(&mut store, (probe, RunKind::Probe), cfg.params(), "rtbench pingpong 127.0.0.1:9");
            assert_eq!(own.params.measured().unwrap().probe.own_peer(), Some(true), "{probe}");
            assert_eq!(peer(&own, None).unwrap(), Peer::Own, "{probe}");
            cfg.probe_params.set_own_peer(false);
            let theirs = stopped_as(&mut store, (probe, RunKind::Probe), cfg.params(), "rtbench study -D 4s");
            assert!(peer(&theirs, None).is_err(), "{probe}: a peer rtbench did not start must be given");
            assert_eq!(peer(&theirs, Some("10.0.0.2:9")).unwrap(), Peer::Given("10.0.0.2:9".into()));
            // As stored before rtbench said: no such field.
            let mut old = serde_json::to_value(cfg.params()).unwrap();
            old.as_object_mut().unwrap().remove("own_peer");
            let old: MeasuredParams = serde_json::from_value(old).unwrap();
            assert_eq!(old.probe.own_peer(), None, "{probe}");
            let study = stopped_as(&mut store, (probe, RunKind::Probe), old.clone(), "rtbench study -D 4s");
            assert_eq!(peer(&study, None).unwrap(), Peer::Own, "{probe}: a study without --peer");
            let theirs = stopped_as(&mut store, (probe, RunKind::Probe), old, "rtbench pingpong 127.0.0.1:9");
            assert!(peer(&theirs, None).is_err(), "{probe}");
        }
    }
}
