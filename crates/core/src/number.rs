//! Numbers as people read them in reports.

/// `12345.6` → `12,346`; negative values read as 0 (counts and rates only). Beyond 10¹⁵ the
/// digits stop meaning anything to a reader (and 1e308 would print 309 of them): [`short`].
pub fn thousands(v: f64) -> String {
    if v >= 1e15 || !v.is_finite() {
        return short(v.max(0.0));
    }
    let s = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A value as evidence quotes it: up to four decimals with trailing zeros dropped (`300`,
/// `0.25`, `-8`), in scientific notation when very large or very small (`1.500e308`,
/// `2.000e-7`) so that no number runs to hundreds of digits.
pub fn short(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".to_owned();
    }
    if !(1e-3..1e9).contains(&a) {
        return format!("{v:.3e}");
    }
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_never_runs_to_hundreds_of_digits() {
        assert_eq!(short(300.0), "300");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(-8.0), "-8");
        assert_eq!(short(1.5e308), "1.500e308");
        assert_eq!(short(2e-7), "2.000e-7");
        assert_eq!(short(0.0), "0");
        assert_eq!(thousands(1e308), "1.000e308");
        assert!(thousands(f64::MAX).len() < 16);
    }

    #[test]
    fn groups_digits_by_three() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(2048.0), "2,048");
        assert_eq!(thousands(999.0), "999");
    }
}
