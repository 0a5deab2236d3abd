//! PromQL: [`parse`] (with located errors), the rules in [`analyze`], label-set propagation in
//! [`labels`], unit propagation in [`units`], and name findings and suggestions in [`names`].
//!
//! [`check_expr`] is the entry point: text in, [`Hit`]s out (a `parse-error`, or the rules'
//! findings), each with the text to underline so the caller can turn it into a line and column.

pub mod analyze;
pub mod dialect;
pub mod labels;
pub mod names;
pub mod parse;
pub mod units;

pub use analyze::{Context, Hit};

use crate::finding::{Finding, Rule, Severity};
use crate::inventory::Inventories;

/// Parses and checks one expression.
pub fn check_expr(text: &str, inv: &Inventories, cx: Context<'_>) -> Vec<Hit> {
    match parse::parse(text) {
        Ok(expr) => analyze::check(&expr, inv, cx),
        Err(e) => {
            if let Some(what) = dialect::metricsql(text) {
                let f = Finding::new(
                    Rule::OtherDialect,
                    Severity::Info,
                    format!("MetricsQL (VictoriaMetrics), not PromQL: {what} is not in PromQL, so this expression is not linted"),
                )
                .suggest("lint it against VictoriaMetrics (vmalert -dryRun), or keep a PromQL form of it for Prometheus datasources");
                return vec![Hit {
                    finding: f,
                    needle: None,
                }];
            }
            if e.message.contains("in aggregation expression, got matrix") {
                // MetricsQL aggregates a range's points; Prometheus refuses it. Which was meant
                // the expression cannot say, so it is a warning naming both.
                let f = Finding::new(
                    Rule::OtherDialect,
                    Severity::Warning,
                    "not PromQL: it aggregates a range vector (like `sum(x[5m])`), which MetricsQL (VictoriaMetrics) allows and Prometheus rejects, so this expression is not linted",
                )
                .suggest("for Prometheus, aggregate a rollup of the range (`sum(sum_over_time(x[5m]))`); for VictoriaMetrics, lint it with vmalert -dryRun");
                return vec![Hit {
                    finding: f,
                    needle: None,
                }];
            }
            let at = e.offset.map(|o| {
                let (line, col) = parse::line_col(text, o);
                format!(" at line {line}, column {col}")
            });
            let f = Finding::new(
                Rule::ParseError,
                Severity::Error,
                format!(
                    "PromQL does not parse{}: {}",
                    at.unwrap_or_default(),
                    e.message
                ),
            );
            vec![Hit {
                finding: f,
                needle: e.offset.map(|o| format!("\u{0}{o}")),
            }]
        }
    }
}

/// The metric names an expression selects (by name or `__name__` matcher); none if it does not parse.
pub fn metric_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(expr) = parse::parse(text) {
        each_selector(&expr, &mut |vs| out.extend(analyze::selector_name(vs)));
    }
    out
}

/// The label matchers of an expression's selectors, as (label, value) pairs, the metric name's
/// own excepted; none if it does not parse.
pub fn label_matchers(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(expr) = parse::parse(text) {
        each_selector(&expr, &mut |vs| {
            let ors = vs.matchers.or_matchers.iter().flatten();
            out.extend(
                vs.matchers
                    .matchers
                    .iter()
                    .chain(ors)
                    .filter(|m| m.name != "__name__")
                    .map(|m| (m.name.clone(), m.value.clone())),
            );
        });
    }
    out
}

fn each_selector(
    e: &promql_parser::parser::Expr,
    f: &mut impl FnMut(&promql_parser::parser::VectorSelector),
) {
    use promql_parser::parser::Expr;
    match e {
        Expr::VectorSelector(vs) => f(vs),
        Expr::MatrixSelector(ms) => f(&ms.vs),
        Expr::Aggregate(a) => {
            each_selector(&a.expr, f);
            if let Some(p) = &a.param {
                each_selector(p, f);
            }
        }
        Expr::Binary(b) => {
            each_selector(&b.lhs, f);
            each_selector(&b.rhs, f);
        }
        Expr::Call(c) => c.args.args.iter().for_each(|a| each_selector(a, f)),
        Expr::Paren(p) => each_selector(&p.expr, f),
        Expr::Subquery(s) => each_selector(&s.expr, f),
        Expr::Unary(u) => each_selector(&u.expr, f),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

/// Where a hit's needle is in `text`: a byte offset.
pub fn needle_offset(text: &str, needle: &str) -> Option<usize> {
    match needle.strip_prefix('\u{0}') {
        Some(offset) => offset.parse().ok(),
        None => text.find(needle),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod name_tests {
    #[test]
    fn names_from_selectors_and_name_matchers() {
        let n = super::metric_names(
            r#"sum(rate(a_total[5m])) / on(x) group_left {__name__="b"} or vector(0)"#,
        );
        assert_eq!(n, vec!["a_total".to_owned(), "b".to_owned()]);
        assert!(super::metric_names("sum(").is_empty());
    }

    #[test]
    fn label_matchers_of_every_selector() {
        let m =
            super::label_matchers(r#"a{namespace="$ns", pod=~"p.*"} / on() {__name__="c", x="1"}"#);
        let pairs: Vec<(&str, &str)> = m.iter().map(|(l, v)| (l.as_str(), v.as_str())).collect();
        assert_eq!(pairs, [("namespace", "$ns"), ("pod", "p.*"), ("x", "1")]);
    }
}
