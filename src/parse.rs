//! Value parsers for flags (the command line's and the probes' flag tables): each rejects a bad
//! value with a message that says what is accepted.
//!
//! Every time a flag takes, a duration or a latency, is read by one grammar ([`time_ns`]): a
//! number and an optional unit (ns, us, µs, ms, s, m, h, d). A bare number is in the flag's own
//! unit, the one its help names (seconds for durations, µs for most latencies), as it always
//! was, so old command lines keep their meaning. Every CPU list is checked by [`cpu_list`].

use std::time::Duration;

use anyhow::Result;

use crate::invalid;

/// The units of [`time_ns`] and the nanoseconds in one of each.
const UNITS: &[(&str, f64)] =
    &[("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3_600e9), ("d", 86_400e9)];

/// A number and an optional unit (ns, us, µs, ms, s, m, h, d) as nanoseconds, not rounded; a
/// bare number is in `bare` (one of those units), or refused when `bare` is `None`. `None`
/// when `s` is no time; the caller says what its flag accepts.
pub fn time_ns(s: &str, bare: Option<&str>) -> Option<f64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = match unit.trim_start() {
        "" => bare?,
        u => u,
    };
    let scale = UNITS.iter().find(|(name, _)| *name == unit)?.1;
    let ns = num.parse::<f64>().ok()? * scale;
    ns.is_finite().then_some(ns)
}

/// `30s`, `10m`, `24h`, `1d`, `500ms`, or a bare number of seconds (as cyclictest takes it).
pub fn duration(s: &str) -> Result<Duration, String> {
    let bad = || {
        format!("'{s}' is not a duration; use a number with ns, us, ms, s, m, h or d (e.g. 30s, 10m, 24h, 1d; a bare number is seconds)")
    };
    let ns = time_ns(s, Some("s")).ok_or_else(bad)?.round();
    if ns < 1.0 {
        return Err(format!("duration '{s}' must be greater than zero"));
    }
    // Found by fuzzing: a duration too large for the clock was a panic.
    if ns > MAX_SECS * 1e9 {
        return Err(format!("duration '{s}' is longer than ten years"));
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// Ten years, the longest duration rtbench takes.
const MAX_SECS: f64 = 3650.0 * 86_400.0;
/// A day in µs, the longest interval rtbench takes (its nanoseconds must fit in 64 bits).
const MAX_US: u64 = 86_400_000_000;

/// A latency in ns, at least 1 ns and at most a day; a bare number is in `bare`.
pub fn latency_ns(s: &str, bare: &str) -> Result<u64, String> {
    match time_ns(s, Some(bare)).map(f64::round) {
        Some(ns) if ns >= 1.0 && ns <= (MAX_US * 1000) as f64 => Ok(ns as u64),
        _ => Err(format!("'{s}' is not a latency from 1ns to a day; use a number with ns, us, ms or s (e.g. 500ns, 100us, 1ms; a bare number is in {bare})")),
    }
}

/// A latency in whole µs (a bare number is µs: `250`, `250us`, `1.5ms`), at most a day.
fn whole_us(s: &str) -> Option<u64> {
    let ns = time_ns(s, Some("us"))?.round();
    (ns <= (MAX_US * 1000) as f64 && ns % 1000.0 == 0.0).then_some(ns as u64 / 1000)
}

/// A positive latency in whole microseconds, at most a day.
pub fn positive_us(s: &str) -> Result<u64, String> {
    match whole_us(s) {
        Some(v) if v >= 1 => Ok(v),
        _ => Err(format!("'{s}' must be whole microseconds, at least 1 and at most a day (e.g. 250, 250us, 2ms)")),
    }
}

/// A latency in whole microseconds that may be zero, at most a day.
pub fn us(s: &str) -> Result<u64, String> {
    whole_us(s).ok_or_else(|| format!("'{s}' must be whole microseconds, 0 to a day (e.g. 0, 250us, 2ms)"))
}

/// A positive count.
pub fn positive(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if v >= 1 => Ok(v as u64),
        _ => Err(format!("'{s}' must be a whole number, at least 1")),
    }
}

/// A message payload size, 1 byte to 64 KiB.
pub fn message_size(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if (1..=65_536).contains(&v) => Ok(v as usize),
        _ => Err(format!("'{s}' is not a message size; use 1 to 65536 bytes")),
    }
}

/// A real-time priority, 1–99.
pub fn priority(s: &str) -> Result<i32, String> {
    match s.trim().parse::<i32>() {
        Ok(v) if (1..=99).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a real-time priority; use 1 to 99")),
    }
}

/// The CPUs a `flag` names, all online ones when it is not given; each must be online. The one
/// check of every CPU list a flag takes, so a bad list reads the same whatever the flag.
pub fn cpu_list(given: Option<&str>, flag: &str) -> Result<Vec<usize>> {
    let online = crate::sysinfo::online_cpus();
    let Some(list) = given else { return Ok(online) };
    let cpus = crate::sysinfo::parse_cpu_list(list)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| invalid!("{flag} '{list}' is not a CPU list; use e.g. 0-3,6"))?;
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(invalid!(
            "{flag} {list}: CPU {bad} is not online; online CPUs are {}",
            crate::units::format_cpu_list(&online)
        ));
    }
    Ok(cpus)
}

/// The one CPU a `flag` names, checked as [`cpu_list`] checks a list.
pub fn one_cpu(given: &str, flag: &str) -> Result<usize> {
    match cpu_list(Some(given), flag)?[..] {
        [cpu] => Ok(cpu),
        _ => Err(invalid!("{flag} '{given}' names more than one CPU; give one")),
    }
}

/// A label to store runs under, checked by [`crate::model::check_label`]; `whose` says where it
/// comes from (a flag, a guest's command). The label is quoted with its control characters
/// escaped, so the message stays one line.
pub fn label(label: &str, whose: &str) -> Result<()> {
    crate::model::check_label(label).map_err(|fault| invalid!("{whose} {label:?}: {fault}"))
}

/// A label that selects stored runs, checked by [`crate::model::check_label_filter`].
pub fn label_filter(label: &str, whose: &str) -> Result<()> {
    crate::model::check_label_filter(label).map_err(|fault| invalid!("{whose} {label:?}: {fault}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("5"), Ok(Duration::from_secs(5)));
        for bad in ["", "0s", "-1s", "10x", "s", "1.2.3s", "33337888888888888888888888862", "1e400"] {
            assert!(duration(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn one_grammar_reads_every_unit_and_the_flags_own_unit_for_a_bare_number() {
        assert_eq!(time_ns("500ns", None), Some(500.0));
        assert_eq!(time_ns("250us", Some("s")), Some(250e3));
        assert_eq!(time_ns("250µs", None), Some(250e3));
        assert_eq!(time_ns("1.5 ms", None), Some(1.5e6));
        assert_eq!(time_ns("2m", None), Some(120e9));
        assert_eq!(time_ns("7", Some("us")), Some(7e3));
        assert_eq!(time_ns("7", Some("s")), Some(7e9));
        for bad in ["7", "", "ms", "-5us", "5x", "1e3us", "1.2.3s", "5 parsecs"] {
            assert_eq!(time_ns(bad, None), None, "{bad}");
        }
        assert_eq!(duration("500us"), Ok(Duration::from_micros(500)));
        assert!(duration("0.1ns").is_err(), "rounds to nothing");
    }

    #[test]
    fn latencies_take_the_grammar_with_their_resolution() {
        for (given, us) in [("250", 250), ("250us", 250), ("250µs", 250), ("0.25ms", 250), ("1s", 1_000_000)] {
            assert_eq!(positive_us(given), Ok(us), "{given}");
        }
        assert_eq!(us("0"), Ok(0));
        for bad in ["0", "1500ns", "1.5", "2d", "fast"] {
            assert!(positive_us(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(latency_ns("500ns", "us"), Ok(500));
        assert_eq!(latency_ns("5", "us"), Ok(5_000));
        assert_eq!(latency_ns("5", "s"), Ok(5_000_000_000));
        for bad in ["0", "0.4ns", "2d", "fast"] {
            assert!(latency_ns(bad, "us").is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn priorities() {
        assert_eq!(priority("95"), Ok(95));
        assert!(priority("0").is_err());
        assert!(priority("100").is_err());
    }
}
