//! `bad-histogram-quantile`: `histogram_quantile` over something that is not a histogram's
//! `_bucket` series by `le` — a quantile outside 0..1, a `_sum` or a gauge, an aggregation that
//! drops `le` (errors) — or over buckets with no aggregation on the way, which gives one
//! quantile per series, not the quantile across them (a warning).

use crate::finding::{Finding, Rule, Severity};
use crate::promql::value::{Sel, Value};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::CallFact;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use promql_parser::parser::Expr;

pub struct BadHistogramQuantile;

impl RuleInfo for BadHistogramQuantile {
    const ID: &'static str = "bad-histogram-quantile";
    const SUMMARY: &'static str = "histogram_quantile over something that is not _bucket by le";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/h100-nim-enhanced.json");
}

impl Lint for BadHistogramQuantile {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Call(c) = fact else {
            return;
        };
        if c.func != "histogram_quantile" {
            return;
        }
        per_series_quantile(c, out);
        let (Some(q), Some(v)) = (c.args.first(), c.args.get(1)) else {
            return;
        };
        let name = v.first_name().unwrap_or("?");
        if let Some(x) = q.scalar.filter(|x| !(0.0..=1.0).contains(x)) {
            bad_quantile(
                name,
                format!("the quantile {x} is outside 0..1 (histogram_quantile returns ±Inf)"),
                format!("write {} for the p{x}", x / 100.0),
                out,
            );
        }
        not_buckets(v, name, out);
    }
}

/// `histogram_quantile(q, rate(x_bucket[5m]))`: a quantile per series — per pod, per
/// handler, per model — not the quantile across them; a stat shows one of them.
fn per_series_quantile(c: &CallFact<'_>, out: &mut Hits) {
    if c.call.args.args.get(1).is_none_or(|b| aggregates(b)) {
        return;
    }
    let Some(name) = c
        .args
        .get(1)
        .and_then(|v| v.sels.first())
        .filter(|s| s.is_bucket())
        .map(|s| s.name.as_str())
    else {
        return;
    };
    let f = Finding::new(
        Rule::BadHistogramQuantile,
        Severity::Warning,
        format!(
            "histogram_quantile over `{name}` without sum by (le): one quantile per series (per pod, handler, model…), not the quantile across them; a single-value panel shows one of them"
        ),
    )
    .metric(name)
    .suggest(format!(
        "sum the buckets first: histogram_quantile(q, sum by (le) (rate({name}[5m]))); keep series apart with labels after le (sum by (le, pod))"
    ));
    out.push(f, Some("histogram_quantile"));
}

/// Buckets that are not buckets, or whose `le` an aggregation dropped.
fn not_buckets(v: &Value, name: &str, out: &mut Hits) {
    let not_buckets: Vec<&Sel> = v.sels.iter().filter(|s| !s.is_bucket()).collect();
    if let Some(s) = not_buckets.first() {
        bad_quantile(
            &s.name,
            format!(
                "histogram_quantile over `{}`, which is not a histogram's _bucket series",
                s.name
            ),
            "use the histogram's <name>_bucket series, by le".to_owned(),
            out,
        );
    } else if !v.labels.has("le") {
        bad_quantile(
            name,
            format!(
                "the aggregation drops `le`, so histogram_quantile over `{name}` has no buckets to read"
            ),
            "keep le: sum by (le) (rate(<name>_bucket[5m])), adding other labels after le"
                .to_owned(),
            out,
        );
    }
}

fn bad_quantile(name: &str, message: String, suggestion: String, out: &mut Hits) {
    let f = Finding::new(Rule::BadHistogramQuantile, Severity::Error, message)
        .metric(name)
        .suggest(suggestion);
    out.push(f, Some("histogram_quantile"));
}

/// Whether an aggregation (`sum by (le) (…)`, …) is on the way from `e` to its selectors.
fn aggregates(e: &Expr) -> bool {
    match e {
        Expr::Aggregate(_) => true,
        Expr::Paren(p) => aggregates(&p.expr),
        Expr::Subquery(s) => aggregates(&s.expr),
        Expr::Unary(u) => aggregates(&u.expr),
        Expr::Call(c) => c.args.args.iter().any(|a| aggregates(a)),
        Expr::Binary(b) => aggregates(&b.lhs) || aggregates(&b.rhs),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn bad_histogram_quantile() {
        let f = only(
            "histogram_quantile(0.95, sum by (pod) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
            false,
            Rule::BadHistogramQuantile,
        );
        assert!(f.message.contains("drops `le`"), "{}", f.message);
        only(
            "histogram_quantile(0.95, rate(vllm:time_to_first_token_seconds_sum[5m]))",
            false,
            Rule::BadHistogramQuantile,
        );
        only(
            "histogram_quantile(95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
            false,
            Rule::BadHistogramQuantile,
        );
        // Neither rate nor sum: both said.
        let f = run(
            "histogram_quantile(0.9, vllm:time_to_first_token_seconds_bucket)",
            true,
        );
        assert_eq!(
            rules(&f),
            vec![Rule::BadHistogramQuantile, Rule::CounterWithoutRate],
            "{f:#?}"
        );
        // The buckets of each series on their own: a quantile per series (the H100 + NIM dashboard's
        // "NIM P95 Response Time" stat), a warning.
        let f = only(
            "histogram_quantile(0.95, rate(vllm:time_to_first_token_seconds_bucket[5m]))",
            true,
            Rule::BadHistogramQuantile,
        );
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("one quantile per series"),
            "{}",
            f.message
        );
        clean(
            "histogram_quantile(0.95, sum(rate(vllm:time_to_first_token_seconds_bucket[5m])) by (le))",
            true,
        );
        clean(
            "histogram_quantile(0.95, sum by (le, pod) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
            true,
        );
    }
}
