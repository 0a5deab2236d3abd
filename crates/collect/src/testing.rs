//! A real Prometheus for integration tests (feature `real-prometheus`): the Debian package's
//! binary (or `$PROMETHEUS_BIN`) on 127.0.0.1, scraping every second, started and waited for in
//! one place so every crate's tests agree on how.
//!
//! [`RealPrometheus::start`] returns only once every configured target was scraped successfully
//! (a loaded 2-core CI machine can take many seconds to get there). Without a binary it returns
//! `None` so a developer's run can skip, but in CI (`CI=true`) a missing binary fails the test.

use crate::HttpClient;
use crate::prom::{PromClient, PromConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `scrape_configs` entry: `name` scraping `target` (host:port) at `path`, labels honoured;
/// `extra` is more YAML inside the static config (e.g. `, labels: {namespace: x}`).
pub fn job(name: &str, target: &str, path: &str, extra: &str) -> String {
    format!(
        "  - job_name: {name}\n    metrics_path: {path}\n    honor_labels: true\n    static_configs: [{{targets: ['{target}']{extra}}}]\n"
    )
}

/// A Prometheus child process, killed (and its directory removed) when dropped.
pub struct RealPrometheus {
    child: Child,
    dir: PathBuf,
    pub addr: SocketAddr,
    /// The path its API and UI are served under (`--web.route-prefix`), `""` for the root.
    pub prefix: String,
}

impl RealPrometheus {
    /// `$PROMETHEUS_BIN`, else `prometheus` on `PATH`; `None` (said on stderr) when there is
    /// none, a failed assertion in CI.
    pub fn binary() -> Option<PathBuf> {
        let on_path = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("prometheus"))
                .find(|b| b.is_file())
        });
        let found = std::env::var_os("PROMETHEUS_BIN")
            .map(PathBuf::from)
            .or(on_path);
        if found.is_none() {
            let how = "this test needs a real Prometheus: apt-get install -y prometheus (or set PROMETHEUS_BIN)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{how}");
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: {how}");
            }
        }
        found
    }

    /// Starts Prometheus with `jobs` (see [`job`]) and waits — up to 90 s — until it is ready
    /// and every target is `up`. `name` keeps the directories of concurrent tests apart.
    pub async fn start(name: &str, jobs: &[String]) -> Option<RealPrometheus> {
        Self::start_at(name, jobs, "").await
    }

    /// As [`RealPrometheus::start`], serving under the path `prefix` (e.g. `/prometheus`, as
    /// Mimir and many ingress set-ups do); `""` for the root.
    pub async fn start_at(name: &str, jobs: &[String], prefix: &str) -> Option<RealPrometheus> {
        let bin = Self::binary()?;
        let addr: SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port");
        let dir = std::env::temp_dir().join(format!(
            "llmscope-prom-{name}-{}-{}",
            std::process::id(),
            addr.port()
        ));
        write_config(&dir, jobs);
        let child = spawn(&bin, &dir, addr, prefix);
        let prom = RealPrometheus {
            child,
            dir,
            addr,
            prefix: prefix.to_owned(),
        };
        prom.wait_until_scraped(jobs.len()).await;
        Some(prom)
    }

    /// `http://127.0.0.1:PORT` and the prefix, if any.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.prefix)
    }

    /// An API client for it.
    pub fn client(&self) -> PromClient {
        let base = self.url().parse().expect("a loopback URL");
        PromClient::new(
            PromConfig::new(base),
            HttpClient::new(None).expect("an HTTP client"),
        )
    }

    /// Waits (to a 60 s deadline) until every target was scraped at or after `t` (Unix
    /// seconds), so a window ending at `t` is complete — a poll instead of a fixed sleep.
    pub async fn wait_until_scraped_after(&self, t: f64) {
        let client = self.client();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let oldest = client.query("min(timestamp(up))", None).await;
            if let Ok(crate::prom::api::ApiResponse {
                data: crate::prom::api::QueryData::Vector(v),
                ..
            }) = oldest
                && v.first().is_some_and(|(_, p)| p.v >= t)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "Prometheus at {} did not scrape every target after {t} within 60 s",
            self.addr
        );
    }

    async fn wait_until_scraped(&self, n: usize) {
        let client = self.client();
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            if let Ok(t) = client.targets().await
                && t.data.active.len() >= n
                && t.data.active.iter().all(|t| t.health == "up")
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default();
        panic!(
            "Prometheus at {} did not scrape its {n} targets within 90 s:\n{log}",
            self.addr
        );
    }
}

/// `prometheus.yml` in a new `dir`: every job scraped each second.
fn write_config(dir: &std::path::Path, jobs: &[String]) {
    std::fs::create_dir_all(dir).expect("a directory for Prometheus");
    let config = format!(
        "global: {{scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}}\nscrape_configs:\n{}",
        jobs.concat()
    );
    std::fs::write(dir.join("prometheus.yml"), config).expect("writing prometheus.yml");
}

/// Starts `bin` on `addr` with `dir`'s config and storage, logging to `dir/prometheus.log`.
fn spawn(bin: &std::path::Path, dir: &std::path::Path, addr: SocketAddr, prefix: &str) -> Child {
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("a log file");
    Command::new(bin)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .args((!prefix.is_empty()).then(|| format!("--web.route-prefix={prefix}")))
        .stdout(log.try_clone().expect("a log file"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("starting prometheus")
}

impl Drop for RealPrometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Closed-loop load on the OpenAI server at `addr`: `workers` clients sending non-streamed chat
/// requests over raw HTTP/1.1 (a few lines, so tests do not depend on the load generator) until
/// `secs` are over. Every answer must be a 200; at least one must arrive.
pub async fn put_chat_load(addr: SocketAddr, workers: usize, secs: u64) {
    let end = tokio::time::Instant::now() + Duration::from_secs(secs);
    let body = r#"{"messages":[{"role":"user","content":"hello there"}],"max_tokens":64}"#;
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let tasks: Vec<_> = (0..workers)
        .map(|_| tokio::spawn(chat_worker(addr, req.clone(), end)))
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("a load worker");
    }
    assert!(total > 0, "no request completed");
}

/// One client of [`put_chat_load`]: sends `req` on a new connection after each answer until
/// `end`; returns how many were answered.
async fn chat_worker(addr: SocketAddr, req: String, end: tokio::time::Instant) -> u32 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut done = 0u32;
    while tokio::time::Instant::now() < end {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(req.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await.expect("receive");
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        done += 1;
    }
    done
}
