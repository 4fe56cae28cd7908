//! How `rtbench resume` reads a probe's stored settings back as its flags: each probe's flags
//! read themselves back from its typed parameters ([`super::ProbeFlags::resumed`]), and its
//! [`ProbeInfo`] says whether it talks to a peer that the resumed part must be given again.

use super::{ProbeArgs, ProbeInfo};
use crate::model::ProbeParams;

/// Whether a probe's stopped run can be continued (`rtbench resume`).
pub enum Resume {
    /// Its settings read back; the rest of its flags at their defaults.
    Settings,
    /// A session with a peer (an echo server, a trigger's target): its settings, and the flag
    /// (its id) that names the peer (stored as [`ProbeParams::peer`]). The peer is not a setting
    /// read back: resume starts rtbench's own again where the run had it (a study's echo server
    /// on loopback, on a port of the moment), and is given the others again (`--peer`).
    Peer { flag: &'static str },
    /// Why not, in words that follow "it is not resumable: ".
    Not(&'static str),
}

impl ProbeInfo {
    /// The flags a stored run of this probe was made with, from its stored settings; why not
    /// when the probe cannot be resumed or the parameters are another probe's. A peer's flag
    /// is not among them (see [`Resume::Peer`]).
    pub fn resumed_args(&self, stored: &ProbeParams) -> Result<ProbeArgs, String> {
        if let Resume::Not(why) = self.resume {
            return Err(format!("it is not resumable: {why}"));
        }
        (self.flags.resumed)(stored).ok_or(format!("its stored parameters are not a {} run's", self.name))
    }

    /// The flag naming the probe's peer, for a probe that talks to one.
    pub fn peer(&self) -> Option<&'static str> {
        match self.resume {
            Resume::Peer { flag } => Some(flag),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{info, Shape, REGISTRY};
    use super::*;

    const PEER: &str = "127.0.0.1:9";

    /// The probe's flags as a command line gives them (`argv`, no program name), the peer's
    /// given; `None` when clap refuses them.
    fn parse(info: &ProbeInfo, argv: &[String]) -> Option<ProbeArgs> {
        let cmd = (info.flags.command)(clap::Command::new(info.name).no_binary_name(true));
        let mut words = Vec::new();
        if let Some(peer) = info.peer() {
            let arg = cmd.get_arguments().find(|a| a.get_id() == peer).unwrap();
            words.extend(arg.get_long().map(|l| format!("--{l}")).into_iter().chain([PEER.to_string()]));
        }
        words.extend(argv.iter().cloned());
        (info.flags.read)(&cmd.try_get_matches_from(words).ok()?).ok()
    }

    /// Command lines that give each flag of the probe a value other than its default: a switch
    /// given, a choice's other value, or the first of a few values its parser takes.
    fn others(info: &ProbeInfo) -> Vec<(String, Vec<String>)> {
        let cmd = (info.flags.command)(clap::Command::new(info.name));
        let mut lines = Vec::new();
        for arg in cmd.get_arguments().filter(|a| Some(a.get_id().as_str()) != info.peer()) {
            let name = arg.get_id().to_string();
            let word = |v: &str| match arg.get_long() {
                Some(l) => vec![format!("--{l}"), v.to_string()],
                None => vec![v.to_string()],
            };
            let shown: Vec<_> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            let tries: Vec<Vec<String>> = if !arg.get_action().takes_values() {
                vec![vec![format!("--{}", arg.get_long().unwrap())]]
            } else if !arg.get_possible_values().is_empty() {
                let names = arg.get_possible_values();
                names.iter().filter(|v| !shown.iter().any(|s| s == v.get_name())).map(|v| word(v.get_name())).collect()
            } else {
                ["17", "17ms", "text17"].iter().map(|v| word(v)).collect()
            };
            let given =
                tries.into_iter().find(|line| parse(info, line).is_some_and(|a| a != parse(info, &[]).unwrap()));
            let given = given.unwrap_or_else(|| panic!("{}: no value other than the default for --{name}", info.name));
            lines.push((name, given));
        }
        lines
    }

    /// Each flag that changes what a run stores reads back from it: given a value other than
    /// its default, the run's stored settings give back the same flags (the peer aside), which
    /// build the same stored settings again. A flag that stores nothing (a server's, the
    /// session token, a count the run keeps as its loops) is not a setting.
    #[test]
    fn every_resumable_probe_reads_its_stored_settings_back() {
        let shape = Shape { loops: Some(5), priority: 95 };
        let mut read_back = 0;
        for info in REGISTRY.iter().filter(|i| !matches!(i.resume, Resume::Not(_))) {
            let stored = |args: &ProbeArgs| args.build(&shape).unwrap().params;
            let base = stored(&parse(info, &[]).unwrap());
            let mut all = Vec::new();
            for (name, line) in others(info) {
                let args = parse(info, &line).unwrap();
                if stored(&args) == base {
                    continue;
                }
                all.extend(line);
                let mut again = info.resumed_args(&stored(&args)).unwrap_or_else(|e| panic!("{}: {e}", info.name));
                if info.peer().is_some() {
                    again.set_peer(PEER);
                }
                assert_eq!(again, args, "{}: --{name} reads back", info.name);
                read_back += 1;
            }
            let args = parse(info, &all).unwrap();
            let mut again = info.resumed_args(&stored(&args)).unwrap();
            if info.peer().is_some() {
                again.set_peer(PEER);
            }
            assert_eq!(stored(&again), stored(&args), "{}: all at once", info.name);
        }
        assert!(read_back >= 10, "settings read back: {read_back}");
        let (timer, gtod) = (info("timer").unwrap(), info("gtod").unwrap());
        let gtod_run = gtod.defaults().build(&shape).unwrap().params;
        assert_eq!(timer.resumed_args(&gtod_run).unwrap_err(), "its stored parameters are not a timer run's");
        assert!(gtod.resumed_args(&gtod_run).is_ok());
        assert!(info("pingpong").unwrap().peer().is_some() && info("response").unwrap().peer().is_some());
        assert!(timer.peer().is_none());
    }
}
