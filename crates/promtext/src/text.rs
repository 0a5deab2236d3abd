//! Borrowed strings as written in the exposition, with escapes decoded only on demand.
//!
//! [`Escaped`] is what the parser hands out for metric names, label names, label values and HELP
//! text: a `&str` slice of the input (without surrounding quotes) plus a flag saying whether it
//! contains backslash escapes. [`Escaped::unescape`] returns `Cow::Borrowed` unless there were
//! escapes, so the common case never allocates. `scan_quoted` finds the end of a quoted string
//! and validates its escapes; the parser runs it once, so `unescape` itself cannot fail.

use memchr::memchr;
use std::borrow::Cow;
use std::fmt;

/// A string borrowed from the input that may contain the escapes `\\`, `\"` and `\n`.
#[derive(Clone, Copy)]
pub struct Escaped<'a> {
    raw: &'a str,
    has_escapes: bool,
}

impl<'a> Escaped<'a> {
    /// A string known to contain no escapes (e.g. a bare metric name).
    pub fn plain(raw: &'a str) -> Self {
        Escaped {
            raw,
            has_escapes: false,
        }
    }

    /// A string as written between quotes; `has_escapes` must be true if it contains a backslash.
    pub fn new(raw: &'a str, has_escapes: bool) -> Self {
        Escaped { raw, has_escapes }
    }

    /// The text exactly as written (escapes not decoded, quotes excluded).
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// Whether [`Self::raw`] contains escape sequences.
    pub fn has_escapes(&self) -> bool {
        self.has_escapes
    }

    /// The decoded text; borrows unless there were escapes.
    pub fn unescape(&self) -> Cow<'a, str> {
        if self.has_escapes {
            Cow::Owned(self.chars().collect())
        } else {
            Cow::Borrowed(self.raw)
        }
    }

    /// The decoded characters, without allocating.
    pub fn chars(&self) -> Unescaped<'a> {
        Unescaped {
            rest: self.raw.chars(),
        }
    }

    /// `raw` with `n` ASCII bytes cut from the end (used to strip a family suffix such as `_sum`).
    pub(crate) fn strip_suffix_len(&self, n: usize) -> Self {
        let end = self.raw.len().saturating_sub(n);
        let raw = self.raw.get(..end).unwrap_or(self.raw);
        Escaped {
            raw,
            has_escapes: self.has_escapes,
        }
    }
}

impl PartialEq for Escaped<'_> {
    fn eq(&self, other: &Self) -> bool {
        if !self.has_escapes && !other.has_escapes {
            return self.raw == other.raw;
        }
        self.chars().eq(other.chars())
    }
}

impl Eq for Escaped<'_> {}

impl PartialEq<str> for Escaped<'_> {
    fn eq(&self, other: &str) -> bool {
        if self.has_escapes {
            self.chars().eq(other.chars())
        } else {
            self.raw == other
        }
    }
}

impl PartialEq<&str> for Escaped<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.unescape(), f)
    }
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.unescape())
    }
}

/// Iterator over the decoded characters of an [`Escaped`].
#[derive(Debug, Clone)]
pub struct Unescaped<'a> {
    rest: std::str::Chars<'a>,
}

impl Iterator for Unescaped<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c != '\\' {
            return Some(c);
        }
        // Validated input only has `\\`, `\"`, `\n`; anything else is kept literally.
        match self.rest.clone().next() {
            Some('\\') | Some('"') => self.rest.next(),
            Some('n') => {
                self.rest.next();
                Some('\n')
            }
            _ => Some('\\'),
        }
    }
}

/// Why a quoted string could not be scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuoteError {
    /// No closing quote before the end of the line.
    Unterminated,
}

/// Scans a quoted string whose content starts at `start` (just after the opening `"`).
/// Returns the offset of the closing quote and whether escapes were seen.
pub(crate) fn scan_quoted(b: &[u8], start: usize) -> Result<(usize, bool), QuoteError> {
    let mut i = start;
    let mut escaped = false;
    loop {
        let rest = b.get(i..).unwrap_or_default();
        let Some(k) = find_quote_or_backslash(rest) else {
            return Err(QuoteError::Unterminated);
        };
        let j = i + k;
        if b[j] == b'"' {
            return Ok((j, escaped));
        }
        // Prometheus's lexers take a backslash and whatever follows it as one unit (only `\\`,
        // `\"` and `\n` are decoded; `\z` stays as written): OpenMetrics' own suite calls
        // `"b\\a\z"` valid.
        match b.get(j + 1) {
            Some(_) => {
                escaped = true;
                i = j + 2;
            }
            None => return Err(QuoteError::Unterminated),
        }
    }
}

/// The first `"` or `\\`, eight bytes at a time (SWAR): label values are mostly short, where
/// this beats the setup cost of a vectorised search.
fn find_quote_or_backslash(b: &[u8]) -> Option<usize> {
    let chunks = b.chunks_exact(8);
    let tail = chunks.remainder();
    for (n, chunk) in chunks.enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let hits = byte_hits(w, b'"') | byte_hits(w, b'\\');
        if hits != 0 {
            return Some(n * 8 + (hits.trailing_zeros() / 8) as usize);
        }
    }
    let done = b.len() - tail.len();
    tail.iter()
        .position(|&c| c == b'"' || c == b'\\')
        .map(|k| done + k)
}

/// High bit set in each byte of `w` equal to `c` (exact for the lowest such byte, which is all
/// the caller uses: borrows only cause false hits above a true one).
fn byte_hits(w: u64, c: u8) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LOW * u64::from(c));
    x.wrapping_sub(LOW) & !x & HIGH
}

/// Whether unquoted text (HELP) holds escapes; every backslash escapes what follows it.
pub(crate) fn check_escapes(b: &[u8]) -> bool {
    let mut i = 0;
    let mut escaped = false;
    while let Some(k) = memchr(b'\\', b.get(i..).unwrap_or_default()) {
        let j = i + k;
        // As in label values: any escape is read (the unknown kept as written), and a lone
        // backslash at the end is text.
        escaped = true;
        i = j + 2;
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_borrows_without_escapes() {
        let e = Escaped::plain("abc");
        assert!(matches!(e.unescape(), Cow::Borrowed("abc")));
    }

    #[test]
    fn unescape_decodes_the_three_escapes() {
        let e = Escaped::new(r#"a\\b\"c\nd"#, true);
        assert_eq!(e.unescape(), "a\\b\"c\nd");
        assert_eq!(e, "a\\b\"c\nd");
        assert_eq!(e, Escaped::new("a\\\\b\\\"c\\nd", true));
        assert_ne!(e, Escaped::plain("a\\\\b"));
    }

    #[test]
    fn scan_quoted_finds_end_and_rejects_bad_escapes() {
        assert_eq!(scan_quoted(br#""ab\"c" x"#, 1), Ok((6, true)));
        assert_eq!(scan_quoted(br#""abc""#, 1), Ok((4, false)));
        // Unknown escapes are read and kept as written, as Prometheus's lexers do.
        assert_eq!(scan_quoted(br#""a\tb""#, 1), Ok((5, true)));
        assert_eq!(Escaped::new(r"a\tb\z", true).unescape(), r"a\tb\z");
        assert_eq!(scan_quoted(br#""abc"#, 1), Err(QuoteError::Unterminated));
        assert_eq!(scan_quoted(br#""ab\"#, 1), Err(QuoteError::Unterminated));
    }

    #[test]
    fn swar_search_finds_the_first_hit_anywhere() {
        for len in 0..40 {
            for at in 0..len {
                for c in [b'"', b'\\'] {
                    let mut b = vec![b'a'; len];
                    b[at] = c;
                    if at + 1 < len {
                        b[at + 1] = b'"'; // a later hit must not win
                    }
                    assert_eq!(find_quote_or_backslash(&b), Some(at), "len {len} at {at}");
                }
            }
            assert_eq!(find_quote_or_backslash(&vec![0x22 ^ 0x80; len]), None);
        }
    }

    #[test]
    fn check_escapes_in_help_text() {
        assert!(!check_escapes(br"plain"));
        assert!(check_escapes(br"a\\b\nc"));
        assert!(check_escapes(br"a\x"));
        assert!(check_escapes(br"trailing\"));
    }

    #[test]
    fn strip_suffix_len_cuts_ascii_bytes() {
        let e = Escaped::plain("x_sum");
        assert_eq!(e.strip_suffix_len(4), "x");
        assert_eq!(e.strip_suffix_len(99), "");
    }
}
