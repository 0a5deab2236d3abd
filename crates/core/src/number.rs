//! Numbers as people read them in reports.

/// `12345.6` → `12,346`; negative values read as 0 (counts and rates only).
pub fn thousands(v: f64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits_by_three() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(2048.0), "2,048");
        assert_eq!(thousands(999.0), "999");
    }
}
