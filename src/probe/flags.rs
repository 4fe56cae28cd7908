//! A probe's own flags, declared as data in its file. The command line turns the table into
//! its subcommand; the study fills the same table from its defaults. Neither needs to know the
//! probe, and the probe never sees the command line.

use std::time::Duration;

/// How a flag's value is read.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Present or not.
    Switch,
    /// A whole number of microseconds, at least 1.
    PositiveUs,
    /// A whole number of microseconds, 0 or more.
    Us,
    /// A count, at least 1.
    Positive,
    /// A count, 0 or more.
    Count,
    /// 30s, 10m, 250ms, …
    Duration,
    /// A message payload, 1 to 64 KiB.
    MessageSize,
    /// Free text.
    Text,
    /// Free text whose value may be left out (`--serve` alone); then it is empty.
    OptionalText,
    /// The first positional argument, optional.
    Positional,
    /// One of these names.
    Choice(&'static [&'static str]),
}

/// One flag of a probe. A probe declares each as a `const` in its file and reads its value by
/// that const, so a flag's name is written once.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The long name, and the key its value is kept under.
    pub name: &'static str,
    pub short: Option<char>,
    pub value_name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// The value when the flag is not given: the probe's own `const`, which `--help` shows.
    pub default: Option<Preset>,
}

/// A flag's default, typed as the probe reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Preset {
    Number(u64),
    Duration(Duration),
    Text(&'static str),
}

impl Preset {
    /// The value a probe reads when the flag is not given.
    pub fn value(self) -> Value {
        match self {
            Preset::Number(n) => Value::Number(n),
            Preset::Duration(d) => Value::Duration(d),
            Preset::Text(t) => Value::Text(t.to_string()),
        }
    }
}

/// As a user would type it (what `--help` shows); [`Flag::parse`] reads it back.
impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Preset::Number(n) => write!(f, "{n}"),
            Preset::Text(t) => f.write_str(t),
            Preset::Duration(d) if d.subsec_nanos() == 0 => write!(f, "{}s", d.as_secs()),
            Preset::Duration(d) if d.subsec_nanos() % 1_000_000 == 0 => write!(f, "{}ms", d.as_millis()),
            Preset::Duration(d) => write!(f, "{}ms", d.as_nanos() as f64 / 1e6),
        }
    }
}

impl Flag {
    pub const fn new(name: &'static str, kind: Kind, help: &'static str) -> Flag {
        Flag { name, short: None, value_name: "", help, kind, default: None }
    }

    pub const fn short(self, c: char) -> Flag {
        Flag { short: Some(c), ..self }
    }

    pub const fn value_name(self, v: &'static str) -> Flag {
        Flag { value_name: v, ..self }
    }

    pub const fn default_number(self, n: u64) -> Flag {
        Flag { default: Some(Preset::Number(n)), ..self }
    }

    pub const fn default_duration(self, d: Duration) -> Flag {
        Flag { default: Some(Preset::Duration(d)), ..self }
    }

    pub const fn default_text(self, t: &'static str) -> Flag {
        Flag { default: Some(Preset::Text(t)), ..self }
    }

    /// Reads a value given for this flag.
    pub fn parse(&self, s: &str) -> Result<Value, String> {
        use crate::parse;
        Ok(match self.kind {
            Kind::Switch => Value::Switch(matches!(s, "true" | "1" | "yes")),
            Kind::PositiveUs => Value::Number(parse::positive_us(s)?),
            Kind::Us => Value::Number(parse::us(s)?),
            Kind::Positive => Value::Number(parse::positive(s)?),
            Kind::Count => Value::Number(s.trim().parse().map_err(|_| format!("'{s}' must be a whole number"))?),
            Kind::Duration => Value::Duration(parse::duration(s)?),
            Kind::MessageSize => Value::Number(parse::message_size(s)? as u64),
            Kind::Text | Kind::OptionalText | Kind::Positional => Value::Text(s.to_string()),
            Kind::Choice(names) => match names.iter().find(|n| **n == s) {
                Some(n) => Value::Text(n.to_string()),
                None => return Err(format!("'{s}' is not one of {}", names.join(", "))),
            },
        })
    }
}

/// A flag's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Switch(bool),
    Number(u64),
    Duration(Duration),
    Text(String),
}

/// The values of a probe's flags: what was given, else the defaults. A flag without a default
/// that was not given is absent. Values are read and set by the flag's `const`.
#[derive(Clone, Debug, Default)]
pub struct ProbeArgs {
    values: Vec<(&'static str, Value)>,
}

impl ProbeArgs {
    /// Every flag at its default, as a command line without the flag would give it.
    pub fn defaults(flags: &[Flag]) -> ProbeArgs {
        let mut args = ProbeArgs::default();
        for f in flags {
            match (f.kind, f.default) {
                (Kind::Switch, _) => args.set(f, Value::Switch(false)),
                (_, Some(d)) => args.set(f, d.value()),
                (_, None) => {}
            }
        }
        args
    }

    /// Sets (or replaces) one value.
    pub fn set(&mut self, flag: &Flag, value: Value) {
        match self.values.iter_mut().find(|(n, _)| *n == flag.name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((flag.name, value)),
        }
    }

    pub(super) fn get(&self, flag: &Flag) -> Option<&Value> {
        self.values.iter().find(|(n, _)| *n == flag.name).map(|(_, v)| v)
    }

    pub fn number(&self, flag: &Flag) -> Option<u64> {
        match self.get(flag) {
            Some(Value::Number(n)) => Some(*n),
            _ => None,
        }
    }

    pub fn duration(&self, flag: &Flag) -> Option<Duration> {
        match self.get(flag) {
            Some(Value::Duration(d)) => Some(*d),
            _ => None,
        }
    }

    pub fn text(&self, flag: &Flag) -> Option<&str> {
        match self.get(flag) {
            Some(Value::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn switch(&self, flag: &Flag) -> bool {
        matches!(self.get(flag), Some(Value::Switch(true)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_default_is_shown_as_a_user_types_it_and_reads_back_the_same() {
        let flag = |kind, d| Flag { default: Some(d), ..Flag::new("f", kind, "") };
        for (kind, d, shown) in [
            (Kind::Duration, Preset::Duration(Duration::from_millis(1)), "1ms"),
            (Kind::Duration, Preset::Duration(Duration::from_millis(100)), "100ms"),
            (Kind::Duration, Preset::Duration(Duration::from_secs(2)), "2s"),
            (Kind::Duration, Preset::Duration(Duration::from_micros(1500)), "1.5ms"),
            (Kind::PositiveUs, Preset::Number(1000), "1000"),
            (Kind::Choice(&["udp", "tcp"]), Preset::Text("udp"), "udp"),
        ] {
            assert_eq!(d.to_string(), shown);
            assert_eq!(flag(kind, d).parse(shown), Ok(d.value()), "{shown}");
        }
    }

    #[test]
    fn values_are_kept_per_flag_and_defaults_fill_the_rest() {
        const A: Flag = Flag::new("a", Kind::Count, "").default_number(7);
        const B: Flag = Flag::new("b", Kind::Switch, "");
        const C: Flag = Flag::new("c", Kind::Text, "");
        let mut args = ProbeArgs::defaults(&[A, B, C]);
        assert_eq!((args.number(&A), args.switch(&B), args.text(&C)), (Some(7), false, None));
        args.set(&A, Value::Number(9));
        args.set(&C, Value::Text("x".into()));
        assert_eq!((args.number(&A), args.text(&C), args.duration(&A)), (Some(9), Some("x"), None));
    }
}
