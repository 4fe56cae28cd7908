//! Instruments: what rides along a probe's run and looks at what the kernel did while the probe
//! measured — the noise classification (`--classify`), the IRQ/thread split (`--split`), the
//! breach tracer (`--breach`). Each is a folder declaring an [`InstrumentInfo`] listed in
//! [`REGISTRY`], as probes are: the runner arms those a run asks for ([`Armed`]), lets them
//! follow the measuring threads, settle at every checkpoint and end, and stores what they
//! recorded, without naming any. What a probe offers an instrument (a timer expiry to split,
//! busy gaps to classify, samples of this machine's kernel to trace) it declares in its
//! `ProbeInfo`; an instrument says which offer it needs, and a probe that does not make it is
//! refused the instrument's flag.
//!
//! Adding an instrument: its folder here (its `INFO` and an [`Instrument`]) and one line in
//! [`REGISTRY`]. Its record goes into the run's params under its name
//! (`MeasuredParams::instruments`), put there at every checkpoint ([`Extra::records`]) and at
//! the end ([`Instrument::record`]); `show` and the exports carry it. The three the model names
//! fields for (breach, split, classify) keep them, which the report's figures read.

pub mod breach;
pub mod classify;
mod flags;
#[cfg(test)]
pub(crate) mod noop;
mod set;
pub mod split;

use std::sync::{Arc, OnceLock};

use anyhow::Result;

use crate::model::{Breach, ClassInterval, MeasuredParams, ThreadResult};
pub use crate::probe::Offer;
use crate::recorder::BreachWatch;
pub use flags::{augment, requested, unless_off, InstrumentArgs, InstrumentFlags, Settings, Where};
pub use set::Armed;
/// Samples an instrument that holds them hands on, each with its IRQ part.
pub use split::pair::Resolved;

/// Every instrument rtbench knows, in the order a run arms them (and ends them, in reverse).
/// The classification and the split arm before the breach tracer: an instrument that mounts
/// tracefs unmounts it, so it must be the last to go, both when the run ends and when the next
/// command replays the journals of a killed one.
pub static REGISTRY: &[InstrumentInfo] = &[
    classify::INFO,
    split::INFO,
    breach::INFO,
    #[cfg(test)]
    noop::INFO,
];

/// An instrument's registry entry by name.
pub fn info(name: &str) -> Option<&'static InstrumentInfo> {
    REGISTRY.iter().find(|i| i.name == name)
}

/// How a run asks for an instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ask {
    #[default]
    Off,
    /// Refused up front where the probe does not offer it or rtbench is not root.
    Asked,
    /// Wherever the probe offers it (a study's cells); a skip with the reason where it cannot
    /// be armed.
    IfPossible,
}

/// What a run asks of one instrument, by its name in [`REGISTRY`].
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub name: &'static str,
    pub ask: Ask,
    pub settings: Settings,
}

impl Request {
    /// `name` asked for as `ask`, with no settings of its own.
    pub fn plain(name: &'static str, ask: Ask) -> Request {
        Request { name, ask, settings: Settings::default() }
    }
}

/// An instrument a run will arm: checked against the probe and the privileges.
#[derive(Clone, Debug)]
pub struct Planned {
    pub info: &'static InstrumentInfo,
    pub settings: Settings,
}

/// Everything rtbench knows about an instrument, declared in its own folder.
#[derive(Debug)]
pub struct InstrumentInfo {
    pub name: &'static str,
    /// The flag that asks for it (`--split`), as refusals name it.
    pub flag: &'static str,
    /// Its flags, structs of its folder ([`InstrumentFlags::of`]).
    pub flags: InstrumentFlags,
    /// What a killed run of it leaves journalled, one `restore::replay` per kind it holds: the
    /// next command puts each back (`app::put_back_abandoned`).
    pub replay: &'static [fn() -> Vec<String>],
    /// What a probe must offer for it to apply.
    pub needs: Offer,
    /// What it does and what a probe lacks without the offer: "--split splits a timer
    /// wake-up, and gtod samples are not one".
    pub does: &'static str,
    pub lacks: &'static str,
    /// Why it needs root, for the refusal (`None`: it does not).
    pub root_why: Option<&'static str>,
    /// Arms it on the measured CPUs; `Err` says why it cannot be.
    pub arm: fn(&Arming) -> Result<Box<dyn Instrument>, String>,
    /// Records in the run's params that it could not be armed, and why; returns the warning.
    pub skipped: fn(&Arming, String, &mut MeasuredParams) -> String,
    /// Asks for it again in `rtbench resume` when the stored run had it armed.
    pub resumed: fn(&MeasuredParams) -> Option<Request>,
}

/// What an instrument is armed with.
pub struct Arming<'a> {
    pub settings: Settings,
    /// The other instruments the run arms: one may read another's settings (the split keeps
    /// records past the breach threshold).
    pub beside: &'a [Planned],
    /// The measured CPUs, each once, in order.
    pub cpus: &'a [usize],
    /// The collector's CPUs, where a reader of the instrument's runs (empty: where the
    /// scheduler puts it).
    pub collector: &'a [usize],
}

/// One measuring thread as the instruments follow it, in the runner's order.
pub struct Followed {
    pub index: u32,
    pub cpu: Option<u32>,
    /// The thread's id, set by the thread first thing.
    pub tid: Arc<OnceLock<i32>>,
}

/// What the instruments learn once the measuring threads have started.
pub struct Following<'a> {
    pub threads: &'a [Followed],
    /// The rule-of-thumb budget, when the CPU clock is known.
    pub budget_ns: Option<u64>,
    /// The run's envelope interval.
    pub envelope_ns: u64,
}

/// What the measuring threads do for an instrument.
#[derive(Default)]
pub struct ThreadAsk {
    /// Hand over every raw sample (the instrument looks at each), not only the first ones.
    pub every_sample: bool,
    /// Call the watch on every sample over the threshold (ns).
    pub watch: Option<(u64, Arc<dyn BreachWatch>)>,
}

/// What the runner tells an instrument once a pass.
pub struct Service<'a> {
    /// CLOCK_MONOTONIC ns the threads' time offsets count from.
    pub start_ns: u64,
    /// The CPU each measuring thread is pinned to.
    pub cpu_of: &'a dyn Fn(u32) -> Option<usize>,
}

/// What an instrument found in one pass of the runner.
#[derive(Default)]
pub struct Serviced {
    /// A window kept around a sample.
    pub window: Option<Breach>,
    /// The run should end once the window is stored.
    pub stop: bool,
}

/// What the instruments add to a checkpoint.
#[derive(Default)]
pub struct Extra {
    /// Gaps classified since the last checkpoint, per class and interval.
    pub noise: Vec<ClassInterval>,
    /// Records as they stand, by instrument name (the classification's since the run began):
    /// the checkpoint stores them in the run's params.
    pub records: Vec<(&'static str, serde_json::Value)>,
}

impl Extra {
    /// What the checkpoint stores of the instruments: this, and the windows taken since the
    /// last one.
    pub fn found<'a>(&'a self, windows: &'a [Breach]) -> crate::store::Found<'a> {
        crate::store::Found { breaches: windows, noise: &self.noise, records: &self.records }
    }
}

/// What the end of a run shows an instrument: the stored run.
pub struct Ending<'a> {
    pub store: &'a crate::store::Store,
    pub id: i64,
    /// The rule-of-thumb budget, when the CPU clock is known.
    pub budget_ns: Option<u64>,
}

/// An armed instrument, from before the threads start to the run's end. Dropping it puts back
/// what arming it changed. Every step has a default that does nothing.
pub trait Instrument {
    fn info(&self) -> &'static InstrumentInfo;
    /// What the measuring threads must do for it.
    fn threads(&self) -> ThreadAsk {
        ThreadAsk::default()
    }
    /// Its record as the run begins (a killed run keeps it).
    fn begun(&self, _params: &mut MeasuredParams) {}
    /// The measuring threads have started.
    fn follow(&mut self, _run: &Following) {}
    /// Whether it holds every sample until it has settled it, to hand it on with its IRQ part
    /// ([`Instrument::settle`]). At most one instrument of a run holds the samples.
    fn holds_samples(&self) -> bool {
        false
    }
    /// Samples of the thread at place `i`, as the thread handed them over.
    fn samples(&mut self, _i: usize, _chunk: &[(u64, u64)]) {}
    /// Settles what it can of thread `i`'s samples; one that holds them puts those it lets go
    /// into `out` (cleared first). `end`: the run is over and its readers have read all they
    /// will, so nothing waits any more.
    fn settle(&mut self, _i: usize, _start_ns: u64, _end: bool, _out: &mut Resolved) {}
    /// Once every pass of the runner: a window it took, and whether the run should end.
    fn service(&mut self, _run: &Service) -> Serviced {
        Serviced::default()
    }
    /// One that holds the samples: adds what it knows of the sample a window of thread `i` was
    /// taken around; false while that sample is not settled yet.
    fn annotate(&self, _i: usize, _window: &mut Breach) -> bool {
        true
    }
    /// Its part of thread `i`'s results.
    fn result(&mut self, _i: usize, _r: &mut ThreadResult) {}
    /// Its part of every checkpoint.
    fn checkpoint(&mut self, _extra: &mut Extra) {}
    /// A window of the store closed: its counts start again.
    fn new_window(&mut self) {}
    /// The run is over: waits (bounded) for its reader to read the last events.
    fn end(&mut self) {}
    /// What it found, into the run's params.
    fn record(&self, _params: &mut MeasuredParams) {}
    /// What the run should say of it, once it is over.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// What its trace says of the time the kernel did not see, once the run is stored: `None`
    /// when it has no say, `Some(None)` when it looked and has nothing to warn of.
    fn unseen(&self, _end: &Ending) -> Result<Option<Option<String>>> {
        Ok(None)
    }
}
