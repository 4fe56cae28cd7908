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

/// One flag of a probe.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The long name, and the key the probe reads the value by.
    pub name: &'static str,
    pub short: Option<char>,
    pub value_name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// The value when the flag is not given, in the form a user would type it.
    pub default: Option<&'static str>,
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

    pub const fn default(self, d: &'static str) -> Flag {
        Flag { default: Some(d), ..self }
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
/// that was not given is absent.
#[derive(Clone, Debug, Default)]
pub struct ProbeArgs {
    values: Vec<(&'static str, Value)>,
}

impl ProbeArgs {
    /// Every flag at its default, as a command line without the flag would give it.
    ///
    /// # Panics
    /// When a default in the table does not parse: a bug in the probe's file, caught by the
    /// registry's unit test.
    pub fn defaults(flags: &[Flag]) -> ProbeArgs {
        let mut args = ProbeArgs::default();
        for f in flags {
            match (f.kind, f.default) {
                (Kind::Switch, _) => args.set(f.name, Value::Switch(false)),
                (_, Some(d)) => args.set(f.name, f.parse(d).unwrap_or_else(|e| panic!("default of --{}: {e}", f.name))),
                (_, None) => {}
            }
        }
        args
    }

    /// Sets (or replaces) one value.
    pub fn set(&mut self, name: &'static str, value: Value) {
        match self.values.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((name, value)),
        }
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    pub fn number(&self, name: &str) -> Option<u64> {
        match self.get(name) {
            Some(Value::Number(n)) => Some(*n),
            _ => None,
        }
    }

    pub fn duration(&self, name: &str) -> Option<Duration> {
        match self.get(name) {
            Some(Value::Duration(d)) => Some(*d),
            _ => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Value::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn switch(&self, name: &str) -> bool {
        matches!(self.get(name), Some(Value::Switch(true)))
    }
}
