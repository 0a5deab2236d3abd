//! PromQL parsing with positions. `promql-parser` returns errors as plain strings without
//! positions (its syntax errors are all "invalid promql query"), so [`parse`] locates them
//! itself: the shortest prefix that reproduces a lexer error, an unbalanced bracket, or the
//! function a semantic error names.
//!
//! Before the parser sees an expression, [`limits`] bounds it (issue 17): its length, its
//! bracket nesting and its number of binary operators. The parsed tree is as deep as those two
//! together, and every walk over it (the linter's rules, and dropping it) recurses, so an
//! expression past them would overflow the stack instead of failing with a message. Locating an
//! error re-parses prefixes (quadratic), so it is done only on expressions up to
//! [`LOCATE_MAX_LEN`].

use promql_parser::parser::{self, Expr};

/// A PromQL expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PromqlError {
    pub message: String,
    /// Byte offset in the expression where the problem is, when it could be located.
    pub offset: Option<usize>,
}

/// The longest expression read, in bytes (Grafana and rule expressions are rarely over 10 KiB).
pub const MAX_LEN: usize = 256 << 10;
/// The deepest bracket nesting read: `(`, `[`, `{`.
pub const MAX_NESTING: usize = 128;
/// The most binary operators in one expression (`a + b + …`, `or`, comparisons). With
/// [`MAX_NESTING`] this bounds the tree's depth to ~380, which every rule walks within the 2 MiB
/// of a test thread in a debug build (the CLI's main thread has 8 MiB). It was 500 until the
/// meaning-level rules of issue 13 took more stack per level: at 500 the deepest tree overflowed
/// a test thread. Real expressions stay far below (a long `or` chain of fallbacks has ~10).
pub const MAX_OPERATORS: usize = 250;
/// Errors of expressions up to this length are located; longer ones are reported without.
pub const LOCATE_MAX_LEN: usize = 8 << 10;

/// Parses `expr`, locating the error when it fails.
pub fn parse(expr: &str) -> Result<Expr, PromqlError> {
    limits(expr)?;
    parser::parse(expr).map_err(|message| {
        let offset = (expr.len() <= LOCATE_MAX_LEN)
            .then(|| locate(expr, &message))
            .flatten()
            .or_else(|| unbalanced(expr).map(|(at, _)| at));
        let message = match (message.as_str(), unbalanced(expr), offset) {
            ("invalid promql query", Some((_, what)), _) => format!("invalid promql query: {what}"),
            ("invalid promql query", None, Some(at)) => {
                let token: String = expr[at..]
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .take(20)
                    .collect();
                match token.is_empty() {
                    true => "invalid promql query: unexpected end".to_owned(),
                    false => format!("invalid promql query: unexpected `{token}`"),
                }
            }
            _ => message,
        };
        PromqlError { message, offset }
    })
}

/// Refuses an expression past [`MAX_LEN`], [`MAX_NESTING`] or [`MAX_OPERATORS`], at the place
/// the limit is crossed. One pass, outside strings and comments.
pub fn limits(expr: &str) -> Result<(), PromqlError> {
    if expr.len() > MAX_LEN {
        return Err(PromqlError {
            message: format!(
                "the expression is {} KiB long; llmscope reads at most {} KiB (split it into recording rules)",
                expr.len() >> 10,
                MAX_LEN >> 10
            ),
            offset: None,
        });
    }
    let mut scan = Scan::new();
    for (i, c) in expr.char_indices() {
        if scan.skipped(c) {
            continue;
        }
        scan.count(c, &expr[i + c.len_utf8()..]);
        if let Some(message) = scan.past_limits() {
            return Err(PromqlError {
                message,
                offset: Some(i),
            });
        }
    }
    Ok(())
}

/// Where [`limits`]' pass over an expression is: in a string or a comment, how deep in
/// brackets, and how many binary operators it has read.
struct Scan {
    depth: usize,
    braces: usize,
    operators: usize,
    quote: Option<char>,
    escaped: bool,
    comment: bool,
    prev: char,
    word: String,
}

impl Scan {
    fn new() -> Scan {
        Scan {
            depth: 0,
            braces: 0,
            operators: 0,
            quote: None,
            escaped: false,
            comment: false,
            prev: ' ',
            word: String::new(),
        }
    }

    /// Whether `c` is in a comment or a string, where it counts for nothing.
    fn skipped(&mut self, c: char) -> bool {
        if self.comment {
            self.comment = c != '\n';
            return true;
        }
        let Some(q) = self.quote else {
            return false;
        };
        match c {
            _ if self.escaped => self.escaped = false,
            '\\' => self.escaped = true,
            _ if c == q => self.quote = None,
            _ => {}
        }
        true
    }

    /// Reads `c`, followed by `rest`: an operator (word or sign), a bracket, a string or a
    /// comment that starts.
    fn count(&mut self, c: char, rest: &str) {
        self.operator_word(c);
        self.operator_sign(c, rest.starts_with('='));
        match c {
            '"' | '\'' | '`' => self.quote = Some(c),
            '#' => self.comment = true,
            '(' | '[' => self.depth += 1,
            '{' => (self.depth, self.braces) = (self.depth + 1, self.braces + 1),
            ')' | ']' => self.depth = self.depth.saturating_sub(1),
            '}' => {
                (self.depth, self.braces) =
                    (self.depth.saturating_sub(1), self.braces.saturating_sub(1));
            }
            _ => {}
        }
        self.prev = c;
    }

    /// `and`, `or`, `unless`, `atan2`, counted where the word ends.
    fn operator_word(&mut self, c: char) {
        if c.is_ascii_alphanumeric() || c == '_' {
            self.word.push(c.to_ascii_lowercase());
            return;
        }
        if matches!(self.word.as_str(), "and" | "or" | "unless" | "atan2") {
            self.operators += 1;
        }
        self.word.clear();
    }

    /// Inside `{…}`, `!=` and `=~` are matchers, not operators. `==`, `!=`, `<=`, `>=` count
    /// once, at their first character.
    fn operator_sign(&mut self, c: char, next_is_eq: bool) {
        let operator = self.braces == 0
            && match c {
                '+' | '-' | '*' | '/' | '%' | '^' | '<' | '>' => true,
                '=' | '!' => next_is_eq && !matches!(self.prev, '=' | '<' | '>' | '!'),
                _ => false,
            };
        self.operators += usize::from(operator);
    }

    fn past_limits(&self) -> Option<String> {
        if self.depth > MAX_NESTING {
            return Some(format!(
                "the expression nests brackets more than {MAX_NESTING} deep; llmscope reads at most {MAX_NESTING} (split it into recording rules)"
            ));
        }
        (self.operators > MAX_OPERATORS).then(|| {
            format!(
                "the expression has more than {MAX_OPERATORS} binary operators; llmscope reads at most {MAX_OPERATORS} (split it into recording rules)"
            )
        })
    }
}

fn locate(expr: &str, message: &str) -> Option<usize> {
    if let Err(lex) = parser::lexer(expr) {
        return lexer_error_offset(expr, &lex);
    }
    if let Some((at, _)) = unbalanced(expr) {
        return Some(at);
    }
    if let Some(at) = quoted_name(message)
        .and_then(|name| expr.find(&format!("{name}(")).or_else(|| expr.find(name)))
    {
        return Some(at);
    }
    after_longest_valid_prefix(expr)
}

/// The first token after the longest prefix that parses on its own: `a + ` → the `+`,
/// `sum(x) by (a) foo` → `foo`. Cuts are tried at spaces and bracket boundaries.
fn after_longest_valid_prefix(expr: &str) -> Option<usize> {
    let cuts = expr
        .char_indices()
        .filter(|(_, c)| c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | ','))
        .flat_map(|(i, c)| [i, i + c.len_utf8()]);
    let end = cuts
        .rev()
        .find(|&cut| cut < expr.len() && parser::parse(&expr[..cut]).is_ok())?;
    let rest = &expr[end..];
    Some(end + (rest.len() - rest.trim_start().len()))
}

/// The shortest prefix that fails the same way ends at the offending character.
fn lexer_error_offset(expr: &str, message: &str) -> Option<usize> {
    let ends = expr.char_indices().map(|(i, c)| i + c.len_utf8());
    ends.into_iter()
        .find(|&end| matches!(parser::lexer(&expr[..end]), Err(m) if m == message))
        .map(|end| expr[..end].char_indices().last().map_or(0, |(i, _)| i))
}

/// The first unmatched bracket outside strings: its offset and a description.
fn unbalanced(expr: &str) -> Option<(usize, String)> {
    let mut stack: Vec<(usize, char)> = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in expr.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '{' | '[' => stack.push((i, c)),
            ')' | '}' | ']' => {
                let want = match c {
                    ')' => '(',
                    '}' => '{',
                    _ => '[',
                };
                match stack.pop() {
                    Some((_, open)) if open == want => {}
                    _ => return Some((i, format!("unexpected `{c}`"))),
                }
            }
            _ => {}
        }
    }
    stack
        .first()
        .map(|&(i, c)| (i, format!("`{c}` is never closed")))
}

/// `'rate'` in "expected type range vector in call to function 'rate', …".
fn quoted_name(message: &str) -> Option<&str> {
    let start = message.find('\'')? + 1;
    let len = message[start..].find('\'')?;
    Some(&message[start..start + len]).filter(|n| !n.is_empty())
}

/// 1-based (line, column) of a byte offset in `text`.
pub fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linted(expr: &str) -> Vec<crate::promql::Hit> {
        let mut inv = crate::Inventories::new();
        let spec = "vllm@0.26".parse().expect("spec");
        inv.push(Box::new(crate::inventory::engine::CatalogInventory::new(
            spec,
        )));
        crate::promql::check_expr(expr, &inv, crate::promql::Context::default())
    }

    #[test]
    fn deep_nesting_is_refused_where_it_crosses_the_limit() {
        let deep = format!("{}up{}", "abs(".repeat(10_000), ")".repeat(10_000));
        let e = parse(&deep).unwrap_err();
        assert!(e.message.contains("more than 128 deep"), "{}", e.message);
        assert_eq!(e.offset, Some(4 * MAX_NESTING + 3), "the 129th `(`");
    }

    #[test]
    fn long_operator_chains_are_refused_and_the_limits_themselves_are_linted() {
        let chain = |n: usize| vec!["vllm:num_requests_running"; n].join(" + ");
        let e = parse(&chain(7_400)).unwrap_err();
        assert!(
            e.message
                .contains(&format!("more than {MAX_OPERATORS} binary operators")),
            "{}",
            e.message
        );
        assert!(parse(&chain(MAX_OPERATORS + 2)).is_err());
        // At both limits at once the tree is as deep as it gets; the rules walk it on a 2 MiB
        // test thread without overflowing.
        let deepest = format!(
            "{}{}{}",
            "abs(".repeat(MAX_NESTING),
            chain(MAX_OPERATORS + 1),
            ")".repeat(MAX_NESTING)
        );
        assert!(parse(&deepest).is_ok());
        let hits = linted(&deepest);
        assert!(
            hits.iter()
                .all(|h| h.finding.rule != crate::finding::Rule::ParseError)
        );
    }

    #[test]
    fn matchers_strings_and_comments_are_not_operators() {
        let many = vec![r#"a!="x-y+z""#; 2_000].join(",");
        assert!(limits(&format!("m{{{many}}}")).is_ok());
        assert!(limits(&format!("m # {}", "+".repeat(5_000))).is_ok());
        assert!(
            limits(&"x".repeat(MAX_LEN + 1))
                .unwrap_err()
                .message
                .contains("KiB")
        );
    }

    #[test]
    fn a_long_invalid_expression_fails_in_linear_time() {
        // 60 KiB with the error at the end: locating it by re-parsing prefixes would be
        // quadratic; past LOCATE_MAX_LEN only the bracket check runs.
        let text = format!("{} +", vec!["up"; 200].join(" or "));
        let text = format!("{text}{}", " ".repeat(60_000));
        let e = parse(&text).unwrap_err();
        assert_eq!(e.offset, None);
    }

    #[test]
    fn valid_expressions_parse() {
        assert!(parse("max by (pod) (vllm:kv_cache_usage_perc)").is_ok());
        assert!(parse(r#"{__name__="vllm:num_requests_running"}"#).is_ok());
    }

    #[test]
    fn lexer_errors_point_at_the_character() {
        let e = parse("sum(rate(x[5m])) ~ 3").unwrap_err();
        assert_eq!(e.offset, Some(17), "{e:?}");
    }

    #[test]
    fn unbalanced_brackets_are_located_and_named() {
        let e = parse("sum(rate(x[5m])").unwrap_err();
        assert_eq!(e.offset, Some(3));
        assert!(e.message.contains("unclosed"), "{}", e.message);
        let e = parse("x{a=\"(\"}}").unwrap_err();
        assert_eq!(e.offset, Some(8), "{e:?}");
    }

    #[test]
    fn semantic_errors_point_at_the_function() {
        let e = parse("sum(rate(vllm:x))").unwrap_err();
        assert_eq!(e.offset, Some(4), "{e:?}");
    }

    #[test]
    fn other_syntax_errors_point_after_the_longest_valid_prefix() {
        let e = parse("sum(x) by (a) foo").unwrap_err();
        assert_eq!(e.offset, Some(14), "{e:?}");
        let e = parse("vllm:num_requests_running +").unwrap_err();
        assert_eq!(e.offset, Some(26), "{e:?}");
    }

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("ab", 0), (1, 1));
    }
}
