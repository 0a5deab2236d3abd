//! watch's `/metrics`, in Prometheus naming: per deployment its verdict, confidence, headroom,
//! stall and drift flags and findings by severity; about watch itself its evaluations and the
//! Prometheus queries that failed. An unknown value (no KV-cache gauge, GPUs not attributable
//! to pods) is an absent series, never a 0.
//!
//! The text is written by [`promtext::write::Writer`] (Go client style: `1`, `0.5`), the one
//! exposition writer, which escapes label values and HELP texts and lays out the histogram.

use crate::evaluate::DeploymentStatus;
use crate::state::{DURATION_BUCKETS, Durations, State};
use llmscope_core::severity::Severity;
use llmscope_diagnosis::stall::StallState;
use promtext::MetricType::{Counter, Gauge, Histogram};
use promtext::write::{FloatStyle, Writer};

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The `kind` label values of `llmscope_watch_prometheus_query_errors_total`, all always shown.
const QUERY_ERROR_KINDS: [&str; 9] = [
    "connect",
    "timeout",
    "http",
    "api",
    "decode",
    "too_large",
    "parse",
    "no_data",
    "other",
];

/// The whole page.
pub fn render(state: &State) -> String {
    let mut out = String::with_capacity(4096);
    let mut w = Writer::new(&mut out, FloatStyle::GoShortest);
    per_deployment(&mut w, state);
    about_watch(&mut w, state);
    out
}

/// The labels that name a deployment.
fn id(d: &DeploymentStatus) -> [(&str, &str); 2] {
    [
        ("deployment", d.key.deployment.as_str()),
        ("namespace", d.key.namespace.as_str()),
    ]
}

fn per_deployment(w: &mut Writer<'_>, state: &State) {
    let deps = state
        .latest
        .as_ref()
        .map(|e| e.deployments.as_slice())
        .unwrap_or_default();
    bottlenecks(w, deps);
    let confidence = "Confidence of the verdict, 0..1.";
    gauge(w, deps, "llmscope_confidence", confidence, |d| {
        Some(d.confidence)
    });
    headroom(w, deps);
    stalls(w, deps);
    drift(w, deps, state.shown.drift_files > 0);
    findings(w, deps);
    replicas(w, deps);
    gauge(
        w,
        deps,
        "llmscope_verdict_since_timestamp_seconds",
        "Since when the deployment's verdict has held (as seen by this watch process).",
        |d| state.since.get(&d.key).map(|s| s.verdict_since),
    );
}

/// A gauge family with one sample per deployment that `value` gives one for.
fn gauge(
    w: &mut Writer<'_>,
    deps: &[DeploymentStatus],
    name: &str,
    help: &str,
    value: impl Fn(&DeploymentStatus) -> Option<f64>,
) {
    w.family(name, help, Gauge);
    for d in deps {
        if let Some(v) = value(d) {
            w.sample(name, &id(d), v);
        }
    }
}

/// The verdict: 1 for the bottleneck named by the label.
fn bottlenecks(w: &mut Writer<'_>, deps: &[DeploymentStatus]) {
    let name = "llmscope_bottleneck";
    w.family(
        name,
        "The deployment's current verdict (1 for the bottleneck named by the label).",
        Gauge,
    );
    for d in deps {
        let [dep, ns] = id(d);
        w.sample(name, &[dep, ns, ("bottleneck", d.bottleneck.as_str())], 1.0);
    }
}

fn headroom(w: &mut Writer<'_>, deps: &[DeploymentStatus]) {
    gauge(
        w,
        deps,
        "llmscope_kv_cache_headroom_ratio",
        "1 - the highest KV-cache usage in the window (fullest replica), 0..1.",
        |d| d.kv_headroom,
    );
    gauge(
        w,
        deps,
        "llmscope_gpu_headroom_ratio",
        "1 - the mean GPU busy ratio in the window, 0..1.",
        |d| d.gpu_headroom,
    );
}

/// 1 stalled, 0 serving; absent when unknown.
fn stalls(w: &mut Writer<'_>, deps: &[DeploymentStatus]) {
    gauge(
        w,
        deps,
        "llmscope_stalled",
        "1 when requests sit in the engine and nothing is generated for --stall-after (alive but not serving).",
        |d| match d.stall.state {
            StallState::Stalled => Some(1.0),
            StallState::Serving => Some(0.0),
            StallState::Unknown => None,
        },
    );
}

/// Without dashboards or rules (`watched` false) there is nothing to drift from: absent, not 0.
fn drift(w: &mut Writer<'_>, deps: &[DeploymentStatus], watched: bool) {
    gauge(
        w,
        deps,
        "llmscope_version_drift",
        "1 when the deployment exposes a renamed metric that the given dashboards and rules do not use.",
        |d| watched.then(|| f64::from(u8::from(!d.drift.is_empty()))),
    );
}

/// Every severity of every deployment, 0 included.
fn findings(w: &mut Writer<'_>, deps: &[DeploymentStatus]) {
    let name = "llmscope_findings";
    w.family(
        name,
        "Findings of the deployment's diagnosis by severity.",
        Gauge,
    );
    for d in deps {
        let [dep, ns] = id(d);
        for sev in Severity::ALL {
            let n = d.findings.get(&sev).copied().unwrap_or(0);
            w.sample_count(name, &[dep, ns, ("severity", sev.name())], u64::from(n));
        }
    }
}

/// The fleet (issue 25): each replica's own verdict and share of the requests, and how unevenly
/// the deployment's replicas took them — for deployments of two or more replicas; the share and
/// the imbalance absent where the requests each finished are unknown.
fn replicas(w: &mut Writer<'_>, deps: &[DeploymentStatus]) {
    let name = "llmscope_replica_bottleneck";
    w.family(
        name,
        "Each replica's own verdict (1 for the bottleneck named by the label), where the deployment has two or more.",
        Gauge,
    );
    for d in deps {
        for r in &d.replica_verdicts {
            let labels = replica_labels(d, r);
            let mut labels: Vec<(&str, &str)> = labels.to_vec();
            labels.push(("bottleneck", r.verdict.as_str()));
            w.sample(name, &labels, 1.0);
        }
    }
    let name = "llmscope_replica_requests_share_ratio";
    w.family(
        name,
        "Each replica's share of the requests its deployment finished in the window, 0..1.",
        Gauge,
    );
    for d in deps {
        for r in &d.replica_verdicts {
            if let Some(share) = r.share_of_requests {
                w.sample(name, &replica_labels(d, r), share);
            }
        }
    }
    gauge(
        w,
        deps,
        "llmscope_routing_imbalance_ratio",
        "The largest replica's share of the deployment's finished requests over an even share (1 = even, N = one of N replicas took all).",
        DeploymentStatus::imbalance,
    );
}

/// A replica's labels: its deployment's, the pod and the `engine` rank (empty when it has none).
fn replica_labels<'a>(
    d: &'a DeploymentStatus,
    r: &'a llmscope_diagnosis::ReplicaVerdict,
) -> [(&'a str, &'a str); 4] {
    let [dep, ns] = id(d);
    [
        dep,
        ns,
        ("replica", r.pod.as_str()),
        ("rank", r.rank.as_deref().unwrap_or("")),
    ]
}

fn about_watch(w: &mut Writer<'_>, state: &State) {
    last_evaluation(w, state);
    configuration(w, state);
    evaluations(w, state);
    query_errors(w, state);
    durations(w, &state.durations);
    let name = "llmscope_build_info";
    w.family(name, "The llmscope version serving these metrics.", Gauge);
    w.sample(name, &[("version", env!("CARGO_PKG_VERSION"))], 1.0);
}

/// A gauge family of one unlabelled sample, when there is a value.
fn single(w: &mut Writer<'_>, name: &str, help: &str, value: Option<f64>) {
    w.family(name, help, Gauge);
    if let Some(v) = value {
        w.sample(name, &[], v);
    }
}

/// How many deployments the last evaluation covered (absent before the first).
fn last_evaluation(w: &mut Writer<'_>, state: &State) {
    let deployments = "Deployments evaluated by this replica at the last evaluation.";
    let n = state.latest.as_ref().map(|e| e.deployments.len() as f64);
    single(w, "llmscope_watch_deployments", deployments, n);
}

/// How this replica is set up, and when it last succeeded.
fn configuration(w: &mut Writer<'_>, state: &State) {
    let shown = &state.shown;
    let interval = "The configured evaluation interval.";
    single(
        w,
        "llmscope_watch_interval_seconds",
        interval,
        Some(shown.interval_s),
    );
    let window = "The configured window each evaluation reads.";
    single(
        w,
        "llmscope_watch_window_seconds",
        window,
        Some(shown.window_s),
    );
    single(
        w,
        "llmscope_watch_last_success_timestamp_seconds",
        "When the last successful evaluation finished (unix seconds).",
        state.last_success,
    );
}

fn evaluations(w: &mut Writer<'_>, state: &State) {
    let name = "llmscope_watch_evaluations_total";
    w.family(name, "Evaluations attempted.", Counter);
    w.sample_count(name, &[], state.evaluations);
}

/// The failed evaluations by how their query failed, every kind shown.
fn query_errors(w: &mut Writer<'_>, state: &State) {
    let name = "llmscope_watch_prometheus_query_errors_total";
    w.family(
        name,
        "Evaluations that failed, by how their Prometheus query failed.",
        Counter,
    );
    for kind in QUERY_ERROR_KINDS {
        let n = state.errors.get(kind).copied().unwrap_or(0);
        w.sample_count(name, &[("kind", kind)], n);
    }
}

fn durations(w: &mut Writer<'_>, d: &Durations) {
    let name = "llmscope_watch_evaluation_duration_seconds";
    w.family(
        name,
        "How long one evaluation of the fleet took.",
        Histogram,
    );
    let buckets: Vec<(f64, u64)> = DURATION_BUCKETS.into_iter().zip(d.buckets).collect();
    w.histogram(name, &[], &buckets, d.sum, d.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch that has evaluated nothing yet.
    fn empty_state() -> State {
        State::new(crate::state::Shown {
            prometheus: "http://p".to_owned(),
            interval_s: 60.0,
            window_s: 900.0,
            shard: "0/1".to_owned(),
            drift_files: 0,
        })
    }

    /// The page parses back as the text format, every family typed, every sample where it
    /// belongs (issue 30: the text comes from `promtext`'s writer).
    #[test]
    fn the_page_parses_back() {
        let state = empty_state();
        let page = render(&state);
        let (families, errors) = promtext::parse_families(page.as_bytes());
        assert!(errors.is_empty(), "{errors:?}\n{page}");
        let typed = |n: &str| {
            families
                .iter()
                .find(|f| f.name.unescape() == n)
                .map(|f| f.ty)
        };
        assert_eq!(
            typed("llmscope_watch_evaluation_duration_seconds"),
            Some(Histogram)
        );
        assert_eq!(typed("llmscope_watch_evaluations_total"), Some(Counter));
        let histogram = families
            .iter()
            .find(|f| f.ty == Histogram)
            .map_or(0, |f| f.samples.len());
        assert_eq!(
            histogram,
            DURATION_BUCKETS.len() + 3,
            "buckets, +Inf, sum, count"
        );
    }

    /// Issue 25: a deployment of two replicas, one taking three requests in four, exports each
    /// replica's verdict and share and its imbalance (0.75 × 2 = 1.5); a replica whose share is
    /// unknown has no share sample and its deployment no imbalance — absent, not 0.
    #[test]
    fn replicas_and_the_imbalance_are_exported() {
        use llmscope_diagnosis::stall::{Stall, StallState};
        use llmscope_diagnosis::{Bottleneck, ReplicaVerdict};
        let replica = |pod: &str, verdict, share| ReplicaVerdict {
            pod: pod.to_owned(),
            rank: None,
            verdict,
            running: Some(8.0),
            waiting: Some(0.0),
            kv: None,
            share_of_requests: share,
            queue_s_per_request: None,
        };
        let status = |name: &str, replicas: Vec<ReplicaVerdict>| DeploymentStatus {
            key: crate::fleet::DeploymentKey {
                namespace: "llm".to_owned(),
                deployment: name.to_owned(),
            },
            replicas: replicas.len() as u32,
            bottleneck: Bottleneck::RoutingImbalance,
            confidence: 0.85,
            summary: String::new(),
            evidence: Vec::new(),
            advice: None,
            kv_headroom: None,
            gpu_headroom: None,
            stall: Stall {
                state: StallState::Serving,
                last_progress: None,
                since: None,
                in_engine: None,
                why: String::new(),
            },
            drift: Vec::new(),
            findings: Default::default(),
            replica_verdicts: replicas,
        };
        let mut state = empty_state();
        let e = crate::evaluate::Evaluation {
            at: 100.0,
            duration_s: 0.1,
            deployments: vec![
                status(
                    "chat",
                    vec![
                        replica("chat-0", Bottleneck::BatchLimit, Some(0.75)),
                        replica("chat-1", Bottleneck::LoadNotReached, Some(0.25)),
                    ],
                ),
                status(
                    "code",
                    vec![
                        replica("code-0", Bottleneck::BatchLimit, Some(0.5)),
                        replica("code-1", Bottleneck::BatchLimit, None),
                    ],
                ),
            ],
            series: 0,
            points: 0,
            unattributed: 0,
            other_shards: 0,
            warnings: Vec::new(),
        };
        state.record(e, 100.0);
        let page = render(&state);
        let (families, errors) = promtext::parse_families(page.as_bytes());
        assert!(errors.is_empty(), "{errors:?}\n{page}");
        let samples = |n: &str| -> Vec<String> {
            let f = families.iter().find(|f| f.name.unescape() == n);
            let lines = page.lines().filter(|l| l.starts_with(&format!("{n}{{")));
            assert!(f.is_some(), "{n} is a family");
            lines.map(str::to_owned).collect()
        };
        let verdicts = samples("llmscope_replica_bottleneck");
        assert_eq!(verdicts.len(), 4, "{verdicts:?}");
        assert!(
            verdicts
                .iter()
                .any(|l| l.contains("replica=\"chat-0\"")
                    && l.contains("bottleneck=\"batch_limit\"")),
            "{verdicts:?}"
        );
        let shares = samples("llmscope_replica_requests_share_ratio");
        assert_eq!(shares.len(), 3, "code-1's share is unknown: {shares:?}");
        let imbalance = samples("llmscope_routing_imbalance_ratio");
        assert_eq!(imbalance.len(), 1, "{imbalance:?}");
        assert!(
            imbalance[0].contains("deployment=\"chat\"") && imbalance[0].ends_with(" 1.5"),
            "{imbalance:?}"
        );
    }
}
