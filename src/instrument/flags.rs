//! An instrument's flags and settings, declared in its own folder: a struct clap's derive reads
//! for the commands that run a probe (`--split`), one for the study (`--no-split`), one for the
//! monitor where it rides along there, and the settings they make, typed by the instrument and
//! opaque to everything else. The command line adds every registered instrument's flags and
//! asks each what its matches request.

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use clap::ArgMatches;

use super::{Ask, Request, REGISTRY};

/// Where an instrument's flags are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// A command that runs a probe: the instrument rides along where its flag is given.
    Run,
    /// The study: it rides along every cell it can, unless its flag turns it off.
    Study,
    /// `rtbench monitor`: window after window, for as long as it watches.
    Monitor,
}

/// One form of an instrument's flags.
pub trait InstrumentArgs: clap::Args {
    /// What these flags, as given, ask of the instrument; `None`: nothing.
    fn request(self) -> Option<Request>;
}

/// How the registry reaches an instrument's flags without naming their types.
#[derive(Clone, Copy)]
pub struct InstrumentFlags {
    /// Adds the flags of a command that runs a probe.
    pub run: fn(clap::Command) -> clap::Command,
    /// Adds the study's.
    pub study: fn(clap::Command) -> clap::Command,
    /// Adds the monitor's (none: it does not ride along a monitor).
    pub monitor: fn(clap::Command) -> clap::Command,
    /// What the matches of a command with them ask of the instrument.
    pub read: fn(&ArgMatches, Where) -> Option<Request>,
}

impl std::fmt::Debug for InstrumentFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("InstrumentFlags")
    }
}

impl InstrumentFlags {
    /// The flags of the instrument whose run form is `R` and study form `S`.
    pub const fn of<R: InstrumentArgs, S: InstrumentArgs>() -> InstrumentFlags {
        InstrumentFlags::with_monitor::<R, S, NotInMonitor>()
    }

    /// The flags of one that rides along the monitor too, with the monitor's form `M`.
    pub const fn with_monitor<R: InstrumentArgs, S: InstrumentArgs, M: InstrumentArgs>() -> InstrumentFlags {
        InstrumentFlags {
            run: R::augment_args,
            study: S::augment_args,
            monitor: M::augment_args,
            read: read::<R, S, M>,
        }
    }
}

/// The monitor's form of an instrument that does not ride along it: no flag.
#[derive(clap::Args, Debug)]
pub struct NotInMonitor {}

impl InstrumentArgs for NotInMonitor {
    fn request(self) -> Option<Request> {
        None
    }
}

fn read<R: InstrumentArgs, S: InstrumentArgs, M: InstrumentArgs>(m: &ArgMatches, at: Where) -> Option<Request> {
    match at {
        Where::Run => R::from_arg_matches(m).ok()?.request(),
        Where::Study => S::from_arg_matches(m).ok()?.request(),
        Where::Monitor => M::from_arg_matches(m).ok()?.request(),
    }
}

/// Adds every registered instrument's flags of `at` to a command, keeping its description (a
/// flag struct's doc comment would become it).
pub fn augment(cmd: clap::Command, at: Where) -> clap::Command {
    let (about, long_about) = (cmd.get_about().cloned(), cmd.get_long_about().cloned());
    let cmd = REGISTRY.iter().fold(cmd, |cmd, i| match at {
        Where::Run => (i.flags.run)(cmd),
        Where::Study => (i.flags.study)(cmd),
        Where::Monitor => (i.flags.monitor)(cmd),
    });
    let cmd = match about {
        Some(about) => cmd.about(about),
        None => cmd.about(None::<&str>),
    };
    match long_about {
        Some(long) => cmd.long_about(long),
        None => cmd.long_about(None::<&str>),
    }
}

/// What a command's matches ask of the instruments, in the registry's order.
pub fn requested(m: &ArgMatches, at: Where) -> Vec<Request> {
    REGISTRY.iter().filter_map(|i| (i.flags.read)(m, at)).collect()
}

/// The study form of an instrument that rides along wherever it can: its `--no-…` switch.
pub fn unless_off(name: &'static str, off: bool) -> Option<Request> {
    (!off).then(|| Request::plain(name, Ask::IfPossible))
}

/// An instrument's own settings, typed by the instrument; none for one without any.
#[derive(Clone, Default)]
pub struct Settings(Option<Arc<dyn Setting>>);

impl Settings {
    pub fn new<T: Any + Debug + PartialEq + Send + Sync>(settings: T) -> Settings {
        Settings(Some(Arc::new(settings)))
    }

    /// The settings as their instrument's type; `None` when there are none, or they are
    /// another's.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_ref()?.as_any().downcast_ref()
    }
}

impl Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match &self.0 {
            Some(s) => s.fmt(f),
            None => f.write_str("no settings"),
        }
    }
}

impl PartialEq for Settings {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.same(b.as_any()),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

/// [`Settings`]' content without its type.
trait Setting: Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Any) -> bool;
}

impl<T: Any + Debug + PartialEq + Send + Sync> Setting for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>() == Some(self)
    }
}
