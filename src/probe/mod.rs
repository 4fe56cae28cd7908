//! Probes: one file each, declaring everything about itself in a [`ProbeInfo`], listed in
//! [`REGISTRY`]. A probe's hot loop only measures and records integers into its thread's
//! recorder; the runner owns everything else.

mod flags;
mod gtod;
pub mod noise;
mod pingpong;
mod response;
mod synthetic;
pub mod timer;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Map, Value};

use crate::model::Metric;
use crate::net::transport::Transport;
use crate::recorder::Recorder;

pub use flags::{Flag, Kind, Preset, ProbeArgs, Value as FlagValue};

/// What one measuring thread gets from the runner.
pub struct ThreadCtx<'a> {
    pub rec: &'a mut Recorder,
    /// Thread number, 0-based.
    pub index: usize,
    /// CLOCK_MONOTONIC ns the run started at; time offsets are relative to it.
    pub start_ns: u64,
    /// Samples to take before stopping (u64::MAX: until told to stop).
    pub loops: u64,
    stop: &'a AtomicBool,
}

impl<'a> ThreadCtx<'a> {
    pub fn new(rec: &'a mut Recorder, index: usize, start_ns: u64, loops: u64, stop: &'a AtomicBool) -> Self {
        ThreadCtx { rec, index, start_ns, loops, stop }
    }

    /// True once the runner asked every thread to stop.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A measuring loop.
pub trait Probe: Send + Sync {
    /// Nominal time between two samples of one thread (0 when back-to-back); the sample log
    /// encodes deviations from it.
    fn step_ns(&self) -> u64;
    /// The longest a thread that measures goes between two samples, for the runner's watchdog;
    /// `None` when a sample is an event that may not come for a long time.
    fn sample_gap_ns(&self) -> Option<u64> {
        Some(self.step_ns())
    }
    /// Runs until `ctx.loops` samples are taken or the runner says stop.
    fn run(&self, ctx: &mut ThreadCtx);
    /// Gets ready for `threads` threads before the run begins (connect to a peer, …). An error
    /// here ends the command before anything is stored.
    fn prepare(&self, _threads: usize) -> Result<()> {
        Ok(())
    }
    /// What the probe learnt while running, stored beside its parameters.
    fn findings(&self) -> Map<String, Value> {
        Map::new()
    }
}

/// How many threads a probe runs when `-t` is not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultThreads {
    PerCpu,
    One,
}

/// What a probe's build gets besides its flags.
pub struct Shape {
    /// Samples per thread, once `-l`, the probe's count flag and its default are resolved.
    pub loops: Option<u64>,
}

/// A probe ready to run, and its parameters as stored with the run.
pub struct Built {
    pub probe: Arc<dyn Probe>,
    pub params: Map<String, Value>,
}

/// A server that a probe's flags ask for instead of a measurement (`pingpong --serve`).
pub struct ServeSpec {
    pub transport: Transport,
    pub addr: String,
    /// Accept only this session token.
    pub token: Option<u64>,
    pub serve_for: Option<Duration>,
    /// What the server answers, for its banner.
    pub what: &'static str,
}

/// Reads a probe's flags for a server mode: `Some` when they ask for one.
pub type ServeFn = fn(&ProbeArgs) -> Result<Option<ServeSpec>>;

/// What the study tells a probe about its surroundings.
pub struct StudyEnv {
    /// The echo server of the network probes.
    pub peer: String,
}

/// Everything rtbench knows about a probe, declared in the probe's own file. The command
/// line, the study, the report's ordering and the tests all read it from [`REGISTRY`].
pub struct ProbeInfo {
    pub name: &'static str,
    /// One line: what a sample is, and which seed tool it follows.
    pub help: &'static str,
    /// Emits generated samples rather than measuring this machine: it runs at SCHED_OTHER
    /// without locked memory, is hidden from `--help`, and its runs say so.
    pub synthetic: bool,
    pub metric: Metric,
    pub default_threads: DefaultThreads,
    /// Samples per thread when neither `-l`, the count flag nor a duration bounds the run.
    pub default_loops: Option<u64>,
    /// The probe's own name for `-l` (`--pairs`), if it has one; it is in `flags` too.
    pub count_flag: Option<Flag>,
    pub flags: &'static [Flag],
    /// Whether it can run here; if not, why (stress-ng's way: a skip with a reason).
    pub supported: fn() -> Result<(), String>,
    pub build: fn(&ProbeArgs, &Shape) -> Result<Built>,
    /// A server mode, when the flags ask for one.
    pub serve: Option<ServeFn>,
    /// How the study runs it (its flags beyond the defaults); `None`: not in the study.
    pub study: Option<fn(&StudyEnv, &mut ProbeArgs)>,
    /// How `rtbench resume` reads its stored settings back as its flags.
    pub resume: Resume,
}

/// Whether a probe's stopped run can be continued (`rtbench resume`), and how its stored
/// settings read back as its flags.
pub enum Resume {
    /// Its settings, each stored as one whole number; the rest of its flags at their defaults.
    Settings(&'static [Stored]),
    /// Why not, in words that follow "it is not resumable: ".
    Not(&'static str),
}

/// One setting as a probe's run stores it: under `key`, in units `per` times its flag's (1000
/// for a flag in µs stored in ns).
pub struct Stored {
    pub flag: Flag,
    pub key: &'static str,
    pub per: u64,
}

impl ProbeInfo {
    /// The flags at their defaults.
    pub fn defaults(&self) -> ProbeArgs {
        ProbeArgs::defaults(self.flags)
    }

    /// The flags a stored run of this probe was made with, from its stored settings; why not
    /// when the probe cannot be resumed or the settings lack one.
    pub fn resumed_args(&self, stored: &Map<String, Value>) -> Result<ProbeArgs, String> {
        let settings = match self.resume {
            Resume::Settings(s) => s,
            Resume::Not(why) => return Err(format!("it is not resumable: {why}")),
        };
        let mut args = self.defaults();
        for s in settings {
            let value =
                stored.get(s.key).and_then(Value::as_u64).ok_or(format!("its stored '{}' is missing", s.key))?;
            args.set(&s.flag, FlagValue::Number(value / s.per.max(1)));
        }
        Ok(args)
    }
}

/// `supported` of a probe that runs anywhere rtbench does.
pub fn anywhere() -> Result<(), String> {
    Ok(())
}

/// A probe's typed parameters or findings as the JSON object stored with the run.
pub fn stored<T: serde::Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Every probe rtbench knows, in the order the study runs them and reports list them.
pub static REGISTRY: &[ProbeInfo] =
    &[timer::INFO, gtod::INFO, pingpong::INFO, response::INFO, noise::INFO, synthetic::INFO];

/// A probe's registry entry by name.
pub fn info(name: &str) -> Option<&'static ProbeInfo> {
    REGISTRY.iter().find(|p| p.name == name)
}

/// The session flags of the network probes.
const TOKEN: Flag = Flag::new(
    "token",
    Kind::Count,
    "Session token (decimal); a server given one accepts only it [default: random per session]",
)
.value_name("TOKEN");
const SERVE_FOR: Flag =
    Flag::new("serve-for", Kind::Duration, "Server or target only: stop after this long").value_name("DURATION");

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setting given a value other than its default is stored, read back, and builds the
    /// same stored settings again.
    #[test]
    fn every_resumable_probe_reads_its_stored_settings_back() {
        for info in REGISTRY {
            let Resume::Settings(settings) = info.resume else { continue };
            let mut args = info.defaults();
            for (i, s) in settings.iter().enumerate() {
                let default = args.number(&s.flag).unwrap_or(0);
                args.set(&s.flag, FlagValue::Number(default + 7 + i as u64));
            }
            let shape = Shape { loops: Some(5) };
            let stored = (info.build)(&args, &shape).unwrap().params;
            let again = info.resumed_args(&stored).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            for s in settings {
                assert_eq!(again.number(&s.flag), args.number(&s.flag), "{}: --{}", info.name, s.flag.name);
            }
            assert_eq!((info.build)(&again, &shape).unwrap().params, stored, "{}", info.name);
        }
        let pingpong = info("pingpong").unwrap();
        assert!(pingpong.resumed_args(&Map::new()).unwrap_err().starts_with("it is not resumable: "));
        let timer = info("timer").unwrap();
        assert_eq!(timer.resumed_args(&Map::new()).unwrap_err(), "its stored 'interval_us' is missing");
    }

    #[test]
    fn every_probe_declares_parsable_defaults_and_unique_flags() {
        for info in REGISTRY {
            let args = info.defaults();
            for f in info.flags {
                if let Some(d) = f.default {
                    // What --help shows reads back as the value the probe gets.
                    assert_eq!(
                        f.parse(&d.to_string()),
                        Ok(d.value()),
                        "{}: default of --{} does not parse",
                        info.name,
                        f.name
                    );
                }
                assert_eq!(
                    info.flags.iter().filter(|g| g.name == f.name).count(),
                    1,
                    "{}: --{} twice",
                    info.name,
                    f.name
                );
            }
            if let Some(count) = info.count_flag.map(|f| f.name) {
                assert!(info.flags.iter().any(|f| f.name == count), "{}: count flag --{count} undeclared", info.name);
            }
            if let Some(study) = info.study {
                let mut args = args;
                study(&StudyEnv { peer: "127.0.0.1:1".into() }, &mut args);
                (info.build)(&args, &Shape { loops: None })
                    .unwrap_or_else(|e| panic!("{}: the study's flags do not build: {e:#}", info.name));
            }
        }
    }
}
