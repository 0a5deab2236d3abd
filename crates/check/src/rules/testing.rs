//! What the rules' unit tests share: a page of vLLM series beside the dcgm-exporter,
//! kube-state-metrics and vLLM 0.26 catalogs, and ways to run every rule over an expression.

use crate::finding::{Finding, Rule, Severity};
use crate::inventory::Inventories;
use crate::inventory::engine::CatalogInventory;
use crate::inventory::snapshot::Snapshot;
use crate::promql::{Context, check_expr};

pub(crate) const PAGE: &str = "# TYPE vllm:kv_cache_usage_perc gauge
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

pub(crate) fn inventories() -> Inventories {
    let mut inv = Inventories::new();
    inv.push(Box::new(Snapshot::parse("page", PAGE.as_bytes()).0));
    for spec in ["dcgm-exporter@4.5", "kube-state-metrics@2.20", "vllm@0.26"] {
        inv.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
    }
    inv
}

pub(crate) fn catalog(spec: &str) -> Inventories {
    let mut inv = Inventories::new();
    inv.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
    inv
}

pub(crate) fn findings(expr: &str, inv: &Inventories, cx: Context<'_>) -> Vec<Finding> {
    check_expr(expr, inv, cx)
        .into_iter()
        .map(|h| h.finding)
        .collect()
}

pub(crate) fn run(expr: &str, graph: bool) -> Vec<Finding> {
    run_with(&inventories(), expr, graph, None)
}

pub(crate) fn run_with(
    inv: &Inventories,
    expr: &str,
    graph: bool,
    unit: Option<&str>,
) -> Vec<Finding> {
    let cx = Context {
        graph,
        panel_unit: unit,
        title: None,
        thresholds: &[],
        scaler: false,
    };
    findings(expr, inv, cx)
}

pub(crate) fn run_titled(expr: &str, title: &str, unit: Option<&str>) -> Vec<Finding> {
    let cx = Context {
        graph: true,
        panel_unit: unit,
        title: Some(title),
        thresholds: &[],
        scaler: false,
    };
    findings(expr, &inventories(), cx)
}

pub(crate) fn run_panel(
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
    findings(expr, inv, cx)
}

pub(crate) fn rules(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().map(|f| f.rule).collect()
}

pub(crate) fn has(findings: &[Finding], rule: Rule) -> bool {
    findings.iter().any(|f| f.rule == rule)
}

pub(crate) fn worst(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|f| f.severity).max()
}

/// The one finding of `expr`, which must be `rule`'s.
pub(crate) fn only(expr: &str, graph: bool, rule: Rule) -> Finding {
    let f = run(expr, graph);
    assert_eq!(rules(&f), vec![rule], "{expr}: {f:#?}");
    f.into_iter().next().unwrap()
}

/// `expr` has no finding.
pub(crate) fn clean(expr: &str, graph: bool) {
    let f = run(expr, graph);
    assert!(f.is_empty(), "{expr}: {f:#?}");
}
