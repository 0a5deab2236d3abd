//! Prometheus 3 syntax that `promql-parser` 0.11 does not read, lowered before parsing to text
//! it does (the same length, so every offset holds), with what was lowered kept to be said.
//! Facts from Prometheus's own parser (prometheus/prometheus `promql/parser/{lex.go,
//! generated_parser.y,parse.go}` and `cmd/prometheus/main.go` at `d15adb9`, 2026-08-21):
//!
//! - `anchored` and `smoothed` after a range (`rate(x[5m] anchored)`): experimental since 3.7,
//!   behind `--enable-feature=promql-extended-range-selectors`. Lowered to spaces.
//! - The same words as metric or label names (`sum by (anchored) (x)`), which Prometheus's
//!   grammar allows (`metric_identifier`, `maybe_label`): renamed to a twin of the same length
//!   the parser takes as a plain name, and named back in what is said ([`restore`]).
//! - `</` and `>/`, the native-histogram trim operators (3.11, no flag): lowered to `<` and `>`,
//!   which bind alike; the operands' names and labels are what the rules read.
//!
//! - Duration expressions (`[5m * 2]`, `offset -(5)`; on by default since 3.14) whose value is
//!   known are written out as the literal they are ([`durations`]); those holding what only the
//!   query knows (`step()`, `range()`) are told from a syntax error ([`duration_expression`]) and
//!   said as not checked.
//!
//! And what Prometheus refuses but `promql-parser` reads is refused ([`Lowered::refused`]).

use super::dialect::outside_strings;
use super::parse::PromqlError;

/// An expression as the parser is given it, and the experimental syntax taken out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    pub text: String,
    /// Range modifiers taken out: the byte offset and the word.
    pub modifiers: Vec<(usize, &'static str)>,
    /// What Prometheus's parser refuses though `promql-parser` reads it ([`durations`]).
    pub refused: Option<PromqlError>,
}

/// The feature flag a range modifier needs.
pub const RANGE_MODIFIERS_FLAG: &str = "promql-extended-range-selectors";
/// The feature flag of `fill`, `fill_left` and `fill_right` on binary operators.
pub const FILL_FLAG: &str = "promql-binop-fill-modifiers";
/// The feature flag of Prometheus's experimental functions and aggregations.
pub const FUNCTIONS_FLAG: &str = "promql-experimental-functions";

/// Functions and aggregations Prometheus parses only with [`FUNCTIONS_FLAG`] (`Experimental:
/// true` in `promql/parser/functions.go`; `IsExperimentalAggregator` in `lex.go`).
pub const EXPERIMENTAL: &[&str] = &[
    "double_exponential_smoothing",
    "histogram_quantiles",
    "info",
    "limit_ratio",
    "limitk",
    "mad_over_time",
    "max_of",
    "min_of",
    "sort_by_label",
    "sort_by_label_desc",
    "ts_of_first_over_time",
    "ts_of_last_over_time",
    "ts_of_max_over_time",
    "ts_of_min_over_time",
];

const WORDS: [(&str, &str); 2] = [("anchored", "anch0red"), ("smoothed", "sm0othed")];

/// `expr` lowered; outside string literals and comments only.
pub fn lower(expr: &str) -> Lowered {
    let code = outside_strings(expr);
    let bytes = code.as_bytes();
    let mut text = expr.as_bytes().to_vec();
    let mut modifiers = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'<' | b'>' if bytes.get(i + 1) == Some(&b'/') => {
                text[i + 1] = b' ';
                i += 2;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b':' => {
                let end = i + bytes[i..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b':')
                    .count();
                let word = &code[i..end];
                if let Some((w, twin)) = WORDS.iter().find(|(w, _)| w.eq_ignore_ascii_case(word)) {
                    if after_range(&code[..i]) {
                        text[i..end].fill(b' ');
                        modifiers.push((i, *w));
                    } else {
                        text[i..end].copy_from_slice(twin.as_bytes());
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let refused = durations(expr, &mut text)
        .err()
        .map(|(offset, message)| PromqlError {
            message,
            offset: Some(offset),
        });
    Lowered {
        // Only ASCII bytes were written over ASCII bytes.
        text: String::from_utf8(text).unwrap_or_else(|_| expr.to_owned()),
        modifiers,
        refused,
    }
}

/// Keywords that an operand follows, so a word after them starts an operand.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "atan2",
];

/// Whether what comes before ends a selector that a modifier may follow: a range's `]`, a
/// matcher list's `}`, a metric name (`metric smoothed`), or the value of an `@` or `offset`
/// (`metric @ 100 smoothed`). After `(`, `,`, `{`, an operator or a keyword, the word is a name.
fn after_range(before: &str) -> bool {
    let t = before.trim_end();
    let Some(last) = t.chars().last() else {
        return false;
    };
    if matches!(last, ']' | '}') {
        return true;
    }
    if last == ')' {
        // `@ start()`, `@ end()`.
        return ["start()", "end()"].iter().any(|f| {
            t.strip_suffix(f)
                .is_some_and(|b| b.trim_end().ends_with('@'))
        });
    }
    if !(last.is_ascii_alphanumeric() || last == '_' || last == ':' || last == '.') {
        return false;
    }
    let word: String = t
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.'))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    !KEYWORDS.contains(&word.to_ascii_lowercase().as_str())
}

/// `text` with the renamed words named as written (in a finding's message, metric, suggestion).
pub fn restore(text: &str) -> String {
    WORDS
        .iter()
        .fold(text.to_owned(), |t, (w, twin)| t.replace(twin, w))
}

/// Whether `expr`, which does not parse, holds a duration expression: arithmetic or a call
/// inside a range's brackets, or after `offset`.
pub fn duration_expression(expr: &str) -> bool {
    let code = outside_strings(expr);
    let expr = code.as_str();
    let mut rest = expr;
    while let Some(open) = rest.find('[') {
        let inner = &rest[open + 1..];
        let Some(close) = inner.find(']') else { break };
        if inner[..close].contains(['+', '-', '*', '/', '%', '^', '(']) {
            return true;
        }
        rest = &inner[close..];
    }
    let lower = expr.to_ascii_lowercase();
    lower.match_indices("offset").any(|(at, _)| {
        let after = lower[at + 6..].trim_start().trim_start_matches(['+', '-']);
        let word = after.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        after.starts_with('(') || (word.len() < after.len() && word.starts_with('('))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_modifiers_are_taken_out_and_kept() {
        let l = lower("rate(x[5m] anchored) + increase(y[1h] offset 5m smoothed)");
        assert_eq!(
            l.text,
            "rate(x[5m]         ) + increase(y[1h] offset 5m         )"
        );
        assert_eq!(l.modifiers, [(11, "anchored"), (48, "smoothed")]);
    }

    #[test]
    fn modifiers_follow_any_selector() {
        // promqltest's extended_vectors.test.
        for expr in [
            "metric smoothed",
            "metric @ 100 smoothed",
            "metric offset -100 smoothed",
            "metric @ end() anchored",
            "x{a=\"b\"} anchored",
        ] {
            assert_eq!(lower(expr).modifiers.len(), 1, "{expr}");
        }
        for expr in [
            "x and smoothed",
            "sum without (anchored) (x)",
            "x + on(smoothed) y",
        ] {
            assert!(lower(expr).modifiers.is_empty(), "{expr}");
        }
    }

    #[test]
    fn the_words_as_names_are_renamed_and_restored() {
        let l = lower("sum by (anchored) (smoothed{anchored=\"anchored\"})");
        assert_eq!(
            l.text,
            "sum by (anch0red) (sm0othed{anch0red=\"anchored\"})"
        );
        assert!(l.modifiers.is_empty());
        assert_eq!(
            restore("no inventory has `sm0othed`"),
            "no inventory has `smoothed`"
        );
    }

    #[test]
    fn trim_operators_bind_as_comparisons() {
        assert_eq!(lower("h </ 5 and h >/ 1").text, "h <  5 and h >  1");
        assert_eq!(lower("a{x=\"</\"} # >/").text, "a{x=\"</\"} # >/");
    }

    #[test]
    fn duration_expressions_are_told_apart() {
        assert!(duration_expression("rate(x[5m+1m])"));
        assert!(duration_expression("x[1h:5m*2]"));
        assert!(duration_expression("x offset (1h - 5m)"));
        assert!(duration_expression("rate(x[step()])"));
        assert!(duration_expression("x offset min_of(range(), 8s)"));
        assert!(!duration_expression("rate(x[5m])"));
        assert!(!duration_expression("sum(x) +"));
    }
}

/// The largest duration Prometheus holds, in seconds (`time.Duration`: int64 nanoseconds).
const MAX_DURATION_S: f64 = 9_223_372_036.854_775;

/// Checks what Prometheus's parser refuses and `promql-parser` reads (a number literal out of
/// float64's range, a duration out of `time.Duration`'s, a range that is negative or divides by
/// zero, a range written after `@` or `offset`), and writes each duration expression whose value
/// is known (`[5m * 2]`, `offset -(5)`) as the literal it is, padded to the same length, so the
/// expression is read and checked like any other. An error is the byte offset and why.
pub fn durations(expr: &str, text: &mut [u8]) -> Result<(), (usize, String)> {
    // Outside strings the blanked text is the expression, byte for byte.
    let code = outside_strings(expr);
    let expr = code.as_str();
    let spans = scan(expr);
    for (at, len) in spans.numbers {
        let lit = &expr[at..at + len];
        if lit.parse::<f64>().is_ok_and(f64::is_infinite) {
            return Err((
                at,
                format!("number literal `{}` is out of range", short(lit)),
            ));
        }
    }
    for s in spans.durations {
        let body = &expr[s.from..s.to];
        let value = eval(body).map_err(|why| (s.from, why))?;
        if let Some(v) = value {
            if v.abs() > MAX_DURATION_S {
                return Err((
                    s.from,
                    format!("duration `{}` is out of range", short(body)),
                ));
            }
            // A negative literal is refused as it is read; an expression only when evaluated.
            let literal_only = !body
                .trim()
                .trim_start_matches(['-', '+'])
                .contains(['+', '-', '*', '/', '%', '^', '(']);
            if s.range && v < 0.0 && literal_only {
                return Err((
                    s.from,
                    format!("a range must be positive, not `{}`", short(body)),
                ));
            }
            if let Some(lit) = literal(v).filter(|l| l.len() <= body.len() && l != body.trim()) {
                text[s.from..s.to].fill(b' ');
                text[s.from..s.from + lit.len()].copy_from_slice(lit.as_bytes());
            }
        }
    }
    match spans.range_after_modifier {
        Some(at) => Err((
            at,
            "a range is written before `@` and `offset` (`x[5m] @ end()`), not after".to_owned(),
        )),
        None => Ok(()),
    }
}

fn short(s: &str) -> String {
    match s.char_indices().nth(24) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// `v` seconds as a Prometheus duration literal, in the largest unit that holds it exactly.
fn literal(v: f64) -> Option<String> {
    let ms = (v * 1000.0).round();
    if (ms / 1000.0 - v).abs() > 1e-9 || ms.abs() > 9e15 {
        return None;
    }
    let ms = ms as i64;
    let (sign, ms) = (if ms < 0 { "-" } else { "" }, ms.abs());
    Some(match ms {
        0 => "0s".to_owned(),
        _ if ms % 86_400_000 == 0 => format!("{sign}{}d", ms / 86_400_000),
        _ if ms % 3_600_000 == 0 => format!("{sign}{}h", ms / 3_600_000),
        _ if ms % 60_000 == 0 => format!("{sign}{}m", ms / 60_000),
        _ if ms % 1000 == 0 => format!("{sign}{}s", ms / 1000),
        _ => format!("{sign}{ms}ms"),
    })
}

/// A duration to evaluate: a range's or a subquery's part, or what follows `offset`.
struct DurationSpan {
    from: usize,
    to: usize,
    /// A range (or a subquery's range), which must be positive.
    range: bool,
}

#[derive(Default)]
struct Spans {
    /// Number literals outside strings, names and brackets.
    numbers: Vec<(usize, usize)>,
    durations: Vec<DurationSpan>,
    /// Where a range (not a subquery) opens after an `@` or `offset` modifier.
    range_after_modifier: Option<usize>,
}

/// The number literals, duration spans and misplaced ranges of `expr` (its strings blanked by
/// [`outside_strings`]), outside comments.
fn scan(expr: &str) -> Spans {
    let b = expr.as_bytes();
    let mut out = Spans::default();
    let mut i = 0;
    let mut modifier_before = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'[' => {
                let Some(close) = out.brackets(expr, i, modifier_before) else {
                    break;
                };
                i = close + 1;
                modifier_before = false;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b':' => {
                let end = i + b[i..]
                    .iter()
                    .take_while(|x| x.is_ascii_alphanumeric() || **x == b'_' || **x == b':')
                    .count();
                if expr[i..end].eq_ignore_ascii_case("offset") {
                    let (from, to) = offset_span(b, end);
                    if to > from {
                        out.durations.push(DurationSpan {
                            from,
                            to,
                            range: false,
                        });
                    }
                    modifier_before = true;
                    i = to;
                    continue;
                }
                i = end;
                continue;
            }
            b'@' => {
                let (_, to) = offset_span(b, i + 1);
                modifier_before = true;
                i = to.max(i + 1);
                continue;
            }
            c if c.is_ascii_digit()
                || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                let end = number_end(expr, i);
                out.numbers.push((i, end - i));
                i = end;
                continue;
            }
            c if !c.is_ascii_whitespace() => modifier_before = false,
            _ => {}
        }
        i += 1;
    }
    out
}

impl Spans {
    /// The range or subquery whose `[` is at `open`: its parts as duration spans, and whether it
    /// is a range after a modifier. The index of its `]`; `None` when it is not closed.
    fn brackets(&mut self, expr: &str, open: usize, modifier_before: bool) -> Option<usize> {
        let close = matching(expr.as_bytes(), open, b'[', b']');
        if close == expr.len() {
            return None;
        }
        let inner = &expr[open + 1..close];
        if modifier_before && !inner.contains(':') && self.range_after_modifier.is_none() {
            self.range_after_modifier = Some(open);
        }
        let mut from = open + 1;
        for (k, part) in inner.split(':').enumerate() {
            if !part.trim().is_empty() {
                self.durations.push(DurationSpan {
                    from,
                    to: from + part.len(),
                    range: k == 0,
                });
            }
            from += part.len() + 1;
        }
        Some(close)
    }
}

/// Where the number literal starting at `at` ends (`1e+10`, `0x1f`, `5m`).
fn number_end(expr: &str, at: usize) -> usize {
    let b = expr.as_bytes();
    let end = at
        + b[at..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric() || **x == b'.' || **x == b'_')
            .count();
    let e_sign = end < b.len()
        && matches!(b[end], b'+' | b'-')
        && matches!(b[end - 1], b'e' | b'E')
        && !expr[at..end].starts_with("0x");
    if e_sign {
        end + 1
            + b[end + 1..]
                .iter()
                .take_while(|x| x.is_ascii_digit())
                .count()
    } else {
        end
    }
}

/// The index of the bracket closing the one at `open`, or the length where none does (strings
/// already blanked).
fn matching(b: &[u8], open: usize, o: u8, c: u8) -> usize {
    let mut depth = 0;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            x if x == o => depth += 1,
            x if x == c => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// What follows `offset` (or `@`) from `at`: signs, then a parenthesised group, a call
/// (`step()`, `start()`) or a literal.
fn offset_span(b: &[u8], at: usize) -> (usize, usize) {
    let mut i = at;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let from = i;
    while i < b.len() && matches!(b[i], b'+' | b'-') {
        i += 1;
    }
    if i < b.len() && b[i] == b'(' {
        return (from, (matching(b, i, b'(', b')') + 1).min(b.len()));
    }
    let word = i + b[i..]
        .iter()
        .take_while(|x| x.is_ascii_alphanumeric() || **x == b'.' || **x == b'_')
        .count();
    let mut end = word;
    if end < b.len() && b[end] == b'(' {
        end = (matching(b, end, b'(', b')') + 1).min(b.len());
    }
    (from, end.min(b.len()))
}

/// A duration expression's value in seconds: `None` where it holds what is known only at query
/// time (`step()`, `range()`); an error for a division by zero or what is no duration.
fn eval(s: &str) -> Result<Option<f64>, String> {
    let mut p = Eval {
        s: s.as_bytes(),
        i: 0,
    };
    let v = p.sum()?;
    p.space();
    if p.i < p.s.len() {
        return Err(format!("unexpected `{}` in a duration", short(&s[p.i..])));
    }
    Ok(v)
}

struct Eval<'a> {
    s: &'a [u8],
    i: usize,
}

impl Eval<'_> {
    fn space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.space();
        self.s.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<Option<f64>, String> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = v
                .zip(r)
                .map(|(a, b)| if op == b'+' { a + b } else { a - b });
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<Option<f64>, String> {
        let mut v = self.unary()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            if op != b'*' && r == Some(0.0) {
                return Err("division by zero in a duration".to_owned());
            }
            v = v.zip(r).map(|(a, b)| match op {
                b'*' => a * b,
                b'/' => a / b,
                _ => a % b,
            });
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<Option<f64>, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(self.unary()?.map(|v| -v))
            }
            Some(b'+') => {
                self.i += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<Option<f64>, String> {
        let base = self.atom()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let exp = self.unary()?;
            return Ok(base.zip(exp).map(|(a, b)| a.powf(b)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Option<f64>, String> {
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("unclosed `(` in a duration".to_owned());
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                // A call known only at query time (step(), range(), min(…), max(…)).
                if self.peek() == Some(b'(') {
                    let close = matching(self.s, self.i, b'(', b')');
                    self.i = (close + 1).min(self.s.len());
                    return Ok(None);
                }
                let word = String::from_utf8_lossy(&self.s[start..self.i]);
                Err(format!("`{word}` is no duration"))
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                let lit = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                seconds(&lit)
                    .map(Some)
                    .ok_or_else(|| format!("`{lit}` is no duration"))
            }
            _ => Err("a duration expected".to_owned()),
        }
    }
}

/// A number (seconds) or a duration literal (`1h30m`, `500ms`) in seconds.
fn seconds(lit: &str) -> Option<f64> {
    if let Ok(v) = lit.parse::<f64>() {
        return Some(v);
    }
    const UNITS: [&str; 7] = ["y", "w", "d", "h", "m", "s", "ms"];
    let mut rest = lit;
    let mut total = 0.0;
    // Each unit at most once, largest first (`1h30m`, not `30m1h`), as Prometheus reads them.
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = ["ms", "y", "w", "d", "h", "m", "s"]
            .into_iter()
            .find(|u| rest.starts_with(u))?;
        let place = UNITS.iter().position(|u| *u == unit)?;
        if place < next_unit {
            return None;
        }
        next_unit = place + 1;
        rest = &rest[unit.len()..];
        total += n * match unit {
            "ms" => 0.001,
            "y" => 365.0 * 86_400.0,
            "w" => 7.0 * 86_400.0,
            "d" => 86_400.0,
            "h" => 3_600.0,
            "m" => 60.0,
            _ => 1.0,
        };
    }
    Some(total)
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    fn lowered(expr: &str) -> Result<String, String> {
        let mut text = expr.as_bytes().to_vec();
        durations(expr, &mut text).map_err(|(_, why)| why)?;
        Ok(String::from_utf8(text).unwrap())
    }

    #[test]
    fn known_durations_are_written_out() {
        assert_eq!(lowered("rate(x[5m * 2])").unwrap(), "rate(x[10m   ])");
        assert_eq!(lowered("x[-(10s-5s)+20s]").unwrap(), "x[15s          ]");
        assert_eq!(lowered("x offset -(5)").unwrap(), "x offset -5s ");
        assert_eq!(lowered("x[1h:5m*2]").unwrap(), "x[1h:10m ]");
        // What only the query knows stays, to be said as not checked.
        assert_eq!(lowered("x[step()*2]").unwrap(), "x[step()*2]");
        assert_eq!(lowered("rate(x[5m])").unwrap(), "rate(x[5m])");
    }

    #[test]
    fn what_prometheus_refuses_is_refused() {
        for expr in [
            "x[-1]",
            "x[5s/0d]",
            "x[5s%0d]",
            "x offset (4d/0)",
            "x offset 9.5e10",
            "x[9.5e10]",
            "x[5m1h]",
            "x @ start() [5m]",
            "x offset step()[5m]",
            &"9".repeat(320),
        ] {
            assert!(lowered(expr).is_err(), "{expr}");
        }
        for expr in [
            "x @ 123 [10m:5s]",
            "x @ 123 offset 1m [10m:5s]",
            "x{a=\"[-1]\"}",
            "1e308",
        ] {
            assert!(lowered(expr).is_ok(), "{expr}");
        }
    }
}
