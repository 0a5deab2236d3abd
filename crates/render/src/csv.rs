//! CSV for notebooks (`llmscope report RUN --export DIR`): one record per line, fields quoted
//! as RFC 4180 says — a field holding a comma, a double quote, CR or LF is put in double quotes,
//! its double quotes doubled — lines ended by CRLF. Absent values are empty fields, never 0.

use std::borrow::Cow;
use std::io::{self, Write};

/// `field` as one CSV field.
pub fn field(field: &str) -> Cow<'_, str> {
    if field.contains([',', '"', '\r', '\n']) {
        Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(field)
    }
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
        assert_eq!(
            (number(None), number(Some(f64::NAN))),
            (String::new(), String::new())
        );
    }
}
