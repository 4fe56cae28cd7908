//! Value parsers for flags (the command line's and the probes' flag tables): each rejects a bad
//! value with a message that says what is accepted.

use std::time::Duration;

/// `30s`, `10m`, `24h`, `1d`, `500ms`, or a bare number of seconds (as cyclictest takes it).
pub fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let bad = || format!("'{s}' is not a duration; use a number with s, m, h, d or ms (e.g. 30s, 10m, 24h, 1d)");
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        _ => return Err(bad()),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("duration '{s}' must be greater than zero"));
    }
    // Found by fuzzing: a duration too large for the clock was a panic.
    if secs > MAX_SECS {
        return Err(format!("duration '{s}' is longer than ten years"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Ten years, the longest duration rtbench takes.
const MAX_SECS: f64 = 3650.0 * 86_400.0;
/// A day in µs, the longest interval rtbench takes (its nanoseconds must fit in 64 bits).
const MAX_US: u64 = 86_400_000_000;

/// A positive count of microseconds, at most a day.
pub fn positive_us(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if (1..=MAX_US as i64).contains(&v) => Ok(v as u64),
        _ => Err(format!("'{s}' must be a whole number of microseconds, at least 1 and at most a day")),
    }
}

/// A count of microseconds that may be zero, at most a day.
pub fn us(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if v <= MAX_US => Ok(v),
        _ => Err(format!("'{s}' must be a whole number of microseconds, 0 to a day")),
    }
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
    fn priorities() {
        assert_eq!(priority("95"), Ok(95));
        assert!(priority("0").is_err());
        assert!(priority("100").is_err());
    }
}
