//! A stand-in for a Prometheus holding a large fleet: answers `/api/v1/query_range` for the
//! diagnosis metrics of PODS vLLM pods (one GPU each), generated on the fly for any window, so
//! `scripts/bench-diagnose.sh` can time `llmscope diagnose --prometheus` over 24 h × 100 pods
//! without a day of recording. Loopback only.
//!
//! `cargo run --release -p llmscope-collect --example fake_prometheus -- [PODS] [fleet]` prints
//! its address, then serves until killed.
//!
//! With `fleet` (for `scripts/bench-watch.sh`) every pod is a deployment of its own, named as
//! Kubernetes names a Deployment's pod (`model-N-7c9d5b8f6-x2k9p`), with 10 series (7 engine, 3
//! GPU) and its GPU series carrying the pod's `namespace` and `pod` as dcgm-exporter's
//! Kubernetes mapping adds them.
//!
//! Each pod, a replica of one load-balanced deployment, follows a daily demand curve (peaking at
//! 24 concurrent requests against `--max-num-seqs 16`): running is the demand capped at 16, waiting the rest, KV and GPU
//! utilisation follow running — a batch-limited fleet. Counters integrate their rates.
#![allow(clippy::print_stdout)]

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use std::fmt::Write;
use std::sync::Arc;

const MAX_NUM_SEQS: f64 = 16.0;

/// The series of one pod: metric name → value at time `t` (seconds).
type Gen = fn(f64, usize) -> f64;

/// Replicas of one load-balanced deployment: the same daily curve, a few minutes apart.
fn demand(t: f64, pod: usize) -> f64 {
    let phase = phase(pod);
    let base = 16.0 + offset(pod);
    (base + 8.0 * (std::f64::consts::TAU * t / 86_400.0 + phase).sin()).max(0.0)
}

/// In `fleet` mode deployments differ: a quarter each 0, 6, 12 and 18 requests busier, so at
/// any hour some are batch-limited and some are not.
static FLEET_MODE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn offset(pod: usize) -> f64 {
    if FLEET_MODE.load(std::sync::atomic::Ordering::Relaxed) {
        (pod % 4) as f64 * 6.0
    } else {
        0.0
    }
}

fn running(t: f64, pod: usize) -> f64 {
    demand(t, pod).min(MAX_NUM_SEQS).round()
}

/// Up to ~5 minutes of the day between replicas.
fn phase(pod: usize) -> f64 {
    (pod % 10) as f64 * 0.002
}

const ENGINE: &[(&str, Gen)] = &[
    ("vllm:num_requests_running", running),
    ("vllm:num_requests_waiting", |t, p| {
        (demand(t, p) - MAX_NUM_SEQS).max(0.0).round()
    }),
    ("vllm:kv_cache_usage_perc", |t, p| {
        0.02 + 0.01 * running(t, p) / MAX_NUM_SEQS
    }),
    // Counters: ∫ rate dt, with the rate proportional to running (18 tokens/s per request).
    ("vllm:generation_tokens_total", |t, p| counter(t, p, 18.0)),
    ("vllm:prompt_tokens_total", |t, p| counter(t, p, 4.0)),
    ("vllm:num_preemptions_total", |_, _| 0.0),
    ("vllm:iteration_tokens_total_sum", |t, p| {
        counter(t, p, 18.0)
    }),
    ("vllm:iteration_tokens_total_count", |t, p| {
        counter(t, p, 1.1)
    }),
];

const GPU: &[(&str, Gen)] = &[
    ("DCGM_FI_DEV_GPU_UTIL", |t, p| {
        (30.0 * running(t, p) / MAX_NUM_SEQS).round()
    }),
    ("DCGM_FI_DEV_POWER_USAGE", |t, p| {
        40.0 + 5.0 * running(t, p) / MAX_NUM_SEQS
    }),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", |t, p| {
        0.3 * running(t, p) / MAX_NUM_SEQS
    }),
];

/// A counter whose rate is `per_request` × running: the demand curve's integral, closed form
/// enough for a benchmark (the mean rate times t, plus the sine's integral).
fn counter(t: f64, pod: usize, per_request: f64) -> f64 {
    let phase = phase(pod);
    let w = std::f64::consts::TAU / 86_400.0;
    let mean = 14.0 + offset(pod).min(MAX_NUM_SEQS - 14.0);
    per_request * (mean * t - 6.0 / w * ((w * t + phase).cos() - phase.cos())).max(0.0)
}

struct Fleet {
    pods: usize,
    /// Every pod its own deployment (see the module's text).
    fleet: bool,
}

#[derive(serde::Deserialize)]
struct RangeQuery {
    query: String,
    start: f64,
    end: f64,
    step: f64,
}

/// The names a `{__name__="a", …}` or `{__name__=~"a|b|…", …}` selector asks for.
fn requested(query: &str) -> Vec<&str> {
    let exact = query.split_once("__name__=\"");
    let any = query.split_once("__name__=~\"");
    exact
        .or(any)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(names, _)| names.split('|').collect())
        .unwrap_or_default()
}

async fn query_range(
    State(fleet): State<Arc<Fleet>>,
    Query(q): Query<RangeQuery>,
) -> impl IntoResponse {
    let names = requested(&q.query);
    let wanted = |n: &str| names.contains(&n);
    let steps = ((q.end - q.start) / q.step).floor() as usize + 1;
    let mut out = String::with_capacity(1 << 20);
    out.push_str(r#"{"status":"success","data":{"resultType":"matrix","result":["#);
    let mut first = true;
    for pod in 0..fleet.pods {
        let engine = ENGINE
            .iter()
            .filter(|(n, _)| !(fleet.fleet && *n == "vllm:prompt_tokens_total"))
            .map(|(n, g)| (n, g, true));
        let pod_name = if fleet.fleet {
            format!("model-{pod}-7c9d5b8f6-x2k9p")
        } else {
            format!("vllm-{pod}")
        };
        let gpu = GPU.iter().map(|(n, g)| (n, g, false));
        for (name, value, is_engine) in engine.chain(gpu).filter(|(n, _, _)| wanted(n)) {
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, r#"{{"metric":{{"__name__":"{name}","#);
            if is_engine {
                let _ = write!(
                    out,
                    r#""engine":"0","model_name":"Qwen/Qwen2.5-3B-Instruct","namespace":"llm","pod":"{pod_name}"}},"values":["#
                );
            } else {
                let _ = write!(
                    out,
                    r#""gpu":"0","UUID":"GPU-{pod:08}","Hostname":"node-{pod}","modelName":"NVIDIA L4""#
                );
                if fleet.fleet {
                    let _ = write!(out, r#","namespace":"llm","pod":"{pod_name}""#);
                }
                out.push_str(r#"},"values":["#);
            }
            for i in 0..steps {
                let t = q.start + i as f64 * q.step;
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, r#"[{t},"{}"]"#, value(t, pod));
            }
            out.push_str("]}");
        }
    }
    out.push_str("]}}");
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        out,
    )
}

async fn buildinfo() -> impl IntoResponse {
    axum::Json(serde_json::json!({"status": "success", "data": {"version": "fake-2.0"}}))
}

fn main() {
    let pods: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let fleet = std::env::args().nth(2).as_deref() == Some("fleet");
    FLEET_MODE.store(fleet, std::sync::atomic::Ordering::Relaxed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let app = axum::Router::new()
            .route("/api/v1/query_range", axum::routing::get(query_range))
            .route("/api/v1/status/buildinfo", axum::routing::get(buildinfo))
            .with_state(Arc::new(Fleet { pods, fleet }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        axum::serve(listener, app).await.unwrap();
    });
}
