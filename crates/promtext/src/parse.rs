//! The streaming parser: `&[u8]` in, an iterator of [`Event`]s (or [`ParseError`]s) out.
//!
//! [`Parser`] finds lines with `memchr`, checks they are UTF-8 (the whole input at once when it
//! is), and hands each to the `Lexer` (sample lines) or the comment reader (`# HELP`/`# TYPE`/
//! `# UNIT`/`# EOF`; other comments are skipped). Every event borrows from the input; a sample
//! costs no allocation. A `Grouper` assigns samples to families by `# TYPE` and performs the
//! cross-line checks.
//!
//! Errors: in lenient mode ([`ParseOptions::lenient`], the default) a bad line yields one `Err`
//! and parsing goes on with the next line; in strict mode the iterator ends after the first error.
//! The parser never panics, whatever the bytes.

use crate::MetricType;
use crate::error::{ErrorKind, ParseError};
use crate::group::Grouper;
use crate::labels::Labels;
use crate::lex::{LabelNames, LexError, LexResult, Lexer, parse_value};
use crate::sample::{Exemplar, Sample, Timestamp};
use crate::text::{Escaped, check_escapes};

pub use crate::format::Format;

/// How to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseOptions {
    /// `None`: decide with [`Format::sniff`].
    pub format: Option<Format>,
    /// Stop at the first error instead of skipping the bad line.
    pub strict: bool,
}

impl ParseOptions {
    /// Sniffed format, errors skipped.
    pub fn lenient() -> Self {
        ParseOptions::default()
    }

    /// Sniffed format, stop at the first error.
    pub fn strict() -> Self {
        ParseOptions {
            format: None,
            strict: true,
        }
    }

    pub fn with_format(self, format: Format) -> Self {
        ParseOptions {
            format: Some(format),
            ..self
        }
    }
}

/// One meaningful line of the page. Blank lines and plain comments produce no event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a> {
    /// `# HELP name text`; `text` may contain `\\`, `\n` (and `\"`) escapes.
    Help {
        name: Escaped<'a>,
        text: Escaped<'a>,
    },
    /// `# TYPE name type`.
    Type {
        name: Escaped<'a>,
        ty: MetricType,
    },
    /// `# UNIT name unit` (OpenMetrics).
    Unit {
        name: Escaped<'a>,
        unit: &'a str,
    },
    Sample(Sample<'a>),
    /// `# EOF`.
    Eof,
}

/// What is known about `# EOF` so far (OpenMetrics checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EofState {
    NotSeen,
    Seen,
    /// Seen, and content after it was already reported.
    Reported,
}

/// Streaming parser over one exposition page. See the module docs.
#[derive(Debug)]
pub struct Parser<'a> {
    input: &'a [u8],
    /// The whole input as `&str` when it is valid UTF-8 (checked once, so lines need no check).
    text: Option<&'a str>,
    /// The last sample name read bare; the next line most likely starts with it.
    last_name: &'a str,
    pos: usize,
    line_no: u32,
    format: Format,
    strict: bool,
    group: Grouper<'a>,
    label_names: LabelNames<'a>,
    eof: EofState,
    done: bool,
}

impl<'a> Parser<'a> {
    pub fn new(input: &'a [u8], options: ParseOptions) -> Self {
        let format = options.format.unwrap_or_else(|| Format::sniff(input));
        Parser {
            input,
            text: std::str::from_utf8(input).ok(),
            last_name: "",
            pos: 0,
            line_no: 0,
            format,
            strict: options.strict,
            group: Grouper::new(format.untyped()),
            label_names: LabelNames::default(),
            eof: EofState::NotSeen,
            done: false,
        }
    }

    /// The format in use (sniffed unless given).
    pub fn format(&self) -> Format {
        self.format
    }

    /// The next line without its `\n` / `\r\n` and its offset, or `None` at the end of the input.
    fn next_line(&mut self) -> Option<(usize, &'a [u8])> {
        let start = self.pos;
        let rest = self.input.get(start..).filter(|r| !r.is_empty())?;
        let len = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        self.pos += len + 1;
        self.line_no = self.line_no.saturating_add(1);
        let line = &rest[..len];
        Some((start, line.strip_suffix(b"\r").unwrap_or(line)))
    }

    /// The line at `start` as `&str`: sliced from the pre-checked text when the whole input is
    /// UTF-8, else checked on its own.
    fn line_str(&self, start: usize, bytes: &'a [u8]) -> LexResult<&'a str> {
        if let Some(line) = self.text.and_then(|t| t.get(start..start + bytes.len())) {
            return Ok(line);
        }
        std::str::from_utf8(bytes).map_err(|e| LexError {
            kind: ErrorKind::InvalidUtf8,
            offset: e.valid_up_to(),
        })
    }

    fn error(&mut self, e: LexError, line: &[u8]) -> ParseError {
        if self.strict {
            self.done = true;
        }
        ParseError::at(e.kind, self.line_no, e.offset, line)
    }

    /// At the end of input: the OpenMetrics `# EOF` check, once.
    fn finish(&mut self) -> Option<Result<Event<'a>, ParseError>> {
        self.done = true;
        if self.format == Format::OpenMetrics && self.eof == EofState::NotSeen {
            let line = self.line_no.saturating_add(1);
            return Some(Err(ParseError::at(ErrorKind::MissingEof, line, 0, b"")));
        }
        None
    }

    fn parse_line(&mut self, start: usize, bytes: &'a [u8]) -> LexResult<Option<Event<'a>>> {
        let line = self.line_str(start, bytes)?;
        let mut lx = Lexer::new(line);
        lx.skip_blanks();
        if lx.at_end() {
            return Ok(None);
        }
        if self.eof == EofState::Seen && self.format == Format::OpenMetrics {
            self.eof = EofState::Reported;
            return Err(LexError {
                kind: ErrorKind::ContentAfterEof,
                offset: lx.pos(),
            });
        }
        if lx.peek() == Some(b'#') {
            lx.bump();
            return self.comment(lx);
        }
        self.sample(lx).map(|s| Some(Event::Sample(s)))
    }

    fn comment(&mut self, mut lx: Lexer<'a>) -> LexResult<Option<Event<'a>>> {
        lx.skip_blanks();
        let word = lx.word();
        if self.format == Format::Text && word != "EOF" && lx.at_end() {
            // `# HELP` with nothing after it: Prometheus's text lexer wants a blank after the
            // keyword, and reads the line as a comment.
            return Ok(None);
        }
        match word {
            "HELP" => self.help(lx),
            "TYPE" => self.type_line(lx).map(Some),
            "UNIT" => self.unit(lx).map(Some),
            "EOF" if lx.rest().trim_ascii().is_empty() => {
                self.eof = self.eof.max_seen();
                Ok(Some(Event::Eof))
            }
            _ => Ok(None),
        }
    }

    /// The metric name after `# HELP`/`# TYPE`/`# UNIT`, and its offset.
    fn meta_name(lx: &mut Lexer<'a>) -> LexResult<(Escaped<'a>, usize)> {
        lx.skip_blanks();
        let at = lx.pos();
        let name = lx.metric_name()?;
        match lx.peek() {
            None | Some(b' ' | b'\t') => Ok((name, at)),
            Some(_) => Err(LexError {
                kind: ErrorKind::InvalidName,
                offset: lx.pos(),
            }),
        }
    }

    /// `# HELP name text`. In the text format a `# HELP name` with nothing after the name sets
    /// no help (prometheus/common reads it as a comment), so a later `# HELP` is no second one.
    fn help(&mut self, mut lx: Lexer<'a>) -> LexResult<Option<Event<'a>>> {
        let (name, at) = Self::meta_name(&mut lx)?;
        if lx.at_end() && self.format == Format::Text {
            return Ok(None);
        }
        if !lx.at_end() {
            lx.bump(); // exactly one blank: the rest, leading blanks included, is the text
        }
        let text = lx.rest();
        let escaped = check_escapes(text.as_bytes());
        self.group
            .help(name)
            .map_err(|kind| LexError { kind, offset: at })?;
        Ok(Some(Event::Help {
            name,
            text: Escaped::new(text, escaped),
        }))
    }

    fn type_line(&mut self, mut lx: Lexer<'a>) -> LexResult<Event<'a>> {
        let (name, at) = Self::meta_name(&mut lx)?;
        lx.skip_blanks();
        let word_at = lx.pos();
        let ty = MetricType::from_word(lx.word().as_bytes()).ok_or(LexError {
            kind: ErrorKind::InvalidTypeWord,
            offset: word_at,
        })?;
        Self::expect_end(&mut lx)?;
        self.group
            .type_line(name, ty)
            .map_err(|kind| LexError { kind, offset: at })?;
        Ok(Event::Type { name, ty })
    }

    fn unit(&mut self, mut lx: Lexer<'a>) -> LexResult<Event<'a>> {
        let (name, at) = Self::meta_name(&mut lx)?;
        lx.skip_blanks();
        let unit = lx.word();
        Self::expect_end(&mut lx)?;
        self.group
            .unit(name)
            .map_err(|kind| LexError { kind, offset: at })?;
        Ok(Event::Unit { name, unit })
    }

    fn expect_end(lx: &mut Lexer<'a>) -> LexResult<()> {
        lx.skip_blanks();
        if lx.at_end() {
            Ok(())
        } else {
            Err(LexError {
                kind: ErrorKind::UnexpectedCharacter,
                offset: lx.pos(),
            })
        }
    }

    /// `name[{labels}] value [timestamp] [# exemplar]`.
    fn sample(&mut self, mut lx: Lexer<'a>) -> LexResult<Sample<'a>> {
        let start = lx.pos();
        let outside = self.name_before_labels(&mut lx)?;
        let (name, labels, has_le) = self.sample_labels(&mut lx, outside)?;
        let name = name.ok_or(LexError {
            kind: ErrorKind::InvalidName,
            offset: start,
        })?;
        let after_brace = self.format == Format::Text && lx.prev() == Some(b'}');
        let (value, value_text) = Self::value(&mut lx, after_brace)?;
        let (timestamp, exemplar) = self.sample_tail(&mut lx)?;
        let (ty, suffix) = self.group.sample(name, has_le).map_err(|kind| LexError {
            kind,
            offset: start,
        })?;
        Ok(Sample {
            name,
            labels,
            value,
            value_text,
            timestamp,
            exemplar,
            ty,
            suffix,
            line: self.line_no,
        })
    }

    /// The metric name before the braces, if there is one (quoted, or bare).
    fn name_before_labels(&mut self, lx: &mut Lexer<'a>) -> LexResult<Option<Escaped<'a>>> {
        Ok(match lx.peek() {
            Some(b'{') => None,
            Some(b'"') => Some(lx.metric_name()?),
            _ => {
                let name = lx.bare_metric_name(self.last_name)?;
                self.last_name = name.raw();
                Some(name)
            }
        })
    }

    /// The optional `{…}` after a name; the name may come from inside the braces.
    fn sample_labels(
        &mut self,
        lx: &mut Lexer<'a>,
        outside: Option<Escaped<'a>>,
    ) -> LexResult<(Option<Escaped<'a>>, Labels<'a>, bool)> {
        match lx.peek() {
            Some(b'{') => {
                let set = lx.label_set(outside.is_none(), &mut self.label_names)?;
                Ok((outside.or(set.name), set.labels, set.has_le))
            }
            Some(b' ' | b'\t') if lx.rest().trim_start().starts_with('{') => {
                // `name {labels}`: Prometheus's text lexer reads blanks before the braces.
                lx.skip_blanks();
                self.sample_labels(lx, outside)
            }
            None | Some(b' ' | b'\t') => Ok((outside, Labels::empty(), false)),
            Some(_) => Err(LexError {
                kind: ErrorKind::InvalidName,
                offset: lx.pos(),
            }),
        }
    }

    /// The value after at least one blank, or right after the `}` of the labels (`a{b="c"}1`,
    /// which Prometheus's text lexer reads; OpenMetrics wants the blank).
    fn value(lx: &mut Lexer<'a>, after_brace: bool) -> LexResult<(f64, &'a str)> {
        let blank = lx.skip_blanks();
        if lx.at_end() {
            return Err(LexError {
                kind: ErrorKind::MissingValue,
                offset: lx.pos(),
            });
        }
        if !blank && !after_brace {
            return Err(LexError {
                kind: ErrorKind::UnexpectedCharacter,
                offset: lx.pos(),
            });
        }
        let at = lx.pos();
        let text = lx.word();
        let value = parse_value(text).ok_or(LexError {
            kind: ErrorKind::InvalidValue,
            offset: at,
        })?;
        Ok((value, text))
    }

    /// Optional timestamp, then optional exemplar.
    fn sample_tail(
        &mut self,
        lx: &mut Lexer<'a>,
    ) -> LexResult<(Option<Timestamp>, Option<Exemplar<'a>>)> {
        lx.skip_blanks();
        if lx.at_end() {
            return Ok((None, None));
        }
        let mut timestamp = None;
        if lx.peek() != Some(b'#') {
            let at = lx.pos();
            timestamp = Some(self.timestamp(lx.word()).ok_or(LexError {
                kind: ErrorKind::InvalidTimestamp,
                offset: at,
            })?);
            lx.skip_blanks();
            if lx.at_end() {
                return Ok((timestamp, None));
            }
        }
        if lx.peek() != Some(b'#') {
            return Err(LexError {
                kind: ErrorKind::UnexpectedCharacter,
                offset: lx.pos(),
            });
        }
        Ok((timestamp, Some(self.exemplar(lx)?)))
    }

    fn timestamp(&self, text: &str) -> Option<Timestamp> {
        match self.format {
            Format::Text => text.parse().ok().map(Timestamp::Millis),
            Format::OpenMetrics => parse_value(text)
                .filter(|v| v.is_finite())
                .map(Timestamp::Seconds),
        }
    }

    /// ` # {labels} value [timestamp]`, the cursor on `#`.
    fn exemplar(&mut self, lx: &mut Lexer<'a>) -> LexResult<Exemplar<'a>> {
        let bad = |offset| LexError {
            kind: ErrorKind::InvalidExemplar,
            offset,
        };
        lx.bump();
        lx.skip_blanks();
        if lx.peek() != Some(b'{') {
            return Err(bad(lx.pos()));
        }
        let labels = lx.label_set(false, &mut self.label_names)?.labels;
        lx.skip_blanks();
        let at = lx.pos();
        let value = parse_value(lx.word()).ok_or(bad(at))?;
        let timestamp = Self::exemplar_timestamp(lx)?;
        Ok(Exemplar {
            labels,
            value,
            timestamp,
        })
    }

    /// The exemplar's optional timestamp (finite seconds), which must end the line.
    fn exemplar_timestamp(lx: &mut Lexer<'a>) -> LexResult<Option<f64>> {
        lx.skip_blanks();
        if lx.at_end() {
            return Ok(None);
        }
        let at = lx.pos();
        let timestamp = parse_value(lx.word())
            .filter(|v| v.is_finite())
            .ok_or(LexError {
                kind: ErrorKind::InvalidExemplar,
                offset: at,
            })?;
        Self::expect_end(lx)?;
        Ok(Some(timestamp))
    }
}

impl EofState {
    fn max_seen(self) -> Self {
        match self {
            EofState::NotSeen => EofState::Seen,
            other => other,
        }
    }
}

impl<'a> Iterator for Parser<'a> {
    type Item = Result<Event<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            let Some((start, line)) = self.next_line() else {
                return self.finish();
            };
            match self.parse_line(start, line) {
                Ok(Some(event)) => return Some(Ok(event)),
                Ok(None) => continue,
                Err(e) => return Some(Err(self.error(e, line))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(page: &str, format: Format) -> Vec<Event<'_>> {
        let opts = ParseOptions::strict().with_format(format);
        Parser::new(page.as_bytes(), opts)
            .collect::<Result<_, _>>()
            .expect("valid page")
    }

    fn samples(page: &str, format: Format) -> Vec<Sample<'_>> {
        let only = |e| match e {
            Event::Sample(s) => Some(s),
            _ => None,
        };
        events(page, format).into_iter().filter_map(only).collect()
    }

    #[test]
    fn crlf_blank_lines_comments_and_no_final_newline() {
        let page = "# a comment\r\n\r\n   \n#\n# TYPEX not metadata\nm 1\r\nn{} 2";
        let s = samples(page, Format::Text);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].name, s[0].value, s[0].line),
            (Escaped::plain("m"), 1.0, 6)
        );
        assert_eq!(
            (s[1].name, s[1].value, s[1].labels.len()),
            (Escaped::plain("n"), 2.0, 0)
        );
    }

    #[test]
    fn text_timestamps_are_integer_millis() {
        let s = samples("a 1 1700000000000\nb 2 -5\n", Format::Text);
        assert_eq!(s[0].timestamp, Some(Timestamp::Millis(1_700_000_000_000)));
        assert_eq!(s[1].timestamp, Some(Timestamp::Millis(-5)));
        let bad = Parser::new(
            b"a 1 1.5\n",
            ParseOptions::lenient().with_format(Format::Text),
        )
        .next();
        assert_eq!(bad.unwrap().unwrap_err().kind, ErrorKind::InvalidTimestamp);
    }

    #[test]
    fn openmetrics_timestamps_and_exemplars() {
        let page = "# TYPE h histogram\nh_bucket{le=\"1\"} 3 1.5 # {trace_id=\"x\"} 0.5 1.25\n\
                    h_bucket{le=\"+Inf\"} 4 # {} 2\nh_count 4\nh_sum 7.5\n# EOF\n";
        let s = samples(page, Format::OpenMetrics);
        assert_eq!(s[0].timestamp, Some(Timestamp::Seconds(1.5)));
        let ex = s[0].exemplar.expect("exemplar");
        assert_eq!((ex.value, ex.timestamp), (0.5, Some(1.25)));
        assert_eq!(ex.labels.get("trace_id").unwrap(), "x");
        let ex = s[1].exemplar.expect("exemplar");
        assert!(ex.labels.is_empty() && ex.timestamp.is_none());
        assert_eq!(s[1].timestamp, None);
    }

    #[test]
    fn help_unescapes_lazily_and_keeps_text_after_one_blank() {
        let page = "# HELP m Line one\\nback\\\\slash \"quoted\"\n# HELP n\n# HELP n \n# HELP o  two spaces\n";
        let ev = events(page, Format::Text);
        let Event::Help { text, .. } = ev[0] else {
            panic!("{ev:?}")
        };
        assert_eq!(text.unescape(), "Line one\nback\\slash \"quoted\"");
        // `# HELP n` with nothing after the name sets no help; with a blank, an empty one.
        let Event::Help { name, text } = ev[1] else {
            panic!("{ev:?}")
        };
        assert_eq!((name.raw(), text.raw()), ("n", ""));
        let Event::Help { text, .. } = ev[2] else {
            panic!("{ev:?}")
        };
        assert_eq!(text, " two spaces");
    }

    #[test]
    fn every_type_word() {
        let words = [
            "counter",
            "gauge",
            "histogram",
            "summary",
            "untyped",
            "unknown",
            "info",
            "stateset",
            "gaugehistogram",
        ];
        for (i, w) in words.iter().enumerate() {
            let page = format!("# TYPE m{i} {w}\n");
            let ev = events(&page, Format::Text);
            let Event::Type { ty, .. } = ev[0] else {
                panic!()
            };
            assert_eq!(ty.as_str(), *w);
        }
    }

    #[test]
    fn quoted_names_in_both_positions() {
        let page = "# TYPE \"my.metric\" histogram\n{\"my.metric_bucket\",le=\"1\"} 1\n\"my.metric_count\" 1\n\
                    \"my.metric_sum\"{\"a.b\"=\"c\"} 2\n";
        let s = samples(page, Format::Text);
        assert_eq!(s[0].name, "my.metric_bucket");
        assert_eq!(s[0].labels.get("le").unwrap(), "1");
        assert_eq!(
            (s[1].ty, s[1].suffix),
            (MetricType::Histogram, crate::Suffix::Count)
        );
        assert_eq!(s[2].labels.get("a.b").unwrap(), "c");
        assert_eq!(s[2].family_name(), "my.metric");
    }

    #[test]
    fn values_and_blanks() {
        let s = samples(
            "a NaN\nb\t+Inf\nc  -Inf  \nd Inf\ne 1e+06\nf -1.5E-3\n",
            Format::Text,
        );
        assert!(s[0].value.is_nan());
        let rest: Vec<f64> = s[1..].iter().map(|s| s.value).collect();
        assert_eq!(
            rest,
            [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                1e6,
                -1.5e-3
            ]
        );
        assert_eq!(s[4].value_text, "1e+06");
        // Straight after `}`: Prometheus's text lexer reads the value; OpenMetrics wants a blank.
        assert_eq!(
            samples("g{a=\"1\"}-Inf\n", Format::Text)[0].value,
            f64::NEG_INFINITY
        );
        let om = b"g{a=\"1\"}2\n# EOF\n";
        let errors = Parser::new(om, ParseOptions::lenient().with_format(Format::OpenMetrics))
            .filter(Result::is_err)
            .count();
        assert_eq!(errors, 1);
    }

    #[test]
    fn eof_rules_in_openmetrics() {
        let page = b"a 1\n# EOF\nb 2\nc 3\n";
        let opts = ParseOptions::lenient().with_format(Format::OpenMetrics);
        let kinds: Vec<_> = Parser::new(page, opts)
            .map(|r| r.map_err(|e| (e.kind, e.line)))
            .collect();
        assert_eq!(kinds.len(), 4);
        assert_eq!(kinds[1], Ok(Event::Eof));
        assert_eq!(kinds[2], Err((ErrorKind::ContentAfterEof, 3)));
        assert!(matches!(kinds[3], Ok(Event::Sample(_))));
        let missing: Vec<_> = Parser::new(b"a 1\n", opts).collect();
        assert_eq!(missing[1].as_ref().unwrap_err().kind, ErrorKind::MissingEof);
        assert_eq!(missing[1].as_ref().unwrap_err().line, 2);
    }

    #[test]
    fn format_detection() {
        assert_eq!(Format::sniff(b"a 1\n# EOF\n"), Format::OpenMetrics);
        assert_eq!(Format::sniff(b"a 1\n"), Format::Text);
        assert_eq!(
            Format::from_content_type("application/openmetrics-text; version=1.0.0"),
            Format::OpenMetrics
        );
        assert_eq!(
            Format::from_content_type("text/plain; version=0.0.4"),
            Format::Text
        );
    }
}
