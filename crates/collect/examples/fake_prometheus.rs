//! A stand-in for a Prometheus holding a large fleet: answers `/api/v1/query_range` for the
//! diagnosis metrics of PODS vLLM pods (one GPU each), generated on the fly for any window, so
//! `scripts/bench-diagnose.sh` can time `llmscope diagnose --prometheus` over 24 h × 100 pods
//! without a day of recording. Loopback only.
//!
//! `cargo run --release -p llmscope-collect --example fake_prometheus --` then
//! `[PODS] [fleet [REPLICAS]]` prints its address, then serves until killed.
//!
//! With `fleet` (for `scripts/bench-watch.sh`) PODS is a count of deployments, each of REPLICAS
//! pods (default 1), named as Kubernetes names a Deployment's pods (`model-N-7c9d5b8f6-x2k9p`,
//! the suffix differing between replicas) so `watch` groups them back into their deployment.
//! Each pod has 10 series (7 engine, 3 GPU), plus `vllm:request_success_total` when REPLICAS is
//! 2 or more (each replica's share of the finished requests), and its GPU series carry the pod's
//! `namespace` and `pod` as dcgm-exporter's Kubernetes mapping adds them.
//!
//! Each pod, a replica of one load-balanced deployment, follows a daily demand curve (peaking at
//! 24 concurrent requests against `--max-num-seqs 16`): running is the demand capped at 16,
//! waiting the rest, KV and GPU utilisation follow running — a batch-limited fleet. Counters
//! integrate their rates. In `fleet` mode with two or more replicas, one deployment in 20 routes
//! unevenly (see [`skew`]), so `watch` finds a `routing_imbalance` there that the deployment's
//! sum hides. Everything is a function of the time and the pod's index: the same window gives
//! the same answer.
#![allow(clippy::print_stdout)]

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const MAX_NUM_SEQS: f64 = 16.0;

/// The series of one pod: metric name → value at time `t` (seconds).
type Gen = fn(f64, usize) -> f64;

/// Replicas of one load-balanced deployment: the same daily curve, a few minutes apart; in a
/// skewed deployment one replica takes 16 requests more and the others half theirs.
fn demand(t: f64, pod: usize) -> f64 {
    let phase = phase(pod);
    let base = 16.0 + offset(pod);
    let even = (base + 8.0 * (std::f64::consts::TAU * t / 86_400.0 + phase).sin()).max(0.0);
    match skew(pod) {
        Some(Share::Hot) => even + 16.0,
        Some(Share::Cool) => even / 2.0,
        None => even,
    }
}

/// In `fleet` mode deployments differ: a quarter each 0, 6, 12 and 18 requests busier, so at
/// any hour some are batch-limited and some are not.
static FLEET_MODE: AtomicBool = AtomicBool::new(false);

/// In `fleet` mode, the pods of each deployment (pod `p` is replica `p % REPLICAS` of deployment
/// `p / REPLICAS`).
static REPLICAS: AtomicUsize = AtomicUsize::new(1);

fn replicas() -> usize {
    REPLICAS.load(Ordering::Relaxed).max(1)
}

fn fleet_mode() -> bool {
    FLEET_MODE.load(Ordering::Relaxed)
}

/// Which of its deployment's replicas pod `pod` is (0 outside `fleet` mode).
fn replica(pod: usize) -> usize {
    if fleet_mode() { pod % replicas() } else { 0 }
}

/// The deployment pod `pod` belongs to (every pod its own outside `fleet` mode).
fn deployment(pod: usize) -> usize {
    if fleet_mode() { pod / replicas() } else { pod }
}

fn offset(pod: usize) -> f64 {
    if fleet_mode() {
        (deployment(pod) % 4) as f64 * 6.0
    } else {
        0.0
    }
}

/// A replica's part in a skewed deployment.
#[derive(Clone, Copy, PartialEq)]
enum Share {
    /// Takes 16 requests more than an even share: 24..40 against a batch of 16, a queue all day.
    Hot,
    /// Takes half an even share: 4..12, never queueing, below 85 % of its batch.
    Cool,
}

/// Whether pod `pod` is in a skewed deployment (fleet mode, two or more replicas, deployments
/// 4, 24, 44, …: one in 20, all of the unshifted quarter, so the numbers above hold), and its
/// part: replica 0 is hot, the rest cool — a router pinning sticky clients to one pod.
fn skew(pod: usize) -> Option<Share> {
    if !fleet_mode() || replicas() < 2 || deployment(pod) % 20 != 4 {
        return None;
    }
    Some(if replica(pod) == 0 {
        Share::Hot
    } else {
        Share::Cool
    })
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
    // A request a running slot finishes every 10 s.
    ("vllm:request_success_total", |t, p| counter(t, p, 0.1)),
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
    // running's mean and swing: an even share is capped at 16 (mean ~14, ~6 either way), a hot
    // replica runs 16 all day, a cool one 8 ± 4.
    let (mean, swing) = match skew(pod) {
        Some(Share::Hot) => (MAX_NUM_SEQS, 0.0),
        Some(Share::Cool) => (8.0, 4.0),
        None => (14.0 + offset(pod).min(MAX_NUM_SEQS - 14.0), 6.0),
    };
    per_request * (mean * t - swing / w * ((w * t + phase).cos() - phase.cos())).max(0.0)
}

/// Kubernetes' alphabet for generated name parts (no vowels, no look-alikes).
const GENERATED: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The generated suffix of replica `i`'s pod name: `x2k9p` shifted by `i`'s base-27 digits, so
/// replica 0 keeps the name one-replica deployments always had and every replica's differs.
fn suffix(i: usize) -> String {
    let n = GENERATED.len();
    let mut rest = i;
    let mut out = b"x2k9p".to_vec();
    for b in out.iter_mut().rev() {
        let at = GENERATED.iter().position(|g| g == b).unwrap_or(0);
        *b = GENERATED[(at + rest % n) % n];
        rest /= n;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Pod `pod`'s name: in `fleet` mode a Deployment's pod, elsewhere a StatefulSet's.
fn pod_name(pod: usize) -> String {
    if fleet_mode() {
        let (d, i) = (deployment(pod), replica(pod));
        format!("model-{d}-7c9d5b8f6-{}", suffix(i))
    } else {
        format!("vllm-{pod}")
    }
}

struct Fleet {
    /// Pods in all (in `fleet` mode, deployments × replicas).
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

impl Fleet {
    /// Whether engine series `name` is served: `fleet` mode leaves out the prompt tokens (10
    /// series a pod), and the finished requests unless there are replicas to share them.
    fn serves(&self, name: &str) -> bool {
        match name {
            "vllm:prompt_tokens_total" => !self.fleet,
            "vllm:request_success_total" => self.fleet && replicas() >= 2,
            _ => true,
        }
    }
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
            .filter(|(n, _)| fleet.serves(n))
            .map(|(n, g)| (n, g, true));
        let pod_name = pod_name(pod);
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
    let arg = |i: usize| std::env::args().nth(i);
    let count: usize = arg(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let fleet = arg(2).as_deref() == Some("fleet");
    let replicas: usize = arg(3)
        .and_then(|a| a.parse().ok())
        .filter(|&r| fleet && r >= 1)
        .unwrap_or(1);
    FLEET_MODE.store(fleet, Ordering::Relaxed);
    REPLICAS.store(replicas, Ordering::Relaxed);
    let pods = count * replicas;
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
