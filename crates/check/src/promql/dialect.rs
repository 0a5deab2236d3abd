//! Expressions in another dialect than PromQL. VictoriaMetrics' MetricsQL is a superset of
//! PromQL: dashboards written for it call functions PromQL does not have (`label_value`,
//! `range_median`, `rollup_rate`, …) or use its `WITH` templates and `keep_metric_names`. Such an
//! expression does not parse as PromQL; [`metricsql`] names what makes it MetricsQL, so the
//! finding says "not PromQL, not linted" instead of a parse error.

use super::parse::PromqlError;

/// Functions MetricsQL has and PromQL does not.
const METRICSQL_FUNCTIONS: &[&str] = &[
    // label manipulation
    "alias",
    "drop_common_labels",
    "label_copy",
    "label_del",
    "label_graphite_group",
    "label_keep",
    "label_lowercase",
    "label_map",
    "label_match",
    "label_mismatch",
    "label_move",
    "label_set",
    "label_transform",
    "label_uppercase",
    "label_value",
    "labels_equal",
    // range and running functions over the points of a series
    "range_avg",
    "range_first",
    "range_last",
    "range_linear_regression",
    "range_mad",
    "range_max",
    "range_median",
    "range_min",
    "range_normalize",
    "range_quantile",
    "range_stddev",
    "range_stdvar",
    "range_sum",
    "range_trim_outliers",
    "range_trim_spikes",
    "range_trim_zscore",
    "range_zscore",
    "running_avg",
    "running_max",
    "running_min",
    "running_sum",
    // rollups
    "ascent_over_time",
    "count_eq_over_time",
    "count_gt_over_time",
    "count_le_over_time",
    "count_ne_over_time",
    "decreases_over_time",
    "delta_prometheus",
    "descent_over_time",
    "distinct_over_time",
    "duration_over_time",
    "geomean_over_time",
    "histogram_over_time",
    "hoeffding_bound_lower",
    "hoeffding_bound_upper",
    "increase_prometheus",
    "increase_pure",
    "increases_over_time",
    "integrate",
    "lag",
    "lifetime",
    "median_over_time",
    "mode_over_time",
    "rate_over_sum",
    "rollup",
    "rollup_candlestick",
    "rollup_delta",
    "rollup_deriv",
    "rollup_increase",
    "rollup_rate",
    "rollup_scrape_interval",
    "scrape_interval",
    "share_eq_over_time",
    "share_gt_over_time",
    "share_le_over_time",
    "sum2_over_time",
    "tfirst_over_time",
    "tlast_change_over_time",
    "tlast_over_time",
    "tmax_over_time",
    "tmin_over_time",
    "zscore_over_time",
    // transformations
    "bitmap_and",
    "bitmap_or",
    "bitmap_xor",
    "buckets_limit",
    "end",
    "histogram_share",
    "interpolate",
    "keep_last_value",
    "keep_next_value",
    "now",
    "prometheus_buckets",
    "rand",
    "rand_exponential",
    "rand_normal",
    "range_normalize",
    "remove_resets",
    "ru",
    "smooth_exponential",
    "sort_by_label_numeric",
    "sort_by_label_numeric_desc",
    "start",
    "step",
    "timezone_offset",
    "ttf",
    "union",
    // aggregations
    "any",
    "bottomk_avg",
    "bottomk_last",
    "bottomk_max",
    "bottomk_median",
    "bottomk_min",
    "distinct",
    "geomean",
    "histogram",
    "mad",
    "median",
    "mode",
    "outliers_iqr",
    "outliers_mad",
    "outliersk",
    "share",
    "sum2",
    "topk_avg",
    "topk_last",
    "topk_max",
    "topk_median",
    "topk_min",
    "zscore",
];

/// What an expression that does not parse as PromQL is instead.
#[derive(Debug, Clone, PartialEq)]
pub enum Foreign {
    /// MetricsQL, by what [`metricsql`] names (`` the function `label_value` ``, …).
    MetricsQl(String),
    /// An aggregation over a range vector (`sum(x[5m])`): MetricsQL aggregates the range's
    /// points, Prometheus refuses it. Which was meant the expression cannot say.
    RangeAggregation,
}

/// Whether `expr`, which failed to parse with `error`, is written in another dialect.
pub fn foreign(expr: &str, error: &PromqlError, refused: bool) -> Option<Foreign> {
    // `step()` and `range()` in a range or after `offset` are Prometheus 3's duration functions,
    // `start()` and `end()` after `@` its own: PromQL, which Prometheus may still refuse.
    if refused || super::prom3::duration_expression(expr) {
        return None;
    }
    if let Some(what) = metricsql(expr) {
        return Some(Foreign::MetricsQl(what));
    }
    error
        .message
        .contains("in aggregation expression, got matrix")
        .then_some(Foreign::RangeAggregation)
}

/// What makes `expr` MetricsQL rather than PromQL (`` `label_value` ``, `` `WITH` templates ``),
/// when something does. Looked for outside strings only.
pub fn metricsql(expr: &str) -> Option<String> {
    let code = outside_strings(expr);
    let words = words(&code);
    if words
        .first()
        .is_some_and(|(w, _)| w.eq_ignore_ascii_case("with"))
        && code[words[0].1 + 4..].trim_start().starts_with('(')
    {
        return Some("its `WITH` templates".to_owned());
    }
    for (w, at) in &words {
        let called = code[at + w.len()..].trim_start().starts_with('(');
        if called && METRICSQL_FUNCTIONS.contains(&w.as_str()) {
            return Some(format!("the function `{w}`"));
        }
        if w == "keep_metric_names" {
            return Some("the `keep_metric_names` modifier".to_owned());
        }
    }
    None
}

/// `expr` with the contents of string literals blanked (same length, every offset kept), so
/// words inside label values are not taken for functions, names or operators. A backslash
/// escapes in `"…"` and `'…'`; a backtick string has no escapes.
pub(crate) fn outside_strings(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in expr.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q != '`' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    out.push(c);
                    continue;
                }
                out.extend(std::iter::repeat_n(' ', c.len_utf8()));
            }
            None => {
                if matches!(c, '"' | '\'' | '`') {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// Identifiers (`[A-Za-z_][A-Za-z0-9_]*`, not part of a metric name with `:`) and their offsets.
fn words(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b':'))
            {
                i += 1;
            }
            let word = &code[start..i];
            let after_dot = start > 0 && bytes[start - 1] == b'.';
            if !word.contains(':') && !after_dot {
                out.push((word.to_owned(), start));
            }
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::metricsql;

    #[test]
    fn names_what_makes_an_expression_metricsql() {
        assert_eq!(
            metricsql("label_value(vllm:cache_config_info, \"num_gpu_blocks\")").as_deref(),
            Some("the function `label_value`")
        );
        assert_eq!(
            metricsql("range_median(rate(x_total[5m]))").as_deref(),
            Some("the function `range_median`")
        );
        assert_eq!(
            metricsql("WITH (q = rate(x_total[5m])) q / 2").as_deref(),
            Some("its `WITH` templates")
        );
        assert_eq!(
            metricsql("rate(x_total[5m]) keep_metric_names").as_deref(),
            Some("the `keep_metric_names` modifier")
        );
        // PromQL, a MetricsQL name inside a label value, a metric named like a function.
        assert_eq!(metricsql("sum by (le) (rate(x_bucket[5m]))"), None);
        assert_eq!(metricsql("up{job=\"median(\"}"), None);
        assert_eq!(metricsql("median + 1"), None);
        assert_eq!(metricsql("vllm:median(x)"), None);
    }
}
