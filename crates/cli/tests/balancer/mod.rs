//! Replicas behind a real load balancer, for issue 25's fleet tests — shared by the CLI suite
//! (`sim --replicas`) and the real-engine tier (two real vLLM servers) through `#[path]`:
//! Debian's HAProxy started on loopback (killed when dropped), tenants' loads through it, the
//! oracle that reads each replica's own `/metrics` during the load, and `diagnose --prometheus`
//! over the load's window.
//!
//! Two ways to balance, the two the issue contrasts:
//! - **round-robin with tenant affinity** (`balance roundrobin` + `stick on req.hdr(x-tenant)`):
//!   round-robin hands each tenant a replica for its first request and the stick table keeps it
//!   there — session affinity as gateways configure it, by API key or tenant header;
//! - **least connections** (`balance leastconn`): each request to the replica with the fewest
//!   open connections.

use llmscope_collect::testing::RealPrometheus;
use llmscope_collect::time::{format_rfc3339, unix_now};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How the balancer picks a replica.
#[derive(Clone, Copy, Debug)]
pub enum Balance {
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

/// A HAProxy child (killed on drop, its directory removed) listening on `addr`.
pub struct Haproxy {
    child: Child,
    pub addr: String,
    dir: PathBuf,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

impl Haproxy {
    /// `haproxy` on `PATH` or in `/usr/sbin` (Debian's place, off a non-root `PATH`); `None`
    /// (said) outside CI when none is installed, a failed assertion in CI.
    pub fn binary() -> Option<PathBuf> {
        let dirs = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        let found = dirs
            .into_iter()
            .chain([PathBuf::from("/usr/sbin")])
            .map(|d| d.join("haproxy"))
            .find(|b| b.is_file());
        if found.is_none() {
            let how = "this test needs HAProxy: apt-get install -y haproxy (.ci/run installs it)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{how}");
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: {how}");
            }
        }
        found
    }

    /// HAProxy balancing `servers` (name, `host:port`) by `balance`, on a loopback port. A port
    /// is taken from the OS and handed to HAProxy; should another process take it first,
    /// HAProxy exits or the listener does not answer with this instance's token — then another
    /// port, up to five.
    pub fn start(name: &str, balance: Balance, servers: &[(String, String)]) -> Option<Haproxy> {
        let bin = Self::binary()?;
        let dir =
            std::env::temp_dir().join(format!("llmscope-haproxy-{name}-{}", std::process::id()));
        for attempt in 0..5 {
            std::fs::create_dir_all(&dir).unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
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
            let mut lb = Haproxy {
                child,
                addr: format!("127.0.0.1:{port}"),
                dir: dir.clone(),
            };
            if lb.answers_with(&token) {
                return Some(lb);
            }
            // Not ours: dropped (killed, its directory removed) before the next port.
        }
        panic!("HAProxy could not take a loopback port in five tries");
    }

    /// Whether HAProxy (still running) answers on its address with `token`, within 20 s.
    fn answers_with(&mut self, token: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if let Some(body) = get_body(&self.addr, "/llmscope-haproxy-id") {
                return body.trim() == token;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

/// One frontend on `port` answering `/llmscope-haproxy-id` with `token` (so the test knows the
/// listener is its own), one backend of `servers`. One thread: the stick table is read and
/// written in request order. `option http-no-delay`: without it HAProxy 2.6 held streamed
/// tokens back and sent them in bursts (the simulator's 81 ms inter-token latency read 0 ms at
/// the median through it, with 288 ms gaps, and TTFT 211 ms against 83 direct) — what an SSE
/// stream behind a proxy needs.
fn config(port: u16, token: &str, balance: Balance, servers: &[(String, String)]) -> String {
    let mut cfg = format!(
        "global\n    nbthread 1\n    maxconn 1024\n\ndefaults\n    mode http\n    option http-no-delay\n    timeout connect 5s\n    timeout client 120s\n    timeout server 120s\n\nfrontend llm\n    bind 127.0.0.1:{port}\n    http-request return status 200 content-type text/plain string {token} if {{ path /llmscope-haproxy-id }}\n    default_backend replicas\n\nbackend replicas\n{}",
        balance.config()
    );
    for (name, addr) in servers {
        cfg += &format!("    server {name} {addr}\n");
    }
    cfg
}

/// `GET path` on `host_port` (HTTP/1.0, to the end): the body, or `None` when nothing answers.
fn get_body(host_port: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(host_port).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host_port}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    Some(raw.split_once("\r\n\r\n")?.1.to_owned())
}

/// What one replica's own `/metrics` showed over a load: its counters' growth (requests
/// finished, the seconds they spent queued and running) and its gauges, read every 250 ms.
///
/// The levels come from the counters by Little's law — the seconds requests spent queued (or
/// running) per second of the load is the mean number queued (running) — because a real vLLM
/// 0.32's CPU build on a starved host leaves its gauges at 0 for whole loads (two servers behind
/// HAProxy: 148 requests finished by one that read 0 running in every one of 34 reads), while
/// the counters account for every request.
#[derive(Debug, Default, Clone)]
pub struct EngineReading {
    pub pod: String,
    /// Requests finished over the load (`vllm:request_success_total`'s growth).
    pub finished: f64,
    /// Seconds the finished requests spent queued, and running, over the load.
    pub queued_s: f64,
    pub running_s: f64,
    /// The load's length in seconds.
    pub span_s: f64,
    /// The running gauge's readings.
    pub running: Vec<f64>,
}

impl EngineReading {
    /// Mean requests waiting over the load, by Little's law.
    pub fn waiting(&self) -> f64 {
        self.queued_s / self.span_s
    }

    /// Mean requests running over the load, by Little's law.
    pub fn mean_running(&self) -> f64 {
        self.running_s / self.span_s
    }

    /// The running gauge's highest reading (0 where it never read anything else).
    pub fn running_max(&self) -> f64 {
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

/// The counters a reading is the growth of: finished requests, seconds queued, seconds running.
const COUNTERS: [&str; 3] = [
    "vllm:request_success_total",
    "vllm:request_queue_time_seconds_sum",
    "vllm:request_inference_time_seconds_sum",
];

/// The oracle's reading of a load over replicas of `--max-num-seqs cap`, from their own pages.
pub struct Split {
    pub readings: Vec<EngineReading>,
    pub cap: f64,
}

impl Split {
    /// The replica that waited most (by Little's law) — not the one that finished most: a
    /// replica whose engine shares its core with the API servers finished 41 requests for a
    /// lone client while the other, queueing 3.6 for ten, finished 14.
    pub fn hot(&self) -> &EngineReading {
        self.readings
            .iter()
            .max_by(|a, b| a.waiting().total_cmp(&b.waiting()))
            .expect("replicas")
    }

    /// The other replicas' pods.
    pub fn cool(&self) -> Vec<&str> {
        let hot = &self.hot().pod;
        self.readings
            .iter()
            .filter(|r| &r.pod != hot)
            .map(|r| r.pod.as_str())
            .collect()
    }

    pub fn share(&self, r: &EngineReading) -> f64 {
        r.finished / self.readings.iter().map(|r| r.finished).sum::<f64>()
    }

    /// Uneven: the hot replica held a queue (a request or more waiting on average) while every
    /// other had room (under 0.1 waiting, a batch under 90 % of its cap) — room the routing left
    /// unused, by a clear margin.
    pub fn uneven(&self) -> bool {
        let hot = self.hot();
        let room = |r: &EngineReading| r.waiting() < 0.1 && r.mean_running() < 0.9 * self.cap;
        hot.waiting() >= 1.0 && self.readings.iter().all(|r| r.pod == hot.pod || room(r))
    }

    /// Even, by a clear margin: no replica queued (every one under 0.25 waiting), or every one
    /// did (a request or more waiting each). Between the two the engines leave the question
    /// open (least connections before two real engines of unequal speed: 0.22 and 0.48
    /// waiting, the faster at 1.6 of 4 running) and nothing is judged. Not equal shares:
    /// least connections evens the requests in flight, and a slower replica finishes fewer.
    pub fn even(&self) -> bool {
        let w = || self.readings.iter().map(EngineReading::waiting);
        w().all(|x| x < 0.25) || w().all(|x| x >= 1.0)
    }

    pub fn describe(&self) -> String {
        self.readings
            .iter()
            .map(|r| {
                format!(
                    "{}: finished {:.0} ({:.0} %), {:.2} waiting and {:.2} running on average (Little), running gauge max {:.0}",
                    r.pod,
                    r.finished,
                    100.0 * self.share(r),
                    r.waiting(),
                    r.mean_running(),
                    r.running_max()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// `llmscope ARGS…` to completion, without the developer's `OPENAI_API_KEY`.
fn llmscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run llmscope")
}

fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "llmscope failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Tenants (`X-Tenant` header, clients) loading the balancer at once for `duration` with
/// `llmscope load` (and its `extra` flags), while each replica's own page (`replicas`: pod,
/// `host:port`) is read every 250 ms: the span of the load and the oracle's reading.
///
/// Each tenant is introduced first, one after the other, by one request through the balancer
/// (as a session begins at login): the balancer's first pick for a tenant is then made alone —
/// under affinity HAProxy stores it, and the concurrent first requests of a tenant's clients
/// cannot race the store (they did: both tenants once landed on one replica).
pub fn load_tenants(
    lb: &Haproxy,
    replicas: &[(String, String)],
    tenants: &[(&str, u32)],
    (duration, extra): (&str, &[&str]),
    cap: f64,
) -> ((f64, f64), Split) {
    for (tenant, _) in tenants {
        introduce(&lb.addr, tenant);
    }
    let page = |addr: &str| get_body(addr, "/metrics").expect("a replica's /metrics answers");
    let counters = |addr: &str| {
        let p = page(addr);
        COUNTERS.map(|c| total(&p, c))
    };
    let before: Vec<[f64; 3]> = replicas.iter().map(|r| counters(&r.1)).collect();
    let done = AtomicBool::new(false);
    let from = unix_now();
    let target = format!("http://{}", lb.addr);
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
                    let running = total(&page(&r.1), "vllm:num_requests_running");
                    reading.running.push(running);
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            readings
        });
        let loads: Vec<_> = tenants
            .iter()
            .map(|&(tenant, clients)| {
                let target = &target;
                s.spawn(move || {
                    let (header, clients) = (format!("X-Tenant: {tenant}"), clients.to_string());
                    let mut args = vec!["load", "--target", target, "--concurrency", &clients];
                    args.extend(["--duration", duration, "--header", &header]);
                    args.extend(["--format", "json"]);
                    args.extend_from_slice(extra);
                    succeeded(&llmscope(&args));
                })
            })
            .collect();
        for l in loads {
            l.join().expect("a tenant's load");
        }
        done.store(true, Ordering::Relaxed);
        sampler.join().expect("the oracle's sampler")
    });
    let to = unix_now();
    for ((reading, r), b) in readings.iter_mut().zip(replicas).zip(before) {
        let [finished, queued, running] = counters(&r.1);
        reading.finished = finished - b[0];
        reading.queued_s = queued - b[1];
        reading.running_s = running - b[2];
        reading.span_s = to - from;
    }
    ((from, to), Split { readings, cap })
}

/// One `GET /v1/models` through the balancer as `tenant`.
fn introduce(lb: &str, tenant: &str) {
    let mut s = std::net::TcpStream::connect(lb).expect("the balancer listens");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        s,
        "GET /v1/models HTTP/1.0\r\nHost: {lb}\r\nX-Tenant: {tenant}\r\n\r\n"
    )
    .expect("a request to the balancer");
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok();
    assert!(
        raw.starts_with("HTTP/1.0 200") || raw.starts_with("HTTP/1.1 200"),
        "the balancer did not pass {tenant}'s first request: {raw}"
    );
}

/// `diagnose --prometheus` over `[from, to]` (padded by 2 s, once Prometheus scraped past its
/// end) at `--max-num-seqs cap`, stored in `db`, as JSON.
pub fn diagnose(prom: &RealPrometheus, db: &str, (from, to): (f64, f64), cap: u32) -> Value {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(prom.wait_until_scraped_after(to));
    let (from, to) = (format_rfc3339(from - 2.0), format_rfc3339(to + 2.0));
    let (url, cap) = (prom.url(), cap.to_string());
    let out = llmscope(&[
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
        &cap,
        "--db",
        db,
        "--format",
        "json",
    ]);
    succeeded(&out);
    serde_json::from_slice(&out.stdout).expect("diagnose --format json prints JSON")
}

/// The ids of a diagnosis's findings.
pub fn finding_ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// llmscope against the oracle on an uneven split: the deployment's verdict is
/// `routing_imbalance` naming the hot replica and no other.
pub fn names_the_hot_replica(v: &Value, split: &Split) -> Result<(), String> {
    let oracle = split.describe();
    let verdict = &v["verdict"];
    if verdict["bottleneck"] != "routing_imbalance" {
        return Err(format!(
            "the engines: {oracle}\nllmscope: {} — {}",
            verdict["bottleneck"], verdict["summary"]
        ));
    }
    let summary = verdict["summary"].as_str().unwrap_or_default();
    let hot = &split.hot().pod;
    let named_cool = split
        .cool()
        .into_iter()
        .find(|c| summary.contains(&format!("{c} (")));
    if !summary.contains(hot.as_str()) || named_cool.is_some() {
        return Err(format!(
            "the engines' hot replica is {hot}: {oracle}\nllmscope: {summary}"
        ));
    }
    Ok(())
}

/// llmscope's share of the requests for `pod` (its `replicas` list), if it gives one.
pub fn share_of(v: &Value, pod: &str) -> Option<f64> {
    v["replicas"].as_array()?.iter().find(|r| r["pod"] == pod)?["share_of_requests"].as_f64()
}

/// llmscope against the oracle on an even split: no imbalance of any kind.
pub fn singles_out_none(v: &Value, split: &Split) -> Result<(), String> {
    let ids = finding_ids(v);
    let bottleneck = &v["verdict"]["bottleneck"];
    if bottleneck == "routing_imbalance" || ids.iter().any(|r| r.ends_with("_imbalance")) {
        return Err(format!(
            "the engines: {}\nllmscope: {bottleneck} — {}; findings {ids:?}",
            split.describe(),
            v["verdict"]["summary"]
        ));
    }
    Ok(())
}
