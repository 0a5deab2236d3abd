//! Human durations as Prometheus and Kubernetes users write them: `500ms`, `5s`, `2m`, `1h30m`, `1.5s`.
//!
//! [`parse_duration`] accepts a sequence of `<number><unit>` parts (units `ns`, `us`/`µs`, `ms`, `s`,
//! `m`, `h`, `d`); a bare `0` is zero. Anything else is a [`DurationError`] that names the text.

use std::time::Duration;

/// Why a duration string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration: write a number with a unit, e.g. `5s`, `2m`, `500ms`")]
    Empty,
    #[error("invalid duration `{text}`: {why} (write e.g. `5s`, `2m`, `500ms`, `1h30m`)")]
    Invalid { text: String, why: &'static str },
}

/// Parses `500ms`, `5s`, `2m`, `1h30m`, `1.5s`, `0`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let invalid = |why| DurationError::Invalid {
        text: text.to_owned(),
        why,
    };
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| invalid("missing unit"))?;
        if num_len == 0 {
            return Err(invalid("expected a number"));
        }
        let number: f64 = rest[..num_len].parse().map_err(|_| invalid("bad number"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(invalid("unknown unit (use ns, us, ms, s, m, h, d)")),
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > 1e12 {
        return Err(invalid("too large"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Formats a duration compactly for humans: `500ms`, `5s`, `2m30s`, `1h`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        let s = format!("{secs:.3}");
        return format!("{}s", s.trim_end_matches('0').trim_end_matches('.'));
    }
    let total = d.as_secs();
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn rejects_bad_input_with_the_text() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        for bad in ["5", "s", "5x", "1..5s", "-5s", "5 s"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.to_string().contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for s in ["500ms", "5s", "2m30s", "1h"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,12}") {
            let _ = parse_duration(&s);
        }
    }
}
