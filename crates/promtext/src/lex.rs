//! Byte-level lexing of one line: names, label sets, values, timestamps, exemplars.
//!
//! [`Lexer`] walks a single line (already checked to be UTF-8, terminator removed) with a byte
//! cursor. Every token it returns borrows from the line; errors are a [`LexError`]: an
//! [`ErrorKind`] and the byte offset in the line, which the parser turns into a `ParseError`.
//! The same label-pair code serves the parser (validating) and the lazy
//! [`crate::labels::Labels`] iterator (re-reading already validated text), so the two cannot
//! disagree.

use crate::error::ErrorKind;
use crate::labels::Labels;
use crate::text::{Escaped, QuoteError, scan_quoted};
use std::collections::HashSet;

/// An error inside a line: what, and at which byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LexError {
    pub kind: ErrorKind,
    pub offset: usize,
}

pub(crate) type LexResult<T> = Result<T, LexError>;

fn err<T>(kind: ErrorKind, offset: usize) -> LexResult<T> {
    Err(LexError { kind, offset })
}

/// Bytes allowed in a bare metric name: `[a-zA-Z0-9_:]`.
const METRIC_NAME: [bool; 256] = name_table(true);
/// Bytes allowed in a bare label name: `[a-zA-Z0-9_]`.
const LABEL_NAME: [bool; 256] = name_table(false);

const fn name_table(colon: bool) -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || (colon && b == b':');
        c += 1;
    }
    t
}

/// A label set as lexed: optional metric name inside the braces, the pairs, and what the
/// parser's validation needs to know.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LabelSet<'a> {
    pub name: Option<Escaped<'a>>,
    pub labels: Labels<'a>,
    pub has_le: bool,
}

/// A cursor over one line.
#[derive(Debug, Clone)]
pub(crate) struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(s: &'a str) -> Self {
        Lexer { s, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    /// The byte before the cursor.
    pub fn prev(&self) -> Option<u8> {
        self.pos.checked_sub(1).map(|i| self.s.as_bytes()[i])
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    pub fn bump(&mut self) {
        self.pos += 1;
    }

    /// `s[a..b]`; every offset the lexer produces is at an ASCII byte or the end, so this is a
    /// char boundary, but an empty string (never a panic) is returned if that were ever wrong.
    fn slice(&self, a: usize, b: usize) -> &'a str {
        self.s.get(a..b).unwrap_or_default()
    }

    /// Skips spaces and tabs; returns whether any were skipped.
    pub fn skip_blanks(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// The text from the cursor to the end of the line.
    pub fn rest(&self) -> &'a str {
        self.slice(self.pos.min(self.s.len()), self.s.len())
    }

    /// The next run of non-blank bytes (possibly empty).
    pub fn word(&mut self) -> &'a str {
        self.advance_while(|c| !matches!(c, b' ' | b'\t'))
    }

    fn scan_table(&mut self, table: &[bool; 256]) -> &'a str {
        self.advance_while(|c| table[c as usize])
    }

    /// Moves past the bytes matching `keep` and returns them (iterating a slice, which spares a
    /// bounds check per byte).
    fn advance_while(&mut self, keep: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        let rest = self.s.as_bytes().get(start..).unwrap_or_default();
        let len = rest.iter().position(|&c| !keep(c)).unwrap_or(rest.len());
        self.pos = start + len;
        self.slice(start, self.pos)
    }

    /// A quoted string at the cursor (which is on the opening `"`).
    fn quoted(&mut self, unterminated: ErrorKind) -> LexResult<Escaped<'a>> {
        let start = self.pos + 1;
        match scan_quoted(self.s.as_bytes(), start) {
            Ok((end, escaped)) => {
                self.pos = end + 1;
                Ok(Escaped::new(self.slice(start, end), escaped))
            }
            Err(QuoteError::Unterminated) => err(unterminated, self.s.len()),
        }
    }

    /// A metric name, bare (`[a-zA-Z_:][a-zA-Z0-9_:]*`) or quoted (`"any.utf8"`).
    pub fn metric_name(&mut self) -> LexResult<Escaped<'a>> {
        match self.peek() {
            Some(b'"') => self.quoted(ErrorKind::UnterminatedQuotedName),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' || c == b':' => {
                Ok(Escaped::plain(self.scan_table(&METRIC_NAME)))
            }
            _ => err(ErrorKind::InvalidName, self.pos),
        }
    }

    /// A metric name that is not quoted. `hint` is a bare name read before: most lines repeat the
    /// previous name, and one comparison is cheaper than checking every byte again.
    pub fn bare_metric_name(&mut self, hint: &str) -> LexResult<Escaped<'a>> {
        let b = self.s.as_bytes();
        let end = self.pos + hint.len();
        let same = !hint.is_empty() && b.get(self.pos..end) == Some(hint.as_bytes());
        if same && !b.get(end).is_some_and(|c| METRIC_NAME[*c as usize]) {
            let name = self.slice(self.pos, end);
            self.pos = end;
            return Ok(Escaped::plain(name));
        }
        self.metric_name()
    }

    /// A label name, bare (`[a-zA-Z_][a-zA-Z0-9_]*`) or quoted.
    fn label_name(&mut self) -> LexResult<Escaped<'a>> {
        match self.peek() {
            Some(b'"') => self.quoted(ErrorKind::UnterminatedQuotedName),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let name = self.scan_table(&LABEL_NAME);
                match self.peek() {
                    None | Some(b' ' | b'\t' | b'=') => Ok(Escaped::plain(name)),
                    Some(_) => err(ErrorKind::InvalidLabelName, self.pos),
                }
            }
            _ => err(ErrorKind::InvalidLabelName, self.pos),
        }
    }

    /// Consumes `want` after optional blanks, or fails with `UnexpectedCharacter`
    /// (`UnterminatedLabelSet` at the end of the line).
    fn expect(&mut self, want: u8) -> LexResult<()> {
        self.skip_blanks();
        match self.peek() {
            Some(c) if c == want => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => err(ErrorKind::UnexpectedCharacter, self.pos),
            None => err(ErrorKind::UnterminatedLabelSet, self.pos),
        }
    }

    /// One `name="value"` pair at the cursor.
    pub fn label_pair(&mut self) -> LexResult<(Escaped<'a>, Escaped<'a>)> {
        let name = self.label_name()?;
        if self.s.as_bytes().get(self.pos..self.pos + 2) == Some(b"=\"") {
            self.pos += 1; // the common `name="` with no blanks
            return Ok((name, self.quoted(ErrorKind::UnterminatedLabelValue)?));
        }
        // Blanks around `=` (`quantile = "0.5"`), as Prometheus's text lexer reads them.
        self.skip_blanks();
        self.expect(b'=')?;
        self.skip_blanks();
        match self.peek() {
            Some(b'"') => Ok((name, self.quoted(ErrorKind::UnterminatedLabelValue)?)),
            Some(_) => err(ErrorKind::UnexpectedCharacter, self.pos),
            None => err(ErrorKind::UnterminatedLabelSet, self.pos),
        }
    }

    /// Skips blanks and one separating comma; returns false at the end of the text.
    pub fn next_pair_start(&mut self) -> bool {
        self.skip_blanks();
        if self.peek() == Some(b',') {
            self.pos += 1;
            self.skip_blanks();
        }
        !self.at_end()
    }

    /// `{…}` at the cursor. With `name_allowed`, a leading bare quoted string is the metric name
    /// (`{"my.metric",le="1"}`). `names` is scratch space for the duplicate-label check.
    pub fn label_set(
        &mut self,
        name_allowed: bool,
        names: &mut LabelNames<'a>,
    ) -> LexResult<LabelSet<'a>> {
        self.pos += 1; // '{'
        self.skip_blanks();
        let name = if name_allowed {
            self.name_in_braces()?
        } else {
            None
        };
        let start = self.pos;
        let mut name = name;
        let has_le = self.label_pairs(names, name_allowed, &mut name)?;
        let labels = Labels::new(self.slice(start, self.pos), names.len());
        self.pos += 1; // '}'
        Ok(LabelSet {
            name,
            labels,
            has_le,
        })
    }

    /// The `name="value"` pairs up to the closing `}` (the cursor stops on it), each name once;
    /// true if one is `le`. Where `name_allowed` and no name is set yet, a quoted string between
    /// the pairs that no `=` follows is the metric name (`{a="1","my.metric"}`: Prometheus's text
    /// parser takes it in any position); [`crate::labels::LabelIter`] steps over it.
    fn label_pairs(
        &mut self,
        names: &mut LabelNames<'a>,
        name_allowed: bool,
        name: &mut Option<Escaped<'a>>,
    ) -> LexResult<bool> {
        names.clear();
        let mut has_le = false;
        loop {
            self.skip_blanks();
            match self.peek() {
                Some(b'}') => break,
                None => return err(ErrorKind::UnterminatedLabelSet, self.pos),
                Some(_) => {}
            }
            if name_allowed
                && name.is_none()
                && let Some(quoted) = self.name_in_braces()?
            {
                *name = Some(quoted);
                continue;
            }
            let at = self.pos;
            let (label, _) = self.label_pair()?;
            // `__name__` is the label the metric name becomes: written as a label too, the series
            // has it twice, and Prometheus's storage refuses the scrape (or, with no name given,
            // its parser does).
            if !names.insert(label.raw()) || label.raw() == "__name__" {
                return err(ErrorKind::DuplicateLabel, at);
            }
            has_le |= label.raw() == "le";
            let blank = self.skip_blanks();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => break,
                // Pairs apart by a blank and no comma: Prometheus's text lexer reads them
                // (`{ quantile = "2.0" a = "b" }` in its own parser tests).
                Some(c) if blank && (c.is_ascii_alphabetic() || c == b'_' || c == b'"') => {}
                Some(_) => return err(ErrorKind::UnexpectedCharacter, self.pos),
                None => return err(ErrorKind::UnterminatedLabelSet, self.pos),
            }
        }
        Ok(has_le)
    }

    /// A quoted metric name as the first item in braces, if there is one (a quoted string that is
    /// not followed by `=`), consuming the comma after it.
    pub(crate) fn name_in_braces(&mut self) -> LexResult<Option<Escaped<'a>>> {
        if self.peek() != Some(b'"') {
            return Ok(None);
        }
        let save = self.pos;
        let name = self.quoted(ErrorKind::UnterminatedQuotedName)?;
        self.skip_blanks();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(Some(name))
            }
            Some(b'}') => Ok(Some(name)),
            _ => {
                // A quoted label name: rewind and let the pair loop read it.
                self.pos = save;
                Ok(None)
            }
        }
    }
}

/// The label names of one set so far, for the duplicate check: a list with a 64-bit filter on
/// (length, first and last byte) so full comparisons are rare, and a hash set once the set is
/// large, so a hostile line with a million labels stays linear. Reused across lines.
#[derive(Debug, Default)]
pub(crate) struct LabelNames<'a> {
    list: Vec<&'a str>,
    filter: u64,
    large: HashSet<&'a str>,
}

impl<'a> LabelNames<'a> {
    const SMALL: usize = 32;

    pub fn clear(&mut self) {
        self.list.clear();
        self.filter = 0;
        self.large.clear();
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Adds `name`; false if it was already there.
    pub fn insert(&mut self, name: &'a str) -> bool {
        if self.list.len() >= Self::SMALL {
            if self.large.is_empty() {
                self.large.extend(self.list.iter().copied());
            }
            if !self.large.insert(name) {
                return false;
            }
        } else {
            let bit = name_filter_bit(name);
            if self.filter & bit != 0 && self.list.contains(&name) {
                return false;
            }
            self.filter |= bit;
        }
        self.list.push(name);
        true
    }
}

/// One bit of a 64-bit filter for the duplicate-label check, from the name's length and ends.
fn name_filter_bit(name: &str) -> u64 {
    let b = name.as_bytes();
    let first = b.first().copied().unwrap_or(0) as usize;
    let last = b.last().copied().unwrap_or(0) as usize;
    1u64 << ((b.len() * 7 + first * 3 + last) & 63)
}

/// Parses a sample value: Go/Prometheus floats incl. `NaN`, `+Inf`, `-Inf`, `Inf`, `1e+06`.
pub(crate) fn parse_value(s: &str) -> Option<f64> {
    if let Some(v) = parse_simple_decimal(s.as_bytes()) {
        return Some(v);
    }
    // Rust accepts "inf", "infinity", "nan" in any case with an optional sign, like Go's
    // strconv.ParseFloat; hex floats and `_` separators (Go-only) are not accepted.
    s.parse::<f64>().ok()
}

/// Fast path for the most common shapes, `123`, `123.0`, `0.25`: at most 15 significant digits,
/// so the integer mantissa is exact and one division by an exact power of ten rounds correctly.
fn parse_simple_decimal(b: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut mant: u64 = 0;
    let mut digits = 0usize;
    let mut frac: Option<usize> = None;
    for &c in b {
        match c {
            b'0'..=b'9' => {
                mant = mant * 10 + u64::from(c - b'0');
                digits += 1;
                if let Some(f) = frac.as_mut() {
                    *f += 1;
                }
            }
            b'.' if frac.is_none() => frac = Some(0),
            _ => return None,
        }
    }
    if digits == 0 || digits > 15 {
        return None;
    }
    let scale = POW10.get(frac.unwrap_or(0))?;
    Some(mant as f64 / scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> LexResult<LabelSet<'_>> {
        let mut names = LabelNames::default();
        Lexer::new(s).label_set(true, &mut names)
    }

    #[test]
    fn metric_names_with_colons_and_quotes() {
        let mut l = Lexer::new("vllm:num_requests_running{");
        assert_eq!(l.metric_name().unwrap(), "vllm:num_requests_running");
        assert_eq!(l.peek(), Some(b'{'));
        let mut l = Lexer::new(r#""my.metric" 1"#);
        assert_eq!(l.metric_name().unwrap(), "my.metric");
        assert_eq!(
            Lexer::new("1abc").metric_name().unwrap_err().kind,
            ErrorKind::InvalidName
        );
    }

    #[test]
    fn label_set_variants() {
        let s = set(r#"{a="1",b="x\"y",}"#).unwrap();
        assert_eq!(s.labels.len(), 2);
        assert!(s.name.is_none() && !s.has_le);
        let s = set(r#"{"my.metric",le="1"}"#).unwrap();
        assert_eq!(s.name.unwrap(), "my.metric");
        assert!(s.has_le);
        let s = set(r#"{"label.name"="v"}"#).unwrap();
        assert!(s.name.is_none());
        assert_eq!(s.labels.get("label.name").unwrap(), "v");
        let s = set("{}").unwrap();
        assert!(s.labels.is_empty());
        let s = set(r#"{ a = "1" , b="2" }"#).unwrap();
        assert_eq!(s.labels.get("b").unwrap(), "2");
    }
    #[test]
    fn a_quoted_name_may_stand_between_the_pairs() {
        // As Prometheus's text parser reads it (prometheus/common's testTextParse case 10).
        let mut names = LabelNames::default();
        let mut lx = Lexer::new(r#"{labelname="value", "my.metric", b="2"}"#);
        let set = lx.label_set(true, &mut names).unwrap();
        assert_eq!(set.name.map(|n| n.raw()), Some("my.metric"));
        let pairs: Vec<(&str, &str)> = set
            .labels
            .iter()
            .map(|l| (l.name.raw(), l.value.raw()))
            .collect();
        assert_eq!(pairs, [("labelname", "value"), ("b", "2")]);
        assert_eq!(set.labels.len(), 2);
        // A second name, or a name where one is given before the braces, is refused.
        let mut lx = Lexer::new(r#"{"a", x="1", "b"}"#);
        assert!(lx.label_set(true, &mut names).is_err());
        let mut lx = Lexer::new(r#"{x="1", "b"}"#);
        assert!(lx.label_set(false, &mut names).is_err());
        // `__name__` as a label gives the series its name twice.
        let mut lx = Lexer::new(r#"{__name__="b"}"#);
        assert_eq!(
            lx.label_set(false, &mut names).unwrap_err().kind,
            ErrorKind::DuplicateLabel
        );
    }

    #[test]
    fn label_set_errors_point_at_the_culprit() {
        let e = |s: &str| set(s).unwrap_err();
        assert_eq!(
            e(r#"{a="1}"#),
            LexError {
                kind: ErrorKind::UnterminatedLabelValue,
                offset: 6
            }
        );
        assert_eq!(e(r#"{a="1",a="2"}"#).kind, ErrorKind::DuplicateLabel);
        assert_eq!(e(r#"{a="1",a="2"}"#).offset, 7);
        assert_eq!(
            e(r#"{a=1}"#),
            LexError {
                kind: ErrorKind::UnexpectedCharacter,
                offset: 3
            }
        );
        assert_eq!(
            e(r#"{a.b="1"}"#),
            LexError {
                kind: ErrorKind::InvalidLabelName,
                offset: 2
            }
        );
        assert_eq!(e(r#"{a="1"b="2"}"#).kind, ErrorKind::UnexpectedCharacter);
        // A blank and no comma between pairs is read, as Prometheus's text lexer reads it.
        assert_eq!(
            set(r#"{a="1" b="2"}"#).unwrap().labels.get("b").unwrap(),
            "2"
        );
        assert_eq!(e(r#"{a="1","#).kind, ErrorKind::UnterminatedLabelSet);
        assert_eq!(e(r#"{,}"#).kind, ErrorKind::InvalidLabelName);
        assert_eq!(e(r#"{"x"="#).kind, ErrorKind::UnterminatedLabelSet);
    }

    #[test]
    fn duplicate_check_scales_past_the_small_list() {
        let mut names = LabelNames::default();
        let owned: Vec<String> = (0..100).map(|i| format!("l{i}")).collect();
        assert!(owned.iter().all(|n| names.insert(n)));
        assert!(!names.insert("l5") && !names.insert("l99"));
        assert_eq!(names.len(), 100);
        names.clear();
        assert!(names.insert("l5"));
        let many: String = (0..50_000).map(|i| format!("l{i}=\"v\",")).collect();
        let dup = format!("{{{many}l4321=\"x\"}}");
        assert_eq!(set(&dup).unwrap_err().kind, ErrorKind::DuplicateLabel);
        assert_eq!(set(&format!("{{{many}}}")).unwrap().labels.len(), 50_000);
    }

    #[test]
    fn values_in_every_spelling() {
        let cases: &[(&str, f64)] = &[
            ("0", 0.0),
            ("3.0", 3.0),
            ("0.4567164179104478", 0.4567164179104478),
            ("1e+06", 1e6),
            ("5.052943e+06", 5052943.0),
            ("1.747360800123456e+09", 1747360800.123456),
            ("-0.5", -0.5),
            ("1E-5", 1e-5),
            ("+Inf", f64::INFINITY),
            ("Inf", f64::INFINITY),
            ("-Inf", f64::NEG_INFINITY),
            ("9223372036854775794", 9223372036854775794.0),
            ("3.471000", 3.471),
            ("123456789012345.6", 123456789012345.6),
        ];
        for (s, want) in cases {
            assert_eq!(parse_value(s), Some(*want), "{s}");
        }
        assert!(parse_value("NaN").unwrap().is_nan());
        for bad in ["", "abc", "1.2.3", "1e", "0x1p3", "--1", "."] {
            assert_eq!(parse_value(bad), None, "{bad}");
        }
    }

    #[test]
    fn simple_decimal_agrees_with_std() {
        for s in [
            "0.1",
            "0.3",
            "2560.0",
            "123.456",
            "999999999999999",
            "0.00000000000001",
        ] {
            assert_eq!(parse_simple_decimal(s.as_bytes()), s.parse().ok(), "{s}");
        }
        // Too long for the fast path: left to the std parser.
        assert_eq!(parse_simple_decimal(b"0.4567164179104478"), None);
        assert_eq!(parse_simple_decimal(b"1234567890123456"), None);
    }
}
