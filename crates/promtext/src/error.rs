//! Parse errors: where (1-based line and byte column), what ([`ErrorKind`]) and the offending line.
//!
//! The lexer reports an [`ErrorKind`] and a byte offset inside the line; the parser turns that into a
//! [`ParseError`], copying at most [`MAX_LINE_TEXT`] bytes of the line so that an error never keeps
//! the input borrowed. Callers count failures by `kind`, never by the display string.

use std::fmt;

/// How many bytes of the offending line a [`ParseError`] keeps.
pub const MAX_LINE_TEXT: usize = 200;

/// What is wrong with a line. Fieldless so it can be counted in a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The line is not valid UTF-8 (names, label values and HELP text must be).
    InvalidUtf8,
    /// A metric name is missing or contains a character outside `[a-zA-Z0-9_:]`.
    InvalidName,
    /// A label name is missing or contains a character outside `[a-zA-Z0-9_]`.
    InvalidLabelName,
    /// The same label name appears twice in one label set.
    DuplicateLabel,
    /// A label value (or the sample line) ended before the closing `"`.
    UnterminatedLabelValue,
    /// A quoted metric or label name ended before the closing `"`.
    UnterminatedQuotedName,
    /// The line ended inside `{…}`.
    UnterminatedLabelSet,
    /// A character that cannot appear here (e.g. `=` missing after a label name, text after `}`).
    UnexpectedCharacter,
    /// A sample line without a value.
    MissingValue,
    /// The value is not a float (`NaN`, `+Inf`, `-Inf`, `1e+06`, … are fine).
    InvalidValue,
    /// The timestamp is not an integer (text 0.0.4, milliseconds) or a finite float (OpenMetrics, seconds).
    InvalidTimestamp,
    /// A malformed exemplar after ` # `.
    InvalidExemplar,
    /// `# TYPE` with a word that is not a metric type.
    InvalidTypeWord,
    /// A second `# TYPE` for the same name.
    DuplicateType,
    /// A second `# HELP` for the same name.
    DuplicateHelp,
    /// A second `# UNIT` for the same name.
    DuplicateUnit,
    /// A `# TYPE` for a family whose samples were already seen.
    TypeAfterSamples,
    /// A histogram `_bucket` sample without an `le` label.
    BucketWithoutLe,
    /// A non-blank line after `# EOF` (OpenMetrics).
    ContentAfterEof,
    /// An OpenMetrics page that does not end with `# EOF`.
    MissingEof,
}

impl ErrorKind {
    /// A short lower-case description.
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::InvalidUtf8 => "invalid UTF-8",
            ErrorKind::InvalidName => "invalid metric name",
            ErrorKind::InvalidLabelName => "invalid label name",
            ErrorKind::DuplicateLabel => "duplicate label name",
            ErrorKind::UnterminatedLabelValue => "unterminated label value",
            ErrorKind::UnterminatedQuotedName => "unterminated quoted name",
            ErrorKind::UnterminatedLabelSet => "unterminated label set",
            ErrorKind::UnexpectedCharacter => "unexpected character",
            ErrorKind::MissingValue => "missing sample value",
            ErrorKind::InvalidValue => "invalid sample value",
            ErrorKind::InvalidTimestamp => "invalid timestamp",
            ErrorKind::InvalidExemplar => "invalid exemplar",
            ErrorKind::InvalidTypeWord => "invalid metric type",
            ErrorKind::DuplicateType => "duplicate TYPE line",
            ErrorKind::DuplicateHelp => "duplicate HELP line",
            ErrorKind::DuplicateUnit => "duplicate UNIT line",
            ErrorKind::TypeAfterSamples => "TYPE line after samples of the family",
            ErrorKind::BucketWithoutLe => "histogram bucket without le label",
            ErrorKind::ContentAfterEof => "content after # EOF",
            ErrorKind::MissingEof => "missing # EOF",
        }
    }
}

impl ErrorKind {
    /// Whether Prometheus's scraper fails a page of `format` over a line of this kind. Its text
    /// parser (`model/textparse/promparse.go`) keeps no HELP or TYPE per family, so a second
    /// `# HELP`/`# TYPE` or a `# TYPE` after samples passes there, while prometheus/common's
    /// stricter parser (`promtool check metrics`, the Pushgateway) refuses them.
    pub fn fails_scrape(self, format: crate::format::Format) -> bool {
        let strict_only = matches!(
            self,
            ErrorKind::DuplicateHelp | ErrorKind::DuplicateType | ErrorKind::TypeAfterSamples
        );
        !(strict_only && format == crate::format::Format::Text)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// One malformed line: 1-based `line`, 1-based byte `column`, the kind and the line's text
/// (lossily decoded, truncated to [`MAX_LINE_TEXT`] bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}: {text:?}")]
pub struct ParseError {
    pub line: u32,
    pub column: u32,
    pub kind: ErrorKind,
    pub text: String,
}

impl ParseError {
    /// Builds an error for `line_bytes` (the line without its terminator) at byte `offset` in it.
    pub(crate) fn at(kind: ErrorKind, line: u32, offset: usize, line_bytes: &[u8]) -> Self {
        let cut = line_bytes.len().min(MAX_LINE_TEXT);
        let mut text = String::from_utf8_lossy(&line_bytes[..cut]).into_owned();
        // Replacement characters are 3 bytes, so the lossy text can outgrow the cut.
        let mut end = text.len().min(MAX_LINE_TEXT);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        let column = u32::try_from(offset.saturating_add(1)).unwrap_or(u32::MAX);
        ParseError {
            line,
            column,
            kind,
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_keeps_position_and_truncated_text() {
        let long = vec![b'x'; 500];
        let e = ParseError::at(ErrorKind::InvalidValue, 7, 3, &long);
        assert_eq!((e.line, e.column, e.kind), (7, 4, ErrorKind::InvalidValue));
        assert_eq!(e.text.len(), MAX_LINE_TEXT);
        assert!(
            e.to_string()
                .starts_with("line 7, column 4: invalid sample value: ")
        );
    }

    #[test]
    fn error_text_is_lossy_for_bad_utf8() {
        let e = ParseError::at(ErrorKind::InvalidUtf8, 1, 1, b"a\xffb");
        assert_eq!(e.text, "a\u{fffd}b");
        let e = ParseError::at(ErrorKind::InvalidUtf8, 1, 1, &[0xff; 300]);
        assert!(e.text.len() <= MAX_LINE_TEXT && e.text.starts_with('\u{fffd}'));
    }
}
