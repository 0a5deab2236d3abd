//! Issue 25 on the real engine: two real vLLM servers at `--max-num-seqs 4` behind HAProxy —
//! the matrix's cap-4 server and a second one started beside it (one more start, not two) —
//! scraped by a real Prometheus that labels each as its pod. Two tenants (14 clients and 1,
//! 64-token answers, 15 s: the host has 2 cores for both engines, both API servers and the
//! clients) load the balancer through round-robin with tenant affinity, then through least
//! connections.
//!
//! The oracle is each engine's own `/metrics` (`tests/balancer`): its counters' growth over the
//! load — requests finished, seconds queued and running, levels by Little's law — and its
//! running gauge every 250 ms: the replica that queued while the other had room, or an even
//! split. `diagnose --prometheus` must name the engines' hot replica behind the first and single
//! out none behind the second. A split the balancer did not make as configured (the engines show
//! neither) is said and not judged: what is tested is llmscope's reading of the engines, not
//! HAProxy.

use crate::balancer::{Balance, Haproxy, diagnose, load_tenants, names_the_hot_replica, share_of};
use crate::balancer::{Split, singles_out_none};
use crate::{Checks, Server};
use llmscope_collect::testing::{RealPrometheus, job};

const CAP: u32 = 4;
/// The big tenant queues on its replica (14 clients at a cap of 4); through least connections
/// both replicas hold a queue (7 or 8 clients each), so neither has room the other lacks.
const TENANTS: [(&str, u32); 2] = [("a", 14), ("b", 1)];
/// 15 s: over an 8 s load llmscope's per-replica reading rested on a 5 s steady window (said as
/// `short-window`) and missed a queue of 1.35 the engine's counters held over the load.
const LOAD: (&str, &[&str]) = ("15s", &["--max-tokens", "64"]);

/// Runs both balancings over `server` (`--max-num-seqs 4`, started with `args`) and a second
/// server like it; what each showed goes to `checks`.
pub fn check(server: &Server, args: &[&str], checks: &mut Checks) {
    // vLLM's CPU build binds its worker's threads to core 0; two engines there spin against
    // each other (three runs: the lone tenant's one request took the whole 8 s load on the
    // second engine, its counters said). The second binds to core 1, as replicas on their own
    // accelerators do not share one.
    let second = Server::start_with("c4b", args, &[("VLLM_CPU_OMP_THREADS_BIND", "1")]);
    // Both engines yield the CPU to the API servers and the tenants' clients, as every tier
    // server does (`Server::start`): at equal priority the two replicas ran at unequal speeds
    // by which core they got — what least connections was then judged on.
    let replicas = [
        ("vllm-0".to_owned(), format!("127.0.0.1:{}", server.port)),
        ("vllm-1".to_owned(), format!("127.0.0.1:{}", second.port)),
    ];
    let jobs: Vec<String> = replicas
        .iter()
        .enumerate()
        .map(|(i, (pod, addr))| {
            let labels = format!(", labels: {{namespace: llm, pod: {pod}, container: vllm}}");
            job(&format!("vllm-{i}"), addr, "/metrics", &labels)
        })
        .collect();
    let prom = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(RealPrometheus::start("real-fleet", &jobs))
        .expect("a real Prometheus (CI installs it)");
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("fleet.db");
    let db = db.to_str().expect("a UTF-8 path");
    // Behind least connections llmscope once read one replica at 0.8 running and no queue where
    // its engine's counters held 3.85 running and 3.36 waiting: its gauges were set aside as
    // stale and its counters, which count a request when it finishes, missed most of its
    // requests (they outlived the window). Such a reading is now a floor, not room
    // (`diagnosis::fleet`, `running_floor`).
    for balance in [Balance::RoundRobinTenantAffinity, Balance::LeastConnections] {
        let Some(lb) = Haproxy::start("real-fleet", balance, &replicas) else {
            return;
        };
        let (window, split) = load_tenants(&lb, &replicas, &TENANTS, LOAD, f64::from(CAP));
        drop(lb);
        let v = diagnose(&prom, db, window, CAP);
        let shares: Vec<String> = replicas
            .iter()
            .map(|(pod, _)| format!("{pod} {:?}", share_of(&v, pod)))
            .collect();
        eprintln!(
            "  fleet behind {balance:?}: engines {}\n    llmscope: {} — {} (shares {})",
            split.describe(),
            v["verdict"]["bottleneck"],
            v["verdict"]["summary"],
            shares.join(", ")
        );
        judge(balance, &split, &v, checks);
    }
}

/// llmscope's reading against the engines' split, where the engines show the split the
/// balancing makes.
fn judge(balance: Balance, split: &Split, v: &serde_json::Value, checks: &mut Checks) {
    let (formed, judged) = match balance {
        Balance::RoundRobinTenantAffinity => (split.uneven(), names_the_hot_replica(v, split)),
        Balance::LeastConnections => (split.even(), singles_out_none(v, split)),
    };
    if !formed {
        eprintln!(
            "  fleet behind {balance:?}: NOT JUDGED — the engines show no such split: {}",
            split.describe()
        );
        return;
    }
    let what = match balance {
        Balance::RoundRobinTenantAffinity => format!(
            "fleet, round-robin with tenant affinity: routing_imbalance naming {}",
            split.hot().pod
        ),
        Balance::LeastConnections => "fleet, least connections: no imbalance".to_owned(),
    };
    let failed = judged.as_ref().err().cloned();
    checks.expect(&what, judged.is_ok(), || failed.unwrap_or_default());
}
