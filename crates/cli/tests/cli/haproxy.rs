//! Issue 25, behind a real load balancer: `llmscope sim --replicas 2 --share-gpu` (two vLLM
//! pages, one time-sliced GPU that dcgm-exporter attributes to both pods) behind Debian's HAProxy,
//! started by the test on loopback; a real Prometheus scrapes each replica with its pod's labels.
//!
//! Two tenants load the balancer at once — one with 28 clients, one with 2, told apart by an
//! `X-Tenant` header:
//! - **round-robin with tenant affinity** (`balance roundrobin` + `stick on req.hdr(x-tenant)`):
//!   round-robin hands each tenant a replica and the stick table keeps it there, so the big
//!   tenant's 28 clients queue on one replica (cap 16) while the other runs 2;
//! - **least connections** (`balance leastconn`, no affinity) on the same load: about 15 each.
//!
//! The oracle reads each replica's own `/metrics` during the load (its waiting and running
//! gauges every 250 ms, its finished-request counter before and after) — never llmscope's
//! output — and says which replica is hot and whether the split is uneven; `diagnose
//! --prometheus` must agree: `routing_imbalance` naming the hot replica behind the first,
//! none behind the second, and the shared GPU as a finding both times.

use crate::balancer::{
    Balance, Haproxy, diagnose, finding_ids, load_tenants, names_the_hot_replica, share_of,
    singles_out_none,
};
use crate::common::{job, prometheus, sim_fleet, temp_dir};
use serde_json::Value;

/// `--max-num-seqs` of each simulated replica (the simulator's preset).
const CAP: u32 = 16;

/// The big tenant and the small one, and how long they load.
const TENANTS: [(&str, u32); 2] = [("a", 28), ("b", 2)];
const LOAD: (&str, &[&str]) = ("10s", &[]);

/// Whether any advice tells the reader to add replicas (as opposed to warning against it).
fn advises_more_replicas(v: &Value) -> bool {
    let recs = v["recommendations"].as_array().expect("recommendations");
    recs.iter().any(|a| {
        let action = a["action"].as_str().unwrap_or_default().to_lowercase();
        (action.contains("add replica") || action.contains("scale out"))
            && !action.contains("do not add")
    })
}

#[test]
fn tenant_affinity_behind_haproxy_is_a_routing_imbalance_and_least_connections_is_not() {
    let dir = temp_dir("balancer");
    let db = dir.join("d.db");
    let db = db.to_str().unwrap();
    let (_sim, replicas) = sim_fleet(2, &["--share-gpu"]);
    // The vLLM pages as a ServiceMonitor labels them; dcgm-exporter's pages with its pod-mapping
    // labels honoured (the GPU Operator's ServiceMonitor sets honorLabels), so each GPU series
    // names the serving pod — both pods, one GPU UUID.
    let target =
        |pod: &str| format!(", labels: {{namespace: default, pod: {pod}, container: vllm}}");
    let dcgm = ", labels: {namespace: gpu-operator, pod: nvidia-dcgm-exporter-x7k2p}";
    let mut jobs = Vec::new();
    for (i, (pod, vllm, gpu)) in replicas.iter().enumerate() {
        jobs.push(job(&format!("vllm-{i}"), vllm, "/metrics", &target(pod)));
        jobs.push(job(&format!("dcgm-{i}"), gpu, "/metrics", dcgm));
    }
    let Some(prom) = prometheus("balancer", &jobs) else {
        return;
    };
    let servers: Vec<(String, String)> = replicas
        .iter()
        .map(|r| (r.0.clone(), r.1.clone()))
        .collect();

    // Round-robin with tenant affinity: the big tenant's replica queues.
    let Some(lb) = Haproxy::start("affinity", Balance::RoundRobinTenantAffinity, &servers) else {
        return;
    };
    let (window, split) = load_tenants(&lb, &servers, &TENANTS, LOAD, f64::from(CAP));
    drop(lb);
    let oracle = split.describe();
    assert!(
        split.uneven(),
        "the affinity did not split the load: {oracle}"
    );
    let v = diagnose(&prom, db, window, CAP);
    eprintln!(
        "round-robin, tenant affinity: engines {oracle}\n  llmscope: {}",
        v["verdict"]["summary"]
    );
    names_the_hot_replica(&v, &split).unwrap_or_else(|e| panic!("{e}"));
    // Its share of the requests is the engines' (over the steady window against the whole
    // load: within 10 points on identical replicas).
    let hot = split.hot();
    let (ours, truth) = (share_of(&v, &hot.pod), split.share(hot));
    assert!(
        ours.is_some_and(|s| (s - truth).abs() < 0.1),
        "llmscope's share of {} {ours:?}, the engines' {truth:.2}: {oracle}",
        hot.pod
    );
    assert!(finding_ids(&v).contains(&"shared_gpu".to_owned()), "{v:#}");
    assert!(!advises_more_replicas(&v), "{v:#}");
    // The router is the advice, and on a shared GPU more replicas are said to be no fix.
    let first = &v["recommendations"][0];
    let (action, reason) = (first["action"].to_string(), first["reason"].to_string());
    assert!(action.contains("router"), "{first:#}");
    assert!(reason.contains("share a GPU"), "{first:#}");

    // Least connections on the same load: no replica is singled out.
    let Some(lb) = Haproxy::start("leastconn", Balance::LeastConnections, &servers) else {
        return;
    };
    let (window, split) = load_tenants(&lb, &servers, &TENANTS, LOAD, f64::from(CAP));
    drop(lb);
    let oracle = split.describe();
    // Identical replicas: least connections also evens what they finish.
    let shares_even = split
        .readings
        .iter()
        .all(|r| (split.share(r) - 0.5).abs() < 0.15);
    assert!(
        split.even() && shares_even,
        "least connections split unevenly: {oracle}"
    );
    let v = diagnose(&prom, db, window, CAP);
    eprintln!(
        "least connections: engines {oracle}\n  llmscope: {}",
        v["verdict"]["summary"]
    );
    singles_out_none(&v, &split).unwrap_or_else(|e| panic!("{e}"));
    assert!(finding_ids(&v).contains(&"shared_gpu".to_owned()), "{v:#}");
    assert!(!advises_more_replicas(&v), "{v:#}");
    std::fs::remove_dir_all(&dir).ok();
}
