//! PromQL parsing with positions. `promql-parser` returns errors as plain strings without
//! positions (its syntax errors are all "invalid promql query"), so [`parse`] locates them
//! itself: the shortest prefix that reproduces a lexer error, an unbalanced bracket, or the
//! function a semantic error names.

use promql_parser::parser::{self, Expr};

/// A PromQL expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PromqlError {
    pub message: String,
    /// Byte offset in the expression where the problem is, when it could be located.
    pub offset: Option<usize>,
}

/// Parses `expr`, locating the error when it fails.
pub fn parse(expr: &str) -> Result<Expr, PromqlError> {
    parser::parse(expr).map_err(|message| {
        let offset = locate(expr, &message);
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
