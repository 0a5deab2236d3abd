//! What every CLI test needs: the binary as a child process, its JSON, free ports, children that
//! die with the test, and a real Prometheus that is known to have scraped before a test reads it.

pub use llmscope_collect::testing::{RealPrometheus, job};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

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

/// A port that refuses connections: bound by the OS, then closed. Only for tests of an
/// unreachable server — nothing is started on it (servers under test bind `:0` themselves).
pub fn closed_port() -> u16 {
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

/// `llmscope sim` on ports the OS gives (`--port 0`) with dcgm collecting every `dcgm_interval`
/// (and `extra` flags): the child (killed on drop) and its vLLM and dcgm `host:port`s, read from
/// the URLs it prints once it listens — no port is picked, dropped and hoped free (issue 17).
pub fn sim_on_free_ports(dcgm_interval: &str, extra: &[&str]) -> (Reaper, String, String) {
    let (child, addrs) = sim_listening(dcgm_interval, extra);
    (child, addrs["vllm"].clone(), addrs["dcgm"].clone())
}

/// [`sim_on_free_ports`] with the Kueue / kube-state-metrics pages too: also their `host:port`.
pub fn sim_with_cluster(dcgm_interval: &str, extra: &[&str]) -> (Reaper, String, String, String) {
    let extra = [extra, &["--cluster-port", "0"]].concat();
    let (child, addrs) = sim_listening(dcgm_interval, &extra);
    let a = |k: &str| addrs[k].clone();
    (child, a("vllm"), a("dcgm"), a("kueue"))
}

fn sim_listening(
    dcgm_interval: &str,
    extra: &[&str],
) -> (Reaper, std::collections::HashMap<String, String>) {
    let want = if extra.contains(&"--cluster-port") {
        3
    } else {
        2
    };
    let (reaper, lines) = sim_lines(dcgm_interval, extra, want);
    let addrs = lines.into_iter().map(|l| (l.kind, l.addr)).collect();
    (reaper, addrs)
}

/// One endpoint `llmscope sim` printed: its kind (`vllm`, `dcgm`, …), `host:port`, and the pod
/// it stands for where it serves several replicas.
pub struct SimEndpoint {
    pub kind: String,
    pub addr: String,
    pub pod: Option<String>,
}

/// `llmscope sim --replicas N` (and `extra` flags) on ports the OS gives: the child and, per
/// replica in order, its pod name and vLLM and dcgm `host:port`s.
pub fn sim_fleet(replicas: usize, extra: &[&str]) -> (Reaper, Vec<(String, String, String)>) {
    let n = replicas.to_string();
    let args = [&["--replicas", n.as_str()], extra].concat();
    let (reaper, lines) = sim_lines("1s", &args, 2 * replicas);
    let pod = |i: usize| lines[i].pod.clone().expect("a replica names its pod");
    let fleet = (0..replicas)
        .map(|r| {
            let (v, d) = (2 * r, 2 * r + 1);
            assert_eq!((&*lines[v].kind, &*lines[d].kind), ("vllm", "dcgm"));
            (pod(v), lines[v].addr.clone(), lines[d].addr.clone())
        })
        .collect();
    (reaper, fleet)
}

/// Starts `llmscope sim` and reads the first `want` endpoint lines it prints once it listens
/// (`vllm http://127.0.0.1:PORT [pod=NAME]`), to a 60 s deadline.
fn sim_lines(dcgm_interval: &str, extra: &[&str], want: usize) -> (Reaper, Vec<SimEndpoint>) {
    use std::io::BufRead;
    let mut args = vec!["sim", "--dcgm-interval", dcgm_interval, "--port", "0"];
    args.extend_from_slice(&["--dcgm-port", "0"]);
    args.extend_from_slice(extra);
    let mut child = Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reaper = Reaper(child);
    let (tx, rx) = std::sync::mpsc::channel();
    // A thread reads the lines, so the wait has a deadline.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let mut parts = line.split_whitespace();
            if let (Some(k), Some(url)) = (parts.next(), parts.next()) {
                let hostport = url.trim_start_matches("http://").split('/').next();
                let _ = tx.send(SimEndpoint {
                    kind: k.to_owned(),
                    addr: hostport.unwrap_or("").to_owned(),
                    pod: parts
                        .next()
                        .and_then(|p| p.strip_prefix("pod="))
                        .map(str::to_owned),
                });
            }
        }
    });
    let mut lines = Vec::with_capacity(want);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while lines.len() < want {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        lines.push(
            rx.recv_timeout(left)
                .expect("llmscope sim never said where it listens"),
        );
    }
    (reaper, lines)
}

/// `llmscope load` of `concurrency` closed-loop workers on the server at `host_port` for
/// `duration`; fails the test if the load fails.
pub fn put_load(host_port: &str, concurrency: &str, duration: &str) {
    put_load_with(host_port, concurrency, duration, &[]);
}

/// [`put_load`] with more `llmscope load` flags (`--header`, …).
pub fn put_load_with(host_port: &str, concurrency: &str, duration: &str, extra: &[&str]) {
    let target = format!("http://{host_port}");
    let mut args = vec![
        "load",
        "--target",
        &target,
        "--concurrency",
        concurrency,
        "--duration",
        duration,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = llmscope(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real Prometheus scraping `jobs` (see [`job`]), started and waited for by the one helper the
/// workspace's tests share; `None` (skip) only outside CI when none is installed.
pub fn prometheus(name: &str, jobs: &[String]) -> Option<RealPrometheus> {
    prometheus_at(name, jobs, "")
}

/// [`prometheus`] serving under the path `prefix` (`--web.route-prefix`).
pub fn prometheus_at(name: &str, jobs: &[String], prefix: &str) -> Option<RealPrometheus> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(RealPrometheus::start_at(name, jobs, prefix))
}

/// Waits (to a deadline) until `prom` scraped every target at or after `t`: a poll, not a sleep.
pub fn scraped_after(prom: &RealPrometheus, t: f64) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(prom.wait_until_scraped_after(t));
}

pub fn unix_now() -> f64 {
    llmscope_collect::time::unix_now()
}

/// Waits (to a 20 s deadline) until something accepts connections on `host_port`.
pub fn wait_until_listening(host_port: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(host_port).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on {host_port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// What a `llmscope watch` child says on stderr: where it serves (`host:port`, from its banner,
/// within 30 s) and every line, kept as it comes.
pub fn watch_log(stderr: std::process::ChildStderr) -> (String, LogLines) {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let log = LogLines::default();
    let kept = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.split("serving http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or("").to_owned());
            }
            kept.lock().unwrap().push(line);
        }
    });
    let addr = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("watch says where it serves");
    (addr, log)
}

/// A child's lines, shared with the thread reading them.
pub type LogLines = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// `GET path` on `host_port` (HTTP/1.0, to the end): the status and the body.
pub fn get(host_port: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(host_port).expect("the server listens");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host_port}\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

/// The value of the sample whose line starts with `prefix` (name and labels), if exposed.
pub fn sample(metrics: &str, prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}
