//! One subcommand per registered probe, made from the probe's flags (a struct clap's derive
//! reads) plus the run flags every probe takes. A new probe needs nothing here.

use clap::{Args, CommandFactory, FromArgMatches};

use super::{Cli, Command, RunArgs};
use crate::instrument::{self, Request, Where};
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
    /// What the instruments' flags ask for.
    pub instruments: Vec<Request>,
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
            let instruments = instrument::requested(sub, Where::Run);
            return Ok(Invocation::Probe(ProbeCall { info, run, args: (info.flags.read)(sub)?, instruments }));
        }
    }
    let mut command = Cli::from_arg_matches(&matches)?.command;
    match (&mut command, matches.subcommand()) {
        (Command::Study(study), Some((_, sub))) => study.instruments = instrument::requested(sub, Where::Study),
        (Command::Monitor(monitor), Some((_, sub))) => monitor.instruments = instrument::requested(sub, Where::Monitor),
        _ => {}
    }
    Ok(Invocation::Command(command))
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
    // The study's and the monitor's instrument flags, from the instruments' registry (before
    // their own help flag).
    cmd = cmd.mut_subcommand("study", |c| instrument::augment(c, Where::Study));
    cmd = cmd.mut_subcommand("monitor", |c| instrument::augment(c, Where::Monitor));
    for (order, info) in probe::REGISTRY.iter().enumerate() {
        cmd = cmd.subcommand(subcommand(info).display_order(order));
    }
    cmd
}

fn subcommand(info: &'static ProbeInfo) -> clap::Command {
    // -h is cyclictest's histogram flag, so help is --help only.
    let cmd = clap::Command::new(info.name).hide(info.synthetic).disable_help_flag(true);
    // The probe's own flags, the instruments' that can ride along, then the run flags.
    let cmd = RunArgs::augment_args(instrument::augment((info.flags.command)(cmd), Where::Run));
    // The flag structs' own doc comments would otherwise become the subcommand's description.
    cmd.about(info.help).long_about(None)
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

    /// Every instrument's flags come from its folder through the registry, the test instrument's
    /// too (registered in test builds only): a probe's command and the study read them.
    #[test]
    fn instrument_flags_come_from_the_registry() {
        use crate::instrument::breach::BreachOptions;
        use crate::instrument::split::SplitOptions;
        use crate::instrument::{Ask, Request, Settings};
        let asked = |name| Request::plain(name, Ask::Asked);
        assert_eq!(probe(&["timer", "--noop"]).instruments, [asked("noop")]);
        assert_eq!(probe(&["timer"]).instruments, []);
        let call = probe(&["timer", "--split", "--split-mode", "aggregate", "--breach", "50", "--breach-max", "3"]);
        let mode = Some(crate::instrument::split::aggregate::Mode::Aggregate);
        let split = Request { settings: Settings::new(SplitOptions { mode, breach_ns: None }), ..asked("split") };
        let breach = BreachOptions { threshold_ns: 50_000, max: 3, stop: false };
        assert_eq!(call.instruments, [split, Request { settings: Settings::new(breach), ..asked("breach") }]);
        let study = |argv: &[&str]| match parse_from(std::iter::once("rtbench").chain(argv.iter().copied())) {
            Ok(Invocation::Command(Command::Study(s))) => s.instruments,
            _ => panic!("{argv:?} is no study"),
        };
        let wherever = |name| Request::plain(name, Ask::IfPossible);
        assert_eq!(study(&["study"]), [wherever("classify"), wherever("split")]);
        assert_eq!(study(&["study", "--no-split", "--no-classify", "--noop"]), [asked("noop")]);
        assert!(parse_from(["rtbench", "timer", "--split-mode", "aggregate"]).is_err(), "--split-mode needs --split");
        let monitor = |argv: &[&str]| match parse_from(std::iter::once("rtbench").chain(argv.iter().copied())) {
            Ok(Invocation::Command(Command::Monitor(m))) => m.instruments,
            _ => panic!("{argv:?} is no monitor"),
        };
        assert_eq!(monitor(&["monitor", "--split", "--noop"]), [asked("split"), asked("noop")]);
        assert_eq!(monitor(&["monitor", "--noise", "--classify"]), [asked("classify")]);
        assert!(parse_from(["rtbench", "monitor", "--classify"]).is_err(), "--classify needs --noise");
        assert!(parse_from(["rtbench", "monitor", "--breach", "50"]).is_err(), "no breach tracer in a monitor");
    }
}
