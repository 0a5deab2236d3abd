//! What a whole page says about itself, the same whoever read it (a saved file, a page fetched
//! by URL, a scrape): [`PageReport`] counts the families, samples, bad lines and duplicate
//! series of a page and names a body that is not exposition text at all (JSON, a JSON-quoted
//! page, HTML, binary). Its [`PageReport::warnings`] is the one warning every reader prints
//! (`SOURCE:LINE:COLUMN: Prometheus will reject this page: KIND; … (N lines skipped)`), and [`PageReport::is_real`] says whether the
//! page exposes anything (issue 17: a page of random bytes was "0 families" and called up).

use crate::error::ParseError;
use crate::family::{Family, parse_families};
use std::collections::HashSet;

/// What a body looks like before it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Text that may be exposition.
    Text,
    /// Nothing but whitespace.
    Empty,
    /// One JSON string holding a page (`"# HELP x …\n# TYPE …"`): saved from a JSON field.
    JsonString,
    /// A JSON object or array (an API answer, not a /metrics page).
    Json,
    /// An HTML page (a login, proxy or error page).
    Html,
    /// Not text (NUL or many control bytes near the start).
    Binary,
}

impl Shape {
    /// Sniffs the first bytes of `body`.
    pub fn of(body: &[u8]) -> Shape {
        let trimmed = body.trim_ascii();
        let head = &body[..body.len().min(512)];
        let controls = head
            .iter()
            .filter(|b| (**b < 0x20 && !b"\t\n\r".contains(b)) || **b == 0x7f)
            .count();
        let nuls = head.iter().filter(|b| **b == 0).count();
        // Text is UTF-8 (a character cut at the 512th byte aside); binary or compressed data
        // almost never is. One NUL in text is text (OpenMetrics' suite has one in a HELP).
        let utf8 = match std::str::from_utf8(head) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none(),
        };
        match trimmed.first() {
            None => Shape::Empty,
            _ if !utf8 || nuls > 1 || controls * 10 > head.len() => Shape::Binary,
            Some(b'"') if trimmed.len() > 1 && trimmed.ends_with(b"\"") => Shape::JsonString,
            Some(b'{' | b'[') => Shape::Json,
            Some(b'<') => Shape::Html,
            _ => Shape::Text,
        }
    }

    /// What the body is, when it is not exposition text.
    pub fn describe(self) -> Option<&'static str> {
        Some(match self {
            Shape::Text => return None,
            Shape::Empty => "the page is empty",
            Shape::JsonString => {
                "the body is a JSON-quoted string, not exposition text (decode it first, e.g. `jq -r .`)"
            }
            Shape::Json => {
                "the body is JSON, not exposition text (a Prometheus API URL instead of a /metrics page?)"
            }
            Shape::Html => "the body is HTML, not exposition text (a login, proxy or error page?)",
            Shape::Binary => "the body is not text (binary or compressed data)",
        })
    }
}

/// The summary of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageReport {
    pub shape: Shape,
    pub families: usize,
    pub samples: usize,
    /// Bad lines (skipped), and the first that fails Prometheus's scrape.
    pub errors: usize,
    pub first_error: Option<ParseError>,
    /// The first bad line Prometheus's scraper reads but stricter readers refuse
    /// ([`crate::ErrorKind::fails_scrape`]), on a page with no line that fails the scrape.
    pub first_strict: Option<ParseError>,
    /// The first OpenMetrics violation Prometheus's OpenMetrics parser fails the scrape over
    /// ([`crate::openmetrics::Violation::fatal`]).
    pub first_refused: Option<crate::openmetrics::Violation>,
    /// Samples whose `name{labels}` an earlier sample of the page already had.
    pub duplicates: usize,
    pub first_duplicate: Option<String>,
    /// On an OpenMetrics page (`# EOF` at its end), the rules of OpenMetrics it breaks beyond its
    /// lines' syntax ([`crate::openmetrics::violations`]), and the first of them.
    pub violations: usize,
    pub first_violation: Option<crate::openmetrics::Violation>,
}

impl PageReport {
    /// Parses `body` (leniently) and summarises it.
    pub fn read(body: &[u8]) -> PageReport {
        let (families, errors) = parse_families(body);
        PageReport::new(body, &families, &errors)
    }

    /// Summarises a page the caller already parsed, in the format its text shows.
    pub fn new(body: &[u8], families: &[Family<'_>], errors: &[ParseError]) -> PageReport {
        PageReport::new_as(body, crate::parse::Format::sniff(body), families, errors)
    }

    /// Summarises a page the caller parsed as `format` (as its Content-Type said).
    pub fn new_as(
        body: &[u8],
        format: crate::parse::Format,
        families: &[Family<'_>],
        errors: &[ParseError],
    ) -> PageReport {
        let mut seen = HashSet::new();
        let (mut duplicates, mut first_duplicate, mut samples) = (0, None, 0);
        for s in families.iter().flat_map(|f| &f.samples) {
            samples += 1;
            // One series may repeat with different timestamps (valid OpenMetrics).
            let at = s.timestamp.map(|t| t.as_seconds().to_bits());
            if !seen.insert((s.name.raw(), s.labels.raw(), at)) {
                duplicates += 1;
                first_duplicate
                    .get_or_insert_with(|| format!("{}{{{}}}", s.name.raw(), s.labels.raw()));
            }
        }
        let violations = match format {
            crate::parse::Format::OpenMetrics => crate::openmetrics::violations(body, families),
            crate::parse::Format::Text => Vec::new(),
        };
        let first_error = errors.iter().find(|e| e.kind.fails_scrape(format)).cloned();
        let first_refused = violations.iter().find(|v| v.fatal).cloned();
        let first_strict = match first_error {
            Some(_) => None,
            None => errors.first().cloned(),
        };
        PageReport {
            violations: violations.len(),
            first_violation: violations.into_iter().next(),
            shape: Shape::of(body),
            families: families.iter().filter(|f| !f.samples.is_empty()).count(),
            samples,
            errors: errors.len(),
            first_error,
            first_strict,
            first_refused,
            duplicates,
            first_duplicate,
        }
    }

    /// Whether the page exposes at least one sample: a page that does not is not a live target.
    pub fn is_real(&self) -> bool {
        self.samples > 0
    }

    /// Why the page exposes nothing (for a target's last error), or `None` when it is real.
    pub fn problem(&self) -> Option<String> {
        if self.is_real() {
            return None;
        }
        let what = self.shape.describe().unwrap_or("no metric family parses");
        Some(
            match self.first_error.as_ref().or(self.first_strict.as_ref()) {
                Some(e) => format!(
                    "{what}: line {}:{}: {} ({} lines skipped)",
                    e.line, e.column, e.kind, self.errors
                ),
                None => what.to_owned(),
            },
        )
    }

    /// The warnings every reader of a page prints about it, one a line; none when the page is
    /// clean. `source` is the file or (redacted) URL, as the caller shows it.
    pub fn warnings(&self, source: &str) -> Vec<String> {
        let mut parts = Vec::new();
        if let Some(e) = &self.first_error {
            // Prometheus's parsers stop at the first bad line and the scrape fails whole.
            parts.push(format!(
                "{source}:{}:{}: Prometheus will reject this page: {}; one bad line fails the whole scrape (up = 0), llmscope read the rest ({} lines skipped)",
                e.line, e.column, e.kind, self.errors
            ));
        }
        if let (None, Some(v)) = (&self.first_error, &self.first_refused) {
            parts.push(format!(
                "{source}:{}: Prometheus will reject this page: {}; one bad line fails the whole scrape (up = 0)",
                v.line, v.why
            ));
        }
        if let Some(e) = &self.first_strict {
            parts.push(format!(
                "{source}:{}:{}: {}: Prometheus's scraper reads this page, but promtool check metrics and other strict readers refuse it ({} such lines)",
                e.line, e.column, e.kind, self.errors
            ));
        }
        if let (Some(what), false) = (self.shape.describe(), self.is_real()) {
            parts.push(format!("{source}: {what}"));
        }
        if let Some(v) = self
            .first_violation
            .as_ref()
            .filter(|_| self.first_refused.is_none())
        {
            parts.push(format!(
                "{source}:{}: not valid OpenMetrics: {} ({} in all; Prometheus may still ingest the page)",
                v.line, v.why, self.violations
            ));
        }
        if let Some(first) = &self.first_duplicate {
            parts.push(format!(
                "{source}: {} duplicate series, kept once (first: {})",
                self.duplicates,
                crate::page_report::clip(first)
            ));
        }
        parts
    }
}

/// The first 120 bytes of `s` (on a character boundary), for messages.
fn clip(s: &str) -> &str {
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_lines_give_the_line_column_and_the_count() {
        let body = b"# TYPE a gauge\na 1\nb{x=\"1\" 2\nc 1 zz\n";
        let r = PageReport::read(body);
        assert!(r.is_real());
        assert_eq!(r.errors, 2);
        let w = &r.warnings("http://h/metrics")[0];
        assert!(
            w.starts_with("http://h/metrics:3:9: Prometheus will reject this page:")
                && w.ends_with("(2 lines skipped)"),
            "{w}"
        );
        assert_eq!(r.problem(), None);
    }

    #[test]
    fn a_second_type_line_fails_an_openmetrics_scrape_but_not_a_text_one() {
        let text = b"# TYPE m gauge\n# TYPE m counter\nm 1\n";
        let r = PageReport::read(text);
        assert_eq!((r.errors, r.first_error.is_none()), (1, true));
        let w = r.warnings("p");
        assert!(
            w.len() == 1
                && w[0].starts_with(
                    "p:2:8: duplicate TYPE line: Prometheus's scraper reads this page"
                ),
            "{w:?}"
        );
        let om = b"# TYPE m gauge\n# TYPE m counter\nm 1\n# EOF\n";
        let w = PageReport::read(om).warnings("p");
        assert!(
            w[0].starts_with("p:2:8: Prometheus will reject this page: duplicate TYPE line"),
            "{w:?}"
        );
    }

    #[test]
    fn a_json_quoted_page_is_named_and_not_real() {
        let body = br##""# HELP up x\n# TYPE up gauge\nup 1\n""##;
        let r = PageReport::read(body);
        assert_eq!(r.shape, Shape::JsonString);
        assert!(!r.is_real());
        let p = r.problem().unwrap();
        assert!(p.contains("JSON-quoted"), "{p}");
        assert!(p.contains("line 1:"), "{p}");
    }

    #[test]
    fn random_bytes_are_not_a_page() {
        let body: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let r = PageReport::read(&body);
        assert!(!r.is_real());
        assert_eq!(r.shape, Shape::Binary);
        let w = r.warnings("p");
        assert!(
            w.len() == 2 && w[1].contains("not text") && w[0].starts_with("p:1:"),
            "{w:?}"
        );
    }

    #[test]
    fn duplicate_series_are_counted() {
        let r = PageReport::read(b"m{a=\"1\"} 1\nm{a=\"1\"} 2\nm{a=\"2\"} 3\n");
        assert_eq!((r.samples, r.duplicates), (3, 1));
        let w = &r.warnings("f.prom")[0];
        assert!(
            w.contains("1 duplicate series") && w.contains("m{a=\"1\"}"),
            "{w}"
        );
    }

    #[test]
    fn a_clean_page_has_no_warning_and_shapes_are_sniffed() {
        assert!(PageReport::read(b"up 1\n").warnings("x").is_empty());
        assert_eq!(Shape::of(b"  \n"), Shape::Empty);
        assert_eq!(Shape::of(b"{\"status\":\"success\"}"), Shape::Json);
        assert_eq!(Shape::of(b"<!doctype html>"), Shape::Html);
        assert_eq!(
            PageReport::read(b"").problem().unwrap(),
            "the page is empty"
        );
    }
}
