//! `unreachable-threshold`: a threshold the value cannot reach — a panel threshold above 1 on a
//! 0..1 fraction, or a threshold (on the panel, or compared in an alert) on a histogram quantile
//! beyond the histogram's finite buckets: above the top one the quantile comes back pinned
//! there, below the lowest it is interpolated from 0, not measured.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::names;
use crate::promql::value::Value;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::BinaryFact;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use llmscope_catalog::{Exporter, Unit, buckets};

pub struct UnreachableThreshold;

impl RuleInfo for UnreachableThreshold {
    const ID: &'static str = "unreachable-threshold";
    const SUMMARY: &'static str = "a threshold the value cannot reach: above 1 on a 0..1 fraction, beyond a histogram's finite buckets for a quantile";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/nim-llm-data-on-eks.json");
}

impl Lint for UnreachableThreshold {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        match fact {
            Fact::Binary(b) if b.comparison => compared_quantile(b, scope, out),
            Fact::Root(root) if !scope.cx.thresholds.is_empty() && root.scalar.is_none() => {
                if root.unit == Some(Unit::Fraction) {
                    fraction_threshold(root, scope, out);
                } else if let Some(family) = &root.quantile_of {
                    for t in scope.cx.thresholds {
                        let how = format!("the panel's threshold {}", fmt_num(*t));
                        beyond_buckets(family, *t, &how, scope, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `histogram_quantile(…) > T` with T beyond the histogram's buckets.
fn compared_quantile(b: &BinaryFact<'_>, scope: &Scope<'_>, out: &mut Hits) {
    let (q, c) = match (b.lhs.scalar, b.rhs.scalar) {
        (None, Some(c)) => (b.lhs, c),
        (Some(c), None) => (b.rhs, c),
        _ => return,
    };
    if let Some(family) = &q.quantile_of {
        let how = format!("the quantile compared `{} {}`", b.op, fmt_num(c));
        beyond_buckets(family, c, &how, scope, out);
    }
}

/// The first panel threshold above 1 on a 0..1 fraction.
fn fraction_threshold(root: &Value, scope: &Scope<'_>, out: &mut Hits) {
    let Some(t) = scope.cx.thresholds.iter().copied().find(|t| *t > 1.0) else {
        return;
    };
    let name = root.first_name().unwrap_or("the query");
    let shown = match scope.cx.panel_unit {
        Some("percentunit") => format!(
            " (the panel's `percentunit` shows 0.8 as 80 %, and reads a threshold of {} as {} %)",
            fmt_num(t),
            fmt_num(t * 100.0)
        ),
        _ => String::new(),
    };
    let f = Finding::new(
        Rule::UnreachableThreshold,
        Severity::Warning,
        format!(
            "the panel's threshold {} is never reached: `{name}` is a 0..1 fraction{shown}",
            fmt_num(t)
        ),
    )
    .metric(name)
    .suggest(format!(
        "write the threshold as a fraction: {}",
        fmt_num(t / 100.0)
    ));
    out.push(f, Some(name));
}

/// A threshold `t` on a quantile of `family` beyond its finite buckets; `how` says where the
/// threshold is (`the panel's threshold 80`, ``the quantile compared `> 80` ``).
fn beyond_buckets(family: &str, t: f64, how: &str, scope: &Scope<'_>, out: &mut Hits) {
    let Some((lo, hi, whence)) = bucket_bounds(family, scope) else {
        return;
    };
    let (message, suggestion) = if t > hi {
        above_top(how, family, t, hi, &whence)
    } else if t > 0.0 && t < lo {
        below_lowest(how, family, lo, &whence)
    } else {
        return;
    };
    let f = Finding::new(Rule::UnreachableThreshold, Severity::Warning, message)
        .metric(format!("{family}_bucket"))
        .suggest(suggestion);
    out.push(f, Some("histogram_quantile"));
}

/// The message and suggestion for a threshold `t` above the top finite bucket `hi`.
fn above_top(how: &str, family: &str, t: f64, hi: f64, whence: &str) -> (String, String) {
    (
        format!(
            "{how} is above the top finite bucket of `{family}` ({} from {whence}): a quantile is at most that bound (it comes back pinned there), so it never crosses {t}",
            fmt_num(hi)
        ),
        format!(
            "use a threshold of at most {} (or histogram buckets that reach it)",
            fmt_num(hi)
        ),
    )
}

/// The message and suggestion for a threshold below the lowest bucket `lo`.
fn below_lowest(how: &str, family: &str, lo: f64, whence: &str) -> (String, String) {
    (
        format!(
            "{how} is below the lowest bucket of `{family}` ({} from {whence}): under it the quantile is interpolated from 0, not measured",
            fmt_num(lo)
        ),
        format!(
            "use a threshold of at least {} (or finer buckets)",
            fmt_num(lo)
        ),
    )
}

/// The finite bucket bounds of `family` (lowest, top) and where they come from: the `le`
/// values an inventory saw, else the catalog's defaults for the inventory's version.
fn bucket_bounds(family: &str, scope: &Scope<'_>) -> Option<(f64, f64, String)> {
    let inv = scope.inv;
    let seen = inv
        .metric(&format!("{family}_bucket"))
        .and_then(|i| i.values)
        .and_then(|v| v.get("le").cloned())
        .unwrap_or_default();
    let finite: Vec<f64> = seen
        .iter()
        .filter_map(|s| s.parse::<f64>().ok())
        .filter(|x| x.is_finite())
        .collect();
    if let (Some(lo), Some(hi)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) {
        return Some((lo, hi, format!("its `le` labels on {}", inv.sources())));
    }
    let spec = names::inventory_spec(inv, Exporter::Vllm);
    let b = buckets::bounds(family, spec.as_ref().map(|s| s.version))?;
    let whence = match spec {
        Some(s) => format!("vLLM {}'s default buckets", s.version),
        None => "vLLM's default buckets".to_owned(),
    };
    Some((*b.first()?, *b.last()?, whence))
}

/// `60`, `0.8`, `2.5e-5`: a number as written in a query or a threshold.
fn fmt_num(x: f64) -> String {
    let s = format!("{x}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::rules::testing::*;

    #[test]
    fn unreachable_thresholds() {
        let inv = inventories();
        // A 0..1 fraction under `percentunit` with a threshold of 80 (meant 80 %).
        let f = run_panel(
            &inv,
            "vllm:kv_cache_usage_perc",
            Some("percentunit"),
            &[80.0],
        );
        let said = f
            .iter()
            .find(|f| f.rule == Rule::UnreachableThreshold)
            .unwrap();
        assert!(said.message.contains("8000 %"), "{}", said.message);
        assert_eq!(
            said.suggestion.as_deref(),
            Some("write the threshold as a fraction: 0.8")
        );
        assert!(!has(
            &run_panel(
                &inv,
                "vllm:kv_cache_usage_perc",
                Some("percentunit"),
                &[0.8]
            ),
            Rule::UnreachableThreshold
        ));
        assert!(!has(
            &run_panel(
                &inv,
                "vllm:kv_cache_usage_perc * 100",
                Some("percent"),
                &[80.0]
            ),
            Rule::UnreachableThreshold
        ));
        // A p99 above the top finite bucket: 60 s on vLLM before 0.8.4, 7680 s after.
        let p99 = "histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))";
        let f = run_panel(&catalog("vllm@0.6.4"), p99, Some("s"), &[80.0]);
        let said = f
            .iter()
            .find(|f| f.rule == Rule::UnreachableThreshold)
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert!(
            said.message.contains("(60 from vLLM 0.6.4"),
            "{}",
            said.message
        );
        assert!(!has(
            &run_panel(&catalog("vllm@0.26"), p99, Some("s"), &[80.0]),
            Rule::UnreachableThreshold
        ));
        // Through max() it is still the quantile; through `* 1000` it is not (the unit changed).
        let max = format!("max({p99})");
        assert!(has(
            &run_panel(&catalog("vllm@0.6.4"), &max, Some("s"), &[80.0]),
            Rule::UnreachableThreshold
        ));
        let ms = format!("{p99} * 1000");
        assert!(!has(
            &run_panel(&catalog("vllm@0.6.4"), &ms, Some("ms"), &[80.0]),
            Rule::UnreachableThreshold
        ));
        // Below the lowest bucket.
        let f = run_panel(&catalog("vllm@0.26"), p99, Some("s"), &[0.1]);
        assert!(has(&f, Rule::UnreachableThreshold), "{f:#?}");
        // An alert comparing the quantile beyond the buckets, and the bounds a page's `le` labels show.
        let f = run_with(
            &inventories(),
            "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m]))) > 5",
            false,
            None,
        );
        let said = f
            .iter()
            .find(|f| f.rule == Rule::UnreachableThreshold)
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert!(said.message.contains("`le` labels"), "{}", said.message);
        let f = run_with(
            &catalog("vllm@0.26"),
            "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m]))) > 5",
            false,
            None,
        );
        assert!(f.is_empty(), "{f:#?}");
    }
}
