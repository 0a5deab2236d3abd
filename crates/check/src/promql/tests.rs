//! Every rule id with a case that must fire and a case that must not.

use super::{Context, check_expr};
use crate::finding::{Finding, Rule, Severity};
use crate::inventory::Inventories;
use crate::inventory::engine::CatalogInventory;
use crate::inventory::prom::{PromInventory, PromMetric};
use crate::inventory::snapshot::Snapshot;
use std::collections::{BTreeMap, BTreeSet};

const PAGE: &str = "# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.02
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 100
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 1
vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} 1
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 1
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 1
vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 1
vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.2
";

fn inventories() -> Inventories {
    let mut inv = Inventories::new();
    inv.push(Box::new(Snapshot::parse("page", PAGE.as_bytes()).0));
    for spec in ["dcgm-exporter@4.5", "kube-state-metrics@2.20", "vllm@0.26"] {
        inv.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
    }
    inv
}

fn run(expr: &str, graph: bool) -> Vec<Finding> {
    run_with(&inventories(), expr, graph, None)
}

fn run_with(inv: &Inventories, expr: &str, graph: bool, unit: Option<&str>) -> Vec<Finding> {
    let cx = Context {
        graph,
        panel_unit: unit,
        title: None,
        thresholds: &[],
        scaler: false,
    };
    check_expr(expr, inv, cx)
        .into_iter()
        .map(|h| h.finding)
        .collect()
}

fn rules(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().map(|f| f.rule).collect()
}

fn only(expr: &str, graph: bool, rule: Rule) -> Finding {
    let f = run(expr, graph);
    assert_eq!(rules(&f), vec![rule], "{expr}: {f:#?}");
    f.into_iter().next().unwrap()
}

fn clean(expr: &str, graph: bool) {
    let f = run(expr, graph);
    assert!(f.is_empty(), "{expr}: {f:#?}");
}

#[test]
fn unknown_metric() {
    let f = only("sum(vllm:num_request_running)", false, Rule::UnknownMetric);
    assert_eq!(
        f.suggestion.as_deref(),
        Some("did you mean vllm:num_requests_running?")
    );
    let f = only(
        r#"{__name__="kueue_quota_reserved_resources"}"#,
        false,
        Rule::UnknownMetric,
    );
    assert!(
        f.suggestion
            .unwrap()
            .contains("kueue_local_queue_resource_reservation")
    );
    clean("sum(vllm:num_requests_running)", false);
    clean(r#"{__name__="vllm:num_requests_running"}"#, false);
    clean("up == 0", false);
}

#[test]
fn renamed_metric() {
    let f = only(
        "max by (pod) (vllm:gpu_cache_usage_perc)",
        false,
        Rule::RenamedMetric,
    );
    assert_eq!(f.severity, Severity::Error);
    assert!(f.suggestion.unwrap().contains("vllm:kv_cache_usage_perc"));
    clean("max by (pod) (vllm:kv_cache_usage_perc)", false);
}

#[test]
fn missing_label() {
    let f = only(
        r#"vllm:kv_cache_usage_perc{tenant="a"}"#,
        false,
        Rule::MissingLabel,
    );
    // A page and the catalog cannot show relabelled labels: at most an info (issue 13).
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains("only a Prometheus inventory"),
        "{}",
        f.message
    );
    let f = only(
        "sum by (team) (kube_namespace_labels)",
        false,
        Rule::MissingLabel,
    );
    assert!(f.suggestion.unwrap().starts_with("use `label_team`"));
    let join = "sum by (namespace) (vllm:num_requests_running) * on (namespace) group_left (team) kube_namespace_labels";
    let f = only(join, false, Rule::MissingLabel);
    assert!(f.message.contains("group_left"), "{}", f.message);
    clean(&join.replace("(team)", "(label_team)"), false);
    clean(
        r#"vllm:kv_cache_usage_perc{pod="vllm-0", model_name="m"}"#,
        false,
    );
    let f = run(
        r#"vllm:request_success_total{finished_reason="success"} > 0"#,
        false,
    );
    assert_eq!(
        rules(&f),
        vec![Rule::MissingLabel, Rule::CounterWithoutRate]
    );
}

#[test]
fn missing_label_value_is_a_warning() {
    let f = run(
        r#"rate(vllm:request_success_total{finished_reason="success"}[5m])"#,
        false,
    );
    assert_eq!(rules(&f), vec![Rule::MissingLabel]);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(f[0].message.contains("length, stop"), "{}", f[0].message);
}

#[test]
fn rate_on_gauge() {
    only(
        "rate(vllm:kv_cache_usage_perc[5m])",
        false,
        Rule::RateOnGauge,
    );
    only(
        "increase(DCGM_FI_DEV_POWER_USAGE[5m])",
        false,
        Rule::RateOnGauge,
    );
    clean("rate(vllm:generation_tokens_total[5m])", false);
    clean("rate(vllm:time_to_first_token_seconds_count[5m])", false);
}

#[test]
fn counter_without_rate() {
    only(
        "vllm:generation_tokens_total",
        true,
        Rule::CounterWithoutRate,
    );
    only(
        "sum(vllm:generation_tokens_total) > 1000",
        false,
        Rule::CounterWithoutRate,
    );
    clean("vllm:generation_tokens_total", false);
    clean("sum(rate(vllm:generation_tokens_total[5m]))", true);
    clean("count(vllm:generation_tokens_total) > 0", false);
}

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

#[test]
fn unit_mismatch() {
    let f = only("vllm:kv_cache_usage_perc > 85", false, Rule::UnitMismatch);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.suggestion.unwrap().contains("0.85"));
    let f = only("avg(DCGM_FI_DEV_GPU_UTIL) < 0.5", false, Rule::UnitMismatch);
    assert_eq!(f.severity, Severity::Warning);
    only(
        "max(vllm:kv_cache_usage_perc) > DCGM_FI_DEV_GPU_UTIL",
        false,
        Rule::UnitMismatch,
    );
    clean("max(vllm:kv_cache_usage_perc) * 100 > 85", false);
    clean("max by (pod) (vllm:kv_cache_usage_perc) >= 0.85", false);
    // dcgm-exporter's framebuffer gauges are MiB: under Grafana's `bytes` they read 2^20 too small.
    let dcgm = catalog("dcgm-exporter@4.5");
    let f = run_with(&dcgm, "DCGM_FI_DEV_FB_USED", true, Some("bytes"));
    assert_eq!(rules(&f), vec![Rule::UnitMismatch], "{f:#?}");
    assert!(
        f[0].suggestion.as_deref() == Some("set the panel unit to `mbytes`"),
        "{f:#?}"
    );
    assert!(run_with(&dcgm, "DCGM_FI_DEV_FB_USED", true, Some("mbytes")).is_empty());
    assert!(
        run_with(
            &dcgm,
            "DCGM_FI_DEV_FB_USED * 1024 * 1024",
            true,
            Some("bytes")
        )
        .is_empty()
    );
    let inv = inventories();
    let f = run_with(
        &inv,
        "max(vllm:kv_cache_usage_perc)",
        false,
        Some("percent"),
    );
    assert_eq!(rules(&f), vec![Rule::UnitMismatch]);
    assert!(
        run_with(
            &inv,
            "max(vllm:kv_cache_usage_perc)",
            false,
            Some("percentunit")
        )
        .is_empty()
    );
    let q =
        "histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))";
    assert_eq!(
        rules(&run_with(&inv, q, false, Some("ms"))),
        vec![Rule::UnitMismatch]
    );
    assert!(run_with(&inv, q, false, Some("s")).is_empty());
}

#[test]
fn short_rate_window() {
    let mut inv = inventories();
    assert!(
        run_with(&inv, "rate(vllm:generation_tokens_total[30s])", false, None).is_empty(),
        "unknown interval"
    );
    inv.set_scrape_interval(15.0);
    let f = run_with(&inv, "rate(vllm:generation_tokens_total[30s])", false, None);
    assert_eq!(rules(&f), vec![Rule::ShortRateWindow]);
    assert!(f[0].suggestion.as_deref().unwrap().contains("1m"));
    assert!(run_with(&inv, "rate(vllm:generation_tokens_total[1m])", false, None).is_empty());
    assert!(
        run_with(
            &inv,
            "irate(vllm:generation_tokens_total[30s])",
            false,
            None
        )
        .is_empty()
    );
    let grafana =
        super::super::input::grafana::substitute("rate(vllm:generation_tokens_total[$__interval])");
    assert_eq!(
        rules(&run_with(&inv, &grafana, false, None)),
        vec![Rule::ShortRateWindow]
    );
    let grafana = super::super::input::grafana::substitute(
        "rate(vllm:generation_tokens_total[$__rate_interval])",
    );
    assert!(run_with(&inv, &grafana, false, None).is_empty());
}

#[test]
fn exporter_attribution() {
    let f = only(
        r#"DCGM_FI_DEV_GPU_UTIL{pod="vllm-0"}"#,
        false,
        Rule::ExporterAttribution,
    );
    assert!(f.suggestion.unwrap().contains("exported_pod"));
    only(
        "avg by (namespace) (DCGM_FI_DEV_GPU_UTIL)",
        false,
        Rule::ExporterAttribution,
    );
    clean("avg by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL)", false);
    clean(r#"vllm:num_requests_running{pod="vllm-0"}"#, false);
    let prom = |pods: &[&str]| {
        let labels: BTreeMap<String, BTreeSet<String>> = [(
            "pod".to_owned(),
            pods.iter().map(|p| (*p).to_owned()).collect(),
        )]
        .into();
        let m = PromMetric {
            labels,
            series: 1,
            ..PromMetric::default()
        };
        let mut inv = Inventories::new();
        inv.push(Box::new(PromInventory::new(
            "http://p",
            "1h",
            [("DCGM_FI_DEV_GPU_UTIL".to_owned(), m)].into(),
            Some(15.0),
        )));
        inv
    };
    let f = run_with(
        &prom(&["dcgm-exporter-x7k2p"]),
        "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)",
        false,
        None,
    );
    assert_eq!(rules(&f), vec![Rule::ExporterAttribution]);
    assert_eq!(f[0].severity, Severity::Error);
    assert!(
        run_with(
            &prom(&["vllm-0"]),
            "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)",
            false,
            None
        )
        .is_empty()
    );
}

#[test]
fn parse_error() {
    let f = only(
        "sum(rate(vllm:generation_tokens_total[5m])",
        false,
        Rule::ParseError,
    );
    assert!(f.message.contains("column 4"), "{}", f.message);
    only("vllm:num_requests_running +", false, Rule::ParseError);
    clean("sum(rate(vllm:generation_tokens_total[5m]))", false);
}

#[test]
fn recording_rules_count_as_existing() {
    let mut inv = inventories();
    assert_eq!(
        rules(&run_with(&inv, "job:tokens:rate5m > 0", false, None)),
        vec![Rule::UnknownMetric]
    );
    inv.add_recorded(["job:tokens:rate5m".to_owned()]);
    assert!(run_with(&inv, "job:tokens:rate5m > 0", false, None).is_empty());
}

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    /// PromQL-ish text: names, operators, brackets, quotes, Grafana variables.
    fn promqlish() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "vllm:kv_cache_usage_perc",
            "vllm:generation_tokens_total",
            "DCGM_FI_DEV_GPU_UTIL",
            "x_bucket",
            "sum",
            "by",
            "(",
            ")",
            "{",
            "}",
            "[",
            "]",
            "5m",
            "$__rate_interval",
            "${v}",
            "[[v]]",
            "\"",
            "'",
            "le",
            "=",
            "=~",
            "!=",
            ",",
            " ",
            "rate",
            "histogram_quantile",
            "0.9",
            "85",
            ">",
            "*",
            "on",
            "group_left",
            "\\",
            "é",
            "ignoring",
            "offset",
            "@",
            ":",
            "1e9",
            "-",
            "or",
        ]);
        prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn checking_any_text_never_panics(text in promqlish()) {
            let inv = inventories();
            let substituted = crate::input::grafana::substitute(&text);
            let _ = check_expr(&substituted, &inv, Context { graph: true, panel_unit: Some("percent"), title: None, thresholds: &[], scaler: false });
            let queries = vec![crate::input::Query::new(text.clone(), crate::Location::default())];
            let _ = crate::input::check(&queries, &inv);
        }

        #[test]
        fn reading_any_file_never_panics(text in "\\PC{0,200}") {
            for file in ["a.json", "a.yaml", "a.promql"] {
                let _ = crate::input::read(file, &text);
            }
        }
    }
}

fn run_titled(expr: &str, title: &str, unit: Option<&str>) -> Vec<Finding> {
    let cx = Context {
        graph: true,
        panel_unit: unit,
        title: Some(title),
        thresholds: &[],
        scaler: false,
    };
    check_expr(expr, &inventories(), cx)
        .into_iter()
        .map(|h| h.finding)
        .collect()
}

#[test]
fn steps_as_tokens_in_either_spelling() {
    for name in [
        "vllm:iteration_tokens_total_count",
        "vllm_iteration_tokens_total_count",
    ] {
        let f = run_titled(&format!("rate({name}[5m])"), "Overall Iteration TPS", None);
        assert!(
            f.iter()
                .any(|f| f.rule == Rule::StepsAsTokens && f.metric.as_deref() == Some(name)),
            "{name}: {f:#?}"
        );
        let f = run_titled(
            &format!("rate({name}[5m])"),
            "Engine steps per second",
            None,
        );
        assert!(!f.iter().any(|f| f.rule == Rule::StepsAsTokens), "{f:#?}");
    }
}

fn worst(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|f| f.severity).max()
}

#[test]
fn version_fallbacks_are_an_info_when_one_arm_exists() {
    for expr in [
        "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc",
        "max by (model_name) (vllm:gpu_cache_usage_perc{model_name=\"m\"} or vllm:kv_cache_usage_perc{model_name=\"m\"})",
        "histogram_quantile(0.9, sum by (le) (rate(vllm:time_per_output_token_seconds_bucket[5m]) or rate(vllm:inter_token_latency_seconds_bucket[5m])))",
    ] {
        let f = run(expr, true);
        assert_eq!(worst(&f), Some(Severity::Info), "{expr}: {f:#?}");
        let said = f
            .iter()
            .find(|f| f.rule == Rule::RenamedMetric)
            .unwrap_or_else(|| panic!("{expr}: {f:#?}"));
        assert!(
            said.message.contains("version fallback"),
            "{}",
            said.message
        );
    }
    // Without the `or`, the removed name is what it always was.
    let f = run("vllm:gpu_cache_usage_perc", true);
    assert!(worst(&f) > Some(Severity::Info), "{f:#?}");
}

#[test]
fn fallbacks_that_change_meaning_are_said() {
    let f = run(
        "histogram_quantile(0.9, sum by (le) (rate(vllm:request_time_per_output_token_seconds_bucket[5m]) or rate(vllm:inter_token_latency_seconds_bucket[5m])))",
        true,
    );
    let said = f
        .iter()
        .find(|f| f.rule == Rule::FallbackChangesMeaning)
        .unwrap_or_else(|| panic!("{f:#?}"));
    assert_eq!(said.severity, Severity::Warning);
    assert!(
        said.message.contains("per finished request"),
        "{}",
        said.message
    );
    assert!(said.message.contains("per token gap"), "{}", said.message);
    // Two unrelated names, one of which exists: the other's absence is not softened.
    let f = run(
        "vllm:num_requests_running or vllm:num_requests_swapped",
        true,
    );
    assert!(
        f.iter().any(|f| f.rule == Rule::FallbackChangesMeaning),
        "{f:#?}"
    );
    assert!(
        f.iter()
            .any(|f| f.rule == Rule::RenamedMetric && f.severity > Severity::Info),
        "{f:#?}"
    );
    // `or` between a metric and a constant is no fallback between names.
    clean("vllm:num_requests_running or vector(0)", true);
}

fn run_panel(
    inv: &Inventories,
    expr: &str,
    unit: Option<&str>,
    thresholds: &[f64],
) -> Vec<Finding> {
    let cx = Context {
        graph: true,
        panel_unit: unit,
        title: Some("panel"),
        thresholds,
        scaler: false,
    };
    check_expr(expr, inv, cx)
        .into_iter()
        .map(|h| h.finding)
        .collect()
}

fn catalog(spec: &str) -> Inventories {
    let mut inv = Inventories::new();
    inv.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
    inv
}

fn has(findings: &[Finding], rule: Rule) -> bool {
    findings.iter().any(|f| f.rule == rule)
}

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
    let p99 =
        "histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))";
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

#[test]
fn summed_fractions() {
    let f = run("sum(vllm:kv_cache_usage_perc)", true);
    assert_eq!(rules(&f), vec![Rule::SummedFraction], "{f:#?}");
    let f = run("sum by (model_name) (vllm:kv_cache_usage_perc) * 100", true);
    assert!(has(&f, Rule::SummedFraction), "{f:#?}");
    clean("sum by (engine) (vllm:kv_cache_usage_perc)", true);
    clean("max(vllm:kv_cache_usage_perc)", true);
    clean(
        "sum(vllm:kv_cache_usage_perc) / count(vllm:kv_cache_usage_perc)",
        true,
    );
    clean("sum(vllm:num_requests_running)", true);
    // An autoscaler divides by the replica count: there the sum is what is meant.
    let cx = Context {
        graph: false,
        scaler: true,
        ..Context::default()
    };
    assert!(check_expr("sum(vllm:kv_cache_usage_perc)", &inventories(), cx).is_empty());
}

#[test]
fn metricsql_is_named_not_a_parse_error() {
    let f = run("range_median(rate(vllm:generation_tokens_total[5m]))", true);
    assert_eq!(rules(&f), vec![Rule::OtherDialect], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Info);
    assert!(f[0].message.contains("MetricsQL"), "{}", f[0].message);
    assert!(f[0].message.contains("`range_median`"), "{}", f[0].message);
    // Broken PromQL stays a parse error.
    let f = run("sum(rate(vllm:generation_tokens_total[5m])", true);
    assert_eq!(rules(&f), vec![Rule::ParseError], "{f:#?}");
    // An aggregation over a range (VictoriaMetrics' vmanomaly alerts do it): either dialect.
    let f = run("sum(vllm:num_requests_running[5m]) by (pod)", false);
    assert_eq!(rules(&f), vec![Rule::OtherDialect], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message.contains("Prometheus rejects"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_quantile_of_an_uncatalogued_seconds_histogram_is_in_seconds() {
    let q =
        "histogram_quantile(0.9, sum by (le) (rate(vllm_e2e_request_latency_seconds_bucket[5m])))";
    let f = run_with(&inventories(), q, true, Some("ms"));
    assert!(f.iter().any(|f| f.rule == Rule::UnitMismatch), "{f:#?}");
    let f = run_with(&inventories(), q, true, Some("s"));
    assert!(!f.iter().any(|f| f.rule == Rule::UnitMismatch), "{f:#?}");
}

#[test]
fn sums_over_per_process_copies() {
    // vLLM 0.9.2–0.11 exported vllm:kv_cache_usage_perc once per API-server process (`pid`)
    // with --api-server-count > 1.
    let old = catalog("vllm@0.10");
    let per = |f: &[Finding]| -> Vec<Finding> {
        f.iter()
            .filter(|f| f.rule == Rule::PerProcessSum)
            .cloned()
            .collect()
    };
    let f = per(&run_with(&old, "sum(vllm:kv_cache_usage_perc)", true, None));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message.contains("--api-server-count > 1"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].suggestion
            .as_deref()
            .unwrap()
            .contains("max without (pid)"),
        "{f:#?}"
    );
    for fires in [
        "avg(vllm:kv_cache_usage_perc)",
        "sum by (pod) (vllm:kv_cache_usage_perc)",
        "sum without (pid) (vllm:kv_cache_usage_perc)",
        "sum(vllm:kv_cache_usage_perc) / count(vllm:kv_cache_usage_perc)",
    ] {
        assert_eq!(per(&run_with(&old, fires, true, None)).len(), 1, "{fires}");
    }
    for quiet in [
        "max(vllm:kv_cache_usage_perc)",
        "max without (pid) (vllm:kv_cache_usage_perc)",
        "sum(max without (pid) (vllm:kv_cache_usage_perc))",
        "sum by (pid) (vllm:kv_cache_usage_perc)",
        "vllm:kv_cache_usage_perc > 0.9",
        // Running/waiting were merged (`mostrecent`) from the start of multiprocess metrics.
        "sum(vllm:num_requests_running)",
    ] {
        assert!(
            per(&run_with(&old, quiet, true, None)).is_empty(),
            "{quiet}"
        );
    }
    // Merged again from 0.12.0 on.
    assert!(
        per(&run_with(
            &catalog("vllm@0.32"),
            "sum(vllm:kv_cache_usage_perc)",
            true,
            None
        ))
        .is_empty()
    );
    // An autoscaler wants the sum across pods, not across a pod's copies.
    let cx = Context {
        scaler: true,
        ..Context::default()
    };
    let f: Vec<Finding> = check_expr("sum(vllm:kv_cache_usage_perc)", &old, cx)
        .into_iter()
        .map(|h| h.finding)
        .collect();
    assert_eq!(rules(&f), vec![Rule::PerProcessSum], "{f:#?}");
    // A page decides by what it shows: `pid` seen is copies whatever the version, none is none.
    let page = "# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\",pid=\"273\"} 0.65
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\",pid=\"274\"} 0.0
";
    let mut seen = Inventories::new();
    seen.push(Box::new(Snapshot::parse("page", page.as_bytes()).0));
    let f = per(&run_with(
        &seen,
        "sum(vllm:kv_cache_usage_perc)",
        true,
        None,
    ));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].message.contains("carry `pid`"), "{}", f[0].message);
    assert!(
        per(&run_with(
            &inventories(),
            "sum(vllm:kv_cache_usage_perc)",
            true,
            None
        ))
        .is_empty()
    );
}

#[test]
fn a_producer_nothing_knows_is_uncovered_not_unknown() {
    // Neutree's own exporter (neutree-ai/neutree's dashboards query it beside vLLM's names).
    let f = only(
        "count(neutree_node_ready{cluster=\"a\"})",
        false,
        Rule::UncoveredProducer,
    );
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("`neutree_…` names"), "{}", f.message);
    // A namespace an inventory has, a misspelling, or a recording rule stays an error.
    only("vllm_num_requests_running", false, Rule::UnknownMetric);
    only("DCGM_FI_DEV_FB_TOTAL", false, Rule::UnknownMetric);
    only("job:neutree_ready:sum", false, Rule::UnknownMetric);
    // Where an inventory is a Prometheus, an absent name is absent, whoever exports it.
    let mut inv = Inventories::new();
    inv.push(Box::new(PromInventory::new(
        "http://p",
        "1h",
        [(
            "vllm:num_requests_running".to_owned(),
            PromMetric::default(),
        )]
        .into(),
        Some(15.0),
    )));
    let f = run_with(&inv, "neutree_node_ready", false, None);
    assert_eq!(rules(&f), vec![Rule::UnknownMetric], "{f:#?}");
}

#[test]
fn an_exporter_no_inventory_covers_is_uncovered_not_unknown() {
    // userravs/digitalocean-nim-gpu-monitoring's H100 dashboard, checked against dcgm-exporter
    // only: its kube-state-metrics and HTTP panels cannot be judged, and say so once.
    let dcgm = catalog("dcgm-exporter@4.5");
    for expr in [
        "sum(kube_pod_status_ready{condition=\"true\"})",
        "sum(rate(http_requests_total[5m]))",
    ] {
        let f = run_with(&dcgm, expr, false, None);
        assert_eq!(rules(&f), vec![Rule::UncoveredProducer], "{expr}: {f:#?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.starts_with("no inventory covers "),
            "{}",
            f[0].message
        );
    }
    // What the catalog knows without a version is still said: a renamed name, a misspelling.
    let f = run_with(&dcgm, "vllm:gpu_cache_usage_perc", false, None);
    assert_eq!(rules(&f), vec![Rule::RenamedMetric], "{f:#?}");
    let f = run_with(&dcgm, "vllm:num_request_running", false, None);
    assert_eq!(rules(&f), vec![Rule::UnknownMetric], "{f:#?}");
    // With the exporter's inventory loaded, its absent names are errors again.
    let f = run_with(
        &catalog("kube-state-metrics@2.20"),
        "kube_pod_ready_typo_x",
        false,
        None,
    );
    assert_eq!(rules(&f), vec![Rule::UnknownMetric], "{f:#?}");
}

#[test]
fn nims_unprefixed_names_mean_vllms() {
    // awslabs/data-on-eks' NIM dashboard: a stat of NIM's gpu_cache_usage_perc under
    // percentunit with Grafana's default step at 80.
    let cx = Context {
        graph: false,
        panel_unit: Some("percentunit"),
        title: None,
        thresholds: &[80.0],
        scaler: false,
    };
    let f: Vec<Finding> = check_expr("gpu_cache_usage_perc{}", &catalog("vllm@0.32"), cx)
        .into_iter()
        .map(|h| h.finding)
        .collect();
    assert_eq!(
        rules(&f),
        vec![Rule::UncoveredProducer, Rule::UnreachableThreshold],
        "{f:#?}"
    );
}
