//! `avg-of-quantile`: `avg` over `histogram_quantile` results (across series), or
//! `avg_over_time` over them (across the steps of a subquery). A mean of quantiles is not a
//! quantile of anything: the mean of per-pod p99s hides the worst pod, the mean of an hour's
//! per-minute p99s hides the worst minutes. The buckets add up; the quantiles do not.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::analyze::{INTERVAL_S, RANGE_S, RATE_INTERVAL_S};
use crate::promql::labels::{LabelSet, VAR_PREFIX};
use crate::promql::value::Value;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::{AggregateFact, CallFact};
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use promql_parser::parser::{Call, Expr, LabelModifier};
use promql_parser::util::display_duration;
use std::collections::BTreeSet;
use std::time::Duration;

pub struct AvgOfQuantile;

impl RuleInfo for AvgOfQuantile {
    const ID: &'static str = "avg-of-quantile";
    const SUMMARY: &'static str =
        "avg or avg_over_time of histogram_quantile results: a mean of quantiles is no quantile";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::File {
        path: "fixtures/cortex-rollout-latency.json",
        inventories: &[],
    };
}

impl Lint for AvgOfQuantile {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        match fact {
            Fact::Aggregate(a) if a.op == "avg" => across_series(a, out),
            Fact::Call(c) if c.func == "avg_over_time" => across_time(c, out),
            _ => {}
        }
    }
}

/// `avg (by …) (histogram_quantile(…))` that averages several series into one.
fn across_series(a: &AggregateFact<'_>, out: &mut Hits) {
    let modifier = a.expr.modifier.as_ref();
    let Some((q, per)) = quantile(&a.expr.expr).zip(averaged(&a.inner.labels, modifier)) else {
        return;
    };
    out.push(
        series_finding(buckets(a.inner), &per, q, modifier),
        Some("avg"),
    );
}

/// A mean of `per` quantiles of the buckets `name`, over `avg` with grouping `by`.
fn series_finding(name: &str, per: &str, q: &Call, by: Option<&LabelModifier>) -> Finding {
    let message = format!(
        "avg over histogram_quantile of `{name}`: the mean of {per} quantiles is not a quantile of anything, and hides the worst of them"
    );
    finding(name, message, series_fix(q, by, name))
}

/// Add up the buckets, keeping what `avg by (…)` kept, then take one quantile.
fn series_fix(q: &Call, modifier: Option<&LabelModifier>, name: &str) -> String {
    format!(
        "add up the buckets, then take one quantile: histogram_quantile({}, sum by (le{}) ({})); max instead of avg shows the worst series",
        arg(q),
        kept(modifier),
        rate(name, "5m")
    )
}

/// `avg_over_time(histogram_quantile(…)[range:step])`.
fn across_time(c: &CallFact<'_>, out: &mut Hits) {
    let Some((q, range)) = subquery_quantile(c.call) else {
        return;
    };
    let name = c.args.first().map_or("the buckets", buckets);
    out.push(time_finding(name, &range, q), Some("avg_over_time"));
}

/// The quantile of a call's subquery argument, and the subquery's range.
fn subquery_quantile(call: &Call) -> Option<(&Call, String)> {
    match call.args.args.first().map(|e| &**e) {
        Some(Expr::Subquery(s)) => Some((quantile(&s.expr)?, window(s.range))),
        _ => None,
    }
}

/// A mean over `range` of the quantiles of the buckets `name`.
fn time_finding(name: &str, range: &str, q: &Call) -> Finding {
    let message = format!(
        "avg_over_time over histogram_quantile of `{name}`: the mean of the quantiles at each step is not the quantile over the {range} window, and hides the worst steps"
    );
    let suggestion = format!(
        "take one quantile over the whole window: histogram_quantile({}, sum by (le) ({})); max_over_time keeps the worst step",
        arg(q),
        rate(name, range)
    );
    finding(name, message, suggestion)
}

/// A warning on the buckets `name`.
fn finding(name: &str, message: String, suggestion: String) -> Finding {
    Finding::new(Rule::AvgOfQuantile, Severity::Warning, message)
        .metric(name)
        .suggest(suggestion)
}

/// The `histogram_quantile` call `e` is: in parentheses, or scaled by a number (`* 1000`).
fn quantile(e: &Expr) -> Option<&Call> {
    match e {
        Expr::Paren(p) => quantile(&p.expr),
        Expr::Call(c) if c.func.name == "histogram_quantile" => Some(c),
        Expr::Binary(b) if matches!(*b.rhs, Expr::NumberLiteral(_)) => quantile(&b.lhs),
        Expr::Binary(b) if matches!(*b.lhs, Expr::NumberLiteral(_)) => quantile(&b.rhs),
        _ => None,
    }
}

/// What `avg` with `modifier` averages across, over a value with `labels` (`per-pod`,
/// `per-series`); `None` when it averages one series per group, which changes nothing.
fn averaged(labels: &LabelSet, modifier: Option<&LabelModifier>) -> Option<String> {
    let LabelSet::Known { names, open } = labels else {
        return Some("per-series".to_owned());
    };
    match modifier {
        None => per(names.iter(), *open),
        Some(LabelModifier::Include(by)) => averaged_by(names, &by.labels, *open),
        Some(LabelModifier::Exclude(without)) => averaged_without(labels, &without.labels),
    }
}

/// `avg without (…)`: across the first of those labels the value may have.
fn averaged_without(labels: &LabelSet, without: &[String]) -> Option<String> {
    let dropped = without.iter().find(|l| labels.has(l));
    dropped.map(|l| format!("per-{l}"))
}

/// `avg by (…)`: across the labels `names` has and `by` does not keep.
fn averaged_by(names: &BTreeSet<String>, by: &[String], open: bool) -> Option<String> {
    if by.iter().any(|l| l.starts_with(VAR_PREFIX)) {
        return None; // a Grafana variable: what it keeps is not known
    }
    per(names.iter().filter(|n| !by.contains(n)), open)
}

/// `per-pod`, `per-model_name/pod` for the labels averaged `across`; `per-target` when only
/// the scrape targets' labels (an `open` set) are; `None` when nothing is.
fn per<'a>(across: impl Iterator<Item = &'a String>, open: bool) -> Option<String> {
    let across: Vec<&str> = across.map(String::as_str).collect();
    match across.as_slice() {
        [] if open => Some("per-target".to_owned()),
        [] => None,
        across => Some(format!("per-{}", across.join("/"))),
    }
}

/// The labels `avg by (…)` keeps, to keep after `le`: `, model_name`.
fn kept(modifier: Option<&LabelModifier>) -> String {
    match modifier {
        Some(LabelModifier::Include(by)) => by.labels.iter().map(|l| format!(", {l}")).collect(),
        _ => String::new(),
    }
}

/// A subquery's range as written: `1h`, or the Grafana variable the walk substituted.
fn window(range: Duration) -> String {
    match range.as_secs() {
        RANGE_S => "$__range".to_owned(),
        RATE_INTERVAL_S => "$__rate_interval".to_owned(),
        INTERVAL_S => "$__interval".to_owned(),
        _ => display_duration(&range),
    }
}

/// The buckets the quantile reads.
fn buckets(v: &Value) -> &str {
    v.first_name().unwrap_or("the buckets")
}

/// The quantile asked for, as written (`0.99`, `$q`).
fn arg(q: &Call) -> String {
    q.args
        .args
        .first()
        .map_or_else(|| "q".to_owned(), ToString::to_string)
}

/// The buckets' rate over `range`: `rate(x_bucket[5m])`, or the mean of a recorded rate.
fn rate(name: &str, range: &str) -> String {
    if name.ends_with("_bucket") {
        format!("rate({name}[{range}])")
    } else {
        format!("avg_over_time({name}[{range}])")
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn a_mean_of_quantiles_across_series() {
        // Per-pod p99s (the quantile keeps every label but le), averaged into one.
        let f = only(
            "avg(histogram_quantile(0.99, sum by (le, pod) (rate(vllm:time_to_first_token_seconds_bucket[5m]))))",
            true,
            Rule::AvgOfQuantile,
        );
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("per-pod"), "{}", f.message);
        assert_eq!(
            f.suggestion.as_deref(),
            Some(
                "add up the buckets, then take one quantile: histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m]))); max instead of avg shows the worst series"
            )
        );
        // `avg by (model_name)` across the pods of each model.
        let f = only(
            "avg by (model_name) (histogram_quantile(0.9, sum by (le, pod, model_name) (rate(vllm:time_to_first_token_seconds_bucket[5m]))))",
            true,
            Rule::AvgOfQuantile,
        );
        assert!(f.suggestion.unwrap().contains("sum by (le, model_name)"));
        // Scaled to milliseconds inside the avg: still a mean of quantiles.
        only(
            "avg(histogram_quantile(0.99, sum by (le, pod) (rate(vllm:time_to_first_token_seconds_bucket[5m]))) * 1000)",
            true,
            Rule::AvgOfQuantile,
        );
        // An uncatalogued histogram, whose labels nothing says: its series are averaged.
        let f = run(
            "avg(histogram_quantile(0.9, rate(http_request_duration_seconds_bucket[5m])))",
            true,
        );
        assert!(has(&f, Rule::AvgOfQuantile), "{f:#?}");
    }

    #[test]
    fn a_mean_of_quantiles_over_time() {
        let f = only(
            "avg_over_time(histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[1m])))[1h:1m])",
            true,
            Rule::AvgOfQuantile,
        );
        assert!(f.message.contains("over the 1h window"), "{}", f.message);
        assert!(
            f.suggestion
                .unwrap()
                .contains("rate(vllm:time_to_first_token_seconds_bucket[1h])")
        );
        // Over a dashboard's whole range, named as Grafana wrote it.
        let f = only(
            "avg_over_time(histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))[6069770s:])",
            true,
            Rule::AvgOfQuantile,
        );
        assert!(
            f.message.contains("over the $__range window"),
            "{}",
            f.message
        );
    }

    #[test]
    fn one_series_per_group_or_a_quantile_of_summed_buckets_is_no_mean() {
        // One quantile (the buckets summed first): avg of one series changes nothing.
        clean(
            "avg(histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m]))))",
            true,
        );
        // Grafana's golang-observ-lib: avg by the very labels the quantile keeps.
        clean(
            "avg by (job, instance) (histogram_quantile(0.95, sum(rate(vllm:time_to_first_token_seconds_bucket[5m])) by (le, job, instance)))",
            true,
        );
        clean(
            "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
            true,
        );
        // The worst series, the worst step, and means of means are fine.
        clean(
            "max(histogram_quantile(0.99, sum by (le, pod) (rate(vllm:time_to_first_token_seconds_bucket[5m]))))",
            true,
        );
        clean(
            "max_over_time(histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))[1h:])",
            true,
        );
        clean(
            "avg(rate(vllm:time_to_first_token_seconds_sum[5m]) / rate(vllm:time_to_first_token_seconds_count[5m]))",
            true,
        );
    }
}
