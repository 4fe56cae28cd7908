//! One subcommand per registered probe, made from the probe's flag table plus the run flags
//! every probe takes. A new probe needs nothing here.

use clap::{Arg, ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches};

use super::{Cli, Command, RunArgs};
use crate::probe::{self, FlagValue, Kind, ProbeArgs, ProbeInfo};

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
            return Ok(Invocation::Probe(ProbeCall { info, run, args: probe_args(info, sub) }));
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
    let mut cmd = clap::Command::new(info.name).about(info.help).hide(info.synthetic).disable_help_flag(true);
    let mut positional = 0;
    for flag in info.flags {
        let mut arg = Arg::new(flag.name).help(flag.help);
        if let Kind::Positional = flag.kind {
            positional += 1;
            arg = arg.index(positional);
        } else {
            arg = arg.long(flag.name);
        }
        if let Some(c) = flag.short {
            arg = arg.short(c);
        }
        if !flag.value_name.is_empty() {
            arg = arg.value_name(flag.value_name);
        }
        arg = match flag.kind {
            Kind::Switch => arg.action(ArgAction::SetTrue),
            _ => {
                let f = *flag;
                arg.value_parser(move |s: &str| f.parse(s)).action(ArgAction::Set)
            }
        };
        if let Kind::OptionalText = flag.kind {
            arg = arg.num_args(0..=1).default_missing_value("");
        }
        if let Some(d) = flag.default {
            arg = arg.default_value(d.to_string());
        }
        cmd = cmd.arg(arg);
    }
    // The run flags' own doc comment would otherwise become the subcommand's description.
    RunArgs::augment_args(cmd).about(info.help)
}

/// The probe's flag values out of clap's matches.
fn probe_args(info: &ProbeInfo, m: &ArgMatches) -> ProbeArgs {
    let mut args = ProbeArgs::default();
    for flag in info.flags {
        match flag.kind {
            Kind::Switch => args.set(flag, FlagValue::Switch(m.get_flag(flag.name))),
            _ => {
                if let Some(v) = m.get_one::<FlagValue>(flag.name) {
                    args.set(flag, v.clone());
                }
            }
        }
    }
    args
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

    /// A probe's flag by its name.
    fn flag(probe: &str, name: &str) -> probe::Flag {
        *probe::info(probe).unwrap().flags.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn every_registered_probe_is_a_subcommand_with_its_defaults() {
        for info in probe::REGISTRY {
            let call = probe(&[info.name]);
            assert_eq!(call.info.name, info.name);
            let defaults = info.defaults();
            for f in info.flags {
                assert_eq!(
                    format!(
                        "{:?}{:?}{:?}{}",
                        call.args.number(f),
                        call.args.duration(f),
                        call.args.text(f),
                        call.args.switch(f)
                    ),
                    format!(
                        "{:?}{:?}{:?}{}",
                        defaults.number(f),
                        defaults.duration(f),
                        defaults.text(f),
                        defaults.switch(f)
                    ),
                    "{}: --{} from the command line and from the table agree",
                    info.name,
                    f.name
                );
            }
        }
    }

    #[test]
    fn probe_flags_and_run_flags_parse_together() {
        let call = probe(&["pingpong", "10.0.0.1:9", "--transport", "tcp", "-s", "64", "--rtt", "-n", "5", "-D", "2s"]);
        let f = |name| flag("pingpong", name);
        assert_eq!(call.args.text(&f("addr")), Some("10.0.0.1:9"));
        assert_eq!(call.args.text(&f("transport")), Some("tcp"));
        assert_eq!(call.args.number(&f("size")), Some(64));
        assert!(call.args.switch(&f("rtt")) && !call.args.switch(&f("busy-poll")));
        assert_eq!(call.args.number(&f("round-trips")), Some(5));
        assert_eq!(call.run.duration, Some(std::time::Duration::from_secs(2)));
        assert_eq!(probe(&["pingpong", "--serve"]).args.text(&f("serve")), Some(""));
        assert_eq!(probe(&["pingpong"]).args.text(&f("serve")), None);
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
