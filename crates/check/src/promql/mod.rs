//! PromQL: [`parse`] (with located errors), the walk in [`analyze`] that infers a [`value`]
//! per node — label sets propagated in [`labels`], units in [`units`] — and hands the rules
//! ([`crate::rules`]) their facts; metric names and suggestions in [`names`], other dialects in
//! [`dialect`].
//!
//! [`check_expr`] is the entry point: text in, [`Hit`]s out (a `parse-error`, or the rules'
//! findings), each with the text to underline so the caller can turn it into a line and column.

pub mod analyze;
pub mod dialect;
pub mod labels;
pub mod names;
pub mod parse;
pub mod prom3;
pub mod units;
pub mod value;

pub use analyze::{Context, Hit};

use crate::inventory::Inventories;
use crate::rules::{self, Lint};

/// Parses and checks one expression.
pub fn check_expr(text: &str, inv: &Inventories, cx: Context<'_>) -> Vec<Hit> {
    check_expr_with(text, inv, cx, rules::ALL)
}

/// Parses one expression and runs `rules` over it.
pub(crate) fn check_expr_with(
    text: &str,
    inv: &Inventories,
    cx: Context<'_>,
    rules: &[&dyn Lint],
) -> Vec<Hit> {
    let lowered = prom3::lower(text);
    if let Some(e) = &lowered.refused {
        return analyze::check_unparsed(text, e, true, inv, cx, rules);
    }
    let mut hits = match parse::parse(&lowered.text) {
        Ok(expr) => {
            let mut hits = analyze::check_with(&expr, inv, cx, rules);
            hits.extend(analyze::check_modifiers(&lowered.modifiers, inv, rules));
            hits
        }
        Err(e) => analyze::check_unparsed(text, &e, false, inv, cx, rules),
    };
    if lowered.text != text {
        for h in &mut hits {
            let f = &mut h.finding;
            f.message = prom3::restore(&f.message);
            f.metric = f.metric.as_deref().map(prom3::restore);
            f.suggestion = f.suggestion.as_deref().map(prom3::restore);
            h.needle = h.needle.as_deref().map(prom3::restore);
        }
    }
    hits
}

/// `text` parsed as Prometheus 3 reads it ([`prom3::lower`] first).
fn parse_lowered(text: &str) -> Option<promql_parser::parser::Expr> {
    let lowered = prom3::lower(text);
    match lowered.refused {
        Some(_) => None,
        None => parse::parse(&lowered.text).ok(),
    }
}

/// The metric names an expression selects (by name or `__name__` matcher); none if it does not parse.
pub fn metric_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(expr) = parse_lowered(text) {
        each_selector(&expr, &mut |vs| {
            out.extend(analyze::selector_name(vs).map(|n| prom3::restore(&n)))
        });
    }
    out
}

/// The label matchers of an expression's selectors, as (label, value) pairs, the metric name's
/// own excepted; none if it does not parse.
pub fn label_matchers(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(expr) = parse_lowered(text) {
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
