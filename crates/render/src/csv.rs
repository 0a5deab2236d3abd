//! CSV for notebooks (`llmscope report RUN --export DIR`): one record per line, fields quoted
//! as RFC 4180 says — a field holding a comma, a double quote, CR or LF is put in double quotes,
//! its double quotes doubled — lines ended by CRLF. Absent values are empty fields, never 0.
//! A text a spreadsheet would run as a formula is written as text (issue 50, [`field`]).

use std::borrow::Cow;
use std::io::{self, Write};

/// `field` as one CSV field. A spreadsheet runs a cell that begins with `=`, `+`, `-`, `@`, a
/// tab or CR as a formula (CSV injection: a team named `=HYPERLINK(…)` in `cost --format csv`);
/// such a field, unless it is a number, is written with a `'` before it, which spreadsheets show
/// as text and do not run.
pub fn field(field: &str) -> Cow<'_, str> {
    let text = if runs_as_formula(field) {
        Cow::Owned(format!("'{field}"))
    } else {
        Cow::Borrowed(field)
    };
    if text.contains([',', '"', '\r', '\n']) {
        Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
    } else {
        text
    }
}

/// Whether a spreadsheet would read `field` as a formula: its first character starts one, and
/// it is not a number (`-0.5` stays a number).
fn runs_as_formula(field: &str) -> bool {
    field.starts_with(['=', '+', '-', '@', '\t', '\r']) && field.parse::<f64>().is_err()
}

/// One record: the fields quoted where they need it, separated by commas, ended by CRLF.
pub fn record<S: AsRef<str>>(out: &mut impl Write, fields: &[S]) -> io::Result<()> {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(field(f.as_ref()).as_bytes())?;
    }
    out.write_all(b"\r\n")
}

/// A number as a field: its shortest exact form; empty when absent or not finite.
pub fn number(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or(String::new(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        assert_eq!(field("vllm"), "vllm");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        let mut out = Vec::new();
        record(&mut out, &["t", "pod=\"a,b\"", ""]).unwrap();
        assert_eq!(out, b"t,\"pod=\"\"a,b\"\"\",\r\n");
        assert_eq!(number(Some(0.5)), "0.5");
        // Formulas (OWASP's CSV injection starters) become text; numbers stay numbers.
        assert_eq!(
            field("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(field("+team"), "'+team");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("-cmd|' /C calc'!A0"), "'-cmd|' /C calc'!A0");
        assert_eq!(field("\tx"), "'\tx");
        assert_eq!(field("\rx"), "\"'\rx\"");
        assert_eq!(field("-0.5"), "-0.5");
        assert_eq!(field("+1e3"), "+1e3");
        assert_eq!(field("team-a"), "team-a");
        assert_eq!(
            (number(None), number(Some(f64::NAN))),
            (String::new(), String::new())
        );
    }
}
