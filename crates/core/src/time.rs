//! Points in time as users write them on the command line (`--from`, `--to`): `now`, relative
//! `-15m` / `now-1h30m`, RFC3339 (`2026-11-29T20:20:52Z`, `…52.5+02:00`), or Unix seconds.
//!
//! Pure: [`parse_time`] takes "now" as an argument, so results are testable and consistent
//! across the flags of one command.

use crate::duration::parse_duration;
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a time was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid time `{text}`: {why} (write `now`, `-15m`, `now-1h`, RFC3339 like 2026-01-02T15:04:05Z, or Unix seconds)"
)]
pub struct TimeError {
    pub text: String,
    pub why: String,
}

/// The current time in Unix seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Parses `text` relative to `now` (Unix seconds) into Unix seconds.
pub fn parse_time(text: &str, now: f64) -> Result<f64, TimeError> {
    let s = text.trim();
    let bad = |why: &str| TimeError {
        text: text.to_owned(),
        why: why.to_owned(),
    };
    if s.is_empty() {
        return Err(bad("empty"));
    }
    let rel = s.strip_prefix("now").unwrap_or(s);
    if rel.is_empty() {
        return Ok(now);
    }
    if let Some(sign) = rel.chars().next().filter(|c| *c == '-' || *c == '+') {
        let d = parse_duration(&rel[1..]).map_err(|e| bad(&e.to_string()))?;
        let d = d.as_secs_f64();
        return Ok(if sign == '-' { now - d } else { now + d });
    }
    if s.contains('T') || s.contains('t') || s.contains(' ') && s.contains('-') {
        return rfc3339(s).ok_or_else(|| bad("not a valid RFC3339 date-time"));
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(bad("not a time")),
    }
}

/// Unix seconds of `YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±HH:MM]`, a date-time without a zone read as
/// UTC (as trace files write theirs: `2023-11-16 18:15:46.6805900`).
pub fn datetime_utc(s: &str) -> Option<f64> {
    rfc3339(s).or_else(|| rfc3339(&format!("{s}Z")))
}

/// Unix seconds of an HTTP `Date` header (RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37
/// GMT`); `None` for anything else (the obsolete forms included).
pub fn http_date(s: &str) -> Option<f64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [dow, day, month, year, clock, "GMT"] = parts.as_slice() else {
        return None;
    };
    if !dow.ends_with(',') || day.len() != 2 || year.len() != 4 || clock.len() != 8 {
        return None;
    }
    let m = MONTHS.iter().position(|n| n == month)? + 1;
    rfc3339(&format!("{year}-{m:02}-{day}T{clock}Z"))
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.frac](Z|±HH:MM)`.
fn rfc3339(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let (frac, zone) = split_fraction(&s[19..])?;
    let offset = zone_offset(zone)?;
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset;
    Some(secs as f64 + frac)
}

/// `.123Z` → (0.123, "Z").
fn split_fraction(rest: &str) -> Option<(f64, &str)> {
    let Some(digits) = rest.strip_prefix('.') else {
        return Some((0.0, rest));
    };
    let n = digits.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let frac: f64 = format!("0.{}", &digits[..n]).parse().ok()?;
    Some((frac, &digits[n..]))
}

/// `Z` → 0; `+02:00` → 7200 seconds.
fn zone_offset(zone: &str) -> Option<i64> {
    if zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let b = zone.as_bytes();
    if b.len() != 6 || b[3] != b':' || !matches!(b[0], b'+' | b'-') {
        return None;
    }
    let h: i64 = zone[1..3].parse().ok()?;
    let m: i64 = zone[4..6].parse().ok()?;
    let sign = if b[0] == b'-' { -1 } else { 1 };
    Some(sign * (h * 3600 + m * 60))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Formats Unix seconds as RFC3339 UTC with milliseconds (for summaries).
pub fn format_rfc3339(t: f64) -> String {
    let ms = (t * 1000.0).round() as i64;
    let (secs, ms) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_read_as_rfc_9110_writes_them() {
        // RFC 9110 §5.6.7's own example.
        assert_eq!(
            http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777.0)
        );
        assert_eq!(
            http_date("Thu, 03 Dec 2026 22:18:58 GMT"),
            datetime_utc("2026-12-03T22:18:58Z")
        );
        for bad in [
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "",
        ] {
            assert_eq!(http_date(bad), None, "{bad}");
        }
    }

    const NOW: f64 = 1_764_447_652.0; // 2025-11-29T20:20:52Z

    #[test]
    fn relative_and_now() {
        assert_eq!(parse_time("now", NOW).unwrap(), NOW);
        assert_eq!(parse_time("-15m", NOW).unwrap(), NOW - 900.0);
        assert_eq!(parse_time("now-1h30m", NOW).unwrap(), NOW - 5400.0);
        assert_eq!(parse_time("now+5s", NOW).unwrap(), NOW + 5.0);
    }

    #[test]
    fn rfc3339_and_unix() {
        assert_eq!(parse_time("2025-11-29T20:20:52Z", 0.0).unwrap(), NOW);
        assert_eq!(
            parse_time("2025-11-29T22:20:52.5+02:00", 0.0).unwrap(),
            NOW + 0.5
        );
        assert_eq!(parse_time("1970-01-01T00:00:00Z", 5.0).unwrap(), 0.0);
        assert_eq!(
            parse_time("2000-02-29 12:00:00z", 0.0).unwrap(),
            951_825_600.0
        );
        assert_eq!(parse_time("1764447652.25", 0.0).unwrap(), NOW + 0.25);
    }

    #[test]
    fn formats_back() {
        assert_eq!(format_rfc3339(NOW + 0.5), "2025-11-29T20:20:52.500Z");
        assert_eq!(format_rfc3339(951_825_600.0), "2000-02-29T12:00:00.000Z");
    }

    #[test]
    fn rejects_with_the_text() {
        for bad in [
            "",
            "yesterday",
            "-15",
            "2025-13-01T00:00:00Z",
            "2025-11-29T20:20:52",
            "-1",
            "now-",
        ] {
            let err = parse_time(bad, NOW).unwrap_err();
            assert!(
                err.to_string().contains(&format!("`{bad}`")),
                "{bad}: {err}"
            );
        }
    }
}
