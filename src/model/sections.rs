//! The records of instruments the model does not name: each instrument that keeps one writes
//! it under its own name, and the run's params store them under `instruments`. The three the
//! model names (`breach`, `split`, `classify`) stand flat in the params, where runs have always
//! kept them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The instruments whose records the params name as fields of their own.
pub const NAMED: [&str; 3] = ["breach", "split", "classify"];

/// Instruments' records by instrument name, each as its instrument wrote it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Sections(BTreeMap<String, Value>);

impl Sections {
    /// Keeps `record` as `name`'s, replacing what it had.
    pub fn put(&mut self, name: &str, record: Value) {
        self.0.insert(name.to_string(), record);
    }

    /// `name`'s record read as a `T`; `None` when it has none, or one of another shape (a
    /// record written by another version of the instrument).
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.0.get(name).and_then(|v| T::deserialize(v).ok())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every record, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// Where `name`'s record stands in the params' JSON, as an SQLite JSON path: flat for the named
/// three, under `instruments` for the others.
pub fn path(name: &str) -> String {
    if NAMED.contains(&name) {
        format!("$.{name}")
    } else {
        format!("$.instruments.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_its_type_and_not_as_another() {
        let mut s = Sections::default();
        s.put("noop", serde_json::json!({"checkpoints": 3}));
        #[derive(Deserialize)]
        struct Counted {
            checkpoints: u32,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Other {
            threshold_ns: u64,
        }
        assert_eq!(s.get::<Counted>("noop").map(|c| c.checkpoints), Some(3));
        assert!(s.get::<Other>("noop").is_none());
        assert!(s.get::<Counted>("split").is_none());
    }

    #[test]
    fn the_named_three_stand_flat_and_the_others_under_instruments() {
        assert_eq!(path("classify"), "$.classify");
        assert_eq!(path("noop"), "$.instruments.noop");
    }
}
