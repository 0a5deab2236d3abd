//! What every CLI test needs: the binary as a child process, its JSON, free ports, children that
//! die with the test, and a real Prometheus that is known to have scraped before a test reads it.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `llmscope ARGS…` to completion, without the developer's `OPENAI_API_KEY`.
pub fn llmscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run llmscope")
}

/// stdout as JSON, or a panic showing both streams.
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fresh directory under the system temp dir, unique to this process and `name`.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("llmscope-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Kills the child when the test ends, however it ends.
pub struct Reaper(pub Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// `llmscope sim ARGS…` in the background; killed on drop.
pub fn start_sim(args: &[&str]) -> Reaper {
    let child = Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .arg("sim")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Reaper(child)
}

/// `llmscope sim` on free ports with dcgm collecting every `dcgm_interval` (and `extra` flags):
/// the child (killed on drop) and its vLLM and dcgm `host:port`s.
pub fn sim_on_free_ports(dcgm_interval: &str, extra: &[&str]) -> (Reaper, String, String) {
    let (vllm, dcgm) = (free_port().to_string(), free_port().to_string());
    let mut args = vec![
        "--dcgm-interval",
        dcgm_interval,
        "--port",
        &vllm,
        "--dcgm-port",
        &dcgm,
    ];
    args.extend_from_slice(extra);
    let child = start_sim(&args);
    (
        child,
        format!("127.0.0.1:{vllm}"),
        format!("127.0.0.1:{dcgm}"),
    )
}

/// `llmscope load` of `concurrency` closed-loop workers on the server at `host_port` for
/// `duration`; fails the test if the load fails.
pub fn put_load(host_port: &str, concurrency: &str, duration: &str) {
    let target = format!("http://{host_port}");
    let out = llmscope(&[
        "load",
        "--target",
        &target,
        "--concurrency",
        concurrency,
        "--duration",
        duration,
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One `scrape_configs` entry: `name` scraping `target` (host:port) at `path`; `extra` is more
/// YAML inside the static config (e.g. `, labels: {namespace: x}`).
pub fn job(name: &str, target: &str, path: &str, extra: &str) -> String {
    format!(
        "  - job_name: {name}\n    metrics_path: {path}\n    honor_labels: true\n    static_configs: [{{targets: ['{target}']{extra}}}]\n"
    )
}

/// A real Prometheus (the Debian package, or `PROMETHEUS_BIN`) scraping every second.
pub struct Prometheus {
    child: Child,
    dir: PathBuf,
    pub url: String,
}

impl Prometheus {
    /// Starts Prometheus with `jobs` (see [`job`]) and waits until every target has been scraped
    /// successfully. `None` — the test is skipped — when no binary is installed, except in CI
    /// (`CI=true`), where its absence fails the test.
    pub fn start(name: &str, jobs: &[String]) -> Option<Self> {
        let bin = match std::env::var_os("PROMETHEUS_BIN") {
            Some(b) => Some(PathBuf::from(b)),
            None => std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("prometheus"))
                    .find(|b| b.is_file())
            }),
        };
        let Some(bin) = bin else {
            let how = "this test needs a real Prometheus: apt-get install -y prometheus (or set PROMETHEUS_BIN)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{how}");
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: {how}");
            }
            return None;
        };
        let dir = temp_dir(&format!("prom-{name}"));
        let config = format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 900ms}}\nscrape_configs:\n{}",
            jobs.concat()
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let prom = Prometheus {
            child,
            dir,
            url: format!("http://127.0.0.1:{port}"),
        };
        prom.wait_until_scraped(jobs.len());
        Some(prom)
    }

    /// Polls `llmscope targets --prometheus` until `n` targets report `up` — a loaded CI machine
    /// can take seconds to start Prometheus and reach its first scrape of each target.
    fn wait_until_scraped(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let out = llmscope(&[
                "targets",
                "--prometheus",
                &self.url,
                "--format",
                "json",
                "--fail-on",
                "never",
            ]);
            let up = serde_json::from_slice::<Value>(&out.stdout)
                .ok()
                .map(|v| {
                    v["checks"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|c| c["layer"] == "targets" && c["detail"] == "up")
                        .count()
                })
                .unwrap_or(0);
            if up >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus at {} did not scrape {n} targets within 90 s:\n{}\n{}",
                self.url,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}
