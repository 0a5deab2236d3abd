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
//! Duration expressions (`[5m+1m]`, on by default since 3.14) are not lowered: they are told
//! from a syntax error ([`duration_expression`]) and said as not checked.

/// An expression as the parser is given it, and the experimental syntax taken out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    pub text: String,
    /// Range modifiers taken out: the byte offset and the word.
    pub modifiers: Vec<(usize, &'static str)>,
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
    let bytes = expr.as_bytes();
    let mut text = bytes.to_vec();
    let mut modifiers = Vec::new();
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == b'\\' && q != b'`' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'\'' | b'`' => quote = Some(c),
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
                let word = &expr[i..end];
                if let Some((w, twin)) = WORDS.iter().find(|(w, _)| w.eq_ignore_ascii_case(word)) {
                    if after_range(&expr[..i]) {
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
    Lowered {
        // Only ASCII bytes were written over ASCII bytes.
        text: String::from_utf8(text).unwrap_or_else(|_| expr.to_owned()),
        modifiers,
    }
}

/// Whether what comes before ends a range: `]`, or `offset <duration>` / `@ <time>` after one.
fn after_range(before: &str) -> bool {
    let t = before.trim_end();
    if t.ends_with(']') {
        return true;
    }
    let mut words = t
        .rsplit(|c: char| c.is_whitespace())
        .filter(|w| !w.is_empty());
    let (last, modifier) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let value = !last.is_empty()
        && last
            .trim_start_matches(['-', '+'])
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '(' || c == ')');
    value && (modifier.eq_ignore_ascii_case("offset") || modifier == "@") && t.contains(']')
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
        let after = lower[at + 6..].trim_start();
        after.starts_with('(') || after.starts_with("step") || after.starts_with("range")
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
        assert!(!duration_expression("rate(x[5m])"));
        assert!(!duration_expression("sum(x) +"));
    }
}
