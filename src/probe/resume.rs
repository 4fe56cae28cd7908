//! How `rtbench resume` reads a probe's stored settings back as its flags: each probe declares
//! in its [`ProbeInfo`] how its typed parameters read back as its flags, and whether it talks
//! to a peer that the resumed part must be given again.

use super::{Flag, FlagValue, ProbeArgs, ProbeInfo};
use crate::model::ProbeParams;

/// A probe's stored settings as the flags that make them, each with its value; `None` when
/// the parameters are not the probe's own.
pub type ReadBack = fn(&ProbeParams) -> Option<Vec<(Flag, FlagValue)>>;

/// Whether a probe's stopped run can be continued (`rtbench resume`), and how its stored
/// settings read back as its flags.
pub enum Resume {
    /// Its settings; the rest of its flags at their defaults.
    Settings(ReadBack),
    /// A session with a peer (an echo server, a trigger's target): its settings, and the flag
    /// that names the peer (stored as [`ProbeParams::peer`]). The peer is not a setting read
    /// back: resume starts rtbench's own again where the run had it (a study's echo server on
    /// loopback, on a port of the moment), and is given the others again (`--peer`).
    Peer { settings: ReadBack, flag: Flag },
    /// Why not, in words that follow "it is not resumable: ".
    Not(&'static str),
}

impl ProbeInfo {
    /// The flags a stored run of this probe was made with, from its stored settings; why not
    /// when the probe cannot be resumed or the parameters are another probe's. A peer's flag
    /// is not among them (see [`Resume::Peer`]).
    pub fn resumed_args(&self, stored: &ProbeParams) -> Result<ProbeArgs, String> {
        let read = match self.resume {
            Resume::Settings(read) | Resume::Peer { settings: read, .. } => read,
            Resume::Not(why) => return Err(format!("it is not resumable: {why}")),
        };
        let settings = read(stored).ok_or(format!("its stored parameters are not a {} run's", self.name))?;
        let mut args = self.defaults();
        for (flag, value) in settings {
            args.set(&flag, value);
        }
        Ok(args)
    }

    /// The flag naming the probe's peer, for a probe that talks to one.
    pub fn peer(&self) -> Option<Flag> {
        match self.resume {
            Resume::Peer { flag, .. } => Some(flag),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{info, Kind, Shape, REGISTRY};
    use super::*;

    /// A value of `flag` other than its default.
    fn other(flag: &Flag, args: &ProbeArgs, i: u64) -> FlagValue {
        match flag.kind {
            Kind::Switch => FlagValue::Switch(!args.switch(flag)),
            Kind::Duration => {
                FlagValue::Duration(args.duration(flag).unwrap_or_default() + std::time::Duration::from_millis(7 + i))
            }
            Kind::Choice(names) => {
                FlagValue::Text(names.iter().find(|n| Some(**n) != args.text(flag)).unwrap().to_string())
            }
            Kind::Text | Kind::OptionalText | Kind::Positional => FlagValue::Text(format!("text{i}")),
            _ => FlagValue::Number(args.number(flag).unwrap_or(0) + 7 + i),
        }
    }

    /// Each setting given a value other than its default is stored, read back, and builds the
    /// same stored settings again.
    #[test]
    fn every_resumable_probe_reads_its_stored_settings_back() {
        let shape = Shape { loops: Some(5) };
        for info in REGISTRY {
            let read = match info.resume {
                Resume::Settings(read) | Resume::Peer { settings: read, .. } => read,
                Resume::Not(_) => continue,
            };
            let mut args = info.defaults();
            let peer = info.peer();
            if let Some(flag) = &peer {
                args.set(flag, FlagValue::Text("127.0.0.1:9".into()));
            }
            let flags: Vec<Flag> =
                read(&(info.build)(&args, &shape).unwrap().params).unwrap().into_iter().map(|(f, _)| f).collect();
            for (i, flag) in flags.iter().enumerate() {
                let value = other(flag, &args, i as u64);
                args.set(flag, value);
            }
            let stored = (info.build)(&args, &shape).unwrap().params;
            let mut again = info.resumed_args(&stored).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            for flag in &flags {
                assert_eq!(again.get(flag), args.get(flag), "{}: --{}", info.name, flag.name);
            }
            if let Some(flag) = &peer {
                assert_eq!(again.text(flag), None, "{}: the peer is not read back", info.name);
                again.set(flag, FlagValue::Text("127.0.0.1:9".into()));
            }
            assert_eq!((info.build)(&again, &shape).unwrap().params, stored, "{}", info.name);
        }
        let (timer, gtod) = (info("timer").unwrap(), info("gtod").unwrap());
        let gtod_run = (gtod.build)(&gtod.defaults(), &shape).unwrap().params;
        assert_eq!(timer.resumed_args(&gtod_run).unwrap_err(), "its stored parameters are not a timer run's");
        assert!(gtod.resumed_args(&gtod_run).is_ok());
        assert!(info("pingpong").unwrap().peer().is_some() && info("response").unwrap().peer().is_some());
        assert!(timer.peer().is_none());
    }
}
