//! Issue 25: `diagnose --prometheus` judges each replica as well as the deployment. Two
//! simulated engines (one `llmscope sim` each) are scraped by a real Prometheus that labels each
//! with its pod, as a kube-prometheus-stack ServiceMonitor would (`namespace`, `pod`,
//! `container` target labels); llmscope's own client loads them. Uneven (most clients on one),
//! the deployment's verdict is `routing_imbalance` naming the hot replica; even, it is not.

use crate::common::{
    RealPrometheus, job, json, llmscope, prometheus, put_load, sim_on_free_ports, temp_dir,
    unix_now,
};
use serde_json::Value;

/// `clients` closed-loop workers on each of `targets` at once, for `duration`; the span it took.
fn load_at_once(targets: &[(&str, &str)], duration: &str) -> (f64, f64) {
    let from = unix_now();
    std::thread::scope(|s| {
        for (target, clients) in targets {
            s.spawn(move || put_load(target, clients, duration));
        }
    });
    (from, unix_now())
}

/// `diagnose --prometheus` over `[from, to]` at the simulator's cap, as JSON.
fn diagnose(prom: &RealPrometheus, db: &str, window: (f64, f64)) -> Value {
    crate::balancer::diagnose(prom, db, window, 16)
}

/// `watch --once` over the last 30 s as JSON (the load just ended: the window holds it).
fn watch_once(prom: &RealPrometheus) -> Value {
    let url = prom.url();
    let out = llmscope(&[
        "watch",
        "--prometheus",
        &url,
        "--once",
        "--format",
        "json",
        "--window",
        "30s",
        "--step",
        "1s",
        "--stall-after",
        "20s",
        "--max-num-seqs",
        "16",
    ]);
    // Exit 1 says a deployment needs attention; 2 is an error.
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

fn rules(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn uneven_load_over_two_replicas_is_a_routing_imbalance_naming_the_hot_one() {
    let dir = temp_dir("fleet");
    let db = dir.join("d.db");
    let db = db.to_str().unwrap();
    let (_a, vllm_a, _) = sim_on_free_ports("1s", &[]);
    let (_b, vllm_b, _) = sim_on_free_ports("1s", &[]);
    let pod = |p: &str| format!(", labels: {{namespace: llm, pod: {p}, container: vllm}}");
    let jobs = [
        job("vllm", &vllm_a, "/metrics", &pod("vllm-0")),
        job("vllm-b", &vllm_b, "/metrics", &pod("vllm-1")),
    ];
    let Some(prom) = prometheus("fleet", &jobs) else {
        return;
    };
    // 32 clients on vllm-0 (twice its --max-num-seqs of 16), 2 on vllm-1.
    let uneven = load_at_once(&[(&vllm_a, "32"), (&vllm_b, "2")], "10s");
    let v = diagnose(&prom, db, uneven);
    assert_eq!(v["verdict"]["bottleneck"], "routing_imbalance", "{v:#}");
    let summary = v["verdict"]["summary"].as_str().unwrap();
    assert!(summary.contains("vllm-0"), "{summary}");
    assert!(!summary.contains("vllm-1 ("), "{summary}");
    let replicas = v["replicas"].as_array().expect("replicas");
    assert_eq!(replicas.len(), 2, "{v:#}");
    let (hot, cool) = (&replicas[0], &replicas[1]);
    assert_eq!(
        (hot["pod"].as_str(), cool["pod"].as_str()),
        (Some("vllm-0"), Some("vllm-1"))
    );
    assert!(hot["waiting"].as_f64().unwrap() >= 4.0, "{hot}");
    assert!(cool["waiting"].as_f64().unwrap() < 0.5, "{cool}");
    assert!(hot["share_of_requests"].as_f64().unwrap() > 0.6, "{hot}");
    assert_eq!(hot["verdict"], "batch_limit", "{hot}");
    // watch reads the same fleet as one deployment (the pods' owner, `vllm`), each replica kept
    // and the hot one's share exported with the imbalance.
    let w = watch_once(&prom);
    let deps = w["deployments"].as_array().expect("deployments");
    let dep = deps
        .iter()
        .find(|d| d["key"]["deployment"] == "vllm")
        .unwrap_or_else(|| panic!("{w:#}"));
    assert_eq!(dep["bottleneck"], "routing_imbalance", "{dep:#}");
    let replicas = dep["replica_verdicts"]
        .as_array()
        .expect("replica_verdicts");
    assert_eq!(replicas.len(), 2, "{dep:#}");
    let hot = replicas
        .iter()
        .find(|r| r["pod"] == "vllm-0")
        .expect("vllm-0");
    assert!(hot["share_of_requests"].as_f64().unwrap() > 0.6, "{hot}");
    // Even: 10 clients on each, within each one's cap.
    let even = load_at_once(&[(&vllm_a, "10"), (&vllm_b, "10")], "8s");
    let v = diagnose(&prom, db, even);
    assert_ne!(v["verdict"]["bottleneck"], "routing_imbalance", "{v:#}");
    assert!(
        !rules(&v).iter().any(|r| r.ends_with("_imbalance")),
        "{v:#}"
    );
    assert_eq!(v["replicas"].as_array().map(Vec::len), Some(2), "{v:#}");
    std::fs::remove_dir_all(&dir).ok();
}
