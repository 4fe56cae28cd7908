//! A probe's own flags: a struct in the probe's file that clap's derive reads from the probe's
//! subcommand, and that the probe is built from. The registry carries it type-erased
//! ([`ProbeArgs`]) between the command line, the study, the monitor and `resume`; only the
//! probe's own code reads its fields.

use std::any::Any;
use std::fmt::Debug;
use std::time::Duration;

use anyhow::Result;
use clap::ArgMatches;

use super::{Built, ServeSpec, Shape, StudyEnv};
use crate::model::ProbeParams;

/// What a probe's flags do: everything the runner asks of a probe before it runs.
pub trait ProbeFlags: clap::Args + Clone + Debug + PartialEq + Send + Sync + 'static {
    /// The probe these flags ask for, and its parameters as stored with the run.
    fn build(&self, shape: &Shape) -> Result<Built>;

    /// A server the flags ask for instead of a measurement (`pingpong --serve`).
    fn serve(&self) -> Result<Option<ServeSpec>> {
        Ok(None)
    }

    /// The probe's own name for `-l` (`--pairs`), when given.
    fn count(&self) -> Option<u64> {
        None
    }

    /// How the study runs the probe, beyond its defaults.
    fn study(&mut self, _env: &StudyEnv) {}

    /// The flags a stored run was made with, read back from its parameters (the peer left
    /// out); `None` when they are another probe's.
    fn resumed(_stored: &ProbeParams) -> Option<Self> {
        None
    }

    /// Names the probe's peer (an echo server, a trigger's target) for a resumed run.
    fn set_peer(&mut self, _addr: &str) {}

    /// Every flag at its default: what the subcommand gives without any.
    fn defaults() -> Self {
        let cmd = Self::augment_args(clap::Command::new("defaults").no_binary_name(true));
        let matches = cmd.try_get_matches_from(std::iter::empty::<&str>()).expect("a probe's flags all have defaults");
        Self::from_arg_matches(&matches).expect("a probe's defaults read back")
    }
}

/// How the registry reaches one probe's flags without naming their type.
#[derive(Clone, Copy)]
pub struct FlagSet {
    /// Adds the flags to a command (the probe's subcommand).
    pub command: fn(clap::Command) -> clap::Command,
    /// Reads them out of that command's matches.
    pub read: fn(&ArgMatches) -> Result<ProbeArgs, clap::Error>,
    pub defaults: fn() -> ProbeArgs,
    /// [`ProbeFlags::resumed`].
    pub resumed: fn(&ProbeParams) -> Option<ProbeArgs>,
}

impl FlagSet {
    /// The flag set of the probe whose flags are `F`.
    pub const fn of<F: ProbeFlags>() -> FlagSet {
        FlagSet { command: F::augment_args, read: read::<F>, defaults: defaults::<F>, resumed: resumed::<F> }
    }
}

fn read<F: ProbeFlags>(m: &ArgMatches) -> Result<ProbeArgs, clap::Error> {
    F::from_arg_matches(m).map(ProbeArgs::new)
}

fn defaults<F: ProbeFlags>() -> ProbeArgs {
    ProbeArgs::new(F::defaults())
}

fn resumed<F: ProbeFlags>(stored: &ProbeParams) -> Option<ProbeArgs> {
    F::resumed(stored).map(ProbeArgs::new)
}

/// One probe's flags, typed by the probe and opaque to everything else.
#[derive(Debug)]
pub struct ProbeArgs(Box<dyn Erased>);

impl ProbeArgs {
    pub fn new<F: ProbeFlags>(flags: F) -> ProbeArgs {
        ProbeArgs(Box::new(flags))
    }

    /// The flags as their probe's type; `None` when they are another probe's.
    pub fn get<F: ProbeFlags>(&self) -> Option<&F> {
        self.0.as_any().downcast_ref()
    }

    pub fn build(&self, shape: &Shape) -> Result<Built> {
        self.0.build(shape)
    }

    pub fn serve(&self) -> Result<Option<ServeSpec>> {
        self.0.serve()
    }

    pub fn count(&self) -> Option<u64> {
        self.0.count()
    }

    pub fn study(&mut self, env: &StudyEnv) {
        self.0.study(env)
    }

    pub fn set_peer(&mut self, addr: &str) {
        self.0.set_peer(addr)
    }
}

impl Clone for ProbeArgs {
    fn clone(&self) -> Self {
        ProbeArgs(self.0.clone_box())
    }
}

impl PartialEq for ProbeArgs {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(other.0.as_any())
    }
}

/// [`ProbeFlags`] without its type: what [`ProbeArgs`] holds.
trait Erased: Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn clone_box(&self) -> Box<dyn Erased>;
    fn same(&self, other: &dyn Any) -> bool;
    fn build(&self, shape: &Shape) -> Result<Built>;
    fn serve(&self) -> Result<Option<ServeSpec>>;
    fn count(&self) -> Option<u64>;
    fn study(&mut self, env: &StudyEnv);
    fn set_peer(&mut self, addr: &str);
}

impl<F: ProbeFlags> Erased for F {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn clone_box(&self) -> Box<dyn Erased> {
        Box::new(self.clone())
    }
    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<F>() == Some(self)
    }
    fn build(&self, shape: &Shape) -> Result<Built> {
        ProbeFlags::build(self, shape)
    }
    fn serve(&self) -> Result<Option<ServeSpec>> {
        ProbeFlags::serve(self)
    }
    fn count(&self) -> Option<u64> {
        ProbeFlags::count(self)
    }
    fn study(&mut self, env: &StudyEnv) {
        ProbeFlags::study(self, env)
    }
    fn set_peer(&mut self, addr: &str) {
        ProbeFlags::set_peer(self, addr)
    }
}

/// The session flags of the network probes, on both ends.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct Session {
    /// Session token (decimal); a server given one accepts only it [default: random per session]
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<u64>,
    /// Server or target only: stop after this long
    #[arg(long, value_name = "DURATION", value_parser = crate::parse::duration)]
    pub serve_for: Option<Duration>,
}
