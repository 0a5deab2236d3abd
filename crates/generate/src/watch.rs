//! Alerts and a fleet dashboard on the metrics `llmscope watch` exposes about the deployments it
//! diagnoses and about itself (issue 15). They do not depend on any engine version — watch
//! reads the versions for you — so they are their own artefacts (`llmscope rules --watch`,
//! `llmscope dashboard --watch`), not mixed into the engine's: for a user who does not run watch
//! they would name series that never exist, and their absence alert would fire forever.
//!
//! [`rules`] → a [`RuleFile`] of one group; [`dashboard()`] → a Fleet row: verdicts over time per
//! deployment and the stall flag as state timelines, confidence, headroom, findings, and watch's
//! own health.

use crate::dashboard::{self, DashboardOptions, Frame, PanelSpec, Row};
use crate::grafana::{Dashboard, Variable};
use crate::promql::{Sel, agg, quantile, rate};
use crate::promrules::{Group, Rule, RuleFile};
use crate::rules::alert;

/// `llmscope_bottleneck{deployment,namespace,bottleneck}` = 1: the current verdict.
pub const BOTTLENECK: &str = "llmscope_bottleneck";
pub const CONFIDENCE: &str = "llmscope_confidence";
pub const KV_HEADROOM: &str = "llmscope_kv_cache_headroom_ratio";
pub const GPU_HEADROOM: &str = "llmscope_gpu_headroom_ratio";
/// 0/1: alive but not serving.
pub const STALLED: &str = "llmscope_stalled";
pub const VERSION_DRIFT: &str = "llmscope_version_drift";
pub const FINDINGS: &str = "llmscope_findings";
pub const EVALUATION_DURATION: &str = "llmscope_watch_evaluation_duration_seconds";
pub const LAST_SUCCESS: &str = "llmscope_watch_last_success_timestamp_seconds";
pub const QUERY_ERRORS: &str = "llmscope_watch_prometheus_query_errors_total";
pub const DEPLOYMENTS: &str = "llmscope_watch_deployments";
/// The configured `--interval`, so staleness is measured in intervals, not a guessed constant.
pub const INTERVAL: &str = "llmscope_watch_interval_seconds";

/// The verdicts worth an alert when they last: the deployment is saturated on something that a
/// configuration or capacity change fixes.
pub const ACTIONABLE: [&str; 7] = [
    "admission_limit",
    "kv_cache_capacity",
    "batch_limit",
    "token_budget",
    "front_end",
    "gpu_compute",
    "routing_imbalance",
];
/// Evaluations missed before watch counts as stale.
pub const STALE_INTERVALS: u32 = 3;

const DEPLOYMENT: [&str; 2] = ["namespace", "deployment"];

/// The watch alert rules.
pub fn rules() -> RuleFile {
    RuleFile {
        groups: vec![Group {
            name: "llmscope-watch".to_owned(),
            interval: None,
            rules: vec![stalled(), bottlenecked(), stale(), absent(), query_errors()],
        }],
    }
}

const RUNBOOK: &str = "Open the deployment on watch's status page, or run `llmscope diagnose --prometheus URL --match 'namespace=\"NS\"' --since 1h` for the evidence.";

fn stalled() -> Rule {
    alert(
        "LlmscopeDeploymentStalled",
        format!("{} == 1", agg("max", &DEPLOYMENT, STALLED)),
        "2m",
        "critical",
        [
            "{{ $labels.namespace }}/{{ $labels.deployment }} is alive but not serving",
            "llmscope watch finds {{ $labels.deployment }} in {{ $labels.namespace }} stalled: requests are running or waiting but no token is generated and no engine step runs (for longer than watch's --stall-after). Requests will time out; restart the pods and keep their logs.",
        ],
        &format!("llmscope verdict: stalled. {RUNBOOK}"),
    )
}

fn bottlenecked() -> Rule {
    let sel = Sel::named(BOTTLENECK).with(&[format!("bottleneck=~\"{}\"", ACTIONABLE.join("|"))]);
    let by = ["namespace", "deployment", "bottleneck"];
    alert(
        "LlmscopeDeploymentBottlenecked",
        format!("{} == 1", agg("max", &by, &sel.to_string())),
        "30m",
        "warning",
        [
            "{{ $labels.namespace }}/{{ $labels.deployment }} is bound by {{ $labels.bottleneck }}",
            "llmscope watch has diagnosed {{ $labels.deployment }} in {{ $labels.namespace }} as {{ $labels.bottleneck }} for 30 minutes: its throughput is capped there (kv_cache_capacity: more KV memory or shorter contexts; batch_limit: raise --max-num-seqs; token_budget: raise --max-num-batched-tokens; front_end: CPU for the API server, --api-server-count; gpu_compute: more GPUs; routing_imbalance: a queue- or KV-aware router, some replicas queue while others idle; admission_limit: requests shed at --max-num-queued-reqs, add replicas or let clients wait longer).",
        ],
        &format!("llmscope verdict `{{{{ $labels.bottleneck }}}}`. {RUNBOOK}"),
    )
}

/// Each watch replica (shard) on its own: both series come from the same target, so their label
/// sets match one to one.
fn stale() -> Rule {
    alert(
        "LlmscopeWatchStale",
        format!("(time() - {LAST_SUCCESS}) > {STALE_INTERVALS} * {INTERVAL}"),
        "5m",
        "warning",
        [
            "llmscope watch on {{ $labels.instance }} has not finished an evaluation in 3 intervals",
            "The last successful evaluation of llmscope watch on {{ $labels.instance }} is more than 3 evaluation intervals old: its verdicts and stall flags are stale, so stalls go unnoticed. Check its logs and llmscope_watch_prometheus_query_errors_total.",
        ],
        "llmscope verdict: none — watch is not diagnosing. Check `kubectl logs deploy/llmscope-watch` and its /readyz.",
    )
}

fn absent() -> Rule {
    alert(
        "LlmscopeWatchAbsent",
        format!("absent({LAST_SUCCESS})"),
        "10m",
        "warning",
        [
            "llmscope watch exposes no evaluations",
            &format!(
                "No series of {LAST_SUCCESS} for 10 minutes: llmscope watch is not running, not scraped (ServiceMonitor without the release label?), or has never finished an evaluation."
            ),
        ],
        "llmscope verdict: none — watch is not diagnosing. Check the Deployment, the ServiceMonitor's release label and Prometheus' targets page.",
    )
}

fn query_errors() -> Rule {
    let errors = rate(&Sel::named(QUERY_ERRORS), "10m");
    alert(
        "LlmscopeWatchQueryErrors",
        format!("{} > 0", agg("sum", &["instance", "kind"], &errors)),
        "15m",
        "warning",
        [
            "llmscope watch on {{ $labels.instance }} keeps failing Prometheus queries ({{ $labels.kind }})",
            "llmscope watch on {{ $labels.instance }} has had Prometheus query errors of kind {{ $labels.kind }} for 15 minutes ({{ $value | humanize }}/s): verdicts miss evidence or are not made. Check the Prometheus URL, credentials, and query limits (timeouts, 11,000 points per series).",
        ],
        "llmscope verdict: none for the deployments whose queries fail. Check watch's --prometheus, --bearer-token and --step.",
    )
}

fn matched(name: &str) -> String {
    Sel::named(name)
        .with(&["namespace=~\"$namespace\"".to_owned()])
        .to_string()
}

/// The Fleet row.
pub fn fleet_row() -> Row {
    Row {
        title: "Fleet (llmscope watch)",
        panels: vec![
            verdicts_panel(),
            stalls_panel(),
            confidence_panel(),
            headroom_panel(),
            findings_panel(),
            health_panel(),
        ],
    }
}

/// Each deployment's verdict over time, one band per bottleneck.
fn verdicts_panel() -> PanelSpec {
    PanelSpec::state_timeline(
        "Verdict per deployment",
        "llmscope watch's verdict for each deployment over time: one band per deployment and bottleneck, drawn while that is the verdict (llmscope_bottleneck == 1).",
        vec![(1.0, "verdict", "blue")],
    )
    .query(
        format!(
            "{} == 1",
            agg("max", &["namespace", "deployment", "bottleneck"], &matched(BOTTLENECK))
        ),
        "{{namespace}}/{{deployment}} {{bottleneck}}",
    )
}

/// The stall flag per deployment.
fn stalls_panel() -> PanelSpec {
    PanelSpec::state_timeline(
        "Stalled (alive but not serving)",
        "1 while watch finds the deployment stalled: requests in flight, no token generated and no engine step.",
        vec![(0.0, "serving", "green"), (1.0, "stalled", "red")],
    )
    .query(
        agg("max", &DEPLOYMENT, &matched(STALLED)),
        "{{namespace}}/{{deployment}}",
    )
}

/// How sure watch is of each verdict.
fn confidence_panel() -> PanelSpec {
    PanelSpec::new(
        "Verdict confidence",
        "percentunit",
        "How sure watch is of each deployment's verdict (0..1).",
    )
    .fraction()
    .query(
        agg("max", &DEPLOYMENT, &matched(CONFIDENCE)),
        "{{namespace}}/{{deployment}}",
    )
}

/// What is left before the KV cache or the GPU binds.
fn headroom_panel() -> PanelSpec {
    PanelSpec::new(
        "KV-cache and GPU headroom",
        "percentunit",
        "1 − mean use over watch's window: what each deployment has left before the KV cache or the GPU is the bottleneck.",
    )
    .fraction()
    .query(
        agg("min", &DEPLOYMENT, &matched(KV_HEADROOM)),
        "KV {{namespace}}/{{deployment}}",
    )
    .query(
        agg("min", &DEPLOYMENT, &matched(GPU_HEADROOM)),
        "GPU {{namespace}}/{{deployment}}",
    )
}

/// Findings by severity, and version drift.
fn findings_panel() -> PanelSpec {
    PanelSpec::new(
        "Findings by severity",
        "short",
        "Findings of each deployment's latest diagnosis, and version drift (a deployment whose pods run different engine versions).",
    )
    .query(
        agg("sum", &["namespace", "deployment", "severity"], &matched(FINDINGS)),
        "{{namespace}}/{{deployment}} {{severity}}",
    )
    .query(
        format!("{} == 1", agg("max", &DEPLOYMENT, &matched(VERSION_DRIFT))),
        "version drift {{namespace}}/{{deployment}}",
    )
}

/// watch's own health: evaluation time, query errors, deployments watched.
fn health_panel() -> PanelSpec {
    PanelSpec::new(
        "llmscope watch: evaluation time and query errors",
        "s",
        "p95 of watch's evaluation time per replica, and its Prometheus query errors per second by kind.",
    )
    .query(
        quantile(
            0.95,
            &Sel::named(&format!("{EVALUATION_DURATION}_bucket")),
            &["instance"],
            "$__rate_interval",
        ),
        "evaluation p95 {{instance}}",
    )
    .query(
        agg(
            "sum",
            &["instance", "kind"],
            &rate(&Sel::named(QUERY_ERRORS), "$__rate_interval"),
        ),
        "query errors/s {{kind}} {{instance}}",
    )
    .query(
        agg("sum", &[], DEPLOYMENTS),
        "deployments watched",
    )
}

/// The fleet dashboard: the Fleet row, a namespace picker.
pub fn dashboard(opts: &DashboardOptions) -> Dashboard {
    let frame = Frame {
        description: "Generated by llmscope: the verdicts, stalls and health llmscope watch exposes for every deployment it diagnoses (llmscope dashboard --watch).".to_owned(),
        tags: vec!["llmscope".to_owned(), "llmscope-watch".to_owned()],
        title: opts
            .title
            .clone()
            .unwrap_or_else(|| "LLM fleet (llmscope watch)".to_owned()),
        uid: opts
            .uid
            .clone()
            .unwrap_or_else(|| "llmscope-watch-fleet".to_owned()),
    };
    let namespace = Variable::label_values(
        "namespace",
        "Namespace",
        format!("label_values({BOTTLENECK}, namespace)"),
    );
    dashboard::assemble(
        frame,
        vec![fleet_row()],
        vec![Variable::datasource(), namespace],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_watch_alert_is_annotated_and_reads_watchs_own_names() {
        let file = rules();
        let names = [BOTTLENECK, STALLED, LAST_SUCCESS, INTERVAL, QUERY_ERRORS];
        let all: String = file.groups[0]
            .rules
            .iter()
            .map(|r| r.expr.as_str())
            .collect();
        for n in names {
            assert!(all.contains(n), "no alert reads {n}");
        }
        for r in &file.groups[0].rules {
            assert!(r.for_.is_some() && r.labels.contains_key("severity"));
            for key in ["summary", "description", "runbook"] {
                assert!(r.annotations.contains_key(key), "{:?} lacks {key}", r.alert);
            }
        }
        assert!(
            all.contains("> 3 * llmscope_watch_interval_seconds"),
            "{all}"
        );
        assert!(!all.contains("vllm:"), "no engine names: {all}");
    }

    #[test]
    fn the_fleet_dashboard_draws_verdicts_as_a_state_timeline() {
        let d = dashboard(&DashboardOptions::default());
        let j = serde_json::to_value(&d).unwrap();
        let panels = j["panels"].as_array().unwrap();
        let verdicts = panels
            .iter()
            .find(|p| p["title"] == "Verdict per deployment")
            .unwrap();
        assert_eq!(verdicts["type"], "state-timeline");
        assert_eq!(verdicts["gridPos"]["w"], 24);
        let expr = verdicts["targets"][0]["expr"].as_str().unwrap();
        assert!(expr.starts_with("max by (namespace, deployment, bottleneck) (llmscope_bottleneck{namespace=~\"$namespace\"}) == 1"), "{expr}");
        let stall = panels
            .iter()
            .find(|p| p["title"].as_str().unwrap().starts_with("Stalled"))
            .unwrap();
        assert_eq!(
            stall["fieldConfig"]["defaults"]["mappings"][0]["options"]["1"]["text"],
            "stalled"
        );
        assert_eq!(j["templating"]["list"][1]["name"], "namespace");
    }
}
