//! One subcommand per registered probe, made from the probe's flags (a struct clap's derive
//! reads) plus the run flags every probe takes. A new probe needs nothing here.

use clap::{Args, CommandFactory, FromArgMatches};

use super::{Cli, Command, RunArgs};
use crate::probe::{self, ProbeArgs, ProbeInfo};

/// What the command line asks for.
pub enum Invocation {
    /// A probe: measure, or serve when its flags say so.
    Probe(ProbeCall),
    Command(Command),
}

pub struct ProbeCall {
    pub info: &'static ProbeInfo,
    pub run: RunArgs,
    pub args: ProbeArgs,
}

/// Parses a whole command line (program name first).
pub fn parse_from<I, T>(argv: I) -> Result<Invocation, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = command().try_get_matches_from(argv)?;
    if let Some((name, sub)) = matches.subcommand() {
        if let Some(info) = probe::info(name) {
            let run = RunArgs::from_arg_matches(sub)?;
            return Ok(Invocation::Probe(ProbeCall { info, run, args: (info.flags.read)(sub)? }));
        }
    }
    Ok(Invocation::Command(Cli::from_arg_matches(&matches)?.command))
}

/// The whole command line: the declared commands and one subcommand per probe. `--help`, the
/// man pages and the shell completions all come from this one definition.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    // Probes first in --help, in registry order, then the other commands as declared.
    let others: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_string()).collect();
    for (order, name) in others.iter().enumerate() {
        cmd = cmd.mut_subcommand(name, |c| c.display_order(probe::REGISTRY.len() + order));
    }
    for (order, info) in probe::REGISTRY.iter().enumerate() {
        cmd = cmd.subcommand(subcommand(info).display_order(order));
    }
    cmd
}

fn subcommand(info: &'static ProbeInfo) -> clap::Command {
    // -h is cyclictest's histogram flag, so help is --help only.
    let cmd = clap::Command::new(info.name).hide(info.synthetic).disable_help_flag(true);
    // The flag structs' own doc comments would otherwise become the subcommand's description.
    RunArgs::augment_args((info.flags.command)(cmd)).about(info.help).long_about(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(argv: &[&str]) -> ProbeCall {
        match parse_from(std::iter::once("rtbench").chain(argv.iter().copied())) {
            Ok(Invocation::Probe(call)) => call,
            Ok(Invocation::Command(c)) => panic!("{argv:?} parsed as {c:?}"),
            Err(e) => panic!("{argv:?}: {e}"),
        }
    }

    #[test]
    fn every_registered_probe_is_a_subcommand_with_its_defaults() {
        command().debug_assert();
        for info in probe::REGISTRY {
            let call = probe(&[info.name]);
            assert_eq!(call.info.name, info.name);
            assert_eq!(call.args, info.defaults(), "{}: the subcommand without flags gives the defaults", info.name);
        }
    }

    #[test]
    fn probe_flags_and_run_flags_parse_together() {
        use crate::model::Transport;
        use crate::probe::pingpong::PingpongFlags;
        let call = probe(&["pingpong", "10.0.0.1:9", "--transport", "tcp", "-s", "64", "--rtt", "-n", "5", "-D", "2s"]);
        let f = call.args.get::<PingpongFlags>().expect("pingpong's own flags");
        assert_eq!((f.addr.as_deref(), f.transport, f.size), (Some("10.0.0.1:9"), Transport::Tcp, 64));
        assert!(f.rtt && !f.busy_poll);
        assert_eq!((f.round_trips, call.args.count()), (Some(5), Some(5)));
        assert_eq!(call.run.duration, Some(std::time::Duration::from_secs(2)));
        let serve = |argv: &[&str]| probe(argv).args.get::<PingpongFlags>().unwrap().serve.clone();
        assert_eq!(serve(&["pingpong", "--serve"]), Some(String::new()));
        assert_eq!(serve(&["pingpong"]), None);
    }
}

/// `--split-mode`: how the split takes the expiries in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitMode {
    /// Per sample up to 10 % of a housekeeping CPU at the run's rate, then aggregated
    Auto,
    /// A record per sample, paired with it
    PerSample,
    /// Histograms counted in the kernel; records only for expiries past their bound
    Aggregate,
}

impl SplitMode {
    /// The mode asked for; none when it is left to the rate.
    pub fn mode(self) -> Option<crate::instrument::split::aggregate::Mode> {
        use crate::instrument::split::aggregate::Mode;
        match self {
            SplitMode::Auto => None,
            SplitMode::PerSample => Some(Mode::PerSample),
            SplitMode::Aggregate => Some(Mode::Aggregate),
        }
    }
}
