//! `pingpong`'s stored parameters: its settings, its peer, and each thread's round trips
//! outside the statistics, stored as a key pair per thread (`thread0_cold_rtt_ns`,
//! `thread0_warmup`), the layout exports have always had.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How the network probes talk to their peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Udp,
    Tcp,
    Unix,
    Zmq,
}

impl Transport {
    pub const ALL: [Transport; 4] = [Transport::Udp, Transport::Tcp, Transport::Unix, Transport::Zmq];

    /// By its lowercase name, as flags and stored runs spell it.
    pub fn parse(name: &str) -> Option<Transport> {
        Transport::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Its lowercase name, as flags and stored runs spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
            Transport::Unix => "unix",
            Transport::Zmq => "zmq",
        }
    }
}

/// `pingpong`'s settings and what it learnt about its peer and its round trips.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PingpongParams {
    pub transport: Transport,
    /// The echo server's address.
    pub peer: String,
    pub size_bytes: usize,
    /// What a sample is: half a round trip, or with `--rtt` a whole one.
    pub sample: String,
    pub warmup_round_trips: u64,
    pub busy_poll: bool,
    /// Whether the echo server was rtbench's own (a study's, on loopback). Runs stored before
    /// rtbench said do not: resume reads their command line instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_peer: Option<bool>,
    /// The echo server's host name, as its hello said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_host: Option<String>,
    /// Where the echo server's thread runs, when it is an rtbench server that says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_placement: Option<String>,
    #[serde(flatten)]
    pub threads: RoundTripsApart,
}

impl PingpongParams {
    /// A resumed run's: settings and peer as the run had them, each thread's warm-up as the
    /// new part measured it, and a thread's cold round trip as the run had it (see
    /// [`super::ProbeParams::as_asked`]).
    pub(super) fn as_asked(&self, now: &PingpongParams) -> PingpongParams {
        let cold = |t: &ThreadRoundTrips| {
            self.threads.0.iter().find(|a| a.thread == t.thread).map_or(t.cold_rtt_ns, |a| a.cold_rtt_ns)
        };
        let threads = now.threads.0.iter().map(|t| ThreadRoundTrips { cold_rtt_ns: cold(t), ..t.clone() });
        PingpongParams {
            peer_host: self.peer_host.clone().or_else(|| now.peer_host.clone()),
            peer_placement: self.peer_placement.clone().or_else(|| now.peer_placement.clone()),
            threads: RoundTripsApart(threads.collect()),
            ..self.clone()
        }
    }
}

/// Per thread that ran, its round trips outside the statistics, in thread order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundTripsApart(pub Vec<ThreadRoundTrips>);

/// One thread's round trips outside the statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRoundTrips {
    pub thread: usize,
    /// The first round trip, cold; `None` when none came back.
    pub cold_rtt_ns: Option<u64>,
    pub warmup: Warmup,
}

/// The warm-up round trips of one thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Warmup {
    pub round_trips: u64,
    pub min_rtt_ns: u64,
    pub mean_rtt_ns: f64,
    pub max_rtt_ns: u64,
}

const COLD: &str = "_cold_rtt_ns";
const WARMUP: &str = "_warmup";

impl Serialize for RoundTripsApart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len() * 2))?;
        for t in &self.0 {
            m.serialize_entry(&format!("thread{}{COLD}", t.thread), &t.cold_rtt_ns)?;
            m.serialize_entry(&format!("thread{}{WARMUP}", t.thread), &t.warmup)?;
        }
        m.end()
    }
}

/// The thread number and what of it `key` names, for a key of this layout.
fn thread_key(key: &str) -> Option<(usize, &'static str)> {
    let rest = key.strip_prefix("thread")?;
    [COLD, WARMUP].into_iter().find_map(|what| Some((rest.strip_suffix(what)?.parse().ok()?, what)))
}

impl<'de> Deserialize<'de> for RoundTripsApart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = RoundTripsApart;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("threadN_cold_rtt_ns and threadN_warmup keys")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut threads: BTreeMap<usize, (Option<u64>, Option<Warmup>)> = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    match thread_key(&key) {
                        Some((i, COLD)) => threads.entry(i).or_default().0 = map.next_value()?,
                        Some((i, _)) => threads.entry(i).or_default().1 = Some(map.next_value()?),
                        // Another field's key, passed on by the flattening.
                        None => drop(map.next_value::<serde::de::IgnoredAny>()?),
                    }
                }
                let threads = threads.into_iter().filter_map(|(thread, (cold_rtt_ns, warmup))| {
                    Some(ThreadRoundTrips { thread, cold_rtt_ns, warmup: warmup? })
                });
                Ok(RoundTripsApart(threads.collect()))
            }
        }
        d.deserialize_map(Keys)
    }
}

impl JsonSchema for RoundTripsApart {
    fn schema_name() -> Cow<'static, str> {
        "RoundTripsApart".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let warmup = generator.subschema_for::<Warmup>();
        schemars::json_schema!({
            "description": "Per thread N that ran: its first (cold) round trip and its warm-up.",
            "type": "object",
            "patternProperties": {
                "^thread[0-9]+_cold_rtt_ns$": { "type": ["integer", "null"], "minimum": 0 },
                "^thread[0-9]+_warmup$": warmup,
            }
        })
    }
}
