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

use crate::common::{
    RealPrometheus, Reaper, get, job, json, llmscope, prometheus, put_load_with, scraped_after,
    sim_fleet, temp_dir, unix_now,
};
use llmscope_collect::time::format_rfc3339;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `--max-num-seqs` of each simulated replica (the simulator's preset).
const CAP: f64 = 16.0;

/// How the balancer picks a replica.
#[derive(Clone, Copy, Debug)]
enum Balance {
    /// Round-robin for a tenant's first request, then the replica the stick table holds for it.
    RoundRobinTenantAffinity,
    /// The replica with the fewest open connections, per request.
    LeastConnections,
}

impl Balance {
    fn config(self) -> &'static str {
        match self {
            Balance::RoundRobinTenantAffinity => {
                "    balance roundrobin\n    stick-table type string len 64 size 1k\n    stick on req.hdr(x-tenant)\n"
            }
            Balance::LeastConnections => "    balance leastconn\n",
        }
    }
}

/// A HAProxy child (killed on drop) listening on `addr`.
struct Haproxy {
    _child: Reaper,
    addr: String,
    dir: PathBuf,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

impl Haproxy {
    /// `haproxy` on `PATH` or in `/usr/sbin` (Debian's place, off a non-root `PATH`); `None`
    /// (said) outside CI when none is installed, a failed assertion in CI.
    fn binary() -> Option<PathBuf> {
        let dirs = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        let found = dirs
            .into_iter()
            .chain([PathBuf::from("/usr/sbin")])
            .map(|d| d.join("haproxy"))
            .find(|b| b.is_file());
        if found.is_none() {
            let how = "this test needs HAProxy: apt-get install -y haproxy";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{how}");
            eprintln!("skipped: {how}");
        }
        found
    }

    /// HAProxy balancing `servers` (pod, `host:port`) by `balance`, on a loopback port. A port
    /// is taken from the OS and handed to HAProxy; should another process take it first,
    /// HAProxy exits or the listener does not answer with this instance's token — then another
    /// port, up to five.
    fn start(name: &str, balance: Balance, servers: &[(String, String)]) -> Option<Haproxy> {
        let bin = Self::binary()?;
        let dir = temp_dir(&format!("haproxy-{name}"));
        for attempt in 0..5 {
            let port = crate::common::closed_port();
            let token = format!("llmscope-{name}-{}-{attempt}", std::process::id());
            let cfg = dir.join("haproxy.cfg");
            std::fs::write(&cfg, config(port, &token, balance, servers)).unwrap();
            let check = Command::new(&bin).arg("-c").arg("-f").arg(&cfg).output();
            let check = check.expect("run haproxy -c");
            assert!(
                check.status.success(),
                "haproxy rejects the test's config: {}",
                String::from_utf8_lossy(&check.stderr)
            );
            let child = Command::new(&bin)
                .arg("-db")
                .arg("-f")
                .arg(&cfg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start haproxy");
            let mut child = Reaper(child);
            let addr = format!("127.0.0.1:{port}");
            if answers_with(&mut child, &addr, &token) {
                return Some(Haproxy {
                    _child: child,
                    addr,
                    dir,
                });
            }
        }
        panic!("HAProxy could not take a loopback port in five tries");
    }
}

/// One frontend on `port` answering `/llmscope-haproxy-id` with `token` (so the test knows the
/// listener is its own), one backend of `servers`. One thread: the stick table is read and
/// written in request order.
fn config(port: u16, token: &str, balance: Balance, servers: &[(String, String)]) -> String {
    let mut cfg = format!(
        "global\n    nbthread 1\n    maxconn 1024\n\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 120s\n    timeout server 120s\n\nfrontend llm\n    bind 127.0.0.1:{port}\n    http-request return status 200 content-type text/plain string {token} if {{ path /llmscope-haproxy-id }}\n    default_backend replicas\n\nbackend replicas\n{}",
        balance.config()
    );
    for (pod, addr) in servers {
        cfg += &format!("    server {pod} {addr}\n");
    }
    cfg
}

/// Whether HAProxy (still running) answers on `addr` with `token`, within 20 s.
fn answers_with(child: &mut Reaper, addr: &str, token: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if child.0.try_wait().ok().flatten().is_some() {
            return false;
        }
        if std::net::TcpStream::connect(addr).is_ok() {
            return get(addr, "/llmscope-haproxy-id").1.trim() == token;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// What one replica's own `/metrics` showed over a load.
#[derive(Debug, Default, Clone)]
struct EngineReading {
    pod: String,
    waiting: Vec<f64>,
    running: Vec<f64>,
    finished: f64,
}

impl EngineReading {
    fn mean_waiting(&self) -> f64 {
        self.waiting.iter().sum::<f64>() / self.waiting.len().max(1) as f64
    }

    fn running_max(&self) -> f64 {
        self.running.iter().copied().fold(0.0, f64::max)
    }
}

/// The sum of every sample of `name` (each label set) on a vLLM page.
fn total(page: &str, name: &str) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The oracle's verdict on a load: the replica that finished most, and whether the split is
/// uneven — that one queued (1 or more waiting on average) while the other had no queue and a
/// batch below its cap.
struct Split {
    readings: Vec<EngineReading>,
}

impl Split {
    fn hot(&self) -> &EngineReading {
        self.readings
            .iter()
            .max_by(|a, b| a.finished.total_cmp(&b.finished))
            .unwrap()
    }

    fn share(&self, r: &EngineReading) -> f64 {
        r.finished / self.readings.iter().map(|r| r.finished).sum::<f64>()
    }

    fn uneven(&self) -> bool {
        let hot = self.hot();
        self.readings.iter().all(|r| {
            r.pod == hot.pod
                || (hot.mean_waiting() >= 1.0 && r.mean_waiting() < 0.5 && r.running_max() < CAP)
        })
    }

    fn describe(&self) -> String {
        self.readings
            .iter()
            .map(|r| {
                format!(
                    "{}: finished {:.0} ({:.0} %), waiting {:.1} on average, running max {:.0}",
                    r.pod,
                    r.finished,
                    100.0 * self.share(r),
                    r.mean_waiting(),
                    r.running_max()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Two tenants (28 and 2 clients) on the balancer at once for 10 s, while each replica's own
/// page is read every 250 ms: the span of the load and what each engine showed.
fn load_two_tenants(lb: &Haproxy, replicas: &[(String, String, String)]) -> ((f64, f64), Split) {
    let finished = |addr: &str| total(&get(addr, "/metrics").1, "vllm:request_success_total");
    let before: Vec<f64> = replicas.iter().map(|r| finished(&r.1)).collect();
    let done = AtomicBool::new(false);
    let from = unix_now();
    let mut readings: Vec<EngineReading> = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut readings: Vec<EngineReading> = replicas
                .iter()
                .map(|r| EngineReading {
                    pod: r.0.clone(),
                    ..EngineReading::default()
                })
                .collect();
            while !done.load(Ordering::Relaxed) {
                for (reading, r) in readings.iter_mut().zip(replicas) {
                    let page = get(&r.1, "/metrics").1;
                    reading
                        .waiting
                        .push(total(&page, "vllm:num_requests_waiting"));
                    reading
                        .running
                        .push(total(&page, "vllm:num_requests_running"));
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            readings
        });
        let tenants: [(&'static str, &'static str); 2] = [("a", "28"), ("b", "2")];
        let loads: Vec<_> = tenants
            .into_iter()
            .map(|(tenant, clients)| {
                s.spawn(move || {
                    let header = format!("X-Tenant: {tenant}");
                    put_load_with(&lb.addr, clients, "10s", &["--header", &header]);
                })
            })
            .collect();
        for l in loads {
            l.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap()
    });
    let to = unix_now();
    for ((reading, r), b) in readings.iter_mut().zip(replicas).zip(before) {
        reading.finished = finished(&r.1) - b;
    }
    ((from, to), Split { readings })
}

/// `diagnose --prometheus` over `[from, to]` as JSON.
fn diagnose(prom: &RealPrometheus, db: &str, (from, to): (f64, f64)) -> Value {
    scraped_after(prom, to);
    let (from, to) = (format_rfc3339(from - 2.0), format_rfc3339(to + 2.0));
    let url = prom.url();
    let args = [
        "diagnose",
        "--prometheus",
        &url,
        "--step",
        "1s",
        "--from",
        &from,
        "--to",
        &to,
        "--max-num-seqs",
        "16",
        "--db",
        db,
        "--format",
        "json",
    ];
    let out = llmscope(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

fn finding_ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

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
    let (window, split) = load_two_tenants(&lb, &replicas);
    drop(lb);
    let oracle = split.describe();
    assert!(
        split.uneven(),
        "the affinity did not split the load: {oracle}"
    );
    let (hot, cool) = (split.hot().pod.clone(), {
        let h = &split.hot().pod;
        replicas.iter().find(|r| &r.0 != h).unwrap().0.clone()
    });
    let v = diagnose(&prom, db, window);
    let verdict = &v["verdict"];
    eprintln!(
        "round-robin, tenant affinity: engines {oracle}\n  llmscope: {}",
        verdict["summary"]
    );
    assert_eq!(
        verdict["bottleneck"], "routing_imbalance",
        "{oracle}\n{v:#}"
    );
    let summary = verdict["summary"].as_str().unwrap();
    assert!(summary.contains(&hot), "{oracle}\n{summary}");
    assert!(
        !summary.contains(&format!("{cool} (")),
        "{oracle}\n{summary}"
    );
    let ours = v["replicas"].as_array().expect("replicas");
    let hot_ours = ours.iter().find(|r| r["pod"] == hot.as_str()).unwrap();
    let share = hot_ours["share_of_requests"].as_f64().unwrap();
    let truth = split.share(split.hot());
    assert!(
        (share - truth).abs() < 0.1,
        "llmscope's share of {hot} {share:.2}, the engines' {truth:.2}: {oracle}"
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
    let (window, split) = load_two_tenants(&lb, &replicas);
    drop(lb);
    let oracle = split.describe();
    let even = split
        .readings
        .iter()
        .all(|r| (split.share(r) - 0.5).abs() < 0.15);
    assert!(
        even && !split.uneven(),
        "least connections split unevenly: {oracle}"
    );
    let v = diagnose(&prom, db, window);
    eprintln!(
        "least connections: engines {oracle}\n  llmscope: {}",
        v["verdict"]["summary"]
    );
    assert_ne!(
        v["verdict"]["bottleneck"], "routing_imbalance",
        "{oracle}\n{v:#}"
    );
    let ids = finding_ids(&v);
    assert!(
        !ids.iter().any(|r| r.ends_with("_imbalance")),
        "{oracle}\n{v:#}"
    );
    assert!(ids.contains(&"shared_gpu".to_owned()), "{v:#}");
    assert!(!advises_more_replicas(&v), "{v:#}");
    std::fs::remove_dir_all(&dir).ok();
}
