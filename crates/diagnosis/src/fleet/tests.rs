//! The fleet on series labelled as kube-prometheus-stack writes them: a ServiceMonitor adds the
//! target's `namespace`, `pod`, `container`, `job`, `instance`
//! (`shared/reference/gpu-kueue-prom.md`, "Prometheus relabel collision"), and vLLM labels its
//! own `engine` and `model_name` (`shared/reference/serving-metrics.md`, the example page:
//! `vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"}`).

use crate::build::{SignalBuilder, signals_from_series};
use crate::{Bottleneck, Diagnosis, Input, diagnose};
use llmscope_core::series::{Labels, Point, Series, SeriesKey};

/// 120 one-second scrapes; the load holds from 15 s to 95 s.
const LOADED: std::ops::Range<f64> = 15.0..95.0;

/// One replica's levels while loaded (idle before and after).
#[derive(Clone, Copy)]
struct Levels {
    running: f64,
    waiting: f64,
    kv: f64,
    /// Requests finished per second.
    rate: f64,
}

const fn lv(running: f64, waiting: f64, kv: f64, rate: f64) -> Levels {
    Levels {
        running,
        waiting,
        kv,
        rate,
    }
}

/// vLLM's labels as Prometheus stores them behind kube-prometheus-stack.
fn vllm_labels(pod: &str, rank: &str) -> Vec<(String, String)> {
    [
        ("namespace", "llm"),
        ("pod", pod),
        ("container", "vllm"),
        ("job", "llm/vllm"),
        ("instance", "10.0.0.5:8000"),
        ("model_name", "Qwen/Qwen2.5-3B-Instruct"),
        ("engine", rank),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

fn series(name: &str, labels: Vec<(String, String)>, f: impl Fn(f64, bool) -> f64) -> Series {
    Series {
        key: SeriesKey::new(name, Labels::new(labels)),
        points: (0..120)
            .map(|k| {
                let t = f64::from(k);
                Point {
                    t,
                    v: f(t, LOADED.contains(&t)),
                }
            })
            .collect(),
    }
}

/// The engine series of one replica (pod and rank).
fn replica(pod: &str, rank: &str, l: Levels) -> Vec<Series> {
    let gauge = |v: f64| move |_, on: bool| if on { v } else { 0.0 };
    let finished = move |t: f64, _| l.rate * (t.clamp(LOADED.start, LOADED.end) - LOADED.start);
    vec![
        series(
            "vllm:num_requests_running",
            vllm_labels(pod, rank),
            gauge(l.running),
        ),
        series(
            "vllm:num_requests_waiting",
            vllm_labels(pod, rank),
            gauge(l.waiting),
        ),
        series(
            "vllm:kv_cache_usage_perc",
            vllm_labels(pod, rank),
            gauge(l.kv),
        ),
        series(
            "vllm:request_success_total",
            vllm_labels(pod, rank),
            finished,
        ),
    ]
}

/// A dcgm-exporter field scraped through a ServiceMonitor without `honorLabels`: the target's
/// `pod` is the exporter's, the workload's is `exported_pod` (`gpu-kueue-prom.md`, the relabel
/// collision; the field's own labels as in its `DCGM_FI_DEV_POWER_USAGE` sample line).
fn dcgm(name: &str, uuid: &str, workload: &str, busy: f64) -> Series {
    let labels = [
        ("gpu", "0"),
        ("UUID", uuid),
        ("device", "nvidia0"),
        ("modelName", "NVIDIA L4"),
        ("Hostname", "node-a"),
        ("namespace", "monitoring"),
        ("pod", "dcgm-exporter-6ldbb"),
        ("container", "exporter"),
        ("job", "gpu-operator/nvidia-dcgm-exporter"),
        ("instance", "10.0.1.9:9400"),
        ("exported_namespace", "llm"),
        ("exported_pod", workload),
        ("exported_container", "vllm"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    series(name, labels, move |_, on| if on { busy } else { 0.0 })
}

fn judged(series: &[Series]) -> (Input, Diagnosis) {
    let (mut input, _) = signals_from_series(series);
    input.engine.max_num_seqs = Some(16);
    input.scrape_interval_s = Some(1.0);
    let d = diagnose(&input);
    (input, d)
}

fn rules(d: &Diagnosis) -> Vec<&str> {
    d.findings.iter().map(|f| f.rule).collect()
}

/// Eight replicas, one taking most of the clients (the round-robin case): its batch is
/// full and 12 wait, the seven others run 2 with no queue. Summed, 30 of 128 run.
fn one_hot_of_eight() -> Vec<Series> {
    let mut s = replica("vllm-0", "0", lv(16.0, 12.0, 0.3, 4.0));
    for i in 1..8 {
        s.extend(replica(&format!("vllm-{i}"), "0", lv(2.0, 0.0, 0.04, 0.5)));
    }
    s
}

#[test]
fn one_queueing_replica_among_idle_ones_is_a_routing_imbalance_naming_it() {
    let (input, d) = judged(&one_hot_of_eight());
    assert_eq!(input.replicas.len(), 8);
    assert_eq!(d.verdict.bottleneck, Bottleneck::RoutingImbalance, "{d:#?}");
    assert!(
        d.verdict.summary.contains("vllm-0"),
        "{}",
        d.verdict.summary
    );
    assert!(
        !d.verdict.summary.contains("vllm-1 "),
        "{}",
        d.verdict.summary
    );
    assert_eq!(d.findings[0].rule, "routing_imbalance");
    let hot = &d.replicas[0];
    assert_eq!(
        (hot.pod.as_str(), hot.rank.as_deref()),
        ("vllm-0", Some("0"))
    );
    assert_eq!(hot.verdict, Bottleneck::BatchLimit);
    // 4 of 7.5 requests a second: 53 %, 4.3× an even eighth.
    let share = hot.share_of_requests.unwrap();
    assert!((share - 4.0 / 7.5).abs() < 0.01, "{share}");
    assert!(
        d.replicas[1..]
            .iter()
            .all(|r| r.verdict == Bottleneck::LoadNotReached)
    );
    assert!(
        d.verdict.summary.contains("4.3× an even share"),
        "{}",
        d.verdict.summary
    );
    let first = &d.recommendations[0];
    assert!(first.action.contains("queue/KV-aware router"), "{first:?}");
    assert!(
        first.reason.contains("vllm-0 held 12.0 waiting"),
        "{first:?}"
    );
    let hot_waiting = d
        .evidence
        .iter()
        .find(|e| e.source == "vllm-0" && e.signal == "waiting")
        .unwrap();
    assert_eq!(hot_waiting.value, 12.0);
}

/// The same fleet read as one sum (what `watch` and the code before issue 25 saw) gets the sum's
/// verdict: the replicas change nothing of the deployment's own reading.
#[test]
fn the_deployment_sum_is_read_as_before() {
    let series = one_hot_of_eight();
    let (fleet, _) = signals_from_series(&series);
    let mut b = SignalBuilder::default();
    b.add(&series);
    let (sum, _) = b.finish();
    assert!(sum.replicas.is_empty());
    assert_eq!(fleet.signals, sum.signals);
    assert_eq!(fleet.engines, 8);
    let mut sum = sum;
    sum.engine.max_num_seqs = Some(16);
    sum.scrape_interval_s = Some(1.0);
    let alone = diagnose(&sum);
    assert_ne!(alone.verdict.bottleneck, Bottleneck::RoutingImbalance);
    assert!(alone.replicas.is_empty());
}

#[test]
fn an_even_fleet_gets_no_imbalance() {
    let mut s = Vec::new();
    for i in 0..4 {
        s.extend(replica(&format!("vllm-{i}"), "0", lv(6.0, 0.0, 0.05, 1.0)));
    }
    let (_, d) = judged(&s);
    assert_eq!(d.verdict.bottleneck, Bottleneck::LoadNotReached, "{d:#?}");
    assert!(!rules(&d).contains(&"routing_imbalance"));
    assert_eq!(d.replicas.len(), 4);
    assert!(d.replicas.iter().all(|r| r.share_of_requests == Some(0.25)));
}

#[test]
fn a_fleet_saturated_everywhere_is_batch_limited_not_imbalanced() {
    let mut s = Vec::new();
    for i in 0..3 {
        s.extend(replica(&format!("vllm-{i}"), "0", lv(16.0, 8.0, 0.05, 2.0)));
    }
    let (_, d) = judged(&s);
    assert_eq!(d.verdict.bottleneck, Bottleneck::BatchLimit, "{d:#?}");
    assert!(!rules(&d).contains(&"routing_imbalance"));
    assert!(
        d.replicas
            .iter()
            .all(|r| r.verdict == Bottleneck::BatchLimit)
    );
}

/// A replica a little short of its cap with no queue beside one that queues is a fleet near
/// its limit, not a router sending load to the wrong place.
#[test]
fn replicas_near_their_cap_are_not_room() {
    let mut s = replica("vllm-0", "0", lv(16.0, 2.0, 0.05, 2.0));
    s.extend(replica("vllm-1", "0", lv(15.0, 0.0, 0.05, 2.0)));
    let (_, d) = judged(&s);
    assert!(!rules(&d).contains(&"routing_imbalance"), "{d:#?}");
}

#[test]
fn one_saturated_data_parallel_rank_is_a_rank_imbalance() {
    let mut s = replica("vllm-dp", "0", lv(16.0, 9.0, 0.2, 3.0));
    s.extend(replica("vllm-dp", "1", lv(1.0, 0.0, 0.01, 0.3)));
    let (input, d) = judged(&s);
    assert_eq!(input.replicas.len(), 2);
    assert_eq!(d.verdict.bottleneck, Bottleneck::RoutingImbalance, "{d:#?}");
    assert_eq!(d.findings[0].rule, "rank_imbalance");
    assert!(
        !rules(&d).contains(&"routing_imbalance"),
        "one pod: no routing between pods"
    );
    assert!(
        d.verdict.summary.contains("vllm-dp rank 0"),
        "{}",
        d.verdict.summary
    );
    assert!(
        d.recommendations[0]
            .action
            .contains("--data-parallel-external-lb"),
        "{:?}",
        d.recommendations[0]
    );
}

/// Two pods time-sliced on one L4, both queueing on a busy GPU: dcgm-exporter names both on
/// the same UUID, so the GPU is one budget and "add replicas" is not advice.
#[test]
fn replicas_on_one_gpu_get_the_shared_gpu_finding_and_no_scale_out() {
    let uuid = "GPU-1c3313b6-13f7-fa06-5651-680f8235330b";
    let mut s = Vec::new();
    for pod in ["vllm-a", "vllm-b"] {
        s.extend(replica(pod, "0", lv(8.0, 6.0, 0.2, 1.0)));
        s.push(dcgm("DCGM_FI_DEV_GPU_UTIL", uuid, pod, 97.0));
    }
    let (input, d) = judged(&s);
    assert_eq!(input.shared_gpus.len(), 1);
    assert_eq!(input.shared_gpus[0].pods, ["vllm-a", "vllm-b"]);
    assert_eq!(d.verdict.bottleneck, Bottleneck::GpuCompute, "{d:#?}");
    let f = d.findings.iter().find(|f| f.rule == "shared_gpu").unwrap();
    assert!(f.message.contains(uuid) && f.message.contains("adds no throughput"));
    let actions: Vec<&str> = d
        .recommendations
        .iter()
        .map(|r| r.action.as_str())
        .collect();
    assert!(
        actions.iter().any(|a| a.contains("Do not add replicas")),
        "{actions:?}"
    );
    assert!(
        !actions.iter().any(|a| a.starts_with("Scale out")),
        "{actions:?}"
    );
    // Each replica read its own GPU series through exported_pod.
    assert!(
        input
            .replicas
            .iter()
            .all(|r| r.input.signals.contains_key(&crate::Concept::GpuUtil))
    );
}

#[test]
fn each_pod_on_its_own_gpu_is_not_shared() {
    let mut s = Vec::new();
    for (pod, uuid) in [("vllm-a", "GPU-aaaa"), ("vllm-b", "GPU-bbbb")] {
        s.extend(replica(pod, "0", lv(8.0, 6.0, 0.2, 1.0)));
        s.push(dcgm("DCGM_FI_DEV_GPU_UTIL", uuid, pod, 97.0));
    }
    let (input, d) = judged(&s);
    assert!(input.shared_gpus.is_empty());
    assert!(!rules(&d).contains(&"shared_gpu"));
    assert!(
        d.recommendations
            .iter()
            .any(|r| r.action.starts_with("Scale out"))
    );
}

/// Two replicas at `--max-num-seqs 4` behind least connections, both queueing over a 15 s load
/// read at 1 s steps, as the real pair of the real-vLLM tier showed them (issue 25): `vllm-1`'s
/// gauges stand; `vllm-0`, the slower one, reads 0 running, waiting and KV in every scrape
/// while its token counter rises (a real vLLM 0.32's stale gauges), and of its requests, which
/// live about 6 s, two finish inside the load. Its counters then count a floor — 0.8 running
/// where its engine held 3.85 — which is not room: its batch is read from its step counters
/// (4 tokens generated a step: 4 decoding), unknown without them; no routing imbalance either way.
#[test]
fn a_replica_read_from_counters_that_missed_its_requests_is_not_room() {
    let load = 2.0..17.0;
    let at = |name: &str, pod: &str, f: &dyn Fn(f64) -> f64| Series {
        key: SeriesKey::new(name, Labels::new(vllm_labels(pod, "0"))),
        points: (0..=20)
            .map(|k| {
                let t = f64::from(k);
                Point { t, v: f(t) }
            })
            .collect(),
    };
    let on = |t: f64| load.contains(&t);
    let loaded = |t: f64| t.clamp(load.start, load.end) - load.start;
    let mut s = Vec::new();
    // vllm-1: gauges that stand, counters that agree with them (Little's law).
    for (name, v) in [
        ("vllm:num_requests_running", 4.0),
        ("vllm:num_requests_waiting", 3.0),
        ("vllm:kv_cache_usage_perc", 0.3),
    ] {
        s.push(at(name, "vllm-1", &move |t| if on(t) { v } else { 0.0 }));
    }
    for (name, per_s) in [
        ("vllm:generation_tokens_total", 80.0),
        ("vllm:request_success_total", 1.5),
        ("vllm:request_inference_time_seconds_sum", 4.0),
        ("vllm:request_queue_time_seconds_sum", 3.0),
    ] {
        s.push(at(name, "vllm-1", &|t| per_s * loaded(t)));
    }
    // vllm-0: every gauge reads 0; two requests finish in the load (6 s running, no wait), the
    // rest once it ends.
    for name in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ] {
        s.push(at(name, "vllm-0", &|_| 0.0));
    }
    let done = |t: f64| f64::from(u8::from(t >= 11.0) + u8::from(t >= 14.0));
    let after = |t: f64| t >= 18.0;
    s.push(at("vllm:generation_tokens_total", "vllm-0", &|t| {
        20.0 * loaded(t)
    }));
    s.push(at("vllm:request_success_total", "vllm-0", &|t| {
        if after(t) { 9.0 } else { done(t) }
    }));
    s.push(at(
        "vllm:request_inference_time_seconds_sum",
        "vllm-0",
        &|t| {
            if after(t) {
                12.0 + 7.0 * 7.0
            } else {
                6.0 * done(t)
            }
        },
    ));
    s.push(at("vllm:request_queue_time_seconds_sum", "vllm-0", &|t| {
        if after(t) { 7.0 * 5.0 } else { 0.0 }
    }));
    let judge = |s: &[Series]| {
        let (mut input, _) = signals_from_series(s);
        input.engine.max_num_seqs = Some(4);
        input.scrape_interval_s = Some(1.0);
        diagnose(&input)
    };
    let d = judge(&s);
    assert!(!rules(&d).contains(&"routing_imbalance"), "{d:#?}");
    let slow = d.replicas.iter().find(|r| r.pod == "vllm-0").unwrap();
    assert_eq!(slow.running, None, "a floor is not shown as the level");
    let mut stepped = s.clone();
    stepped.push(at("vllm:iteration_tokens_total_count", "vllm-0", &|t| {
        5.0 * loaded(t)
    }));
    stepped.push(at("vllm:iteration_tokens_total_sum", "vllm-0", &|t| {
        25.0 * loaded(t)
    }));
    let d = judge(&stepped);
    assert!(!rules(&d).contains(&"routing_imbalance"), "{d:#?}");
    let slow = d.replicas.iter().find(|r| r.pod == "vllm-0").unwrap();
    assert_eq!(slow.running, Some(4.0));
    // The same replica with counters that cover the window (requests of 0.4 s, 2.5 a second:
    // one running, no wait) has room, and the imbalance is found.
    let mut s: Vec<Series> = s
        .into_iter()
        .filter(|x| {
            !(x.key.labels.get("pod") == Some("vllm-0") && x.key.name.starts_with("vllm:request_"))
        })
        .collect();
    for (name, per_s) in [
        ("vllm:request_success_total", 2.5),
        ("vllm:request_inference_time_seconds_sum", 1.0),
        ("vllm:request_queue_time_seconds_sum", 0.0),
    ] {
        s.push(at(name, "vllm-0", &|t| per_s * loaded(t)));
    }
    let d = judge(&s);
    assert!(rules(&d).contains(&"routing_imbalance"), "{d:#?}");
    assert!(
        d.verdict.summary.contains("vllm-1"),
        "{}",
        d.verdict.summary
    );
}

/// vLLM 0.32's admission counter has no `engine` label (the API server counts it before any
/// engine sees a request): it is its pod's, never a replica of its own. Folded as one, each pod
/// grew a rank-less phantom beside its engine, and a real pair behind round-robin with tenant
/// affinity (one replica 9 waiting, the other 0.8 running) read `none` (issue 51).
#[test]
fn the_admission_counter_makes_no_replica_of_its_own() {
    let mut s = one_hot_of_eight();
    for i in 0..8 {
        let labels = vec![
            ("pod".to_owned(), format!("vllm-{i}")),
            ("model_name".to_owned(), "m".to_owned()),
            ("reason".to_owned(), "max_num_queued_reqs".to_owned()),
        ];
        s.push(series("vllm:admission_rejections_total", labels, |_, _| {
            0.0
        }));
    }
    let (input, d) = judged(&s);
    assert_eq!(
        input.replicas.len(),
        8,
        "{:?}",
        input.replicas.iter().map(|r| &r.key).collect::<Vec<_>>()
    );
    assert_eq!(d.verdict.bottleneck, Bottleneck::RoutingImbalance, "{d:#?}");
    // The deployment still reads it.
    assert!(
        input
            .signals
            .contains_key(&crate::signal::Concept::AdmissionRejections)
    );
}
