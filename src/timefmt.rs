//! Wall-clock timestamps as RFC 3339 UTC strings, without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as `2026-11-22T00:12:18.123Z`.
pub fn now_rfc3339() -> String {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    rfc3339(d.as_secs() as i64, d.subsec_millis())
}

/// Seconds since the epoch (UTC) as RFC 3339 with milliseconds.
pub fn rfc3339(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_795_306_338, 0), "2026-11-22T00:12:18.000Z");
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The fields of an rtbench timestamp (`2026-11-22T00:12:18.123Z`; the milliseconds may be
/// missing); `None` if it is not one.
struct Fields {
    y: i64,
    m: u32,
    d: u32,
    hh: i64,
    mm: i64,
    ss: i64,
    millis: i64,
}

impl Fields {
    fn parse(s: &str) -> Option<Fields> {
        let num =
            |a: usize, b: usize| s.get(a..b).filter(|x| x.bytes().all(|c| c.is_ascii_digit()))?.parse::<i64>().ok();
        let (y, m, d) = (num(0, 4)?, num(5, 7)? as u32, num(8, 10)? as u32);
        let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
            return None;
        }
        let millis = match s.get(19..20) {
            Some(".") => num(20, 23)?,
            _ => 0,
        };
        Some(Fields { y, m, d, hh, mm, ss, millis })
    }
}

/// Seconds since the epoch of an rtbench timestamp (`2026-11-22T00:12:18.123Z`); `None` if it
/// is not one.
pub fn parse_rfc3339(s: &str) -> Option<f64> {
    let f = Fields::parse(s)?;
    let secs = days_from_civil(f.y, f.m, f.d) * 86_400 + f.hh * 3600 + f.mm * 60 + f.ss;
    Some(secs as f64 + f.millis as f64 / 1e3)
}

/// An rtbench timestamp in cyclictest's JSON style, `Sun, 22 Nov 2026 00:12:18 +0000`.
pub fn rfc3339_to_cyclictest(s: &str) -> Option<String> {
    let Fields { y, m, d, hh, mm, ss, .. } = Fields::parse(s)?;
    let days = days_from_civil(y, m, d);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    Some(format!(
        "{}, {d:02} {} {y:04} {hh:02}:{mm:02}:{ss:02} +0000",
        WD[days.rem_euclid(7) as usize],
        MO[m as usize - 1]
    ))
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn parsing_inverts_formatting() {
        for (secs, millis) in [(0, 0), (951_782_400, 5), (1_795_306_338, 999)] {
            let back = parse_rfc3339(&rfc3339(secs, millis)).unwrap();
            assert_eq!(back, secs as f64 + millis as f64 / 1e3);
        }
        for bad in ["", "2026-13-01T00:00:00Z", "2026-11-22 garbage", "20x6-11-22T00:00:00Z"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn cyclictest_style() {
        assert_eq!(
            rfc3339_to_cyclictest("2026-11-22T00:12:18.000Z").as_deref(),
            Some("Sun, 22 Nov 2026 00:12:18 +0000")
        );
        assert_eq!(rfc3339_to_cyclictest("junk"), None);
    }
}
