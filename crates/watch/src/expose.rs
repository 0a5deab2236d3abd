//! watch's `/metrics`, in Prometheus naming: per deployment its verdict, confidence, headroom,
//! stall and drift flags and findings by severity; about watch itself its evaluations and the
//! Prometheus queries that failed. An unknown value (no KV-cache gauge, GPUs not attributable
//! to pods) is an absent series, never a 0.

use crate::state::{DURATION_BUCKETS, State};
use llmscope_core::diagnose::stall::StallState;
use llmscope_core::severity::Severity;
use std::fmt::Write;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value escaped for the text format.
fn esc(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The whole page.
pub fn render(state: &State) -> String {
    let mut out = String::with_capacity(4096);
    per_deployment(&mut out, state);
    about_watch(&mut out, state);
    out
}

fn per_deployment(out: &mut String, state: &State) {
    let deployments = state
        .latest
        .as_ref()
        .map(|e| e.deployments.as_slice())
        .unwrap_or_default();
    let ids: Vec<String> = deployments
        .iter()
        .map(|d| {
            format!(
                "deployment=\"{}\",namespace=\"{}\"",
                esc(&d.key.deployment),
                esc(&d.key.namespace)
            )
        })
        .collect();
    head(
        out,
        "llmscope_bottleneck",
        "gauge",
        "The deployment's current verdict (1 for the bottleneck named by the label).",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        let _ = writeln!(
            out,
            "llmscope_bottleneck{{{id},bottleneck=\"{}\"}} 1",
            d.bottleneck.as_str()
        );
    }
    head(
        out,
        "llmscope_confidence",
        "gauge",
        "Confidence of the verdict, 0..1.",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        let _ = writeln!(out, "llmscope_confidence{{{id}}} {}", d.confidence);
    }
    head(
        out,
        "llmscope_kv_cache_headroom_ratio",
        "gauge",
        "1 - the highest KV-cache usage in the window (fullest replica), 0..1.",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        if let Some(v) = d.kv_headroom {
            let _ = writeln!(out, "llmscope_kv_cache_headroom_ratio{{{id}}} {v}");
        }
    }
    head(
        out,
        "llmscope_gpu_headroom_ratio",
        "gauge",
        "1 - the mean GPU busy ratio in the window, 0..1.",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        if let Some(v) = d.gpu_headroom {
            let _ = writeln!(out, "llmscope_gpu_headroom_ratio{{{id}}} {v}");
        }
    }
    head(
        out,
        "llmscope_stalled",
        "gauge",
        "1 when requests sit in the engine and nothing is generated for --stall-after (alive but not serving).",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        match d.stall.state {
            StallState::Stalled => {
                let _ = writeln!(out, "llmscope_stalled{{{id}}} 1");
            }
            StallState::Serving => {
                let _ = writeln!(out, "llmscope_stalled{{{id}}} 0");
            }
            StallState::Unknown => {}
        }
    }
    head(
        out,
        "llmscope_version_drift",
        "gauge",
        "1 when the deployment exposes a renamed metric that the given dashboards and rules do not use.",
    );
    if !state_has_drift_files(state) {
        // Without files there is nothing to drift from: absent, not 0.
    } else {
        for (d, id) in deployments.iter().zip(&ids) {
            let _ = writeln!(
                out,
                "llmscope_version_drift{{{id}}} {}",
                u8::from(!d.drift.is_empty())
            );
        }
    }
    head(
        out,
        "llmscope_findings",
        "gauge",
        "Findings of the deployment's diagnosis by severity.",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        for sev in Severity::ALL {
            let n = d.findings.get(&sev).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "llmscope_findings{{{id},severity=\"{}\"}} {n}",
                sev.name()
            );
        }
    }
    head(
        out,
        "llmscope_verdict_since_timestamp_seconds",
        "gauge",
        "Since when the deployment's verdict has held (as seen by this watch process).",
    );
    for (d, id) in deployments.iter().zip(&ids) {
        if let Some(s) = state.since.get(&d.key) {
            let _ = writeln!(
                out,
                "llmscope_verdict_since_timestamp_seconds{{{id}}} {}",
                s.verdict_since
            );
        }
    }
}

fn state_has_drift_files(state: &State) -> bool {
    state.shown.drift_files > 0
}

fn about_watch(out: &mut String, state: &State) {
    head(
        out,
        "llmscope_watch_deployments",
        "gauge",
        "Deployments evaluated by this replica at the last evaluation.",
    );
    if let Some(e) = &state.latest {
        let _ = writeln!(out, "llmscope_watch_deployments {}", e.deployments.len());
    }
    head(
        out,
        "llmscope_watch_interval_seconds",
        "gauge",
        "The configured evaluation interval.",
    );
    let _ = writeln!(
        out,
        "llmscope_watch_interval_seconds {}",
        state.shown.interval_s
    );
    head(
        out,
        "llmscope_watch_window_seconds",
        "gauge",
        "The configured window each evaluation reads.",
    );
    let _ = writeln!(
        out,
        "llmscope_watch_window_seconds {}",
        state.shown.window_s
    );
    head(
        out,
        "llmscope_watch_last_success_timestamp_seconds",
        "gauge",
        "When the last successful evaluation finished (unix seconds).",
    );
    if let Some(t) = state.last_success {
        let _ = writeln!(out, "llmscope_watch_last_success_timestamp_seconds {t}");
    }
    head(
        out,
        "llmscope_watch_evaluations_total",
        "counter",
        "Evaluations attempted.",
    );
    let _ = writeln!(
        out,
        "llmscope_watch_evaluations_total {}",
        state.evaluations
    );
    head(
        out,
        "llmscope_watch_prometheus_query_errors_total",
        "counter",
        "Evaluations that failed, by how their Prometheus query failed.",
    );
    for kind in [
        "connect",
        "timeout",
        "http",
        "api",
        "decode",
        "too_large",
        "parse",
        "no_data",
        "other",
    ] {
        let n = state.errors.get(kind).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "llmscope_watch_prometheus_query_errors_total{{kind=\"{kind}\"}} {n}"
        );
    }
    head(
        out,
        "llmscope_watch_evaluation_duration_seconds",
        "histogram",
        "How long one evaluation of the fleet took.",
    );
    let d = &state.durations;
    for (n, le) in d.buckets.iter().zip(DURATION_BUCKETS) {
        let _ = writeln!(
            out,
            "llmscope_watch_evaluation_duration_seconds_bucket{{le=\"{le}\"}} {n}"
        );
    }
    let _ = writeln!(
        out,
        "llmscope_watch_evaluation_duration_seconds_bucket{{le=\"+Inf\"}} {}",
        d.count
    );
    let _ = writeln!(
        out,
        "llmscope_watch_evaluation_duration_seconds_sum {}",
        d.sum
    );
    let _ = writeln!(
        out,
        "llmscope_watch_evaluation_duration_seconds_count {}",
        d.count
    );
    head(
        out,
        "llmscope_build_info",
        "gauge",
        "The llmscope version serving these metrics.",
    );
    let _ = writeln!(
        out,
        "llmscope_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
}
