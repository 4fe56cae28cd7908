//! How numbers read: latencies in µs (the seeds' unit), durations and CPU lists, one formatter
//! per use.

use std::time::Duration;

/// ns as µs to the ns, the way tables of the seeds print them: `12.345`.
pub fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// ns as whole µs, rounded (the live view's columns).
pub fn us_rounded(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// A µs value for an axis, a bar or a table cell, as short as reads well: 0.05, 3.2, 45, 1 250.
pub fn fmt_us(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() < 1.0 {
        format!("{}", (v * 1000.0).round() / 1000.0)
    } else if v.abs() < 10.0 && v.fract() != 0.0 {
        format!("{:.1}", v)
    } else if v.abs() < 10.0 {
        format!("{v}")
    } else {
        thousands(v.round() as i64)
    }
}

/// ns, shown as [`fmt_us`] shows µs.
pub fn fmt_ns_as_us(ns: f64) -> String {
    fmt_us(ns / 1000.0)
}

/// Digits grouped by three with a narrow no-break space.
fn thousands(n: i64) -> String {
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Writes CPUs as a kernel CPU list, "0-3,6": the inverse of
/// [`crate::sysinfo::parse_cpu_list`].
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { sorted[i].to_string() } else { format!("{}-{}", sorted[i], sorted[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// A clock reading of a duration: `1:02:05`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// Whole seconds, compact: `1h02m05s`, `2m05s`, `5s`.
pub fn compact(s: u64) -> String {
    match s {
        s if s >= 3600 => format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// A run's length in a caption: `60 s`, `10 min`, `24 h`.
pub fn length(s: f64) -> String {
    if s >= 3600.0 {
        format!("{} h", fmt_us(s / 3600.0))
    } else if s >= 120.0 {
        format!("{} min", fmt_us(s / 60.0))
    } else {
        format!("{} s", fmt_us(s))
    }
}

/// A short interval in a caption: `1 s`, `100 ms`.
pub fn span(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", fmt_us(s))
    } else {
        format!("{} ms", fmt_us(s * 1000.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_read_well() {
        assert_eq!(us(12_345.0), "12.345");
        assert_eq!(us_rounded(1_499), 1);
        assert_eq!(fmt_us(0.042), "0.042");
        assert_eq!(fmt_us(3.25), "3.2");
        assert_eq!(fmt_us(12_345.0), "12\u{202f}345");
        assert_eq!(fmt_ns_as_us(45_000.0), "45");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
        assert_eq!(compact(3725), "1h02m05s");
        assert_eq!(compact(125), "2m05s");
        assert_eq!(length(86_400.0), "24 h");
        assert_eq!(length(600.0), "10 min");
        assert_eq!(length(60.0), "60 s");
        assert_eq!(span(0.1), "100 ms");
    }
}
