//! Number formatting exactly as the real exporters print it.
//!
//! Two styles matter for llmscope:
//! - [`python_float`]: `prometheus_client`'s `floatToGoString` (vLLM, SGLang): Python `repr(float)`
//!   (`0.0`, `3.0`, `1e-05`) except that a positive number with 7 or more integer digits switches to
//!   a Go-style exponent (`5052943.0` → `5.052943e+06`, `12345678901.0` → `1.2345678901e+10`).
//! - [`go_fixed6`]: Go's `%f` (dcgm-exporter double fields: `3.471000`).
//!
//! Both write into a `String` so the writer never allocates per sample.

use std::fmt::Write as _;

/// Appends `v` formatted as Python `repr(float)`.
pub fn python_repr(out: &mut String, v: f64) {
    if let Some(special) = python_special(v) {
        out.push_str(special);
        return;
    }
    // `{:e}` gives the shortest round-trip digits, as Python's repr does: "d.ddde<exp>".
    let mut sci = String::with_capacity(32);
    let _ = write!(sci, "{v:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        push_fixed(out, &digits, exp);
    } else {
        push_exponent(out, &digits, exp);
    }
}

/// `nan`, `inf`, `-inf`, `0.0` and `-0.0`, which have no digits to print.
fn python_special(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("nan")
    } else if v.is_infinite() {
        Some(if v > 0.0 { "inf" } else { "-inf" })
    } else if v == 0.0 {
        Some(if v.is_sign_negative() { "-0.0" } else { "0.0" })
    } else {
        None
    }
}

/// Digits `d1 d2 …` with decimal exponent `exp` as `d1.d2…e±XX` (`1e-05`, `1.5e+16`).
fn push_exponent(out: &mut String, digits: &str, exp: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let sign = if exp < 0 { '-' } else { '+' };
    let _ = write!(out, "e{sign}{:02}", exp.abs());
}

/// Digits `d1 d2 …` with decimal exponent `exp` (value = d1.d2… × 10^exp) in positional form,
/// always with at least one fractional digit (`3.0`).
fn push_fixed(out: &mut String, digits: &str, exp: i32) {
    if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits);
        return;
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        out.push_str(digits);
        for _ in digits.len()..int_len {
            out.push('0');
        }
        out.push_str(".0");
    } else {
        out.push_str(&digits[..int_len]);
        out.push('.');
        out.push_str(&digits[int_len..]);
    }
}

/// Appends `v` as `prometheus_client.utils.floatToGoString` prints it.
pub fn python_float(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let start = out.len();
    python_repr(out, v);
    let s = &out[start..];
    let Some(dot) = s.find('.') else { return };
    if v > 0.0 && dot > 6 {
        // mantissa = s[0] + "." + s[1:dot] + s[dot+1:], then rstrip("0.") — as the Python code does.
        let mut mantissa = String::with_capacity(s.len() + 1);
        mantissa.push_str(&s[..1]);
        mantissa.push('.');
        mantissa.push_str(&s[1..dot]);
        mantissa.push_str(&s[dot + 1..]);
        let trimmed = mantissa.trim_end_matches(['0', '.']);
        let trimmed = trimmed.to_owned();
        out.truncate(start);
        out.push_str(&trimmed);
        // prometheus_client: f"{mantissa}e+{dot - 1:02d}" (older releases wrote "e+0{dot - 1}").
        let _ = write!(out, "e+{:02}", dot - 1);
    }
}

/// Appends `v` as Go's `%f` (six decimals), as dcgm-exporter prints double fields.
pub fn go_fixed6(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v:.6}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(v: f64) -> String {
        let mut s = String::new();
        python_float(&mut s, v);
        s
    }

    #[test]
    fn python_float_matches_prometheus_client() {
        // Expected strings are what prometheus_client.utils.floatToGoString returns.
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (3.0, "3.0"),
            (1.0, "1.0"),
            (0.001, "0.001"),
            (2560.0, "2560.0"),
            (100000.0, "100000.0"),
            (1e6, "1e+06"),
            (5052943.0, "5.052943e+06"),
            (1747360800.123456, "1.747360800123456e+09"),
            (0.4567164179104478, "0.4567164179104478"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456.5, "123456.5"),
            (12345678901.0, "1.2345678901e+10"),
            (1e16, "1e+16"),
            (-5052943.0, "-5052943.0"),
            (-0.5, "-0.5"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (v, want) in cases {
            assert_eq!(py(*v), *want, "value {v:?}");
        }
    }

    #[test]
    fn go_fixed6_prints_six_decimals() {
        let mut s = String::new();
        go_fixed6(&mut s, 3.471);
        s.push(' ');
        go_fixed6(&mut s, 0.000001);
        assert_eq!(s, "3.471000 0.000001");
    }
}
