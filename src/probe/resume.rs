//! How `rtbench resume` reads a probe's stored settings back as its flags: each probe declares
//! in its [`ProbeInfo`] which settings it stores under which key, and whether it talks to a
//! peer that the resumed part must be given again.

use serde_json::{Map, Value};

use super::{Flag, FlagValue, Kind, ProbeArgs, ProbeInfo};

/// Whether a probe's stopped run can be continued (`rtbench resume`), and how its stored
/// settings read back as its flags.
pub enum Resume {
    /// Its settings; the rest of its flags at their defaults.
    Settings(&'static [Stored]),
    /// A session with a peer (an echo server, a trigger's target): its settings, and the flag
    /// that names the peer, stored under `key`. The peer is not a setting read back: resume
    /// starts rtbench's own again where the run had it (a study's echo server on loopback, on
    /// a port of the moment), and is given the others again (`--peer`).
    Peer { settings: &'static [Stored], flag: Flag, key: &'static str },
    /// Why not, in words that follow "it is not resumable: ".
    Not(&'static str),
}

/// One setting as a probe's run stores it, under `key`.
pub struct Stored {
    pub flag: Flag,
    pub key: &'static str,
    read: Read,
}

/// How a stored setting reads back as its flag's value.
#[derive(Clone, Copy)]
enum Read {
    /// As the flag's kind has it: a number as is, a duration in ns, text, a switch as a bool.
    AsFlag,
    /// A whole number in units `per` times the flag's (1000 for a flag in µs stored in ns).
    Per(u64),
    /// A switch that was on when the stored text is this.
    SwitchIf(&'static str),
}

impl Stored {
    /// Stored as its flag reads it: a number in the flag's units, a duration in nanoseconds,
    /// text as given, a switch as true or false.
    pub const fn new(flag: Flag, key: &'static str) -> Stored {
        Stored { flag, key, read: Read::AsFlag }
    }

    /// A whole number stored in units `per` times the flag's.
    pub const fn per(flag: Flag, key: &'static str, per: u64) -> Stored {
        Stored { flag, key, read: Read::Per(per) }
    }

    /// A switch stored as the text it chose: on when the stored text is `on`.
    pub const fn switch_if(flag: Flag, key: &'static str, on: &'static str) -> Stored {
        Stored { flag, key, read: Read::SwitchIf(on) }
    }

    /// The flag's value from its stored one; `None` when that does not read as one.
    fn value(&self, stored: &Value) -> Option<FlagValue> {
        let number = |per: u64| stored.as_u64().map(|v| FlagValue::Number(v / per.max(1)));
        match (self.read, self.flag.kind) {
            (Read::Per(per), _) => number(per),
            (Read::SwitchIf(on), _) => stored.as_str().map(|s| FlagValue::Switch(s == on)),
            (Read::AsFlag, Kind::Switch) => stored.as_bool().map(FlagValue::Switch),
            (Read::AsFlag, Kind::Duration) => {
                stored.as_u64().map(|ns| FlagValue::Duration(std::time::Duration::from_nanos(ns)))
            }
            (Read::AsFlag, Kind::Text | Kind::OptionalText | Kind::Positional | Kind::Choice(_)) => {
                stored.as_str().map(|s| FlagValue::Text(s.to_string()))
            }
            (Read::AsFlag, _) => number(1),
        }
    }
}

impl ProbeInfo {
    /// The flags a stored run of this probe was made with, from its stored settings; why not
    /// when the probe cannot be resumed or the settings lack one. A peer's flag is not among
    /// them (see [`Resume::Peer`]).
    pub fn resumed_args(&self, stored: &Map<String, Value>) -> Result<ProbeArgs, String> {
        let settings = match self.resume {
            Resume::Settings(s) | Resume::Peer { settings: s, .. } => s,
            Resume::Not(why) => return Err(format!("it is not resumable: {why}")),
        };
        let mut args = self.defaults();
        for s in settings {
            let value =
                stored.get(s.key).and_then(|v| s.value(v)).ok_or(format!("its stored '{}' is missing", s.key))?;
            args.set(&s.flag, value);
        }
        Ok(args)
    }

    /// The flag naming the probe's peer and the key its run stores the peer under, for a
    /// probe that talks to one.
    pub fn peer(&self) -> Option<(Flag, &'static str)> {
        match self.resume {
            Resume::Peer { flag, key, .. } => Some((flag, key)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{info, Shape, REGISTRY};
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
        for info in REGISTRY {
            let settings = match info.resume {
                Resume::Settings(s) | Resume::Peer { settings: s, .. } => s,
                Resume::Not(_) => continue,
            };
            let mut args = info.defaults();
            for (i, s) in settings.iter().enumerate() {
                let value = other(&s.flag, &args, i as u64);
                args.set(&s.flag, value);
            }
            let peer = info.peer().map(|(flag, _)| flag);
            if let Some(flag) = &peer {
                args.set(flag, FlagValue::Text("127.0.0.1:9".into()));
            }
            let shape = Shape { loops: Some(5) };
            let stored = (info.build)(&args, &shape).unwrap().params;
            let mut again = info.resumed_args(&stored).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            for s in settings {
                assert_eq!(again.get(&s.flag), args.get(&s.flag), "{}: --{}", info.name, s.flag.name);
            }
            if let Some(flag) = &peer {
                assert_eq!(again.text(flag), None, "{}: the peer is not read back", info.name);
                again.set(flag, FlagValue::Text("127.0.0.1:9".into()));
            }
            assert_eq!((info.build)(&again, &shape).unwrap().params, stored, "{}", info.name);
        }
        let timer = info("timer").unwrap();
        assert_eq!(timer.resumed_args(&Map::new()).unwrap_err(), "its stored 'interval_us' is missing");
        let pingpong = info("pingpong").unwrap();
        assert_eq!(pingpong.peer().map(|p| p.1), Some("peer"));
        assert_eq!(info("response").unwrap().peer().map(|p| p.1), Some("target"));
        assert!(timer.peer().is_none());
    }
}
